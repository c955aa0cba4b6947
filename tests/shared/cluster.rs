//! rsbloom in Redis Cluster, through redis-rs's cluster client (the one
//! real users run): keys declared so that every BF/CF command routes,
//! filters spread over three masters survive a master failover unchanged,
//! and a filter key of each type migrates slot-wise (MIGRATING/IMPORTING,
//! `ASK`, `MIGRATE`, `SETSLOT NODE`, `MOVED`) byte-identically. Which
//! redirections the client followed is read from the servers' statistics;
//! cluster administration and byte comparisons go to single nodes.
use common::client::{self, query, try_query};
use common::cluster::{keyslot, owner, redirects, Cluster, Redirects};
use common::families::{tour_on, TYPES};
use common::*;
use redis::cluster::ClusterConnection;
use redis::{ErrorKind, ServerErrorKind, Value};
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

const BF_KEYS: usize = 600;
/// WAIT returns as soon as the replica acknowledged; the timeout is the
/// deadline on a loaded machine.
const WAIT_MS: &str = "60000";
const CF_KEYS: usize = 600;

fn bf_key(i: usize) -> String {
    // Every tenth Bloom key shares its hash tag (and so its slot) with a
    // Cuckoo key.
    if i.is_multiple_of(10) {
        format!("{{tag{i}}}:bf")
    } else {
        format!("bf:{i}")
    }
}

fn cf_key(i: usize) -> String {
    if i.is_multiple_of(10) {
        format!("{{tag{i}}}:cf")
    } else {
        format!("cf:{i}")
    }
}

fn items(i: usize, n: usize) -> Vec<String> {
    (0..n).map(|j| format!("item-{i}-{j}")).collect()
}

fn absent(i: usize) -> Vec<String> {
    (0..10).map(|j| format!("absent-{i}-{j}")).collect()
}

fn args(parts: &[&str], rest: &[String]) -> Vec<String> {
    parts
        .iter()
        .map(|s| s.to_string())
        .chain(rest.iter().cloned())
        .collect()
}

/// Keys whose hash tags are edge cases of the slot rule (empty tag, a tag
/// after an empty one, two tags): the client must hash them as the server.
const ODD_KEYS: [&str; 3] = ["a{}b", "{}x{y}", "x{y}{z}"];

fn expect_ok(c: &mut ClusterConnection, args: &[&str]) {
    assert_eq!(query::<Value, _>(c, args), Value::Okay, "{args:?}");
}

fn expect_int(c: &mut ClusterConnection, args: &[&str], want: i64) {
    assert_eq!(query::<i64, _>(c, args), want, "{args:?}");
}

/// Creates and fills Bloom filter `i`, with the reserve/add/madd/insert
/// variant chosen by `i % 4`.
fn populate_bf(c: &mut ClusterConnection, i: usize) {
    let k = bf_key(i);
    match i % 4 {
        0 => {
            expect_ok(c, &["BF.RESERVE", &k, "0.01", "20", "EXPANSION", "2"]);
            for it in items(i, 30) {
                let _: i64 = query(c, &["BF.ADD", &k, &it]);
            }
            if i.is_multiple_of(10) {
                // A merged key (docs/bloom.md §12), migrated and failed over
                // below; its source shares its slot and its items (so its
                // bits and counts).
                let src = format!("{{tag{i}}}:src");
                expect_ok(c, &["BF.RESERVE", &src, "0.01", "20", "EXPANSION", "2"]);
                let _: Vec<i64> = query(c, &args(&["BF.MADD", &src], &items(i, 30)));
                expect_ok(c, &["BF.MERGE", &k, &src, &k]);
                // Only the merged key is observed (and counted).
                expect_int(c, &["DEL", &src], 1);
            }
        }
        1 => {
            expect_ok(c, &["BF.RESERVE", &k, "0.001", "100", "NONSCALING"]);
            let r: Vec<i64> = query(c, &args(&["BF.MADD", &k], &items(i, 20)));
            assert_eq!(r.len(), 20, "{k}: {r:?}");
        }
        2 => {
            let r: Vec<i64> = query(
                c,
                &args(
                    &[
                        "BF.INSERT",
                        &k,
                        "CAPACITY",
                        "10",
                        "ERROR",
                        "0.05",
                        "EXPANSION",
                        "3",
                        "ITEMS",
                    ],
                    &items(i, 25),
                ),
            );
            assert_eq!(r.len(), 25, "{k}: {r:?}");
        }
        _ => {
            let all = items(i, 15);
            expect_int(c, &["BF.ADD", &k, &all[0]], 1);
            let r: Vec<i64> = query(c, &args(&["BF.INSERT", &k, "NOCREATE", "ITEMS"], &all[1..]));
            assert_eq!(r.len(), 14, "{k}: {r:?}");
        }
    }
}

