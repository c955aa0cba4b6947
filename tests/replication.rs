//! Replication (docs/module.md §2.1 "replicated" column): a master and a real
//! replica; after a seeded random stream of every write command of both
//! families (including failing ones) every key is identical on the replica,
//! both through the command stream and after a full resync from RDB.
//! Also across modules: RedisBloom 2.8.2 ⇄ rsbloom, in both directions.
//!
//! The seed is printed; `RSBLOOM_OPS_SEED=<seed>` reproduces a run.
mod common;
use common::info::{wait_link_up, wait_replica_synced as sync};
use common::stream::{assert_same, info_field, snapshot, Stream, MODULE_ARGS};
use common::*;
use std::time::Instant;

const STREAM_LEN: usize = 2500;

fn start_with(flavor: Flavor, module: Module, master: Option<u16>, args: &[&str]) -> Server {
    let mut b = args
        .iter()
        .fold(Server::builder(flavor, module), |b, a| b.arg(a))
        .module_arg(MODULE_ARGS[0])
        .module_arg(MODULE_ARGS[1])
        // Replicas sync at once instead of after the default 5 s.
        .arg("--repl-diskless-sync-delay")
        .arg("0");
    if let Some(port) = master {
        b = b.arg("--replicaof").arg("127.0.0.1").arg(&port.to_string());
    }
    b.start()
}

fn sync_full(master: &mut Conn) -> i64 {
    info_field(master, "stats", "sync_full")
        .expect("sync_full")
        .parse()
        .unwrap()
}

/// Restarts a replica without data, so it needs a full resync (a replica
/// keeps the RDB of its initial sync, with the replication id and offset,
/// and would otherwise continue partially from the master's backlog).
fn restart_empty(replica: &mut Server) {
    replica.stop(false);
    let rdb = replica.dir().join("dump.rdb");
    if rdb.exists() {
        std::fs::remove_file(&rdb).unwrap();
    }
    replica.restart(false);
}

/// A master running `master_module`, a replica running `replica_module`
/// linked to it, and a connection to each.
fn linked(
    flavor: Flavor,
    master_module: Module,
    replica_module: Module,
) -> (Server, Server, Conn, Conn) {
    linked_with(flavor, master_module, replica_module, [&[], &[]])
}

/// `linked`, master and replica started with extra arguments.
fn linked_with(
    flavor: Flavor,
    master_module: Module,
    replica_module: Module,
    [master_args, replica_args]: [&[&str]; 2],
) -> (Server, Server, Conn, Conn) {
    let master = start_with(flavor, master_module, None, master_args);
    let replica = start_with(flavor, replica_module, Some(master.port), replica_args);
    let (mc, mut rc) = (master.conn(), replica.conn());
    wait_link_up(&mut rc);
    (master, replica, mc, rc)
}

/// Restarts the replica empty and waits for the full resync this forces;
/// returns a connection to the restarted replica.
fn full_resync(mc: &mut Conn, replica: &mut Server) -> Conn {
    let full = sync_full(mc);
    restart_empty(replica);
    let mut rc = replica.conn();
    wait_link_up(&mut rc);
    sync(mc, &mut rc);
    assert_eq!(sync_full(mc), full + 1, "full resync");
    rc
}

/// The stream must have produced every outcome the test is about.
fn assert_coverage(s: &Stream, cross: bool) {
    let mut wanted = vec![
        "OK BF.RESERVE",
        "OK CF.RESERVE",
        "OK BF.LOADCHUNK",
        "OK CF.LOADCHUNK",
        "OK CF.COMPACT",
        "ERR non scaling filter is full",
        "Filter is full",
        "Maximum expansions reached",
        "WRONGTYPE",
        "ERR not found",
        "ERR item exists",
        "ERR wrong number of arguments",
    ];
    if !cross {
        wanted.push("Couldn't load chunk!");
    }
    for w in wanted {
        assert!(s.count(w) > 0, "stream never produced `{w}`: {:?}", s.stats);
    }
}

