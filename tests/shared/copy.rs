//! The copy tool (tools/copy, docs/copy.md) between real servers: every
//! family from every server to every other, with rsbloom and RedisBloom on
//! either side (issue 21's matrix), live writes to other keys, a cluster to
//! a standalone server and back, values larger than the target's
//! proto-max-bulk-len, TTLs, re-runs, --replace and dry runs.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::cluster::Cluster;
use common::families::{tour_on, windowed};
use common::server::{all_flavors, flavors, Flavor, Module, Server};
use common::{Conn, Reply};
use rsbloom_copy::{Options, Report};

pub(crate) fn url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}")
}

/// Runs the tool from `from` to `to` (ports), `tweak`ing its options.
fn copy(from: u16, to: u16, tweak: impl FnOnce(&mut Options)) -> (Report, String) {
    let mut o = Options::new(&url(from), &url(to));
    o.progress = None;
    tweak(&mut o);
    let mut out = Vec::new();
    let report =
        rsbloom_copy::run(&o, &mut out).unwrap_or_else(|e| panic!("copy {from} -> {to}: {e}"));
    (report, String::from_utf8_lossy(&out).into_owned())
}

/// A source and a target with rsbloom.
fn pair(source: Flavor, target: Flavor) -> (Server, Server) {
    (
        Server::start(source, Module::Rsbloom),
        Server::start(target, Module::Rsbloom),
    )
}

/// The families each module serves, as key names: RedisBloom has no
/// sliding-window types (`apbf`, and the table's windowed types, named by
/// their `family`) and no valkey-bloom filters (`vbf`, type `bloomfltr`,
/// which rsbloom serves in either Bloom flavour).
pub(crate) fn families(m: Module) -> Vec<&'static str> {
    let mut served = vec!["bf", "cf", "cms", "topk", "td"];
    if m != Module::Reference {
        served.extend(["apbf", "vbf"]);
        served.extend(windowed().map(|t| t.family));
    }
    served
}

/// A `BF.LOAD` blob (valkey-bloom's AOF form, COMPAT-VALKEY-BLOOM §5.4) of
/// an empty valkey-bloom filter: capacity 100 at 1 %, expansion 2,
/// tightening 0.5, one sub-filter of 120 bytes and 7 hashes, seed `seed`
/// (marked random: any seed is valid then).
fn vb_load_blob(seed: u8) -> Vec<u8> {
    let mut filter = vec![1u8];
    filter.extend_from_slice(&120u64.to_le_bytes());
    filter.extend_from_slice(&7u32.to_le_bytes());
    filter.extend((0..32).map(|i| seed ^ (i * 37)));
    filter.extend_from_slice(&[0; 120]);
    let mut b = vec![1u8];
    b.extend_from_slice(&2u32.to_le_bytes());
    b.extend_from_slice(&0.01f64.to_le_bytes());
    b.extend_from_slice(&0.5f64.to_le_bytes());
    b.push(1);
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&(filter.len() as u64).to_le_bytes());
    b.extend_from_slice(&filter);
    b.extend_from_slice(&0i64.to_le_bytes());
    b.extend_from_slice(&100i64.to_le_bytes());
    b
}

/// The family of a key that `fill` wrote.
pub(crate) fn family_of(key: &str) -> &str {
    let name = key.rsplit(':').next().unwrap_or(key);
    name.split('-').next().unwrap_or(name)
}

