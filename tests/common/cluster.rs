//! Redis Cluster helpers: a six-node cluster of test servers and a small
//! cluster-aware client (CRC16 key slots with hash tags, slot map from
//! `CLUSTER SLOTS`, `MOVED`/`ASK` redirections, refresh on errors).

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use super::info;
use super::resp::{Conn, Reply};
use super::server::{Flavor, Module, Server};

pub const SLOTS: usize = 16384;

/// CRC16/XMODEM (polynomial 0x1021, initial value 0), as Redis Cluster uses.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The hash slot of `key`: only the part between the first `{` and the
/// next `}` counts, when that part is not empty.
pub fn key_slot(key: &[u8]) -> u16 {
    let mut hashed = key;
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                hashed = &key[open + 1..open + 1 + len];
            }
        }
    }
    crc16(hashed) % SLOTS as u16
}

/// Six servers (three masters with one replica each) formed into a cluster
/// with `redis-cli --cluster create`.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start(flavor: Flavor, module: Module) -> Cluster {
        let nodes: Vec<Server> = (0..6)
            .map(|_| {
                Server::builder(flavor, module)
                    .arg("--cluster-enabled")
                    .arg("yes")
                    .arg("--cluster-config-file")
                    .arg("nodes.conf")
                    .arg("--cluster-node-timeout")
                    .arg("2000")
                    .arg("--cluster-replica-validity-factor")
                    .arg("0")
                    // Replicas sync at once instead of after the default 5 s.
                    .arg("--repl-diskless-sync-delay")
                    .arg("0")
                    .start()
            })
            .collect();
        let mut cli = Command::new("redis-cli");
        cli.arg("--cluster").arg("create");
        for n in &nodes {
            cli.arg(format!("127.0.0.1:{}", n.port));
        }
        cli.args(["--cluster-replicas", "1", "--cluster-yes"]);
        let out = cli.output().expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = Cluster { nodes };
        let ports = cluster.live_ports();
        cluster.wait_until("cluster formed", Duration::from_secs(60), |c| {
            c.all_ok(&ports) && c.masters(ports[0]).len() == 3
        });
        // `cluster_state:ok` says nothing about replication: wait until every
        // master has its replica online.
        cluster.wait_until("replicas in sync", Duration::from_secs(60), |c| {
            c.masters(ports[0]).keys().all(|&m| {
                let info = Conn::connect(m)
                    .map(|mut conn| conn.cmd(&["INFO", "replication"]))
                    .ok();
                info.is_some_and(|r| {
                    let text = String::from_utf8_lossy(r.as_bytes()).to_string();
                    text.contains("connected_slaves:1") && text.contains("state=online")
                })
            })
        });
        cluster
    }

    /// Ports of nodes that have not been killed.
    pub fn live_ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    pub fn node(&self, port: u16) -> &Server {
        self.nodes.iter().find(|n| n.port == port).expect("node")
    }

    /// SIGKILLs the node on `port` and removes it from the cluster's list.
    pub fn kill9(&mut self, port: u16) -> Server {
        let i = self
            .nodes
            .iter()
            .position(|n| n.port == port)
            .expect("node");
        let mut s = self.nodes.remove(i);
        s.kill9();
        s
    }

    pub fn info_field(port: u16, field: &str) -> Option<String> {
        let mut c = Conn::connect(port).ok()?;
        let r = c.cmd(&["CLUSTER", "INFO"]);
        let text = String::from_utf8_lossy(r.as_bytes()).to_string();
        info::find(&text, field).map(str::to_string)
    }

    /// `cluster_state:ok` and all slots assigned, as seen by every node in `ports`.
    pub fn all_ok(&self, ports: &[u16]) -> bool {
        ports.iter().all(|&p| {
            Self::info_field(p, "cluster_state").as_deref() == Some("ok")
                && Self::info_field(p, "cluster_slots_ok").as_deref() == Some("16384")
        })
    }

    pub fn wait_until(&self, what: &str, limit: Duration, mut f: impl FnMut(&Self) -> bool) {
        let deadline = Instant::now() + limit;
        while !f(self) {
            assert!(Instant::now() < deadline, "timed out waiting for: {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `port` of each master serving at least one slot → its slot ranges,
    /// as node `via` sees it.
    pub fn masters(&self, via: u16) -> HashMap<u16, Vec<(u16, u16)>> {
        let mut out: HashMap<u16, Vec<(u16, u16)>> = HashMap::new();
        for (start, end, port) in cluster_slots(via) {
            out.entry(port).or_default().push((start, end));
        }
        out
    }

    /// Node id of the node on `port` (`CLUSTER MYID`).
    pub fn node_id(port: u16) -> String {
        let mut c = Conn::connect(port).expect("connect");
        String::from_utf8(c.cmd(&["CLUSTER", "MYID"]).as_bytes().to_vec()).expect("utf-8 id")
    }

    /// Port of the replica of the master on `master_port`, per `CLUSTER NODES`
    /// as seen by that master.
    pub fn replica_of(&self, master_port: u16) -> u16 {
        let id = Self::node_id(master_port);
        let mut c = Conn::connect(master_port).expect("connect");
        let nodes = String::from_utf8(c.cmd(&["CLUSTER", "NODES"]).as_bytes().to_vec())
            .expect("utf-8 nodes");
        nodes
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[2].contains("slave") && f[3] == id).then(|| addr_port(f[1]))
            })
            .unwrap_or_else(|| panic!("no replica of {master_port}:\n{nodes}"))
    }
}