/// Some filters scaled (Bloom links) and grew (Cuckoo sub-filters).
fn assert_growth(c: &mut Conn) {
    let keys = c.cmd(&["KEYS", "*"]);
    let (mut bf, mut cf) = (0, 0);
    for k in keys.as_array() {
        let k = k.as_bytes();
        match c.cmd(&[&b"TYPE"[..], k]).as_bytes() {
            b"MBbloom--" => {
                let n = c.cmd(&[&b"BF.INFO"[..], k, b"FILTERS"]).as_array()[0].as_int();
                bf = bf.max(n);
            }
            b"MBbloomCF" => {
                let info = c.cmd(&[&b"CF.INFO"[..], k]);
                cf = cf.max(info.as_array()[5].as_int());
            }
            _ => {}
        }
    }
    assert!(bf > 1, "no Bloom filter scaled");
    assert!(cf > 1, "no Cuckoo filter grew");
}

fn check_identical(master: &mut Conn, replica: &mut Conn, digests: bool, what: &str) {
    // Only through the command stream: a full resync in between (e.g. a
    // dropped link) would copy the data and hide replication bugs.
    let expected = if what.contains("resync") { 2 } else { 1 };
    assert_eq!(
        sync_full(master),
        expected,
        "{what}: number of full resyncs"
    );
    let m = snapshot(master, digests);
    let r = snapshot(replica, digests);
    assert!(m.len() > 10, "{what}: only {} keys", m.len());
    assert_same(&m, &r, what);
    if digests {
        let d = master.cmd(&["DEBUG", "DIGEST"]);
        assert_ne!(d, bulk("0".repeat(40)));
        assert_eq!(d, replica.cmd(&["DEBUG", "DIGEST"]), "{what}: DEBUG DIGEST");
    }
}

#[test]
fn replica_is_identical_after_every_write_command() {
    let seed = common::stream::seed();
    println!("replication seed {seed} (RSBLOOM_OPS_SEED={seed} to reproduce)");
    for flavor in all_flavors() {
        let t0 = Instant::now();
        let (_master, mut replica, mut mc, mut rc) =
            linked(flavor, Module::Rsbloom, Module::Rsbloom);

        let mut stream = Stream::new(seed, false);
        stream.run(&mut mc, STREAM_LEN, 50);
        assert_coverage(&stream, false);
        assert_growth(&mut mc);

        // docs/module.md §2.1 / docs/cuckoo.md §12.3: a CF insert that fails before processing
        // items (here `Maximum expansions reached` right after the
        // auto-creation, with cf-max-expansions 1) replicates nothing, yet
        // the master keeps the empty filter it created. The test asserts that
        // exact divergence (it is RedisBloom's documented behaviour, which
        // rsbloom keeps), then shows it is harmless: the next successful
        // insert is replicated and the replica's own auto-creation builds
        // the identical filter, after which every key compares equal.
        sync(&mut mc, &mut rc);
        config_set(&mut mc, "cf-max-expansions", "1");
        config_set(&mut rc, "cf-max-expansions", "1");
        let max = err("Maximum expansions reached");
        assert_eq!(mc.cmd(&["CF.ADD", "orphan1", "x"]), max);
        assert_eq!(mc.cmd(&["CF.INSERT", "orphan2", "ITEMS", "x", "y"]), max);
        assert_eq!(mc.cmd(&["CF.ADDNX", "orphan3", "x"]), max);
        assert_eq!(mc.cmd(&["CF.RESERVE", "c-new", "64"]), ok());
        assert_eq!(mc.cmd(&["CF.ADD", "c-new", "x"]), max);
        sync(&mut mc, &mut rc);
        for k in ["orphan1", "orphan2", "orphan3"] {
            assert_eq!(mc.cmd(&["EXISTS", k]), int(1), "{flavor:?} {k}");
            assert_eq!(rc.cmd(&["EXISTS", k]), int(0), "{flavor:?} {k}");
            let info = mc.cmd(&["CF.INFO", k]);
            assert_eq!(info.as_array()[7], int(0), "{k}: items {info:?}");
        }
        config_set(&mut mc, "cf-max-expansions", "4");
        config_set(&mut rc, "cf-max-expansions", "4");
        assert_eq!(mc.cmd(&["CF.ADD", "orphan1", "x"]), int(1));
        assert_eq!(
            mc.cmd(&["CF.INSERT", "orphan2", "ITEMS", "x", "y"])
                .as_array()
                .len(),
            2
        );
        assert_eq!(mc.cmd(&["CF.ADDNX", "orphan3", "x"]), int(1));
        assert_eq!(mc.cmd(&["CF.ADD", "c-new", "x"]), int(1));
        sync(&mut mc, &mut rc);
        check_identical(&mut mc, &mut rc, true, &format!("{flavor:?} stream"));
        // Failed writes (e.g. `non scaling filter is full`) replicate only
        // what they did: the replica never answers its master with an error
        // (which an atomic slot migration target would fail on).
        let log = replica.log();
        let errors: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("is sending an error to its"))
            .collect();
        assert!(errors.is_empty(), "{flavor:?}: {errors:#?}");

        // Full resync: the restarted replica (no RDB of its own) loads the
        // master's RDB.
        let mut rc = full_resync(&mut mc, &mut replica);
        check_identical(&mut mc, &mut rc, true, &format!("{flavor:?} full resync"));
        // And the stream goes on on top of the loaded data.
        stream.run(&mut mc, 500, 50);
        sync(&mut mc, &mut rc);
        check_identical(&mut mc, &mut rc, true, &format!("{flavor:?} after resync"));
        println!(
            "{flavor:?}: {:.1}s, {:?}",
            t0.elapsed().as_secs_f64(),
            stream.stats
        );
    }
}

