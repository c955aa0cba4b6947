//! The two ends. The source is a list of nodes, each scanned and read on its
//! own connection (a standalone server is one node; a cluster, its masters):
//! a key is read from the node that holds it, on the connection that
//! WATCHes it. The target is one connection — redis-rs's cluster client for
//! a cluster, which routes every key command by slot.

use std::collections::HashMap;
use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::cluster_routing::Slot;
use redis::{
    Client, Connection, ConnectionAddr, ConnectionInfo, ConnectionLike, IntoConnectionInfo, Value,
};

use crate::family::{self, families};
use rsbloom_core::module_type::AddedField;
use rsbloom_core::ModuleType;

/// Replies to a single DUMP or RESTORE of hundreds of MiB take a while.
const TIMEOUT: Duration = Duration::from_secs(600);
/// Default `proto-max-bulk-len` where CONFIG GET is refused.
const DEFAULT_MAX_BULK: u64 = 512 << 20;

pub struct Node {
    pub name: String,
    pub conn: Connection,
}

fn info(url: &str, db: i64) -> Result<ConnectionInfo, String> {
    let info = url
        .into_connection_info()
        .map_err(|e| format!("{url}: {e}"))?;
    let redis = info.redis_settings().clone().set_db(db);
    Ok(info.set_redis_settings(redis))
}

fn connect(info: &ConnectionInfo) -> Result<Connection, String> {
    let name = format!("{}", info.addr());
    let conn = Client::open(info.clone())
        .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(10)))
        .map_err(|e| format!("{name}: {e}"))?;
    conn.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    conn.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

fn is_cluster(conn: &mut Connection) -> Result<bool, String> {
    let text: String = redis::cmd("INFO")
        .arg("cluster")
        .query(conn)
        .map_err(|e| e.to_string())?;
    Ok(text.lines().any(|l| l.trim() == "cluster_enabled:1"))
}

/// Connects to `url` (database 0 first, to ask whether it is a cluster):
/// the connection on `db` and whether it is a cluster.
fn open(url: &str, db: i64) -> Result<(ConnectionInfo, Connection, bool), String> {
    let info0 = info(url, 0)?;
    let mut conn = connect(&info0)?;
    let cluster = is_cluster(&mut conn)?;
    if cluster && db != 0 {
        return Err(format!(
            "{url} is a cluster: only database 0 is copied from or to a cluster"
        ));
    }
    let info = info(url, db)?;
    let conn = if db == 0 { conn } else { connect(&info)? };
    Ok((info, conn, cluster))
}

/// The nodes to scan: the server itself, or every master of the cluster.
pub fn source_nodes(url: &str, db: i64) -> Result<Vec<Node>, String> {
    let (info, mut conn, cluster) = open(url, db)?;
    if !cluster {
        return Ok(vec![Node {
            name: url.to_string(),
            conn,
        }]);
    }
    let seed_host = match info.addr() {
        ConnectionAddr::Tcp(h, _) => h.clone(),
        other => return Err(format!("{other}: cluster seeds must be TCP addresses")),
    };
    let mut nodes = Vec::new();
    for (host, port) in masters(&mut conn)? {
        let host = if host.is_empty() {
            seed_host.clone()
        } else {
            host
        };
        let node_info = info
            .clone()
            .set_addr(ConnectionAddr::Tcp(host.clone(), port));
        nodes.push(Node {
            name: format!("{host}:{port}"),
            conn: connect(&node_info)?,
        });
    }
    Ok(nodes)
}

/// `(host, port)` of each master serving slots, from `CLUSTER SLOTS`.
fn masters(conn: &mut Connection) -> Result<Vec<(String, u16)>, String> {
    let ranges: Vec<Value> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(conn)
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for range in ranges {
        let Value::Array(fields) = range else {
            return Err("CLUSTER SLOTS: not an array".into());
        };
        let Some(Value::Array(master)) = fields.get(2) else {
            return Err("CLUSTER SLOTS: no master".into());
        };
        let host: String = master
            .first()
            .and_then(|v| redis::from_redis_value_ref(v).ok())
            .unwrap_or_default();
        let port: u16 = master
            .get(1)
            .and_then(|v| redis::from_redis_value_ref(v).ok())
            .ok_or("CLUSTER SLOTS: no port")?;
        if !out.contains(&(host.clone(), port)) {
            out.push((host, port));
        }
    }
    Ok(out)
}