fn bf_items(i: usize) -> Vec<String> {
    items(i, [30, 20, 25, 15][i % 4])
}

/// Creates and fills Cuckoo filter `i`, with the variant chosen by `i % 4`.
fn populate_cf(c: &mut ClusterConnection, i: usize) {
    let k = cf_key(i);
    let all = cf_items(i);
    match i % 4 {
        0 => {
            expect_ok(
                c,
                &[
                    "CF.RESERVE",
                    &k,
                    "16",
                    "BUCKETSIZE",
                    "2",
                    "MAXITERATIONS",
                    "50",
                    "EXPANSION",
                    "2",
                ],
            );
            for it in &all {
                expect_int(c, &["CF.ADD", &k, it], 1);
            }
            for it in &all[..3] {
                expect_int(c, &["CF.DEL", &k, it], 1);
            }
            // Readonly-flagged but replicated: must reach the replica.
            expect_ok(c, &["CF.COMPACT", &k]);
        }
        1 => {
            let r: Vec<i64> = query(
                c,
                &args(&["CF.INSERT", &k, "CAPACITY", "100", "ITEMS"], &all),
            );
            assert_eq!(r, vec![1; all.len()], "{k}");
            // Second copies: CF.COUNT reports 2 for these.
            for it in &all[..5] {
                expect_int(c, &["CF.ADD", &k, it], 1);
            }
            expect_int(c, &["CF.DEL", &k, &all[0]], 1);
        }
        2 => {
            let mut list = all.clone();
            list.extend(all[..4].iter().cloned());
            let r: Vec<i64> = query(
                c,
                &args(&["CF.INSERTNX", &k, "CAPACITY", "50", "ITEMS"], &list),
            );
            // A fingerprint collision may make a new item look present.
            let new = r[..all.len()].iter().filter(|&&a| a == 1).count();
            assert!(new + 2 >= all.len(), "{k}: {r:?}");
            assert_eq!(r[all.len()..], [0; 4], "{k}: {r:?}");
            expect_int(c, &["CF.ADDNX", &k, &all[0]], 0);
        }
        _ => {
            for it in &all {
                let r: i64 = query(c, &["CF.ADDNX", &k, it]);
                assert!(r == 1 || r == 0, "{k}: {r}");
            }
        }
    }
}

fn cf_items(i: usize) -> Vec<String> {
    items(i, [30, 20, 20, 10][i % 4])
}

/// Items of Cuckoo filter `i` that must still be found.
fn cf_present(i: usize) -> Vec<String> {
    let all = cf_items(i);
    match i % 4 {
        0 => all[3..].to_vec(),
        _ => all,
    }
}

/// What a filter answers through the cluster client.
#[derive(Debug, PartialEq)]
struct Seen {
    /// BF.MEXISTS / CF.MEXISTS of its items, then of ten absent ones.
    mexists: Vec<i64>,
    /// BF.EXISTS of its first item / CF.EXISTS of its last one.
    exists: i64,
    /// BF.INFO / CF.INFO.
    info: BTreeMap<String, Option<i64>>,
    /// Bloom: BF.CARD and BF.INFO FILTERS; Cuckoo: CF.COUNT of its first
    /// six items.
    counts: Vec<i64>,
    dump: Vec<u8>,
}