/// RedisBloom 2.8.2 and rsbloom on the two ends of one replication link.
fn cross(master_module: Module, replica_module: Module) {
    for flavor in flavors() {
        cross_on(flavor, master_module, replica_module);
    }
}

fn cross_on(flavor: Flavor, master_module: Module, replica_module: Module) {
    let seed = common::stream::seed();
    println!(
        "cross replication {master_module:?} -> {replica_module:?} on {flavor:?}: seed {seed} (RSBLOOM_OPS_SEED={seed})"
    );
    let (_master, mut replica, mut mc, mut rc) = linked(flavor, master_module, replica_module);
    let mut stream = Stream::new(seed, true);
    stream.run(&mut mc, STREAM_LEN, 50);
    assert_coverage(&stream, true);
    assert_growth(&mut mc);
    sync(&mut mc, &mut rc);
    let what = format!("{master_module:?} -> {replica_module:?} on {flavor:?}");
    check_identical(&mut mc, &mut rc, false, &what);

    // Full resync: the RDB written by one module, loaded by the other.
    let mut rc = full_resync(&mut mc, &mut replica);
    check_identical(&mut mc, &mut rc, false, &format!("{what} full resync"));
    stream.run(&mut mc, 500, 50);
    sync(&mut mc, &mut rc);
    check_identical(&mut mc, &mut rc, false, &format!("{what} after resync"));
}

#[test]
fn rsbloom_replica_of_a_redisbloom_master() {
    cross(Module::Reference, Module::Rsbloom);
}

#[test]
fn redisbloom_replica_of_an_rsbloom_master() {
    cross(Module::Rsbloom, Module::Reference);
}

