//! rsbloom in Redis Cluster: keys declared so a cluster-aware client routes
//! every BF/CF command, filters spread over three masters survive a master
//! failover unchanged, and a filter key of each type migrates slot-wise
//! (MIGRATING/IMPORTING, `ASK`, `MIGRATE`, `SETSLOT NODE`, `MOVED`)
//! byte-identically.
mod common;
use common::cluster::{crc16, key_slot, Cluster, ClusterClient};
use common::*;
use std::collections::{BTreeMap, HashMap, HashSet};
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

fn expect_ok(r: Reply, what: &str) {
    assert_eq!(r, ok(), "{what}");
}

fn expect_ints(r: &Reply, want: i64, what: &str) {
    for v in r.as_array() {
        assert_eq!(v.as_int(), want, "{what}: {r:?}");
    }
}

/// Creates and fills Bloom filter `i`, with the reserve/add/madd/insert
/// variant chosen by `i % 4`.
fn populate_bf(c: &mut ClusterClient, i: usize) {
    let k = bf_key(i);
    match i % 4 {
        0 => {
            expect_ok(
                c.cmd(&["BF.RESERVE", &k, "0.01", "20", "EXPANSION", "2"]),
                &k,
            );
            for it in items(i, 30) {
                assert!(!c.cmd(&["BF.ADD", &k, &it]).is_error());
            }
        }
        1 => {
            expect_ok(c.cmd(&["BF.RESERVE", &k, "0.001", "100", "NONSCALING"]), &k);
            let r = c.cmd(&args(&["BF.MADD", &k], &items(i, 20)));
            assert_eq!(r.as_array().len(), 20, "{k}: {r:?}");
        }
        2 => {
            let r = c.cmd(&args(
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
            ));
            assert_eq!(r.as_array().len(), 25, "{k}: {r:?}");
        }
        _ => {
            let all = items(i, 15);
            assert_eq!(c.cmd(&["BF.ADD", &k, &all[0]]), int(1));
            let r = c.cmd(&args(&["BF.INSERT", &k, "NOCREATE", "ITEMS"], &all[1..]));
            assert_eq!(r.as_array().len(), 14, "{k}: {r:?}");
        }
    }
}

fn bf_items(i: usize) -> Vec<String> {
    items(i, [30, 20, 25, 15][i % 4])
}