/// What every filter answers, per key.
fn observe(c: &mut ClusterConnection) -> BTreeMap<String, Seen> {
    let mut out = BTreeMap::new();
    for i in 0..BF_KEYS {
        let k = bf_key(i);
        let mut probe = bf_items(i);
        probe.extend(absent(i));
        let filters: Vec<i64> = query(c, &["BF.INFO", &k, "FILTERS"]);
        let seen = Seen {
            mexists: query(c, &args(&["BF.MEXISTS", &k], &probe)),
            exists: query(c, &["BF.EXISTS", &k, &probe[0]]),
            info: query(c, &["BF.INFO", &k]),
            counts: vec![query(c, &["BF.CARD", &k]), filters[0]],
            dump: query(c, &["DUMP", &k]),
        };
        out.insert(k, seen);
    }
    for i in 0..CF_KEYS {
        let k = cf_key(i);
        let mut probe = cf_items(i);
        probe.extend(absent(i));
        let seen = Seen {
            mexists: query(c, &args(&["CF.MEXISTS", &k], &probe)),
            exists: query(c, &["CF.EXISTS", &k, &probe[probe.len() - 11]]),
            info: query(c, &["CF.INFO", &k]),
            counts: probe[..6]
                .iter()
                .map(|it| query(c, &["CF.COUNT", &k, it]))
                .collect(),
            dump: query(c, &["DUMP", &k]),
        };
        out.insert(k, seen);
    }
    out
}

/// What must hold of a fresh observation, whatever the layout.
fn check_answers(seen: &BTreeMap<String, Seen>) {
    for i in 0..BF_KEYS {
        let k = bf_key(i);
        let a = &seen[&k];
        let n = bf_items(i).len();
        // No false negatives.
        assert!(a.mexists[..n].iter().all(|&e| e == 1), "{k}: {a:?}");
        assert_eq!(a.exists, 1, "{k}");
        let (card, filters) = (a.counts[0], a.counts[1]);
        match i % 4 {
            0 | 2 => assert!(filters > 1, "{k} should have scaled: {:?}", a.info),
            _ => assert_eq!(filters, 1, "{k}"),
        }
        assert!(card > 0 && card <= n as i64, "{k}: BF.CARD {card}");
        assert!(!a.dump.is_empty(), "{k}: empty DUMP");
    }
    for i in 0..CF_KEYS {
        let k = cf_key(i);
        let a = &seen[&k];
        let present: HashSet<String> = cf_present(i).into_iter().collect();
        for (it, &e) in cf_items(i).iter().zip(&a.mexists) {
            if present.contains(it) {
                assert_eq!(e, 1, "{k} {it}");
            }
        }
        assert_eq!(a.exists, 1, "{k}");
        // Copies stored; CF.COUNT may add fingerprint collisions on top (and,
        // like RedisBloom, counts twice when both candidate buckets coincide).
        let stored: [i64; 6] = match i % 4 {
            // Item 0 was added twice and deleted once; items 1..5 twice.
            1 => [1, 2, 2, 2, 2, 1],
            0 => [0, 0, 0, 1, 1, 1],
            _ => [1, 1, 1, 1, 1, 1],
        };
        for (n, want) in a.counts.iter().zip(stored) {
            assert!(*n >= want, "{k}: counts {:?}", a.counts);
        }
    }
}

/// Every module command's key is found by the server's key extraction
/// (what cluster clients use with `COMMAND GETKEYS` / `COMMAND INFO`).
fn check_getkeys(port: u16) {
    let mut c = client::connect(port);
    let cmds: &[&[&str]] = &[
        &["BF.RESERVE", "K", "0.01", "100"],
        &["BF.ADD", "K", "x"],
        &["BF.MADD", "K", "x", "y"],
        &["BF.INSERT", "K", "ITEMS", "x"],
        &["BF.EXISTS", "K", "x"],
        &["BF.MEXISTS", "K", "x", "y"],
        &["BF.INFO", "K"],
        &["BF.CARD", "K"],
        &["BF.DEBUG", "K"],
        &["BF.SCANDUMP", "K", "0"],
        &["BF.LOADCHUNK", "K", "1", "data"],
        &["CF.RESERVE", "K", "100"],
        &["CF.ADD", "K", "x"],
        &["CF.ADDNX", "K", "x"],
        &["CF.INSERT", "K", "ITEMS", "x"],
        &["CF.INSERTNX", "K", "ITEMS", "x"],
        &["CF.EXISTS", "K", "x"],
        &["CF.MEXISTS", "K", "x", "y"],
        &["CF.COUNT", "K", "x"],
        &["CF.DEL", "K", "x"],
        &["CF.COMPACT", "K"],
        &["CF.SCANDUMP", "K", "0"],
        &["CF.LOADCHUNK", "K", "1", "data"],
        &["CF.INFO", "K"],
        &["CF.DEBUG", "K"],
    ];
    for cmd in cmds {
        let key = format!("{{user{}}}:{}", cmd[0].len(), cmd[0].to_lowercase());
        let mut full = vec!["COMMAND", "GETKEYS"];
        full.extend(cmd.iter().map(|a| if *a == "K" { key.as_str() } else { a }));
        let keys: Vec<String> = query(&mut c, &full);
        assert_eq!(keys, [key], "COMMAND GETKEYS {cmd:?}");
    }
    // BF.MERGE: every argument after the name is a key.
    let merge = ["BF.MERGE", "{u}:d", "{u}:a", "{u}:b"];
    let keys: Vec<String> = query(&mut c, &[&["COMMAND", "GETKEYS"][..], &merge].concat());
    assert_eq!(keys, merge[1..], "COMMAND GETKEYS {merge:?}");
}