/// The keys of each family `m` serves, `prefix`ed, with content; the Bloom
/// key has a TTL; the sliding-window family has a count window (`apbf`)
/// and a time window whose clock has started (`apbf-time`); each windowed
/// type of the table has its tour.
pub(crate) fn fill(c: &mut Conn, prefix: &str, m: Module) -> Vec<String> {
    let k = |name: &str| format!("{prefix}{name}");
    let rows: Vec<Vec<&str>> = vec![
        vec!["BF.RESERVE", "bf", "0.01", "1000"],
        vec!["BF.MADD", "bf", "a", "b", "c"],
        vec!["PEXPIRE", "bf", "600000"],
        vec!["CF.RESERVE", "cf", "1000"],
        vec!["CF.ADD", "cf", "a"],
        vec!["CF.ADD", "cf", "b"],
        vec!["CMS.INITBYDIM", "cms", "100", "5"],
        vec!["CMS.INCRBY", "cms", "a", "3", "b", "4"],
        vec!["TOPK.RESERVE", "topk", "5"],
        vec!["TOPK.ADD", "topk", "a", "b", "c", "a"],
        vec!["TDIGEST.CREATE", "td"],
        vec!["TDIGEST.ADD", "td", "1", "2", "3", "4.5"],
        vec!["APBF.RESERVE", "apbf", "COUNT", "0.01", "100"],
        vec!["APBF.ADD", "apbf", "a", "b"],
        vec!["APBF.RESERVE", "apbf-time", "TIME", "0.01", "100", "3600"],
        vec!["APBF.ADD", "apbf-time", "a", "b"],
    ];
    let cmds = rows
        .iter()
        .map(|r| r.iter().map(|a| a.to_string()).collect())
        .chain(windowed().flat_map(|t| tour_on(t, t.family)));
    let mut keys = Vec::new();
    for mut cmd in cmds.filter(|cmd: &Vec<String>| families(m).contains(&family_of(&cmd[1]))) {
        let key = k(&cmd[1]);
        cmd[1] = key.clone();
        let r = c.cmd(&cmd);
        assert!(!r.is_error(), "{cmd:?}: {r:?}");
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    if families(m).contains(&"vbf") {
        // A valkey-bloom filter, whatever the source's bf.bloom-flavor.
        let key = k("vbf");
        let load = [
            b"BF.LOAD".to_vec(),
            key.clone().into_bytes(),
            vb_load_blob(7),
        ];
        assert_eq!(c.cmd(&load), common::ok(), "BF.LOAD {key}");
        let r = c.cmd(&["BF.MADD", key.as_str(), "a", "b", "c"]);
        assert!(!r.is_error(), "BF.MADD {key}: {r:?}");
        keys.push(key);
    }
    keys
}

/// The module value of a DUMP payload (its RDB version and CRC aside).
pub(crate) fn body(c: &mut Conn, key: &str) -> Option<Vec<u8>> {
    match c.cmd(&["DUMP", key]) {
        Reply::Bulk(p) if p.len() > 10 => Some(p[..p.len() - 10].to_vec()),
        _ => None,
    }
}

/// A read of each family that the target's module must answer from the value.
fn family_read(key: &str) -> Vec<&str> {
    match family_of(key) {
        "bf" | "vbf" => vec!["BF.EXISTS", key, "b"],
        "cf" => vec!["CF.COUNT", key, "a"],
        "cms" | "cmsw" => vec!["CMS.QUERY", key, "a", "b", "z"],
        "topk" | "topkw" => vec!["TOPK.COUNT", key, "a"],
        "apbf" => vec!["APBF.EXISTS", key, "a", "b", "z"],
        _ => vec!["TDIGEST.RANK", key, "3"],
    }
}

/// The content of a value whose saved bytes may differ on the two ends,
/// read through the module: a Top-K's list (RedisBloom saves memory
/// addresses in its heap records, docs/topk.md §5.2; TOPK.INFO's decay is a
/// double that Redis 7.0 formats otherwise); a Count-Min Sketch's width,
/// depth and total (saved in encoding 1 by rsbloom, 0 by RedisBloom 2.8.2:
/// docs/cms.md §6.1; 2.8.2's CMS.INFO has no cell size), its counters
/// being compared by `family_read`.
fn content(c: &mut Conn, key: &str) -> Option<Vec<Reply>> {
    match family_of(key) {
        "topk" => Some(c.cmd(&["TOPK.LIST", key, "WITHCOUNT"]).as_array().to_vec()),
        "cms" => Some(c.cmd(&["CMS.INFO", key]).as_array().get(..6)?.to_vec()),
        _ => None,
    }
}

/// Whether `key` on `dst` holds the value it has on `src`: the same module
/// value bytes (or the same content through the module where the bytes may
/// differ), the same answer to the family's read, and the TTL kept (the
/// tool sets the remaining TTL it read, as MIGRATE does: the copy's own
/// duration is added, a few seconds at most here).
pub(crate) fn same(src: &mut Conn, dst: &mut Conn, key: &str) -> bool {
    let read = family_read(key);
    let ttl_kept = match src.cmd(&["PTTL", key]).as_int() {
        -1 => dst.cmd(&["PTTL", key]).as_int() == -1,
        t => (1..=t + 5000).contains(&dst.cmd(&["PTTL", key]).as_int()),
    };
    let value = match (body(src, key), body(dst, key)) {
        (Some(a), Some(b)) if a == b => true,
        (Some(_), Some(_)) => content(src, key).is_some_and(|c| Some(c) == content(dst, key)),
        _ => false,
    };
    value && src.cmd(&read) == dst.cmd(&read) && ttl_kept
}

/// Where RedisBloom 2.8.2 loads: every server of the matrix (docs/servers.md
/// §2); a flavor added later is tried, and left out if it refuses it.
pub(crate) fn reference_loads(f: Flavor) -> bool {
    std::panic::catch_unwind(|| drop(Server::start(f, Module::Reference))).is_ok()
}

/// Issue 21's matrix through the tool: the keys of every family the source
/// serves (rsbloom everywhere, RedisBloom where it loads), written on each
/// source in its default configuration, copied to each target (the same).
/// A cell counts the families verified on the target out of those both
/// ends serve: nine between rsbloom ends (valkey-bloom's Bloom type
/// included: a default rsbloom serves it too, the key made by `BF.LOAD`),
/// five where RedisBloom is on either side (it has neither the
/// sliding-window types nor valkey-bloom's: a RedisBloom source has no such
/// keys, and an rsbloom source's are skipped for a RedisBloom target, with
/// the reason, nothing written).
#[test]
fn every_family_moves_between_every_pair_of_servers() {
    let mut ends: Vec<(Flavor, Module)> = Vec::new();
    for f in all_flavors() {
        ends.push((f, Module::Rsbloom));
        if reference_loads(f) {
            ends.push((f, Module::Reference));
        }
    }
    let sources: Vec<(Flavor, Module, Server, Vec<String>)> = ends
        .iter()
        .map(|&(f, m)| {
            let s = Server::start(f, m);
            let keys = fill(&mut s.conn(), "", m);
            (f, m, s, keys)
        })
        .collect();
    let targets: Vec<Server> = ends.iter().map(|&(f, m)| Server::start(f, m)).collect();
    let name = |f: Flavor, m: Module| {
        format!(
            "{}{}",
            f.name(),
            if m == Module::Reference {
                "/RedisBloom"
            } else {
                ""
            }
        )
    };
    let mut table = String::from("| source → target |");
    for &(f, m) in &ends {
        table += &format!(" {} |", name(f, m));
    }
    let mut failures = Vec::new();
    for (sf, sm, src, keys) in &sources {
        table += &format!("\n| {} |", name(*sf, *sm));
        for ((tf, tm), dst) in ends.iter().zip(&targets) {
            assert_eq!(dst.conn().cmd(&["FLUSHALL"]), common::ok());
            let (report, out) = copy(src.port, dst.port, |_| {});
            let both: Vec<&str> = families(*sm)
                .iter()
                .filter(|f| families(*tm).contains(f))
                .copied()
                .collect();
            let (moving, lacking): (Vec<&String>, Vec<&String>) =
                keys.iter().partition(|k| both.contains(&family_of(k)));
            let ok = both
                .iter()
                .filter(|&&f| {
                    moving
                        .iter()
                        .filter(|k| family_of(k) == f)
                        .all(|k| same(&mut src.conn(), &mut dst.conn(), k))
                })
                .count();
            let skipped_cleanly = report.skipped.len() == lacking.len()
                && report.skipped.iter().all(|(_, why)| {
                    why.starts_with("the target has no ") || why.starts_with(NOT_CONVERTED)
                })
                && lacking
                    .iter()
                    .all(|k| dst.conn().cmd(&["EXISTS", k.as_str()]).as_int() == 0);
            table += &format!(" {ok}/{} |", both.len());
            if ok != both.len()
                || report.copied_keys() != moving.len() as u64
                || !report.ok()
                || !skipped_cleanly
            {
                failures.push(format!(
                    "{} -> {}: {ok}/{}\n{out}",
                    name(*sf, *sm),
                    name(*tf, *tm),
                    both.len()
                ));
            }
        }
    }
    println!("{table}");
    assert!(failures.is_empty(), "{table}\n{}", failures.join("\n"));
}

/// A client keeps writing other keys of the source during the copy: every
/// selected key arrives identical, the writer is never held up for long.
#[test]
fn copies_while_the_source_keeps_serving() {
    let fl = flavors();
    let (sf, tf) = (fl[0], fl[fl.len() - 1]);
    let (src, dst) = pair(sf, tf);
    let mut c = src.conn();
    let mut keys = Vec::new();
    for i in 0..300 {
        keys.extend(fill(&mut c, &format!("k{i}:"), Module::Rsbloom));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, writes, port) = (stop.clone(), writes.clone(), src.port);
        std::thread::spawn(move || {
            let mut w = Conn::connect(port).expect("connect");
            assert_eq!(w.cmd(&["TDIGEST.CREATE", "w:td"]), common::ok());
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let item = i.to_string();
                for cmd in [
                    ["BF.ADD", "w:bf", &item],
                    ["CF.ADD", "w:cf", &item],
                    ["TDIGEST.ADD", "w:td", &item],
                ] {
                    let r = w.cmd(&cmd);
                    assert!(!r.is_error(), "{cmd:?}: {r:?}");
                }
                i += 1;
                writes.store(i, Ordering::Relaxed);
            }
        })
    };
    let before = writes.load(Ordering::Relaxed);
    let (report, out) = copy(src.port, dst.port, |o| {
        o.pattern = "k*".into();
        o.scan_count = 50;
    });
    let during = writes.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer");
    assert!(report.ok(), "{out}");
    assert_eq!(report.copied_keys(), keys.len() as u64, "{out}");
    assert!(during > 0, "the writer made no progress during the copy");
    let mut d = dst.conn();
    for k in &keys {
        assert!(same(&mut c, &mut d, k), "{k}");
    }
    assert_eq!(
        d.cmd(&["EXISTS", "w:bf"]).as_int(),
        0,
        "--match k* copied w:bf"
    );
    println!(
        "copied {} keys while {during} writes went to the source; {out}",
        keys.len()
    );
}