/// Port of a `CLUSTER NODES` address (`ip:port@cport[,hostname]`).
fn addr_port(addr: &str) -> u16 {
    let hostport = addr.split(['@', ',']).next().expect("address");
    hostport
        .rsplit(':')
        .next()
        .expect("port")
        .parse()
        .expect("numeric port")
}

/// `(start, end, master port)` for every range in `CLUSTER SLOTS` of node `via`.
pub fn cluster_slots(via: u16) -> Vec<(u16, u16, u16)> {
    let mut c = match Conn::connect(via) {
        Ok(c) => c,
        Err(_) => return Vec::new(),
    };
    let r = c.cmd(&["CLUSTER", "SLOTS"]);
    if r.is_error() {
        return Vec::new();
    }
    r.as_array()
        .iter()
        .map(|range| {
            let f = range.as_array();
            let master = f[2].as_array();
            (
                f[0].as_int() as u16,
                f[1].as_int() as u16,
                master[1].as_int() as u16,
            )
        })
        .collect()
}

/// A cluster-aware client: routes every command by the key at position 1.
pub struct ClusterClient {
    seeds: Vec<u16>,
    slots: Vec<Option<u16>>,
    conns: HashMap<u16, Conn>,
    pub moved: usize,
    pub asked: usize,
    pub refreshes: usize,
}

impl ClusterClient {
    pub fn new(seeds: &[u16]) -> ClusterClient {
        let mut c = ClusterClient {
            seeds: seeds.to_vec(),
            slots: vec![None; SLOTS],
            conns: HashMap::new(),
            moved: 0,
            asked: 0,
            refreshes: 0,
        };
        c.refresh();
        c
    }

    /// Reloads the slot map from the first seed that answers.
    pub fn refresh(&mut self) {
        self.refreshes += 1;
        for &seed in &self.seeds {
            let ranges = cluster_slots(seed);
            if ranges.is_empty() {
                continue;
            }
            self.slots = vec![None; SLOTS];
            for (start, end, port) in ranges {
                for s in start..=end {
                    self.slots[s as usize] = Some(port);
                }
            }
            return;
        }
        panic!("no seed node answered CLUSTER SLOTS");
    }

    /// Drops a node that was killed: no more connections or seeds to it.
    pub fn forget(&mut self, port: u16) {
        self.conns.remove(&port);
        self.seeds.retain(|&p| p != port);
    }

    /// The master currently believed to serve `key`.
    pub fn owner(&self, key: &[u8]) -> Option<u16> {
        self.slots[key_slot(key) as usize]
    }

    fn conn(&mut self, port: u16) -> Option<&mut Conn> {
        if let std::collections::hash_map::Entry::Vacant(e) = self.conns.entry(port) {
            e.insert(Conn::connect(port).ok()?);
        }
        self.conns.get_mut(&port)
    }

    /// Runs one command whose key is `args[1]`, following redirections.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Reply {
        let slot = key_slot(args[1].as_ref()) as usize;
        let mut ask_to: Option<u16> = None;
        for _ in 0..50 {
            let port = match ask_to.take() {
                Some(p) => {
                    let c = self.conn(p).expect("connect to ASK target");
                    let r = c.cmd(&["ASKING"]);
                    assert_eq!(r, Reply::Simple("OK".into()));
                    p
                }
                None => match self.slots[slot] {
                    Some(p) => p,
                    None => {
                        self.pause_and_refresh();
                        continue;
                    }
                },
            };
            let reply = match self.conn(port) {
                Some(c) => c.cmd(args),
                None => {
                    self.pause_and_refresh();
                    continue;
                }
            };
            if let Reply::Error(e) = &reply {
                let words: Vec<&str> = e.split(' ').collect();
                match words[0] {
                    "MOVED" => {
                        self.moved += 1;
                        let to = redirect_port(words[2]);
                        self.slots[words[1].parse::<usize>().expect("slot")] = Some(to);
                        continue;
                    }
                    "ASK" => {
                        self.asked += 1;
                        ask_to = Some(redirect_port(words[2]));
                        continue;
                    }
                    "CLUSTERDOWN" | "TRYAGAIN" | "LOADING" => {
                        self.pause_and_refresh();
                        continue;
                    }
                    _ => {}
                }
            }
            return reply;
        }
        panic!(
            "too many redirections for {:?}",
            String::from_utf8_lossy(args[1].as_ref())
        );
    }

    /// Runs a command on every master (e.g. `WAIT`), returning port → reply.
    pub fn on_masters<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<(u16, Reply)> {
        let mut ports: Vec<u16> = self.slots.iter().flatten().copied().collect();
        ports.sort();
        ports.dedup();
        ports
            .into_iter()
            .map(|p| (p, self.conn(p).expect("connect to master").cmd(args)))
            .collect()
    }

    fn pause_and_refresh(&mut self) {
        std::thread::sleep(Duration::from_millis(100));
        self.refresh();
    }
}

fn redirect_port(addr: &str) -> u16 {
    addr.rsplit(':')
        .next()
        .expect("port")
        .parse()
        .expect("numeric port")
}