/// Top-K with decay < 1 (docs/topk.md §3.5): RedisBloom draws from the
/// process-global rand(), so its replica decays differently from its
/// master; rsbloom's draws come from each key's own generator, saved with
/// the key, so the replica is byte-identical — through the command stream,
/// after a full resync, and when the stream goes on after it.
#[test]
fn topk_replica_decays_exactly_like_its_master() {
    let seed = common::stream::seed();
    println!("Top-K replication seed {seed} (RSBLOOM_OPS_SEED={seed} to reproduce)");
    for flavor in flavors() {
        let (_master, mut replica, mut mc, mut rc) =
            linked(flavor, Module::Rsbloom, Module::Rsbloom);
        let mut stream = common::topk::TopkStream::new(seed);
        stream.run(&mut mc, 6000, true, false);
        sync(&mut mc, &mut rc);
        let state = common::topk::state(&mut mc, true);
        assert!(state.iter().all(|(_, d, _)| matches!(d, Reply::Bulk(_))));
        assert_eq!(
            state,
            common::topk::state(&mut rc, true),
            "{flavor:?} stream"
        );
        // Rejected increments replicate only the pairs applied before them:
        // the replica never answers its master with an error.
        assert!(!replica.log().contains("CRITICAL"), "{}", replica.log());
        // TOPK.COUNT is read-only in 8.x: a replica answers it.
        assert!(matches!(
            rc.cmd(&["TOPK.COUNT", "tk0", "i1"]),
            Reply::Array(_)
        ));
        assert!(rc
            .cmd(&["TOPK.ADD", "tk0", "i1"])
            .error_text()
            .starts_with("READONLY"));

        let mut rc = full_resync(&mut mc, &mut replica);
        assert_eq!(
            common::topk::state(&mut mc, true),
            common::topk::state(&mut rc, true),
            "{flavor:?} full resync"
        );
        stream.run(&mut mc, 2000, false, false);
        sync(&mut mc, &mut rc);
        assert_eq!(
            common::topk::state(&mut mc, true),
            common::topk::state(&mut rc, true),
            "{flavor:?} after resync"
        );
    }
}

/// The defect rsbloom fixes, shown on RedisBloom 2.8.2 (docs/topk.md
/// §3.5): 300 TOPK.ADD of 5 items on a 5-k, 4 × 3, 0.9 sketch, as in the
/// verification of the spec; the replica's counts differ.
#[test]
fn redisbloom_topk_replica_diverges_from_its_master() {
    let flavor = flavors()[0];
    let (_master, _replica, mut mc, mut rc) = linked(flavor, Module::Reference, Module::Reference);
    let mut cmds = vec![common::diff::sargs(&[
        "TOPK.RESERVE",
        "t",
        "5",
        "4",
        "3",
        "0.9",
    ])];
    for i in 0..300u64 {
        let mut add = common::diff::sargs(&["TOPK.ADD", "t"]);
        // Item n appears about 1/n of the time.
        add.extend((0..5u64).map(|j| {
            (1 + (i * 5 + j) % (1 + (i + j) % 29))
                .to_string()
                .into_bytes()
        }));
        cmds.push(add);
    }
    mc.pipeline(&cmds);
    sync(&mut mc, &mut rc);
    let mut count = common::diff::sargs(&["TOPK.COUNT", "t"]);
    count.extend((1..30).map(|n: u32| n.to_string().into_bytes()));
    let seen = |c: &mut Conn| (c.cmd(&["TOPK.LIST", "t", "WITHCOUNT"]), c.cmd(&count));
    assert_ne!(seen(&mut mc), seen(&mut rc));
}
/// CF.COMPACT keeps RedisBloom's readonly flag, so servers run it while
/// writes are paused (CLIENT PAUSE WRITE, failover, the hand-over of an
/// atomic slot migration), when nothing may be replicated: it must neither
/// abort the server (it did, on the propagation assertion) nor make the
/// replica diverge. It compacts once writes resume.
#[test]
fn cf_compact_while_writes_are_paused() {
    for flavor in all_flavors() {
        let (_master, _replica, mut mc, mut rc) = linked(flavor, Module::Rsbloom, Module::Rsbloom);
        // Four sub-filters (this server allows 4 expansions), then deletions
        // that leave the newest ones nearly empty.
        assert_eq!(mc.cmd(&["CF.RESERVE", "c", "16", "EXPANSION", "1"]), ok());
        for i in 0..30 {
            assert_eq!(mc.cmd(&["CF.ADD", "c", &format!("i{i}")]), int(1));
        }
        for i in 0..22 {
            assert_eq!(mc.cmd(&["CF.DEL", "c", &format!("i{i}")]), int(1));
        }
        sync(&mut mc, &mut rc);
        let digest = |c: &mut Conn| c.cmd(&["DEBUG", "DIGEST-VALUE", "c"]);
        let before = digest(&mut mc);
        assert_eq!(mc.cmd(&["CLIENT", "PAUSE", "60000", "WRITE"]), ok());
        assert_eq!(mc.cmd(&["CF.COMPACT", "c"]), ok(), "{flavor:?}");
        assert_eq!(mc.cmd(&["PING"]), simple("PONG"), "{flavor:?}");
        assert_eq!(
            digest(&mut mc),
            before,
            "{flavor:?}: compacted while paused"
        );
        assert_eq!(mc.cmd(&["CLIENT", "UNPAUSE"]), ok());
        assert_eq!(mc.cmd(&["CF.COMPACT", "c"]), ok());
        let after = digest(&mut mc);
        assert_ne!(after, before, "{flavor:?}: nothing compacted");
        sync(&mut mc, &mut rc);
        assert_eq!(digest(&mut rc), after, "{flavor:?}: replica");
        for i in 22..30 {
            assert_eq!(mc.cmd(&["CF.EXISTS", "c", &format!("i{i}")]), int(1));
        }
    }
}