/// A client keeps adding items to the Cuckoo filter being copied in chunks:
/// chunks read after an add hold more fingerprints than the header counts,
/// which the target refuses (docs/cuckoo.md §14); the copy notices the write
/// and redoes or skips the key, and never fails it.
#[test]
fn a_cuckoo_filter_written_during_its_chunked_copy_is_redone() {
    let fl = flavors();
    let (src, dst) = pair(fl[0], fl[fl.len() - 1]);
    let mut c = src.conn();
    assert_eq!(
        common::line(&mut c, "CF.RESERVE cf 64 EXPANSION 2"),
        common::ok()
    );
    let items: Vec<String> = (0..2000).map(|i| format!("x{i}")).collect();
    let mut insert = vec!["CF.INSERT", "cf", "ITEMS"];
    insert.extend(items.iter().map(String::as_str));
    assert_eq!(c.cmd(&insert).as_array().len(), items.len());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (stop, port) = (stop.clone(), src.port);
        std::thread::spawn(move || {
            let mut w = Conn::connect(port).expect("connect");
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let r = w.cmd(&["CF.ADD", "cf", &format!("w{i}")]);
                assert!(!r.is_error(), "{r:?}");
                i += 1;
            }
            i
        })
    };
    let (mut copied, mut skipped) = (0, 0);
    for _ in 0..20 {
        let (report, out) = copy(src.port, dst.port, |o| {
            o.chunk_above = 1;
            o.replace = true;
        });
        assert!(report.ok(), "{out}");
        copied += report.copied_keys();
        skipped += report.skipped.len();
    }
    stop.store(true, Ordering::Relaxed);
    let adds = writer.join().expect("writer");
    assert_eq!(copied + skipped as u64, 20);
    println!("20 copies while {adds} adds went to the key: {copied} copied, {skipped} skipped");
}

/// A 3-master cluster to a standalone server and back, keys routed by slot:
/// after the first copy the second run finds every key identical; after the
/// cluster is emptied, the copy back restores the same values. Bloom,
/// Cuckoo and sliding-window keys go in chunks both ways (`chunk_above` 1 byte): WATCHed reads
/// on the node holding the key, LOADCHUNK and RENAME through the cluster
/// client.
#[test]
fn cluster_to_standalone_and_back() {
    let fl = flavors();
    let (cf, sf) = (fl[0], fl[fl.len() - 1]);
    let cluster = Cluster::start(cf, Module::Rsbloom);
    let mut cc = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    let mut keys = Vec::new();
    for i in 0..40 {
        for (k, cmd) in [
            (format!("c{i}:bf"), vec!["BF.ADD", "", "x"]),
            (format!("c{i}:cf"), vec!["CF.ADD", "", "x"]),
            (format!("c{i}:cms"), vec!["CMS.INITBYDIM", "", "10", "2"]),
            (format!("c{i}:topk"), vec!["TOPK.RESERVE", "", "3"]),
            (
                format!("c{i}:td"),
                vec!["TDIGEST.CREATE", "", "COMPRESSION", "50"],
            ),
            (
                format!("c{i}:apbf"),
                vec!["APBF.RESERVE", "", "TIME", "0.01", "100", "60"],
            ),
        ] {
            let mut c = redis::cmd(cmd[0]);
            c.arg(&k);
            for a in &cmd[2..] {
                c.arg(*a);
            }
            let _: redis::Value = c.query(&mut cc).expect("write to the cluster");
            keys.push(k);
        }
    }
    let bodies = |cc: &mut redis::cluster::ClusterConnection| -> Vec<Vec<u8>> {
        keys.iter()
            .map(|k| {
                let p: Vec<u8> = redis::cmd("DUMP").arg(k).query(cc).expect("DUMP");
                p[..p.len() - 10].to_vec()
            })
            .collect()
    };
    let original = bodies(&mut cc);
    let seed = cluster.live_ports()[0];
    let standalone = Server::start(sf, Module::Rsbloom);
    let (r, out) = copy(seed, standalone.port, |o| o.chunk_above = 1);
    assert!(r.ok() && r.copied_keys() == keys.len() as u64, "{out}");
    let mut s = standalone.conn();
    let there: Vec<Vec<u8>> = keys.iter().map(|k| body(&mut s, k).expect(k)).collect();
    assert_eq!(there, original);
    let stats = String::from_utf8_lossy(s.cmd(&["INFO", "commandstats"]).as_bytes()).into_owned();
    for chunked in [
        "cmdstat_bf.loadchunk:calls=",
        "cmdstat_cf.loadchunk:calls=",
        "cmdstat_apbf.loadchunk:calls=",
    ] {
        assert!(
            stats.to_lowercase().contains(chunked),
            "{chunked} missing:\n{stats}"
        );
    }

    let (r, out) = copy(standalone.port, seed, |_| {});
    assert!(
        r.ok() && r.identical.values().sum::<u64>() == keys.len() as u64 && r.copied_keys() == 0,
        "{out}"
    );
    for (port, _) in cluster.masters(seed) {
        assert_eq!(
            Conn::connect(port).unwrap().cmd(&["FLUSHALL"]),
            common::ok()
        );
    }
    let (r, out) = copy(standalone.port, seed, |o| o.chunk_above = 1);
    assert!(r.ok() && r.copied_keys() == keys.len() as u64, "{out}");
    assert_eq!(bodies(&mut cc), original);
}

