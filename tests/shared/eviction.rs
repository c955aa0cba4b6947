//! `maxmemory` under every eviction policy, every family: with usage above
//! the limit, a write flagged `denyoom` answers OOM and changes nothing
//! where the policy cannot evict (noeviction; volatile-* with no key that
//! has a TTL), and goes through, other keys evicted, where it can
//! (allkeys-*); the replica ends identical and the server lives. One master
//! and one replica serve every case (FLUSHALL between them).
use common::families::{configure, tour_on, TYPES};
use common::*;

/// Policies whose candidates are keys with a TTL: the fillers have none.
const VOLATILE: [&str; 4] = [
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
];
const ALLKEYS: [&str; 4] = [
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "allkeys-lrm",
];
/// The families' keys (`<family>:<name>`), not the fillers.
const FAMILY_KEYS: &str = "*:*";

/// Whether the server flags `cmd` deny-oom (COMMAND INFO).
fn denyoom(c: &mut Conn, cmd: &str) -> bool {
    let info = c.cmd(&["COMMAND", "INFO", cmd]);
    let flags = info.as_array()[0].as_array()[2].clone();
    flags.as_array().iter().any(|f| f.as_bytes() == b"denyoom")
}

/// Every key matching `pattern` with its DUMP.
fn dumps(c: &mut Conn, pattern: &str) -> Vec<(Vec<u8>, Reply)> {
    let mut keys: Vec<Vec<u8>> = c
        .cmd(&["KEYS", pattern])
        .as_array()
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let d = c.cmd(&args!["DUMP", k]);
            (k, d)
        })
        .collect()
}

/// `used_memory` as eviction counts it: without the replication and AOF
/// buffers (`mem_not_counted_for_evict`), which the fillers fill too.
fn counted(c: &mut Conn) -> u64 {
    let used = info::used_memory::<u64>(c);
    let buffers: u64 = info::field(c, "memory", "mem_not_counted_for_evict")
        .parse()
        .expect("mem_not_counted_for_evict");
    used - buffers
}

/// One key per family (its tour, on `<family>:K`), then 100 KB strings
/// until the counted memory is 2 MB above where it started; `maxmemory`
/// then 1 MB below it (clear of the noise of client buffers), so every
/// write must first free memory.
fn fill(c: &mut Conn, evicts: bool) {
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "0"]), ok());
    assert_eq!(c.cmd(&["FLUSHALL", "SYNC"]), ok());
    for t in TYPES {
        configure(c, t);
        for cmd in tour_on(t, &format!("{}:K", t.family)) {
            assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
        }
    }
    let start = counted(c);
    let mut i = 0;
    while counted(c) < start + 2_000_000 {
        let set = args!["SET", format!("filler{i}"), vec![b'x'; 100_000]];
        assert_eq!(c.cmd(&set), ok());
        i += 1;
    }
    // Set under noeviction: CONFIG SET maxmemory evicts at once by the
    // policy in force. Evicting policies must then free 1 MB; the others
    // get a limit far below the baseline (draining buffers can make a near
    // one pass again).
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]),
        ok()
    );
    let below = if evicts {
        counted(c) - 1_000_000
    } else {
        1_000_000
    };
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "maxmemory", &below.to_string()]),
        ok()
    );
}

#[test]
fn maxmemory_every_policy_every_family_replica_identical() {
    for flavor in flavors() {
        let master = Server::start(flavor, Module::Rsbloom);
        let replica = master.start_replica();
        let (mut c, mut r) = (master.conn(), replica.conn());
        let policies: Vec<&str> = ["noeviction"]
            .into_iter()
            .chain(VOLATILE)
            .chain(ALLKEYS)
            .filter(|p| c.cmd(&["CONFIG", "SET", "maxmemory-policy", p]) == ok())
            .collect();
        assert!(policies.len() >= 8, "{flavor:?}: {policies:?}");
        for policy in &policies {
            let evicts = policy.starts_with("allkeys");
            fill(&mut c, evicts);
            // Read first: any command (INFO too) evicts before it runs.
            let evicted = info::field(&mut c, "stats", "evicted_keys");
            assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", policy]), ok());

            for t in TYPES {
                configure(&mut c, t);
                // The tour on a new key (creation first), then on the old one.
                for key in [format!("{}:new", t.family), format!("{}:K", t.family)] {
                    for cmd in tour_on(t, &key) {
                        let before = dumps(&mut c, FAMILY_KEYS);
                        let reply = c.cmd(&cmd);
                        let oom = reply.is_error() && reply.error_text().starts_with("OOM");
                        let refused = !evicts && denyoom(&mut c, &cmd[0]);
                        assert_eq!(oom, refused, "{flavor:?} {policy} {cmd:?}: {reply:?}");
                        if refused {
                            assert_eq!(
                                dumps(&mut c, FAMILY_KEYS),
                                before,
                                "{policy} {cmd:?} wrote"
                            );
                        }
                    }
                }
            }
            if evicts {
                let now = info::field(&mut c, "stats", "evicted_keys");
                assert_ne!(now, evicted, "{flavor:?} {policy}: nothing evicted");
            }
            assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "0"]), ok());
            info::wait_replica_synced(&mut c, &mut r);
            let (on_replica, on_master) = (dumps(&mut r, "*"), dumps(&mut c, "*"));
            assert_eq!(
                on_replica, on_master,
                "{flavor:?} {policy}: replica differs"
            );
        }
        alive(&mut c);
        alive(&mut r);
    }
}