/// CMS.* writes (docs/cms.md §1.2, replication column) reach the replica
/// exactly — increments with overflow and underflow elements included
/// (Redis 8.12 replicates those too), rejected ones and failed merges not
/// at all — also between RedisBloom and rsbloom, through the command
/// stream and after a full resync. Across modules the stream keeps to what
/// 2.8.2 and 8.12 do alike (no negative or overflowing increments), and
/// rsbloom writes the encoding 2.8.2 reads (`bf.cms-rdb-encoding 0`): the
/// full sync of a 2.8.2 replica needs it, and DUMPs are then identical.
#[test]
fn cms_writes_replicate_exactly() {
    let seed = common::stream::seed();
    println!("cms replication seed {seed} (RSBLOOM_OPS_SEED={seed} to reproduce)");
    let mut pairs: Vec<(Flavor, Module, Module)> = Vec::new();
    for f in flavors() {
        pairs.push((f, Module::Rsbloom, Module::Rsbloom));
        pairs.push((f, Module::Reference, Module::Rsbloom));
        pairs.push((f, Module::Rsbloom, Module::Reference));
    }
    for (flavor, m, r) in pairs {
        let what = format!("{flavor:?} {m:?} -> {r:?}");
        let cross = m != r;
        let legacy = |module| -> &[&str] {
            if cross && module == Module::Rsbloom {
                &["--bf.cms-rdb-encoding", "0"]
            } else {
                &[]
            }
        };
        let (_master, mut replica, mut mc, mut rc) =
            linked_with(flavor, m, r, [legacy(m), legacy(r)]);
        let cmds = common::cms::writes(seed, 3000, cross);
        let replies = mc.pipeline(&cmds);
        let has = |p: &dyn Fn(&Reply) -> bool| replies.iter().any(p);
        let has_element = |e: &str| {
            let e = err(e);
            has(&|r| matches!(r, Reply::Array(a) if a.contains(&e)))
        };
        assert!(has(&|r| *r == err("CMS: MERGE overflow")), "{what}");
        assert!(has(&|r| *r == ok()), "{what}");
        assert!(has(&|r| *r == err("CMS: Cannot parse number")), "{what}");
        if !cross {
            assert!(has_element("CMS: INCRBY overflow"), "{what}");
            assert!(has_element("CMS: INCRBY underflow"), "{what}");
            assert!(has(&|r| *r == err("CMS: invalid increment")), "{what}");
        }
        let digests = m == r;
        sync(&mut mc, &mut rc);
        check_identical(&mut mc, &mut rc, digests, &format!("{what} stream"));
        let mut rc = full_resync(&mut mc, &mut replica);
        check_identical(&mut mc, &mut rc, digests, &format!("{what} full resync"));
    }
}
