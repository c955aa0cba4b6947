//! Redis Cluster helpers: a six-node cluster of test servers, its
//! administration node by node, and redis-rs's cluster client for the
//! commands a test routes by key ([`Cluster::client`]).

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use super::resp::Conn;
use super::server::{Flavor, Module, Server, SlotMigration};
use super::{info, wait};

/// Six servers (three masters with one replica each) formed into a cluster
/// with `redis-cli --cluster create`.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

/// One line of `CLUSTER NODES`.
#[derive(Clone, Debug)]
pub struct NodeLine {
    pub id: String,
    pub port: u16,
    pub flags: Vec<String>,
    /// Node id of its master (replicas).
    pub master: Option<String>,
    pub connected: bool,
    pub slots: Vec<String>,
}

impl NodeLine {
    pub fn is_master(&self) -> bool {
        self.flags.iter().any(|f| f == "master")
    }
    pub fn is_replica(&self) -> bool {
        self.flags.iter().any(|f| f == "slave")
    }
    /// No failure or handshake flag and the link connected.
    pub fn healthy(&self) -> bool {
        self.connected
            && !self
                .flags
                .iter()
                .any(|f| matches!(f.as_str(), "fail" | "fail?" | "handshake" | "noaddr"))
    }
}

/// `CLUSTER NODES` as seen by the node on `via`.
pub fn cluster_nodes(via: u16) -> Result<Vec<NodeLine>, String> {
    let mut c = Conn::connect(via).map_err(|e| format!("connect {via}: {e}"))?;
    let r = c.cmd(&["CLUSTER", "NODES"]);
    if r.is_error() {
        return Err(format!("CLUSTER NODES on {via}: {r:?}"));
    }
    let text = String::from_utf8_lossy(r.as_bytes()).into_owned();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() < 8 {
                return Err(format!("short CLUSTER NODES line {l:?}"));
            }
            Ok(NodeLine {
                id: f[0].to_string(),
                port: addr_port(f[1]),
                flags: f[2].split(',').map(str::to_string).collect(),
                master: (f[3] != "-").then(|| f[3].to_string()),
                connected: f[7] == "connected",
                slots: f[8..].iter().map(|s| s.to_string()).collect(),
            })
        })
        .collect()
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
        cluster.wait_converged("cluster formed");
        cluster
    }

    /// Waits until every live node agrees on the layout: all slots served,
    /// `cluster_state:ok`, three healthy masters with slots, each with one
    /// healthy replica (as `CLUSTER NODES` shows it: the role a node takes
    /// reaches the others by gossip, after `cluster_state:ok`), and each
    /// master's replication link to its replica online.
    pub fn wait_converged(&self, what: &str) {
        let ports = self.live_ports();
        wait::until_every(what, wait::STATE, Duration::from_millis(100), || {
            self.converged(&ports)
        });
    }

    fn converged(&self, ports: &[u16]) -> Result<(), String> {
        for &p in ports {
            for (field, want) in [("cluster_state", "ok"), ("cluster_slots_ok", "16384")] {
                let got = Self::info_field(p, field);
                if got.as_deref() != Some(want) {
                    return Err(format!("{p}: {field}:{got:?}"));
                }
            }
        }
        let mut masters_seen = None;
        for &p in ports {
            let nodes = cluster_nodes(p)?;
            let masters: Vec<&NodeLine> = nodes
                .iter()
                .filter(|n| n.is_master() && !n.slots.is_empty() && n.healthy())
                .collect();
            let mut with_replica: Vec<u16> = masters
                .iter()
                .filter(|m| {
                    nodes.iter().any(|n| {
                        n.is_replica() && n.healthy() && n.master.as_deref() == Some(&m.id)
                    })
                })
                .map(|m| m.port)
                .collect();
            with_replica.sort();
            if masters.len() != ports.len() / 2 || with_replica.len() != masters.len() {
                return Err(format!("{p} sees {nodes:?}"));
            }
            match &masters_seen {
                None => masters_seen = Some(with_replica),
                Some(m) if *m != with_replica => {
                    return Err(format!("{p} sees masters {with_replica:?}, others {m:?}"))
                }
                Some(_) => {}
            }
        }
        for m in masters_seen.unwrap_or_default() {
            let mut c = Conn::connect(m).map_err(|e| format!("connect {m}: {e}"))?;
            let r = c.cmd(&["INFO", "replication"]);
            let text = String::from_utf8_lossy(r.as_bytes()).into_owned();
            if !(text.contains("connected_slaves:1") && text.contains("state=online")) {
                return Err(format!("master {m}: {text}"));
            }
        }
        Ok(())
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

    /// Polls `f` (every 100 ms) until it returns `Ok`; at the deadline
    /// panics with what it returned last.
    pub fn wait_until(
        &self,
        what: &str,
        limit: Duration,
        mut f: impl FnMut(&Self) -> Result<(), String>,
    ) {
        wait::until_every(what, limit, Duration::from_millis(100), || f(self))
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

    /// redis-rs's cluster client, seeded with every live node. Its retry
    /// waits (1.28 s and up, growing to minutes over 16 retries) are cut so
    /// that a command retried on TRYAGAIN/CLUSTERDOWN/LOADING gives up
    /// within the harness deadline ([`wait::STATE`]) instead of hanging.
    pub fn client(&self) -> redis::cluster::ClusterClient {
        let seeds = self
            .live_ports()
            .into_iter()
            .map(|p| format!("redis://127.0.0.1:{p}"));
        redis::cluster::ClusterClient::builder(seeds)
            .retries(24)
            .min_retry_wait(10)
            .max_retry_wait(2000)
            .connection_timeout(Duration::from_secs(10))
            .response_timeout(wait::STATE)
            .build()
            .expect("cluster client")
    }

    /// Node id of the node on `port` (`CLUSTER MYID`).
    pub fn node_id(port: u16) -> String {
        let mut c = Conn::connect(port).expect("connect");
        String::from_utf8(c.cmd(&["CLUSTER", "MYID"]).as_bytes().to_vec()).expect("utf-8 id")
    }

    /// Port of the replica of the master on `master_port`, once `CLUSTER
    /// NODES` as seen by that master shows one (roles converge by gossip).
    pub fn replica_of(&self, master_port: u16) -> u16 {
        let id = Self::node_id(master_port);
        wait::until_every(
            &format!("a replica of {master_port} in its CLUSTER NODES"),
            wait::STATE,
            Duration::from_millis(100),
            || {
                let nodes = cluster_nodes(master_port)?;
                nodes
                    .iter()
                    .find(|n| n.is_replica() && n.healthy() && n.master.as_deref() == Some(&id))
                    .map(|n| n.port)
                    .ok_or_else(|| format!("{nodes:?}"))
            },
        )
    }
}

impl Drop for Cluster {
    /// A failed cluster test shows the end of every node's log.
    fn drop(&mut self) {
        if std::thread::panicking() {
            for n in &self.nodes {
                let log = n.log();
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                eprintln!("---- node {} log (last 40 lines):\n{tail}", n.port);
            }
        }
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

/// The hash slot of `key`, as the node on `via` computes it.
pub fn keyslot(via: u16, key: &str) -> u16 {
    let r = Conn::connect(via)
        .expect("connect")
        .cmd(&["CLUSTER", "KEYSLOT", key]);
    r.as_int() as u16
}

/// The master serving `slot`, as the node on `via` sees it.
pub fn owner(via: u16, slot: u16) -> Option<u16> {
    cluster_slots(via)
        .into_iter()
        .find(|&(start, end, _)| (start..=end).contains(&slot))
        .map(|(_, _, port)| port)
}

/// Cluster redirections the nodes answered (`MOVED`, `ASK`: `INFO
/// errorstats`) and `ASKING` commands they received (`INFO commandstats`),
/// summed over `ports`: what a client did, seen from the servers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Redirects {
    pub moved: u64,
    pub ask: u64,
    pub asking: u64,
}

pub fn redirects(ports: &[u16]) -> Redirects {
    // `errorstat_ASK:count=2`, `cmdstat_asking:calls=2,usec=…`.
    let count = |text: &str, line: &str, field: &str| -> u64 {
        info::find(text, line).map_or(0, |v| {
            v.split(',')
                .find_map(|kv| kv.strip_prefix(field)?.parse().ok())
                .unwrap_or_else(|| panic!("{line}:{v}"))
        })
    };
    let mut sum = Redirects::default();
    for &p in ports {
        let mut c = Conn::connect(p).expect("connect");
        let errors = info::text(&mut c, "errorstats");
        let commands = info::text(&mut c, "commandstats");
        sum.moved += count(&errors, "errorstat_MOVED", "count=");
        sum.ask += count(&errors, "errorstat_ASK", "count=");
        sum.asking += count(&commands, "cmdstat_asking", "calls=");
    }
    sum
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

/// Starts an atomic slot migration of slots `first..=last` from the master on
/// port `source` to the master on port `target`, by the server's interface:
/// Valkey's runs on the source, Redis's on the target.
pub fn start_slot_migration(kind: SlotMigration, source: u16, target: u16, first: u16, last: u16) {
    let (a, b) = (first.to_string(), last.to_string());
    match kind {
        SlotMigration::MigrateSlots => {
            let id = Cluster::node_id(target);
            let cmd = ["CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", &a, &b, "NODE", &id];
            let r = Conn::connect(source).expect("connect").cmd(&cmd);
            assert_eq!(r, super::ok(), "MIGRATESLOTS");
        }
        SlotMigration::Migration => {
            let cmd = ["CLUSTER", "MIGRATION", "IMPORT", &a, &b];
            let r = Conn::connect(target).expect("connect").cmd(&cmd);
            assert!(
                matches!(r, super::resp::Reply::Bulk(_)),
                "CLUSTER MIGRATION IMPORT: {r:?}"
            );
        }
    }
}