pub struct Target {
    pub conn: Box<dyn ConnectionLike>,
    /// The largest argument the target accepts (`proto-max-bulk-len`, and
    /// no more than its query buffer holds).
    pub max_bulk: u64,
    /// The RDB version of the target's own DUMP payloads (0: not probed).
    pub rdb_version: u16,
    /// `MODULE LIST` ver of its `bf` module (`None`: none, or not told).
    pub module_version: Option<u64>,
    /// The families whose command the target lacks (it has no such type),
    /// with the reason reported for their keys.
    pub missing: Vec<(&'static str, String)>,
    pub tmp: TmpKeys,
}

impl Target {
    pub fn open(url: &str, db: i64, max_command: Option<u64>) -> Result<Target, String> {
        let (info, mut conn, cluster) = open(url, db)?;
        let max_bulk = max_command.unwrap_or_else(|| server_max_bulk(&mut conn));
        let module_version = bf_version(&mut conn);
        let missing = missing_families(&mut conn);
        let conn: Box<dyn ConnectionLike> = if cluster {
            let client = ClusterClient::builder(vec![info])
                .connection_timeout(Duration::from_secs(10))
                .response_timeout(TIMEOUT)
                .build()
                .map_err(|e| e.to_string())?;
            Box::new(client.get_connection().map_err(|e| format!("{url}: {e}"))?)
        } else {
            Box::new(conn)
        };
        Ok(Target {
            conn,
            max_bulk,
            rdb_version: 0,
            module_version,
            missing,
            tmp: TmpKeys::default(),
        })
    }

    /// Why the target cannot hold `family` at all, if it cannot.
    pub fn lacks(&self, family: &ModuleType) -> Option<String> {
        self.missing
            .iter()
            .find(|(name, _)| *name == family.family)
            .map(|(_, why)| why.clone())
    }

    /// Whether the target's module loads `added`'s encoding. A module that
    /// does not say its version is taken as older: the older encoding is
    /// the one every version loads.
    pub fn reads(&self, added: &AddedField) -> bool {
        self.module_version.is_some_and(|v| v >= added.readers_from)
    }