/// A target whose proto-max-bulk-len (1 MiB, the lowest it takes) is below
/// the values: Bloom and Cuckoo filters move in chunks split to fit, a
/// sliding-window filter in its whole chunks (slices) where they fit; a
/// Count-Min Sketch, which has no chunked form, and a sliding-window filter
/// whose slices exceed the limit are refused with the reason.
/// (RDB strings uncompressed on both ends: sparse filters would otherwise
/// DUMP to a few KiB.)
#[test]
fn values_larger_than_the_target_accepts() {
    let fl = flavors();
    let (sf, tf) = (fl[fl.len() - 1], fl[0]);
    let src = Server::builder(sf, Module::Rsbloom)
        .uncompressed_rdb()
        .start();
    let dst = Server::builder(tf, Module::Rsbloom)
        .uncompressed_rdb()
        .arg("--proto-max-bulk-len")
        .arg("1mb")
        .start();
    let mut c = src.conn();
    for cmd in [
        vec!["BF.RESERVE", "big:bf", "0.0001", "2000000"],
        vec!["BF.MADD", "big:bf", "a", "b", "c"],
        vec!["PEXPIRE", "big:bf", "900000"],
        vec!["CF.RESERVE", "big:cf", "2000000", "BUCKETSIZE", "4"],
        vec!["CF.ADD", "big:cf", "a"],
        vec!["CMS.INITBYDIM", "big:cms", "100000", "4"],
        // 9.4 MiB in slices of 168 KiB; 13.9 MiB in slices of 1.07 MiB.
        vec!["APBF.RESERVE", "mid:apbf", "COUNT", "0.01", "4000000"],
        vec!["APBF.ADD", "mid:apbf", "a"],
        vec!["APBF.RESERVE", "big:apbf", "COUNT", "0.3", "14000000"],
    ] {
        assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
    }
    let bf_len = body(&mut c, "big:bf").unwrap().len();
    assert!(bf_len > 4 << 20, "Bloom filter of {bf_len} bytes");
    let (r, out) = copy(src.port, dst.port, |_| {});
    let mut d = dst.conn();
    assert_eq!(r.copied_keys(), 3, "{out}");
    for k in ["big:bf", "big:cf", "mid:apbf"] {
        assert!(same(&mut c, &mut d, k), "{k}\n{out}");
    }
    let mut skipped: Vec<_> = r
        .skipped
        .iter()
        .map(|(k, why)| (String::from_utf8_lossy(k), why.split(':').next().unwrap()))
        .collect();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            (
                "big:apbf".into(),
                "too large for one command (apbf chunks do not split)"
            ),
            (
                "big:cms".into(),
                "too large for one command (no chunked form)"
            )
        ],
        "{out}"
    );
    assert_eq!(d.cmd(&["EXISTS", "big:cms", "big:apbf"]).as_int(), 0);
    // Through DUMP when the limit is raised (--max-command beyond it is refused by the server).
    assert_eq!(
        d.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "64mb"]),
        common::ok()
    );
    let (r, out) = copy(src.port, dst.port, |o| o.pattern = "big:*".into());
    assert_eq!(r.copied_keys(), 2, "{out}");
    for k in ["big:cms", "big:apbf"] {
        assert!(same(&mut c, &mut d, k), "{k}\n{out}");
    }
}

/// Existing target keys: identical ones are recognised (a re-run copies
/// nothing), different ones are left alone unless --replace; a dry run
/// writes nothing; other types are counted, not copied; databases are chosen.
#[test]
fn reruns_replace_dry_runs_and_databases() {
    let (src, dst) = pair(flavors()[0], flavors()[0]);
    let mut c = src.conn();
    assert_eq!(c.cmd(&["SELECT", "2"]), common::ok());
    let keys = fill(&mut c, "", Module::Rsbloom);
    assert_eq!(c.cmd(&["SET", "plain", "string"]), common::ok());
    let mut d = dst.conn();
    assert_eq!(d.cmd(&["SELECT", "5"]), common::ok());
    let n = keys.len() as u64;
    let dbs = |o: &mut Options| {
        o.db = Some(2);
        o.target_db = Some(5);
    };

    let (r, out) = copy(src.port, dst.port, |o| {
        dbs(o);
        o.dry_run = true;
    });
    assert_eq!(
        r.would_copy.values().map(|c| c.keys).sum::<u64>(),
        n,
        "{out}"
    );
    assert_eq!(d.cmd(&["DBSIZE"]).as_int(), 0, "dry run wrote: {out}");

    let (r, out) = copy(src.port, dst.port, dbs);
    assert_eq!(
        (r.copied_keys(), r.other_types.get("string")),
        (n, Some(&1)),
        "{out}"
    );
    for k in &keys {
        assert!(same(&mut c, &mut d, k), "{k}");
    }
    assert_eq!(
        d.cmd(&["DBSIZE"]).as_int() as u64,
        n,
        "no private key left behind"
    );

    let (r, out) = copy(src.port, dst.port, dbs);
    assert_eq!(
        (r.copied_keys(), r.identical.values().sum::<u64>()),
        (0, n),
        "{out}"
    );

    assert!(!d.cmd(&["CMS.INCRBY", "cms", "z", "1"]).is_error());
    let (r, out) = copy(src.port, dst.port, dbs);
    assert_eq!(r.skipped.len(), 1, "{out}");
    assert!(r.skipped[0].1.contains("--replace"), "{out}");
    assert!(!same(&mut c, &mut d, "cms"));
    let (r, out) = copy(src.port, dst.port, |o| {
        dbs(o);
        o.replace = true;
    });
    assert_eq!(
        (r.copied_keys(), r.identical.values().sum::<u64>()),
        (1, n - 1),
        "{out}"
    );
    assert!(same(&mut c, &mut d, "cms"));
}