/// The redirection a plain (not cluster-aware) connection to `port` gets
/// for `cmd`: `MOVED`'s address and slot.
fn moved(port: u16, cmd: &[&str]) -> (String, u16) {
    let e = try_query::<Value, _>(&mut client::connect(port), cmd)
        .expect_err(&format!("{cmd:?} on {port} must be redirected"));
    let kind = ErrorKind::Server(ServerErrorKind::Moved);
    assert_eq!(e.kind(), kind, "{cmd:?} on {port}: {e}");
    let (addr, slot) = e.redirect_node().expect("MOVED address");
    (addr.to_string(), slot)
}

/// Sent to a node that does not own the key, every BF/CF command is
/// redirected with `MOVED <slot of the key> <owner>` (the server found the key).
fn check_moved(ports: &[u16]) {
    for cmd in [
        &["BF.ADD", "bf:1", "x"][..],
        &["BF.EXISTS", "bf:1", "x"],
        &["CF.ADD", "cf:1", "x"],
        &["CF.COUNT", "cf:1", "x"],
        &["CF.COMPACT", "cf:1"],
    ] {
        let slot = keyslot(ports[0], cmd[1]);
        let at = owner(ports[0], slot).expect("owner");
        // A replica would redirect too; pick any node but the owner.
        let other = *ports.iter().find(|&&p| p != at).expect("other node");
        let want = (format!("127.0.0.1:{at}"), slot);
        assert_eq!(moved(other, cmd), want, "{cmd:?} sent to {other}");
    }
    // BF.MERGE's keys must share a slot.
    let (a, b) = ("bf:1", "bf:2");
    assert_ne!(keyslot(ports[0], a), keyslot(ports[0], b));
    let e = try_query::<Value, _>(&mut client::connect(ports[0]), &["BF.MERGE", a, a, b])
        .expect_err("BF.MERGE across slots");
    assert_eq!(e.code(), Some("CROSSSLOT"), "{e}");
}

fn dbsize(port: u16) -> i64 {
    query(&mut client::connect(port), &["DBSIZE"])
}