    /// Learns the target's RDB version from the footer of a DUMP of a
    /// short-lived key of its own.
    pub fn probe_rdb_version(&mut self) -> Result<(), String> {
        let tmp = self.tmp.for_key(b"probe");
        // One command at a time: the cluster client takes no pipelines.
        let conn = &mut *self.conn;
        let probe = |conn: &mut dyn ConnectionLike| -> redis::RedisResult<Vec<u8>> {
            redis::cmd("SET")
                .arg(&tmp)
                .arg("rsbloom-copy probe")
                .arg("PX")
                .arg(60_000)
                .exec(conn)?;
            let dump = redis::cmd("DUMP").arg(&tmp).query(conn)?;
            redis::cmd("DEL").arg(&tmp).exec(conn)?;
            Ok(dump)
        };
        let dump = probe(conn).map_err(|e| format!("probing the target's RDB version: {e}"))?;
        self.rdb_version =
            rsbloom_core::dump::checked_version(&dump).map_err(|e| format!("target DUMP: {e}"))?;
        Ok(())
    }
}

/// The `ver` of module `bf` in `MODULE LIST` (each module a flat list of
/// field names and values).
fn bf_version(conn: &mut Connection) -> Option<u64> {
    let modules: Vec<Vec<Value>> = redis::cmd("MODULE").arg("LIST").query(conn).ok()?;
    let text = |v: &Value| redis::from_redis_value_ref::<String>(v).ok();
    modules.iter().find_map(|fields| {
        let field = |name: &str| {
            fields
                .chunks(2)
                .find(|kv| kv.first().and_then(text).is_some_and(|k| k == name))
                .and_then(|kv| kv.get(1))
        };
        let bf = field("name").and_then(text).is_some_and(|n| n == "bf");
        let ver = field("ver").and_then(|v| redis::from_redis_value_ref(v).ok());
        ver.filter(|_| bf)
    })
}

/// The families whose command the target does not know (`COMMAND INFO`
/// answers nil), each with why it is not copied there; none if it does
/// not answer.
fn missing_families(conn: &mut Connection) -> Vec<(&'static str, String)> {
    let mut names: Vec<&'static str> = Vec::new();
    for f in families() {
        for c in std::iter::once(f.probe).chain(f.flavour.map(|x| x.shared)) {
            if !names.contains(&c) {
                names.push(c);
            }
        }
    }
    let mut cmd = redis::cmd("COMMAND");
    cmd.arg("INFO");
    for n in &names {
        cmd.arg(*n);
    }
    let info: Vec<Value> = cmd.query(conn).unwrap_or_default();
    if info.len() != names.len() {
        return Vec::new();
    }
    let known = |c: &str| {
        names
            .iter()
            .zip(&info)
            .any(|(n, v)| *n == c && !matches!(v, Value::Nil))
    };
    families()
        .filter(|f| !known(f.probe))
        .map(|f| (f.family, why_missing(f, &known)))
        .collect()
}

/// Why a target that does not know `f.probe` gets no value of `f`.
fn why_missing(f: &ModuleType, known: &dyn Fn(&str) -> bool) -> String {
    let lacks = format!("the target has no {} type ({} unknown", f.name(), f.probe);
    match f.flavour.filter(|x| known(x.shared)) {
        Some(x) => {
            let others: Vec<String> = family::other_flavours(f)
                .filter(|g| known(g.probe))
                .map(|g| {
                    let module = g.flavour.map_or(g.family, |y| y.module);
                    format!("{module}'s {}", g.name())
                })
                .collect();
            let serves = if others.is_empty() {
                "another module's type".to_string()
            } else {
                others.join(", ")
            };
            format!("{}: {lacks}; its {} serves {serves})", x.why, x.shared)
        }
        None => format!("{lacks}: another module, or none)"),
    }
}

/// Private keys on the target in the same slot as a given key (so that
/// RENAME works in a cluster), named after this process: values are built
/// and verified there, then renamed into place.
#[derive(Default)]
pub struct TmpKeys(HashMap<Slot, String>);

impl TmpKeys {
    pub fn for_key(&mut self, key: &[u8]) -> Vec<u8> {
        if self.0.is_empty() {
            // A hash tag for every slot, found once (about 160,000 tries).
            for n in 0u32.. {
                let tag = format!("{{rsbloom-copy-{n}}}");
                self.0.entry(Slot::for_key(&tag)).or_insert(tag);
                if self.0.len() == 16384 {
                    break;
                }
            }
        }
        let tag = self.0.get(&Slot::for_key(key)).map_or("", String::as_str);
        format!("{tag}:tmp:{}", std::process::id()).into_bytes()
    }
}

/// `proto-max-bulk-len`, bounded by `client-query-buffer-limit` (the whole
/// command must fit there); the server default where CONFIG is refused.
fn server_max_bulk(conn: &mut Connection) -> u64 {
    let get = |conn: &mut Connection, name: &str| -> Option<u64> {
        let kv: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(conn).ok()?;
        kv.get(1)?.parse().ok()
    };
    let bulk = get(conn, "proto-max-bulk-len").unwrap_or(DEFAULT_MAX_BULK);
    let query = get(conn, "client-query-buffer-limit").unwrap_or(u64::MAX);
    bulk.min(query.saturating_sub(1 << 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target's COMMAND INFO as the set of commands it knows.
    fn missing(known: &[&str]) -> Vec<(&'static str, String)> {
        families()
            .filter(|f| !known.contains(&f.probe))
            .map(|f| (f.family, why_missing(f, &|c: &str| known.contains(&c))))
            .collect()
    }

    /// Why `family` is in `m`, if it is. By name, not position: a new
    /// type in `TYPES` changes neither.
    fn why(m: &[(&str, String)], family: &str) -> Option<String> {
        m.iter().find(|(n, _)| *n == family).map(|(_, w)| w.clone())
    }

    #[test]
    fn the_two_bloom_types_are_told_apart() {
        let vb = "valkey-bloom and RedisBloom filters cannot be converted into each other \
                  (the items are not stored): ";
        // RedisBloom 2.8.2: BF.ADD and BF.SCANDUMP, no BF.LOAD, no APBF.ADD.
        let redisbloom = ["BF.ADD", "BF.SCANDUMP", "CF.ADD", "CMS.QUERY", "TOPK.ADD"];
        let m = missing(&[&redisbloom[..], &["TDIGEST.ADD"]].concat());
        for served in ["bloom", "cuckoo", "cms", "topk", "tdigest"] {
            assert_eq!(why(&m, served), None, "{m:?}");
        }
        assert_eq!(
            why(&m, "valkey-bloom"),
            Some(format!(
                "{vb}the target has no bloomfltr type (BF.LOAD unknown; its BF.ADD serves \
                 RedisBloom's MBbloom--)"
            ))
        );
        assert_eq!(
            why(&m, "apbf"),
            Some(
                "the target has no APBF-rsbl type (APBF.ADD unknown: another module, or none)"
                    .to_string()
            )
        );
        // valkey-bloom: BF.ADD and BF.LOAD only.
        let m = missing(&["BF.ADD", "BF.LOAD"]);
        assert_eq!(m.len(), families().count() - 1, "{m:?}");
        assert_eq!(why(&m, "valkey-bloom"), None);
        assert_eq!(
            why(&m, "bloom"),
            Some(format!(
                "{vb}the target has no MBbloom-- type (BF.SCANDUMP unknown; its BF.ADD \
                 serves valkey-bloom's bloomfltr)"
            ))
        );
        assert!(m
            .iter()
            .filter(|(n, _)| *n != "bloom")
            .all(|(_, why)| why.starts_with("the target has no ")));
        // rsbloom, in either Bloom flavour: every command.
        let all: Vec<&str> = families().map(|f| f.probe).chain(["BF.ADD"]).collect();
        assert!(missing(&all).is_empty());
        // No module: no Bloom type, and no conversion to speak of.
        let m = missing(&[]);
        assert_eq!(m.len(), families().count());
        assert!(m
            .iter()
            .all(|(_, why)| why.starts_with("the target has no ")));
    }

    #[test]
    fn tmp_keys_share_the_slot_of_their_key() {
        let mut t = TmpKeys::default();
        for key in [&b"a"[..], b"{user1}:bf", b"x}y{", b"", b"\xff\x00bin"] {
            let tmp = t.for_key(key);
            assert_eq!(Slot::for_key(&tmp), Slot::for_key(key), "{key:?}");
            assert_ne!(tmp, key);
        }
    }
}