/// rsbloom in its default configuration saves Count-Min Sketches in
/// encoding 1, which RedisBloom 2.8.2 cannot read (docs/cms.md §6.5): to it
/// a sketch of 4-byte cells goes in encoding 0, the same content; one of 1-
/// or 8-byte cells, which encoding 0 cannot hold, is skipped with the
/// reason, nothing written. rsbloom targets get all three as they are.
#[test]
fn cms_encoding_1_to_an_older_module() {
    let f = flavors()
        .into_iter()
        .find(|&f| reference_loads(f))
        .expect("a server where RedisBloom 2.8.2 loads");
    let src = Server::start(f, Module::Rsbloom);
    let mut c = src.conn();
    for cmd in [
        vec!["CMS.INITBYDIM", "cms", "50", "3"],
        vec!["CMS.INCRBY", "cms", "a", "5", "b", "70000"],
        vec!["CMS.INITBYDIM", "cms-1", "50", "3", "CELL_SIZE", "1"],
        vec!["CMS.INITBYDIM", "cms-8", "50", "3", "CELL_SIZE", "8"],
    ] {
        assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
    }
    // Encoding 1: the module id ends in 1 (docs/cms.md §6.1).
    let encoding = |c: &mut Conn, k: &str| body(c, k).map(|b| b[9] & 3);
    assert_eq!(encoding(&mut c, "cms"), Some(1));

    let old = Server::start(f, Module::Reference);
    let (r, out) = copy(src.port, old.port, |_| {});
    assert!(r.ok() && r.copied_keys() == 1, "{out}");
    let mut d = old.conn();
    assert!(same(&mut c, &mut d, "cms"), "{out}");
    assert_eq!(encoding(&mut d, "cms"), Some(0));
    let mut skipped = r.skipped.clone();
    skipped.sort();
    assert_eq!(
        skipped,
        [("cms-1", 1), ("cms-8", 8)].map(|(k, size)| (
            k.as_bytes().to_vec(),
            format!(
                "the target's module (bf ver 20802) reads only cms encoding 0: cell size \
                 {size}: the encoding the target reads holds cell size 4 only"
            )
        ))
    );
    assert_eq!(d.cmd(&["EXISTS", "cms-1", "cms-8"]).as_int(), 0);

    let new = Server::start(f, Module::Rsbloom);
    let (r, out) = copy(src.port, new.port, |_| {});
    assert!(r.ok() && r.copied_keys() == 3, "{out}");
    let mut d = new.conn();
    for k in ["cms", "cms-1", "cms-8"] {
        assert_eq!(body(&mut c, k), body(&mut d, k), "{k}");
    }
}