/// Creates and fills Cuckoo filter `i`, with the variant chosen by `i % 4`.
fn populate_cf(c: &mut ClusterClient, i: usize) {
    let k = cf_key(i);
    let all = cf_items(i);
    match i % 4 {
        0 => {
            let r = c.cmd(&[
                "CF.RESERVE",
                &k,
                "16",
                "BUCKETSIZE",
                "2",
                "MAXITERATIONS",
                "50",
                "EXPANSION",
                "2",
            ]);
            expect_ok(r, &k);
            for it in &all {
                assert_eq!(c.cmd(&["CF.ADD", &k, it]), int(1), "{k}");
            }
            for it in &all[..3] {
                assert_eq!(c.cmd(&["CF.DEL", &k, it]), int(1), "{k}");
            }
            // Readonly-flagged but replicated: must reach the replica.
            expect_ok(c.cmd(&["CF.COMPACT", &k]), &k);
        }
        1 => {
            let r = c.cmd(&args(&["CF.INSERT", &k, "CAPACITY", "100", "ITEMS"], &all));
            expect_ints(&r, 1, &k);
            // Second copies: CF.COUNT reports 2 for these.
            for it in &all[..5] {
                assert_eq!(c.cmd(&["CF.ADD", &k, it]), int(1), "{k}");
            }
            assert_eq!(c.cmd(&["CF.DEL", &k, &all[0]]), int(1), "{k}");
        }
        2 => {
            let mut list = all.clone();
            list.extend(all[..4].iter().cloned());
            let r = c.cmd(&args(
                &["CF.INSERTNX", &k, "CAPACITY", "50", "ITEMS"],
                &list,
            ));
            let a = r.as_array();
            // A fingerprint collision may make a new item look present.
            let new = a[..all.len()].iter().filter(|r| **r == int(1)).count();
            assert!(new + 2 >= all.len(), "{k}: {r:?}");
            expect_ints(&Reply::Array(a[all.len()..].to_vec()), 0, &k);
            assert_eq!(c.cmd(&["CF.ADDNX", &k, &all[0]]), int(0), "{k}");
        }
        _ => {
            for it in &all {
                let r = c.cmd(&["CF.ADDNX", &k, it]);
                assert!(r == int(1) || r == int(0), "{k}: {r:?}");
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

/// Every answer the filters give, per key.
fn observe(c: &mut ClusterClient) -> BTreeMap<String, Vec<Reply>> {
    let mut out = BTreeMap::new();
    for i in 0..BF_KEYS {
        let k = bf_key(i);
        let mut probe = bf_items(i);
        probe.extend(absent(i));
        let answers = vec![
            c.cmd(&args(&["BF.MEXISTS", &k], &probe)),
            c.cmd(&["BF.EXISTS", &k, &probe[0]]),
            c.cmd(&["BF.INFO", &k]),
            c.cmd(&["BF.CARD", &k]),
            c.cmd(&["BF.INFO", &k, "FILTERS"]),
            c.cmd(&["DUMP", &k]),
        ];
        out.insert(k, answers);
    }
    for i in 0..CF_KEYS {
        let k = cf_key(i);
        let mut probe = cf_items(i);
        probe.extend(absent(i));
        let mut answers = vec![
            c.cmd(&args(&["CF.MEXISTS", &k], &probe)),
            c.cmd(&["CF.EXISTS", &k, &probe[probe.len() - 11]]),
            c.cmd(&["CF.INFO", &k]),
            c.cmd(&["DUMP", &k]),
        ];
        for it in &probe[..6] {
            answers.push(c.cmd(&["CF.COUNT", &k, it]));
        }
        out.insert(k, answers);
    }
    out
}

/// What must hold of a fresh observation, whatever the layout.
fn check_answers(seen: &BTreeMap<String, Vec<Reply>>) {
    for i in 0..BF_KEYS {
        let k = bf_key(i);
        let a = &seen[&k];
        let n = bf_items(i).len();
        // No false negatives.
        expect_ints(&Reply::Array(a[0].as_array()[..n].to_vec()), 1, &k);
        assert_eq!(a[1], int(1), "{k}");
        let filters = a[4].as_array()[0].as_int();
        match i % 4 {
            0 | 2 => assert!(filters > 1, "{k} should have scaled: {:?}", a[2]),
            _ => assert_eq!(filters, 1, "{k}"),
        }
        assert!(a[3].as_int() > 0 && a[3].as_int() <= n as i64, "{k}");
        assert!(matches!(a[5], Reply::Bulk(_)), "{k}: DUMP {:?}", a[5]);
    }
    for i in 0..CF_KEYS {
        let k = cf_key(i);
        let a = &seen[&k];
        let all = cf_items(i);
        let present: HashSet<String> = cf_present(i).into_iter().collect();
        for (j, it) in all.iter().enumerate() {
            if present.contains(it) {
                assert_eq!(a[0].as_array()[j], int(1), "{k} {it}");
            }
        }
        assert_eq!(a[1], int(1), "{k}");
        let counts: Vec<i64> = a[4..].iter().map(Reply::as_int).collect();
        // Copies stored; CF.COUNT may add fingerprint collisions on top (and,
        // like RedisBloom, counts twice when both candidate buckets coincide).
        let stored: [i64; 6] = match i % 4 {
            // Item 0 was added twice and deleted once; items 1..5 twice.
            1 => [1, 2, 2, 2, 2, 1],
            0 => [0, 0, 0, 1, 1, 1],
            _ => [1, 1, 1, 1, 1, 1],
        };
        for (n, want) in counts.iter().zip(stored) {
            assert!(*n >= want, "{k}: counts {counts:?}");
        }
    }
}

/// Every module command's key is found by the server's key extraction
/// (what cluster clients use with `COMMAND GETKEYS` / `COMMAND INFO`).
fn check_getkeys(port: u16) {
    let mut c = Conn::connect(port).expect("connect");
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
        assert_eq!(
            c.cmd(&full),
            Reply::Array(vec![bulk(&key)]),
            "COMMAND GETKEYS {cmd:?}"
        );
    }
}

/// Sent to a node that does not own the key, every BF/CF command is
/// redirected with `MOVED <slot of the key> <owner>` (the server found the key).
fn check_moved(c: &ClusterClient, ports: &[u16]) {
    for (cmd, key) in [
        (vec!["BF.ADD", "bf:1", "x"], "bf:1"),
        (vec!["BF.EXISTS", "bf:1", "x"], "bf:1"),
        (vec!["CF.ADD", "cf:1", "x"], "cf:1"),
        (vec!["CF.COUNT", "cf:1", "x"], "cf:1"),
        (vec!["CF.COMPACT", "cf:1"], "cf:1"),
    ] {
        let owner = c.owner(key.as_bytes()).expect("owner");
        let other = *ports.iter().find(|&&p| p != owner).expect("other node");
        // A replica would redirect too; pick any node but the owner.
        let r = Conn::connect(other).expect("connect").cmd(&cmd);
        let want = format!("MOVED {} 127.0.0.1:{owner}", key_slot(key.as_bytes()));
        assert_eq!(r, err(&want), "{cmd:?} sent to {other}");
    }
}

fn cluster_test(flavor: Flavor) {
    let t0 = Instant::now();
    let mut cluster = Cluster::start(flavor, Module::Rsbloom);
    let ports = cluster.live_ports();
    eprintln!("{flavor:?}: cluster formed in {:?}", t0.elapsed());

    // Key slots agree with the server's.
    let mut probe = Conn::connect(ports[0]).expect("connect");
    for k in [
        "bf:1",
        "{tag10}:bf",
        "{tag10}:cf",
        "a{}b",
        "{}x{y}",
        "x{y}{z}",
    ] {
        let want = probe.cmd(&["CLUSTER", "KEYSLOT", k]).as_int();
        assert_eq!(key_slot(k.as_bytes()) as i64, want, "{k}");
    }

    check_getkeys(ports[0]);

    let mut c = ClusterClient::new(&ports);
    check_moved(&c, &ports);
    let t = Instant::now();
    for i in 0..BF_KEYS {
        populate_bf(&mut c, i);
    }
    for i in 0..CF_KEYS {
        populate_cf(&mut c, i);
    }
    eprintln!("{flavor:?}: populated in {:?}", t.elapsed());

    // The keys cover all three masters.
    let mut per_master: HashMap<u16, usize> = HashMap::new();
    for i in 0..BF_KEYS {
        *per_master
            .entry(c.owner(bf_key(i).as_bytes()).unwrap())
            .or_default() += 1;
        *per_master
            .entry(c.owner(cf_key(i).as_bytes()).unwrap())
            .or_default() += 1;
    }
    assert_eq!(per_master.len(), 3, "{per_master:?}");
    assert!(per_master.values().all(|&n| n >= 200), "{per_master:?}");
    for i in (0..BF_KEYS).step_by(10) {
        assert_eq!(c.owner(bf_key(i).as_bytes()), c.owner(cf_key(i).as_bytes()));
    }
    // Each master holds exactly its share of the keys.
    for (&port, &n) in &per_master {
        let r = Conn::connect(port).expect("connect").cmd(&["DBSIZE"]);
        assert_eq!(r, int(n as i64), "DBSIZE of master {port}");
    }

    let before = observe(&mut c);
    check_answers(&before);
    assert_eq!(c.moved + c.asked, 0, "stable cluster, fresh slot map");

    // ---- Failover: kill -9 a master once every write reached its replica.
    for (port, r) in c.on_masters(&["WAIT", "1", WAIT_MS]) {
        assert!(r.as_int() >= 1, "WAIT on {port}: {r:?}");
    }
    let victim = c.owner(b"bf:0").expect("owner");
    let victim_slots = cluster.masters(victim)[&victim].clone();
    let replica = cluster.replica_of(victim);
    let t = Instant::now();
    cluster.kill9(victim);
    c.forget(victim);
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

    let after = observe(&mut c);
    assert!(
        c.moved > 0 || c.refreshes > 1,
        "the client had to learn the new owner"
    );
    for (k, a) in &before {
        assert_eq!(a, &after[k], "{k} answers differently after failover");
    }
    // The promoted replica accepts writes to the filters it inherited.
    assert_eq!(c.cmd(&["BF.ADD", "bf:0", "after-failover"]), int(1));
    assert_eq!(c.cmd(&["CF.ADD", "cf:0", "after-failover"]), int(1));
    assert_eq!(c.owner(b"bf:0"), Some(replica));

    // ---- Slot migration of one filter of each type, with the slot's owner
    // changing underneath the client.
    let used: HashSet<u16> = before.keys().map(|k| key_slot(k.as_bytes())).collect();
    let tag = (0..)
        .map(|n| format!("{{mig{n}}}"))
        .find(|t| !used.contains(&key_slot(t.as_bytes())))
        .expect("free slot");
    let slot = key_slot(tag.as_bytes());
    let (bfk, cfk) = (format!("{tag}bf"), format!("{tag}cf"));
    expect_ok(
        c.cmd(&["BF.RESERVE", &bfk, "0.01", "100", "EXPANSION", "2"]),
        "reserve",
    );
    expect_ok(
        c.cmd(&[
            "CF.RESERVE",
            &cfk,
            "200",
            "BUCKETSIZE",
            "4",
            "EXPANSION",
            "2",
        ]),
        "reserve",
    );
    let many = items(9999, 1500);
    for chunk in many.chunks(100) {
        assert!(!c.cmd(&args(&["BF.MADD", &bfk], chunk)).is_error());
        assert!(!c
            .cmd(&args(&["CF.INSERT", &cfk, "ITEMS"], chunk))
            .is_error());
    }
    for it in &many[..50] {
        assert_eq!(c.cmd(&["CF.DEL", &cfk, it]), int(1));
    }
    let source = c.owner(tag.as_bytes()).expect("owner");
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
    expect_ok(
        dst.cmd(&["CLUSTER", "SETSLOT", &s, "IMPORTING", &source_id]),
        "importing",
    );
    expect_ok(
        src.cmd(&["CLUSTER", "SETSLOT", &s, "MIGRATING", &target_id]),
        "migrating",
    );
    let tp = target.to_string();
    expect_ok(
        src.cmd(&["MIGRATE", "127.0.0.1", &tp, "", "0", "5000", "KEYS", &bfk]),
        "migrate bf",
    );
    // Mid-migration: the moved key is reached through ASK, the other one is
    // still served by the source.
    let asked = c.asked;
    assert_eq!(c.cmd(&["BF.EXISTS", &bfk, &many[7]]), int(1));
    assert_eq!(c.asked, asked + 1, "BF.EXISTS on a migrated key needs ASK");
    assert_eq!(c.cmd(&["CF.COUNT", &cfk, &many[70]]), int(1));
    assert_eq!(c.asked, asked + 1, "CF key not yet migrated");
    assert!(matches!(
        dst.cmd(&["BF.EXISTS", &bfk, "x"]),
        Reply::Error(e) if e.starts_with("MOVED ")
    ));
    expect_ok(
        src.cmd(&["MIGRATE", "127.0.0.1", &tp, "", "0", "5000", "KEYS", &cfk]),
        "migrate cf",
    );
    assert_eq!(c.cmd(&["CF.COUNT", &cfk, &many[70]]), int(1));
    assert_eq!(c.asked, asked + 2, "CF.COUNT on a migrated key needs ASK");
    for &p in [target, source].iter().chain(masters.iter()) {
        let r = Conn::connect(p)
            .expect("connect")
            .cmd(&["CLUSTER", "SETSLOT", &s, "NODE", &target_id]);
        expect_ok(r, &format!("SETSLOT NODE on {p}"));
    }
    let moved = c.moved;
    assert_eq!(c.cmd(&["BF.EXISTS", &bfk, &many[7]]), int(1));
    assert_eq!(c.moved, moved + 1, "slot now owned by the target");
    assert_eq!(c.owner(bfk.as_bytes()), Some(target));
    assert_eq!(c.cmd(&["CF.EXISTS", &cfk, &many[70]]), int(1));
    assert_eq!(c.moved, moved + 1);
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
        expect_ok(r.cmd(&["READONLY"]), "readonly");
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
fn crc16_and_hash_tags() {
    assert_eq!(crc16(b"123456789"), 0x31c3);
    assert_eq!(key_slot(b"foo"), 12182);
    assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
    assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
    assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
}

#[test]
fn cluster_routing_failover_and_migration() {
    for flavor in flavors() {
        cluster_test(flavor);
    }
}