fn cluster_test(flavor: Flavor) {
    let t0 = Instant::now();
    let mut cluster = Cluster::start(flavor, Module::Rsbloom);
    let ports = cluster.live_ports();
    eprintln!("{flavor:?}: cluster formed in {:?}", t0.elapsed());

    check_getkeys(ports[0]);
    check_moved(&ports);

    let client = cluster.client();
    let mut c = client.get_connection().expect("cluster connection");
    let quiet = redirects(&ports);
    let t = Instant::now();
    for i in 0..BF_KEYS {
        populate_bf(&mut c, i);
    }
    for i in 0..CF_KEYS {
        populate_cf(&mut c, i);
    }
    for k in ODD_KEYS {
        expect_int(&mut c, &["BF.ADD", k, "x"], 1);
    }
    eprintln!("{flavor:?}: populated in {:?}", t.elapsed());

    // The keys cover all three masters.
    let masters = cluster.masters(ports[0]);
    let sizes: Vec<i64> = masters.keys().map(|&p| dbsize(p)).collect();
    assert_eq!(sizes.len(), 3, "{masters:?}");
    assert!(
        sizes.iter().all(|&n| n >= 200),
        "DBSIZE per master {sizes:?}"
    );
    let keys = (BF_KEYS + CF_KEYS + ODD_KEYS.len()) as i64;
    assert_eq!(
        sizes.iter().sum::<i64>(),
        keys,
        "DBSIZE per master {sizes:?}"
    );

    let before = observe(&mut c);
    check_answers(&before);
    assert_eq!(
        redirects(&ports),
        quiet,
        "stable cluster: the client sends every command to the key's owner"
    );

    // ---- Failover: kill -9 a master once every write reached its replica.
    // The client sends WAIT to every master and answers the smallest count.
    let acked: i64 = query(&mut c, &["WAIT", "1", WAIT_MS]);
    assert!(acked >= 1, "WAIT: {acked}");
    let victim = owner(ports[0], keyslot(ports[0], "bf:0")).expect("owner");
    let victim_slots = cluster.masters(victim)[&victim].clone();
    let victim_keys = dbsize(victim);
    let replica = cluster.replica_of(victim);
    let t = Instant::now();
    cluster.kill9(victim);
    let live = cluster.live_ports();
    cluster.wait_until("replica promoted", wait::STATE, |cl| {
        for &p in &live {
            let m = cl.masters(p);
            if m.len() != 3 || m.get(&replica) != Some(&victim_slots) {
                return Err(format!("{p} sees masters {m:?}"));
            }
        }
        match cl.all_ok(&live) {
            true => Ok(()),
            false => Err("cluster_state not ok everywhere".into()),
        }
    });
    eprintln!(
        "{flavor:?}: master {victim} killed, replica {replica} promoted in {:?}",
        t.elapsed()
    );
    let role = Conn::connect(replica).expect("connect").cmd(&["ROLE"]);
    assert_eq!(role.as_array()[0], bulk("master"), "{role:?}");
    assert_eq!(dbsize(replica), victim_keys, "keys of the promoted replica");

    // redis-rs 1.8.1's sync cluster connection does not reload its slot map
    // when a node stops answering: it reconnects to the dead address until
    // its retries run out. As an application would, take a new connection
    // from the client, which reads the slot map from a live node.
    let mut c = client.get_connection().expect("cluster connection");
    let quiet = redirects(&live);
    let after = observe(&mut c);
    for (k, a) in &before {
        assert_eq!(a, &after[k], "{k} answers differently after failover");
    }
    assert_eq!(
        redirects(&live),
        quiet,
        "the new slot map has the new owner"
    );
    // The promoted replica accepts writes to the filters it inherited.
    expect_int(&mut c, &["BF.ADD", "bf:0", "after-failover"], 1);
    expect_int(&mut c, &["CF.ADD", "cf:0", "after-failover"], 1);
    let mut promoted = client::connect(replica);
    let found: i64 = query(&mut promoted, &["BF.EXISTS", "bf:0", "after-failover"]);
    assert_eq!(found, 1, "the write went to the promoted replica");

    // ---- Slot migration of one filter of each type, with the slot's owner
    // changing underneath the client.
    let (tag, slot, source) = (0..)
        .map(|n| format!("{{mig{n}}}"))
        .map(|tag| {
            let slot = keyslot(live[0], &tag);
            (tag, slot, owner(live[0], slot).expect("owner"))
        })
        .find(|(_, slot, source)| {
            let r = Conn::connect(*source).expect("connect").cmd(&[
                "CLUSTER",
                "COUNTKEYSINSLOT",
                &slot.to_string(),
            ]);
            r == int(0)
        })
        .expect("a slot without keys");
    let (bfk, cfk) = (format!("{tag}bf"), format!("{tag}cf"));
    expect_ok(
        &mut c,
        &["BF.RESERVE", &bfk, "0.01", "100", "EXPANSION", "2"],
    );
    expect_ok(
        &mut c,
        &[
            "CF.RESERVE",
            &cfk,
            "200",
            "BUCKETSIZE",
            "4",
            "EXPANSION",
            "2",
        ],
    );
    let many = items(9999, 1500);
    for chunk in many.chunks(100) {
        let _: Vec<i64> = query(&mut c, &args(&["BF.MADD", &bfk], chunk));
        let _: Vec<i64> = query(&mut c, &args(&["CF.INSERT", &cfk, "ITEMS"], chunk));
    }
    for it in &many[..50] {
        expect_int(&mut c, &["CF.DEL", &cfk, it], 1);
    }
    let masters: Vec<u16> = {
        let mut m: Vec<u16> = cluster.masters(source).into_keys().collect();
        m.sort();
        m
    };
    let target = *masters
        .iter()
        .find(|&&p| p != source && p != replica)
        .or_else(|| masters.iter().find(|&&p| p != source))
        .expect("target master");
    let (source_id, target_id) = (Cluster::node_id(source), Cluster::node_id(target));
    let mut src = Conn::connect(source).expect("connect");
    let mut dst = Conn::connect(target).expect("connect");
    assert_eq!(
        src.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]),
        int(2)
    );
    let dumps = [src.cmd(&["DUMP", &bfk]), src.cmd(&["DUMP", &cfk])];
    let scans = [
        filters::scandump_with_end(&mut src, Fam::Bf, &bfk),
        filters::scandump_with_end(&mut src, Fam::Cf, &cfk),
    ];
    assert!(
        scans[0].0.len() > 1 && scans[1].0.len() > 1, // header and data, then the end marker
        "multi-chunk dumps"
    );
    let infos = [src.cmd(&["BF.INFO", &bfk]), src.cmd(&["CF.INFO", &cfk])];

    let s = slot.to_string();
    assert_eq!(
        dst.cmd(&["CLUSTER", "SETSLOT", &s, "IMPORTING", &source_id]),
        ok(),
        "importing"
    );
    assert_eq!(
        src.cmd(&["CLUSTER", "SETSLOT", &s, "MIGRATING", &target_id]),
        ok(),
        "migrating"
    );
    let tp = target.to_string();
    let migrate = |src: &mut Conn, key: &str| {
        let r = src.cmd(&["MIGRATE", "127.0.0.1", &tp, "", "0", "5000", "KEYS", key]);
        assert_eq!(r, ok(), "MIGRATE {key}");
    };
    let pair = [source, target];
    // The source answers ASK for a key it no longer has, the client sends
    // ASKING before the command to the target.
    let asked = |r: Redirects| Redirects {
        ask: r.ask + 1,
        asking: r.asking + 1,
        ..r
    };
    migrate(&mut src, &bfk);
    // Mid-migration: the moved key is reached through ASK, the other one is
    // still served by the source.
    let r = redirects(&pair);
    expect_int(&mut c, &["BF.EXISTS", &bfk, &many[7]], 1);
    assert_eq!(redirects(&pair), asked(r), "BF.EXISTS on a migrated key");
    expect_int(&mut c, &["CF.COUNT", &cfk, &many[70]], 1);
    assert_eq!(redirects(&pair), asked(r), "CF key not yet migrated");
    let want = (format!("127.0.0.1:{source}"), slot);
    assert_eq!(moved(target, &["BF.EXISTS", &bfk, "x"]), want, "no ASKING");
    migrate(&mut src, &cfk);
    let r = redirects(&pair);
    expect_int(&mut c, &["CF.COUNT", &cfk, &many[70]], 1);
    assert_eq!(redirects(&pair), asked(r), "CF.COUNT on a migrated key");
    for &p in [target, source].iter().chain(masters.iter()) {
        let r = Conn::connect(p)
            .expect("connect")
            .cmd(&["CLUSTER", "SETSLOT", &s, "NODE", &target_id]);
        assert_eq!(r, ok(), "SETSLOT NODE on {p}");
    }
    // Wherever the client reloads its slot map from, it learns the target.
    cluster.wait_until("the slot's new owner known everywhere", wait::STATE, |_| {
        for &p in &live {
            match owner(p, slot) {
                Some(o) if o == target => {}
                o => return Err(format!("{p} sees owner {o:?}")),
            }
        }
        Ok(())
    });
    let r = redirects(&pair);
    expect_int(&mut c, &["BF.EXISTS", &bfk, &many[7]], 1);
    let moved_once = Redirects {
        moved: r.moved + 1,
        ..r
    };
    assert_eq!(redirects(&pair), moved_once, "slot now owned by the target");
    expect_int(&mut c, &["CF.EXISTS", &cfk, &many[70]], 1);
    assert_eq!(
        redirects(&pair),
        moved_once,
        "the client reloaded its slot map"
    );
    assert_eq!(
        src.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &s]),
        int(0),
        "source keeps nothing"
    );
    assert_eq!(dst.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &s]), int(2));
    assert_eq!([dst.cmd(&["DUMP", &bfk]), dst.cmd(&["DUMP", &cfk])], dumps);
    assert_eq!(
        filters::scandump_with_end(&mut dst, Fam::Bf, &bfk),
        scans[0]
    );
    assert_eq!(
        filters::scandump_with_end(&mut dst, Fam::Cf, &cfk),
        scans[1]
    );
    assert_eq!(
        [dst.cmd(&["BF.INFO", &bfk]), dst.cmd(&["CF.INFO", &cfk])],
        infos
    );
    // The target's replica received the migrated filters too.
    if target != replica {
        assert!(dst.cmd(&["WAIT", "1", WAIT_MS]).as_int() >= 1);
        let mut r = Conn::connect(cluster.replica_of(target)).expect("connect");
        assert_eq!(r.cmd(&["READONLY"]), ok(), "readonly");
        assert_eq!([r.cmd(&["DUMP", &bfk]), r.cmd(&["DUMP", &cfk])], dumps);
    }
    // Everything else is still as it was.
    let last = observe(&mut c);
    for (k, a) in &before {
        if k != "bf:0" && k != "cf:0" {
            assert_eq!(a, &last[k], "{k}");
        }
    }
    for n in &cluster.nodes {
        n.check_log();
    }
    eprintln!("{flavor:?}: cluster test took {:?}", t0.elapsed());
}