/// The command line, as a user runs it: exit codes and the report.
#[test]
fn command_line() {
    let (src, dst) = pair(flavors()[0], flavors()[0]);
    fill(&mut src.conn(), "", Module::Rsbloom);
    let run = |to: u16, extra: &[&str]| {
        let mut args = vec![
            "rsbloom-copy".to_string(),
            "--from".into(),
            url(src.port),
            "--to".into(),
            url(to),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut out = Vec::new();
        let code = rsbloom_copy::main_with(args, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    };
    let (code, out) = run(dst.port, &["--match", "c*", "--verbose"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("copied    cf (cuckoo")
            && out.contains("copied    cms (cms")
            && out.contains("copied    cmsw (cmsw"),
        "{out}"
    );
    assert!(out.contains("copied: 3 keys"), "{out}");
    // A target that does not answer: exit code 2, nothing copied.
    let (code, out) = run(1, &[]);
    assert_eq!((code, out.as_str()), (2, ""));
    // Not an option.
    assert_eq!(run(dst.port, &["--bogus"]).0, 2);
}

// ---- valkey-bloom's Bloom filters (type `bloomfltr`) ----------------------
//
// rsbloom serves a second Bloom type beside RedisBloom's: valkey-bloom
// 1.0.1's (shared COMPAT-VALKEY-BLOOM.md), created under `bf.bloom-flavor
// valkey-bloom`. The tool copies it by DUMP/RESTORE like the families
// without chunks, and never converts one Bloom type into the other.

/// The skip reason for a Bloom filter whose type the target lacks (the
/// text before the first colon, as the report groups it).
const NOT_CONVERTED: &str =
    "valkey-bloom and RedisBloom filters cannot be converted into each other \
     (the items are not stored)";

/// Valkey 9.1 and Redis 8.6, the servers these tests run on; `None` (said
/// on stderr) when `RSBLOOM_SERVERS` leaves either out.
fn valkey9_and_redis86() -> Option<(Flavor, Flavor)> {
    let fl = all_flavors();
    if fl.contains(&Flavor::Valkey9) && fl.contains(&Flavor::Redis86) {
        Some((Flavor::Valkey9, Flavor::Redis86))
    } else {
        eprintln!("valkey-bloom copy tests need valkey9 and redis86 in RSBLOOM_SERVERS: skipped");
        None
    }
}

/// The valkey-bloom 1.0.1 oracle for Valkey ≥ 8.1, only ever run (a black
/// box): `$RSBLOOM_VALKEY_BLOOM_ORACLE` (the file, or its directory), else
/// `../shared/oracles/valkey-bloom/libvalkey_bloom.so` beside the
/// repository. Absent (users' machines): `None`, and a loud notice that
/// `what` is skipped.
fn valkey_bloom_oracle(what: &str) -> Option<std::path::PathBuf> {
    const FILE: &str = "libvalkey_bloom.so";
    let path = match std::env::var_os("RSBLOOM_VALKEY_BLOOM_ORACLE").map(std::path::PathBuf::from) {
        Some(p) if p.is_dir() => p.join(FILE),
        Some(p) => p,
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/oracles/valkey-bloom")
            .join(FILE),
    };
    if path.is_file() {
        return Some(path);
    }
    eprintln!(
        "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
         !!! valkey-bloom oracle NOT FOUND at {} (set RSBLOOM_VALKEY_BLOOM_ORACLE):\n\
         !!! SKIPPING {what}\n\
         !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
        path.display()
    );
    None
}

/// A Valkey server running the valkey-bloom oracle at `path`.
fn oracle_server(f: Flavor, path: &std::path::Path) -> Server {
    Server::builder(f, Module::None)
        .arg("--loadmodule")
        .arg(path.to_str().expect("utf-8 path"))
        .start()
}

/// rsbloom creating valkey-bloom filters (`bf.bloom-flavor valkey-bloom`).
fn vb_rsbloom(f: Flavor) -> common::server::Builder {
    Server::builder(f, Module::Rsbloom)
        .module_arg("bloom-flavor")
        .module_arg("valkey-bloom")
}

/// A valkey-bloom filter written by `fill_vb`: its key and the items added.
struct VbKey {
    key: String,
    items: Vec<String>,
}

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

/// valkey-bloom filters of several shapes, `prefix`ed, with valkey-bloom's
/// commands (rsbloom's valkey-bloom flavour or the oracle): default (random
/// seed, auto-created, with a TTL), scaled to 3 sub-filters (fixed seed),
/// non-scaling and full, seeded (`SEED`, `TIGHTENING`, `EXPANSION 4`), and
/// with `large` a 10 MiB one (`BF.RESERVE 0.001 5600000`, 20,000 items).
fn fill_vb(c: &mut Conn, prefix: &str, large: bool) -> Vec<VbKey> {
    let k = |name: &str| format!("{prefix}{name}");
    let mut out = Vec::new();
    let run = |c: &mut Conn, args: Vec<String>| {
        let r = c.cmd(&args);
        assert!(!r.is_error(), "{:?}: {r:?}", &args[..args.len().min(8)]);
    };
    let key = k("vb:default");
    let its = items("d", 7);
    run(c, vec!["BF.ADD".into(), key.clone(), its[0].clone()]);
    run(
        c,
        [vec!["BF.MADD".into(), key.clone()], its[1..].to_vec()].concat(),
    );
    run(c, vec!["PEXPIRE".into(), key.clone(), "600000".into()]);
    out.push(VbKey { key, items: its });

    let key = k("vb:scaled");
    let its = items("s", 30);
    run(
        c,
        ["BF.RESERVE", &key, "0.01", "5"].map(String::from).to_vec(),
    );
    run(
        c,
        [vec!["BF.MADD".into(), key.clone()], its.clone()].concat(),
    );
    out.push(VbKey { key, items: its });

    let key = k("vb:nonscaling");
    let its = items("n", 10);
    run(
        c,
        ["BF.RESERVE", &key, "0.001", "10", "NONSCALING"]
            .map(String::from)
            .to_vec(),
    );
    run(
        c,
        [vec!["BF.MADD".into(), key.clone()], its.clone()].concat(),
    );
    out.push(VbKey { key, items: its });

    let key = k("vb:seeded");
    let its = items("t", 30);
    let head = [
        "BF.INSERT",
        &key,
        "CAPACITY",
        "5",
        "ERROR",
        "0.05",
        "TIGHTENING",
        "0.3",
        "EXPANSION",
        "4",
        "SEED",
        "0123456789abcdefghijklmnopqrstuv",
        "ITEMS",
    ];
    run(c, [head.map(String::from).to_vec(), its.clone()].concat());
    out.push(VbKey { key, items: its });

    if large {
        let key = k("vb:large");
        let its = items("l", 20_000);
        run(
            c,
            ["BF.RESERVE", &key, "0.001", "5600000"]
                .map(String::from)
                .to_vec(),
        );
        for batch in its.chunks(2000) {
            run(
                c,
                [vec!["BF.MADD".into(), key.clone()], batch.to_vec()].concat(),
            );
        }
        out.push(VbKey { key, items: its });
    }
    for v in &out {
        assert_eq!(
            c.cmd(&["TYPE", v.key.as_str()]),
            Reply::Simple("bloomfltr".into()),
            "{} is not a valkey-bloom filter",
            v.key
        );
    }
    out
}

/// BF.INFO without `Size`: it counts the sub-filter list's slots, which
/// differ after some paths (BF.LOAD: COMPAT-VALKEY-BLOOM §5.4).
fn info_but_size(c: &mut Conn, key: &str) -> Vec<Reply> {
    let info = c.cmd(&["BF.INFO", key]);
    assert!(!info.is_error(), "BF.INFO {key}: {info:?}");
    let all = info.as_array();
    let out: Vec<Reply> = all
        .chunks(2)
        .filter(|kv| {
            kv[0] != Reply::Bulk(b"Size".to_vec()) && kv[0] != Reply::Simple("Size".into())
        })
        .flatten()
        .cloned()
        .collect();
    // valkey-bloom's reply: 16 elements (scaling) or 12, Size among them.
    assert!(
        out.len() + 2 == all.len() && out.len() >= 10,
        "BF.INFO {key}: {info:?}"
    );
    out
}

/// The decoded module fields of `key`'s DUMP (whatever the string encoding).
fn vb_fields(c: &mut Conn, key: &str) -> Option<(u64, Vec<rsbloom_copy::payload::Prim>)> {
    rsbloom_copy::payload::primitives(&body(c, key)?).ok()
}

/// Whether `v` on `dst` is the filter it is on `src`, read through the
/// module: `bloomfltr` there, BF.INFO but Size and BF.CARD equal, every
/// added item found, the answers for 500 items never added equal, the DUMP
/// module fields equal, the TTL kept (as `same`). `Err`: what differs.
fn same_vb(src: &mut Conn, dst: &mut Conn, v: &VbKey) -> Result<(), String> {
    let key = v.key.as_str();
    let check = |what: &str, a: Reply, b: Reply| {
        if a == b {
            Ok(())
        } else {
            Err(format!("{key}: {what}: source {a:?}, target {b:?}"))
        }
    };
    check(
        "TYPE",
        Reply::Simple("bloomfltr".into()),
        dst.cmd(&["TYPE", key]),
    )?;
    let (a, b) = (info_but_size(src, key), info_but_size(dst, key));
    if a != b {
        return Err(format!("{key}: BF.INFO: source {a:?}, target {b:?}"));
    }
    check(
        "BF.CARD",
        src.cmd(&["BF.CARD", key]),
        dst.cmd(&["BF.CARD", key]),
    )?;
    let mexists = |c: &mut Conn, its: &[String]| {
        let mut args = vec!["BF.MEXISTS".to_string(), key.to_string()];
        args.extend_from_slice(its);
        c.cmd(&args)
    };
    let added = mexists(dst, &v.items);
    if added.as_array().iter().any(|r| r.as_int() != 1) {
        return Err(format!("{key}: an added item is missing on the target"));
    }
    check("BF.MEXISTS (added)", mexists(src, &v.items), added)?;
    let absent = items("absent", 500);
    check(
        "BF.MEXISTS (never added)",
        mexists(src, &absent),
        mexists(dst, &absent),
    )?;
    let (a, b) = (vb_fields(src, key), vb_fields(dst, key));
    if a.is_none() || a != b {
        return Err(format!("{key}: DUMP module fields differ"));
    }
    let ttl_kept = match src.cmd(&["PTTL", key]).as_int() {
        -1 => dst.cmd(&["PTTL", key]).as_int() == -1,
        t => (1..=t + 5000).contains(&dst.cmd(&["PTTL", key]).as_int()),
    };
    ttl_kept
        .then_some(())
        .ok_or_else(|| format!("{key}: TTL not kept"))
}

fn check_all_vb(src: &mut Conn, dst: &mut Conn, keys: &[VbKey], out: &str) {
    for v in keys {
        if let Err(e) = same_vb(src, dst, v) {
            panic!("{e}\n{out}");
        }
    }
}

/// The bytes of the copied valkey-bloom filters.
fn vb_copied(r: &Report) -> (u64, u64) {
    r.copied
        .get("valkey-bloom")
        .map_or((0, 0), |c| (c.keys, c.bytes))
}

/// valkey-bloom filters made by rsbloom (valkey-bloom flavour) on Valkey
/// 9.1 (RDB 80), copied to rsbloom on Redis 8.6 (RDB 12) and back to a
/// fresh Valkey 9.1: the payload's footer is rewritten each way, the module
/// value the same. The Redis 8.6 target runs rsbloom in its default
/// (RedisBloom) flavour: it serves both types whatever the setting. The
/// source saves uncompressed (the 10 MiB filter moves as a 10 MiB
/// payload), the targets compress: the check compares decoded fields. A
/// dry run lists the keys first; a re-run finds them identical.
#[test]
fn valkey_bloom_filters_between_valkey9_and_redis86() {
    let Some((valkey, redis)) = valkey9_and_redis86() else {
        return;
    };
    let src = vb_rsbloom(valkey).uncompressed_rdb().start();
    let mut c = src.conn();
    let keys = fill_vb(&mut c, "", true);
    let n = keys.len() as u64;
    let large = body(&mut c, "vb:large").unwrap().len();
    assert!(
        large > 10_000_000,
        "the large filter DUMPs to {large} bytes"
    );

    let dst = Server::start(redis, Module::Rsbloom);
    let mut d = dst.conn();
    let (r, out) = copy(src.port, dst.port, |o| o.dry_run = true);
    assert_eq!(
        r.would_copy.get("valkey-bloom").map(|c| c.keys),
        Some(n),
        "{out}"
    );
    for v in &keys {
        assert!(
            out.contains(&format!("would copy {} (valkey-bloom, about ", v.key)),
            "{out}"
        );
    }
    assert_eq!(d.cmd(&["DBSIZE"]).as_int(), 0, "the dry run wrote: {out}");

    let started = std::time::Instant::now();
    let (r, out) = copy(src.port, dst.port, |_| {});
    let secs = started.elapsed().as_secs_f64();
    assert!(
        r.ok() && vb_copied(&r).0 == n && r.skipped.is_empty(),
        "{out}"
    );
    check_all_vb(&mut c, &mut d, &keys, &out);
    println!(
        "Valkey 9.1 -> Redis 8.6: {} valkey-bloom filters, {} payload bytes (the large one \
         {large}), {secs:.2} s",
        n,
        vb_copied(&r).1
    );
    let (r, out) = copy(src.port, dst.port, |_| {});
    assert_eq!(
        (r.copied_keys(), r.identical.get("valkey-bloom")),
        (0, Some(&n)),
        "{out}"
    );

    let back = vb_rsbloom(valkey).start();
    let mut b = back.conn();
    let (r, out) = copy(dst.port, back.port, |_| {});
    assert!(r.ok() && vb_copied(&r).0 == n, "{out}");
    check_all_vb(&mut d, &mut b, &keys, &out);
    check_all_vb(&mut c, &mut b, &keys, &out);
    // The filters still work on each end: an add after the copy scales the same.
    for conn in [&mut c, &mut d, &mut b] {
        let r = conn.cmd(&["BF.MADD", "vb:scaled", "more:1", "more:2", "more:3"]);
        assert!(!r.is_error(), "{r:?}");
    }
    assert_eq!(
        info_but_size(&mut c, "vb:scaled"),
        info_but_size(&mut b, "vb:scaled")
    );
    assert_eq!(
        info_but_size(&mut c, "vb:scaled"),
        info_but_size(&mut d, "vb:scaled")
    );
}

/// Filters made by the real valkey-bloom 1.0.1 on Valkey 9.1 copied into
/// rsbloom on Redis 8.6 (another RDB version) and on Valkey 9.1 (the same),
/// verified there; then from rsbloom on Redis 8.6 into a fresh oracle
/// server, which must load what rsbloom saved. Skipped, loudly, without
/// the oracle.
#[test]
fn valkey_bloom_oracle_to_rsbloom_and_back() {
    let Some((valkey, redis)) = valkey9_and_redis86() else {
        return;
    };
    let Some(oracle) = valkey_bloom_oracle("copying from and to the valkey-bloom oracle") else {
        return;
    };
    let src = oracle_server(valkey, &oracle);
    let mut c = src.conn();
    let keys = fill_vb(&mut c, "", true);
    let n = keys.len() as u64;
    let mut bytes = 0;
    for (f, name) in [(redis, "Redis 8.6"), (valkey, "Valkey 9.1")] {
        let dst = Server::start(f, Module::Rsbloom);
        let mut d = dst.conn();
        let (r, out) = copy(src.port, dst.port, |_| {});
        assert!(
            r.ok() && vb_copied(&r).0 == n && r.skipped.is_empty(),
            "{name}: {out}"
        );
        check_all_vb(&mut c, &mut d, &keys, &out);
        bytes = vb_copied(&r).1;
        println!("valkey-bloom oracle -> rsbloom on {name}: {n} filters, {bytes} payload bytes");
        if f == redis {
            let back = oracle_server(valkey, &oracle);
            let mut b = back.conn();
            let (r, out) = copy(dst.port, back.port, |_| {});
            assert!(r.ok() && vb_copied(&r).0 == n, "back to the oracle: {out}");
            check_all_vb(&mut c, &mut b, &keys, &out);
        }
    }
    assert!(bytes > 0);
}

/// Nothing is converted between the two Bloom types. A source holding
/// both (rsbloom in its default flavour with a RedisBloom filter, and in
/// its valkey-bloom flavour with valkey-bloom filters: one server serves
/// both types) towards RedisBloom 2.8.2 — its valkey-bloom filters are
/// skipped with the reason, nothing written, the RedisBloom filter copied —
/// and towards the valkey-bloom oracle — the other way round, and the
/// families it lacks (Cuckoo, …) skipped as before. Dry runs list the
/// skipped keys with the reason; the reports count them.
#[test]
fn the_two_bloom_types_are_never_converted() {
    let Some((valkey, _)) = valkey9_and_redis86() else {
        return;
    };
    let src = vb_rsbloom(valkey).start();
    let mut c = src.conn();
    let vb = fill_vb(&mut c, "", false);
    // RedisBloom's filters (and the other families), written through
    // RESTORE from a default rsbloom: the valkey-bloom flavour creates
    // only valkey-bloom filters.
    let rb_src = Server::start(valkey, Module::Rsbloom);
    let mut rc = rb_src.conn();
    let rb = fill(&mut rc, "rb:", Module::Reference);
    let (r, out) = copy(rb_src.port, src.port, |_| {});
    assert!(r.ok() && r.copied_keys() == rb.len() as u64, "{out}");
    assert_eq!(c.cmd(&["TYPE", "rb:bf"]), Reply::Simple("MBbloom--".into()));
    let is_vb = |k: &[u8]| k.starts_with(b"vb:");

    // Towards RedisBloom 2.8.2: the valkey-bloom filters are skipped.
    if reference_loads(valkey) {
        let old = Server::start(valkey, Module::Reference);
        let mut d = old.conn();
        let (r, out) = copy(src.port, old.port, |o| o.dry_run = true);
        assert_eq!(r.skipped.len(), vb.len(), "{out}");
        for v in &vb {
            assert!(
                out.contains(&format!(
                    "skipped   {}: {NOT_CONVERTED}: the target has no bloomfltr",
                    v.key
                )),
                "{out}"
            );
        }
        assert_eq!(
            r.would_copy.values().map(|c| c.keys).sum::<u64>(),
            rb.len() as u64
        );
        let (r, out) = copy(src.port, old.port, |_| {});
        assert!(r.ok() && r.copied_keys() == rb.len() as u64, "{out}");
        assert_eq!(r.skipped.len(), vb.len(), "{out}");
        assert!(
            r.skipped
                .iter()
                .all(|(k, why)| is_vb(k) && why.starts_with(NOT_CONVERTED)),
            "{out}"
        );
        assert!(
            out.contains(&format!("skipped: {} keys: {NOT_CONVERTED}\n", vb.len())),
            "{out}"
        );
        for v in &vb {
            assert_eq!(d.cmd(&["EXISTS", v.key.as_str()]).as_int(), 0, "{}", v.key);
        }
        for k in &rb {
            assert!(same(&mut c, &mut d, k), "{k}\n{out}");
        }
        println!("to RedisBloom 2.8.2: {out}");
    } else {
        eprintln!(
            "RedisBloom 2.8.2 does not load on {}: that part skipped",
            valkey.name()
        );
    }

    // Towards the valkey-bloom oracle: the RedisBloom filter is skipped.
    let Some(oracle) = valkey_bloom_oracle("copying towards the valkey-bloom oracle") else {
        return;
    };
    let vbt = oracle_server(valkey, &oracle);
    let mut d = vbt.conn();
    let (r, out) = copy(src.port, vbt.port, |o| o.dry_run = true);
    assert!(
        out.contains(&format!(
            "skipped   rb:bf: {NOT_CONVERTED}: the target has no MBbloom--"
        )),
        "{out}"
    );
    assert_eq!(
        r.would_copy.get("valkey-bloom").map(|c| c.keys),
        Some(vb.len() as u64),
        "{out}"
    );
    let (r, out) = copy(src.port, vbt.port, |_| {});
    assert!(r.ok() && vb_copied(&r).0 == vb.len() as u64, "{out}");
    assert_eq!(r.copied_keys(), vb.len() as u64, "{out}");
    check_all_vb(&mut c, &mut d, &vb, &out);
    let why = |k: &str| {
        r.skipped
            .iter()
            .find(|(key, _)| key == k.as_bytes())
            .map(|(_, why)| why.clone())
            .unwrap_or_default()
    };
    assert!(why("rb:bf").starts_with(NOT_CONVERTED), "{out}");
    for k in rb.iter().filter(|k| family_of(k) != "bf") {
        assert!(why(k).starts_with("the target has no "), "{k}: {out}");
    }
    assert_eq!(r.skipped.len(), rb.len(), "{out}");
    assert!(
        out.contains(&format!("skipped: 1 keys: {NOT_CONVERTED}\n")),
        "{out}"
    );
    for k in &rb {
        assert_eq!(d.cmd(&["EXISTS", k.as_str()]).as_int(), 0, "{k}");
    }
    println!("to the valkey-bloom oracle: {out}");
}