#[test]
fn cluster_routing_failover_and_migration() {
    for flavor in flavors() {
        cluster_test(flavor);
    }
}

/// Keys per family in [`families_test`]: enough to land on every master.
const FAMILY_KEYS: usize = 12;

/// Sets `pairs` with CONFIG SET on every port; returns the values before.
fn set_configs(ports: &[u16], pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut old = Vec::new();
    for &(name, value) in pairs {
        for &p in ports {
            let mut c = client::connect(p);
            let got: Vec<String> = query(&mut c, &["CONFIG", "GET", name]);
            if p == ports[0] {
                old.push((name.to_string(), got[1].clone()));
            }
            let r: String = query(&mut c, &["CONFIG", "SET", name, value]);
            assert_eq!(r, "OK", "CONFIG SET {name} {value} on {p}");
        }
    }
    old
}

/// Every family of the table through the cluster client: each command is
/// routed to the owner of its key (which then holds the key, of the
/// family's type, byte-identical to the same commands run on a standalone
/// server), names its key to COMMAND GETKEYS, and sent to another node is
/// redirected with MOVED to the owner.
fn families_test(flavor: Flavor) {
    let cluster = Cluster::start(flavor, Module::Rsbloom);
    let ports = cluster.live_ports();
    let standalone = Server::start(flavor, Module::Rsbloom);
    let alone = standalone.port;
    let mut c = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    for fam in TYPES {
        let mut every: Vec<u16> = ports.clone();
        every.push(alone);
        let old = set_configs(&every, fam.config);
        let mut owners = HashSet::new();
        for i in 0..FAMILY_KEYS {
            let key = format!("{}:{i}", fam.family);
            for cmd in tour_on(fam, &key) {
                let got: Value = query(&mut c, &cmd);
                let want: Value = query(&mut client::connect(alone), &cmd);
                assert_eq!(got, want, "{flavor:?} {cmd:?}");
            }
            let at = owner(ports[0], keyslot(ports[0], &key)).expect("owner");
            owners.insert(at);
            let mut node = client::connect(at);
            let ty: String = query(&mut node, &["TYPE", &key]);
            assert_eq!(ty, fam.name(), "{flavor:?} {key}");
            let dump: Vec<u8> = query(&mut node, &["DUMP", &key]);
            let want: Vec<u8> = query(&mut client::connect(alone), &["DUMP", &key]);
            assert_eq!(dump, want, "{flavor:?} {key}: DUMP on {at}");
            let read = tour_on(fam, &key).pop().expect("a command");
            let read: Vec<&str> = read.iter().map(String::as_str).collect();
            let other = *ports.iter().find(|&&p| p != at).expect("other node");
            let slot = keyslot(ports[0], &key);
            assert_eq!(moved(other, &read), (format!("127.0.0.1:{at}"), slot));
        }
        assert!(owners.len() > 1, "{}: keys on one master only", fam.family);
        for cmd in tour_on(fam, "{user}:k") {
            let mut full = vec!["COMMAND".to_string(), "GETKEYS".to_string()];
            full.extend(cmd);
            let keys: Vec<String> = query(&mut client::connect(ports[0]), &full);
            assert_eq!(keys, ["{user}:k"], "{full:?}");
        }
        let restore: Vec<(&str, &str)> =
            old.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        set_configs(&every, &restore);
    }
    for n in &cluster.nodes {
        n.check_log();
    }
}

#[test]
fn cluster_routing_every_family() {
    for flavor in flavors() {
        families_test(flavor);
    }
}
