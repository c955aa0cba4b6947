//! Replication (docs/module.md §2.1 "replicated" column): a master and a real
//! replica; after a seeded random stream of every write command of both
//! families (including failing ones) every key is identical on the replica,
//! both through the command stream and after a full resync from RDB.
//! Also across modules: RedisBloom 2.8.2 ⇄ rsbloom, in both directions.
//!
//! The seed is printed; `RSBLOOM_OPS_SEED=<seed>` reproduces a run.
use common::info::{wait_link_up, wait_replica_synced as sync};
use common::stream::{assert_same, info_field, snapshot, Stream, MODULE_ARGS};
use common::*;
use std::collections::BTreeMap;
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

// ---- valkey-bloom's flavour (docs/valkey-bloom.md §6) ----

/// valkey-bloom's fixed seed (COMPAT-VALKEY-BLOOM §4.6).
const FIXED_SEED: [u8; 32] = [
    0x59, 0x0f, 0xf5, 0x22, 0xea, 0x78, 0x11, 0xda, 0xa7, 0x14, 0xd8, 0x09, 0x3b, 0x3e, 0x7b, 0xd9,
    0x1d, 0x89, 0x8a, 0x73, 0x3e, 0x98, 0x88, 0x87, 0x30, 0x7f, 0x97, 0xcd, 0x28, 0x07, 0x33, 0x83,
];
const VB_LIMIT: &str = "bf.bloom-memory-usage-limit";
const VB_DEFAULT_LIMIT: &str = "134217728";

/// The fields of a `bloomfltr` DUMP payload (docs/valkey-bloom.md §5).
#[derive(Debug)]
struct VbDump {
    expansion: u64,
    fp: f64,
    tightening: f64,
    random: u64,
    /// Per sub-filter, oldest first: capacity, items (the newest's only),
    /// the `bloomfilter` blob (its seed at 13..45).
    subs: Vec<(u64, Option<u64>, Vec<u8>)>,
}

/// Module id of `bloomfltr`, encoding version 1.
const VB_MODULE_ID: u64 = 0x6e5a2899f96dac01;

fn vb_dump(c: &mut Conn, key: &[u8]) -> VbDump {
    use common::dump::Prim;
    let payload = c.cmd(&[b"DUMP", key]);
    let (id, prims) = common::dump::parse(payload.as_bytes());
    assert_eq!(id, VB_MODULE_ID, "{}: not a bloomfltr value", show(key));
    let u = |p: &Prim| match p {
        Prim::U(v) => *v,
        other => panic!("{}: {other:?} where an unsigned was due", show(key)),
    };
    let d = |p: &Prim| match p {
        Prim::D(v) => *v,
        other => panic!("{}: {other:?} where a double was due", show(key)),
    };
    let n = u(&prims[0]) as usize;
    let mut subs = Vec::new();
    let mut at = 5;
    for i in 0..n {
        let cap = u(&prims[at]);
        at += 1;
        let items = (i + 1 == n).then(|| {
            at += 1;
            u(&prims[at - 1])
        });
        let Prim::S(blob) = &prims[at] else {
            panic!("{}: no blob", show(key))
        };
        at += 1;
        subs.push((cap, items, blob.clone()));
    }
    assert_eq!(at, prims.len(), "{}: trailing fields", show(key));
    VbDump {
        expansion: u(&prims[1]),
        fp: d(&prims[2]),
        tightening: d(&prims[3]),
        random: u(&prims[4]),
        subs,
    }
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

impl VbDump {
    fn seed(&self) -> Vec<u8> {
        let seeds: Vec<&[u8]> = self.subs.iter().map(|s| &s.2[13..45]).collect();
        assert!(
            seeds.windows(2).all(|w| w[0] == w[1]),
            "sub-filters' seeds differ"
        );
        seeds[0].to_vec()
    }

    /// The BF.LOAD blob of this value (§5.4): older sub-filters are full.
    fn load_blob(&self) -> Vec<u8> {
        let mut out = vec![1u8];
        out.extend((self.expansion as u32).to_le_bytes());
        out.extend(self.fp.to_le_bytes());
        out.extend(self.tightening.to_le_bytes());
        out.push(self.random as u8);
        out.extend((self.subs.len() as u64).to_le_bytes());
        for (cap, items, blob) in &self.subs {
            out.extend((blob.len() as u64).to_le_bytes());
            out.extend(blob);
            out.extend((items.unwrap_or(*cap) as i64).to_le_bytes());
            out.extend((*cap as i64).to_le_bytes());
        }
        out
    }
}

/// Bitmap bytes and hash count of a sub-filter of capacity `n`, rate `p` (§4).
fn vb_sized(n: u64, p: f64) -> (u64, u32) {
    let ln2 = std::f64::consts::LN_2;
    let bytes = ((n as f64 * p.ln()) / (-8.0 * (ln2 * ln2))).ceil() as u64;
    let k = ((8 * bytes) as f64 / n as f64 * ln2).round().max(1.0) as u32;
    (bytes, k)
}

/// A BF.LOAD blob built here from nothing: random seed, random bits, the
/// sub-filters of `capacity` growing by `expansion` (`filters` of them, the
/// older ones full, `items` in the newest).
fn vb_built_blob(capacity: u64, fp: f64, expansion: u32, filters: usize, items: u64) -> Vec<u8> {
    let (t, seed) = (0.5f64, rand::random::<[u8; 32]>());
    let mut out = vec![1u8];
    out.extend(expansion.to_le_bytes());
    out.extend(fp.to_le_bytes());
    out.extend(t.to_le_bytes());
    out.push(1);
    out.extend((filters as u64).to_le_bytes());
    let mut cap = capacity;
    for i in 0..filters {
        let (bytes, k) = vb_sized(cap, fp * t.powi(i as i32));
        let mut blob = vec![1u8];
        blob.extend(bytes.to_le_bytes());
        blob.extend(k.to_le_bytes());
        blob.extend(seed);
        blob.extend((0..bytes).map(|_| rand::random::<u8>() & rand::random::<u8>()));
        out.extend((blob.len() as u64).to_le_bytes());
        out.extend(blob);
        let n = if i + 1 == filters { items } else { cap };
        out.extend((n as i64).to_le_bytes());
        out.extend((cap as i64).to_le_bytes());
        cap *= u64::from(expansion);
    }
    out
}

/// The blob of `BF.LOAD key <blob>` in an AOF rewrite written by a server
/// on `flavor` (valkey-bloom flavour, no RDB preamble) holding one scaled
/// filter of a random seed.
fn vb_rewritten_blob(flavor: Flavor) -> Vec<u8> {
    let donor = Server::builder(flavor, Module::Rsbloom)
        .arg("--bf.bloom-flavor")
        .arg("valkey-bloom")
        .aof_without_preamble()
        .start();
    let mut c = donor.conn();
    assert_eq!(line(&mut c, "BF.RESERVE donor 0.01 10 EXPANSION 3"), ok());
    let mut madd = common::diff::sargs(&["BF.MADD", "donor"]);
    madd.extend((0..60).map(|i| format!("d{i}").into_bytes()));
    c.cmd(&madd);
    assert_eq!(line(&mut c, "BF.INFO donor FILTERS"), int(3));
    common::info::wait_aof_rewrite(&mut c);
    assert!(!c.cmd(&["BGREWRITEAOF"]).is_error());
    common::info::wait_aof_rewrite(&mut c);
    common::wait::until("BF.LOAD in the rewritten AOF", common::wait::STATE, || {
        let aof = donor.base_aof();
        let mut r = aof.as_slice();
        while !r.is_empty() {
            let cmd = common::resp::read_reply(&mut r).map_err(|e| e.to_string())?;
            if let [name, key, blob] = cmd.as_array() {
                if name.as_bytes() == b"BF.LOAD" && key.as_bytes() == b"donor" {
                    return Ok(blob.as_bytes().to_vec());
                }
            }
        }
        Err(String::from_utf8_lossy(&aof).into_owned())
    })
}

/// Blobs for BF.LOAD: one from another server's AOF rewrite, two built here.
struct Blobs {
    rewritten: Vec<u8>,
    single: Vec<u8>,
    chain: Vec<u8>,
}

impl Blobs {
    fn new(flavor: Flavor) -> Blobs {
        Blobs {
            rewritten: vb_rewritten_blob(flavor),
            single: vb_built_blob(100, 0.01, 2, 1, 37),
            chain: vb_built_blob(10, 0.01, 2, 3, 12),
        }
    }
}

fn cmd_of(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

fn with_items(head: &str, prefix: &str, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    let mut a: Vec<Vec<u8>> = head.split(' ').map(|w| w.as_bytes().to_vec()).collect();
    a.extend(range.map(|i| format!("{prefix}{i}").into_bytes()));
    a
}

/// Every write path of valkey-bloom filters, on a server whose flavour is
/// `valkey-bloom`: `write` runs one command (and checks what it must), its
/// reply returned.
fn vb_script(c: &mut Conn, blobs: &Blobs, write: &mut dyn FnMut(&mut Conn, &[Vec<u8>]) -> Reply) {
    let mut w = |c: &mut Conn, a: Vec<Vec<u8>>| write(c, &a);
    let s =
        |line: &str| -> Vec<Vec<u8>> { line.split(' ').map(|w| w.as_bytes().to_vec()).collect() };
    let is_ints = |r: &Reply, n: usize| {
        let a = r.as_array();
        a.len() == n && a.iter().all(|e| matches!(e, Reply::Int(0 | 1)))
    };
    let ends_with = |r: &Reply, n: usize, e: &str| {
        let a = r.as_array();
        a.len() == n && a[n - 1] == err(e) && a[..n - 1].iter().all(|e| matches!(e, Reply::Int(_)))
    };
    // Auto-creation by BF.ADD and BF.MADD (a MADD that scales twice).
    assert_eq!(w(c, s("BF.ADD a1 x")), int(1));
    let r = w(c, with_items("BF.MADD m1", "i", 0..500));
    assert!(is_ints(&r, 500), "{r:?}");
    // 1, or 0 for a false positive (random seed).
    assert!(matches!(w(c, s("BF.ADD m1 y")), Reply::Int(0 | 1)));
    assert!(is_ints(&w(c, s("BF.MADD m1 i0 z1 z2")), 3));
    // BF.RESERVE: scaling, non-scaling, expansion 3 (then scaled).
    assert_eq!(w(c, s("BF.RESERVE r1 0.01 100")), ok());
    assert_eq!(w(c, s("BF.RESERVE r2 0.001 50 NONSCALING")), ok());
    assert_eq!(w(c, s("BF.RESERVE r3 0.05 10 EXPANSION 3")), ok());
    assert!(is_ints(&w(c, with_items("BF.MADD r3", "r", 0..60)), 60));
    assert_eq!(w(c, s("BF.RESERVE r1 0.01 100")), err("ERR item exists"));
    assert!(is_ints(&w(c, s("BF.MADD r2 a b c")), 3));
    // BF.INSERT creating, with and without each option.
    let (seed3, seed_other) = (rand::random::<[u8; 32]>(), rand::random::<[u8; 32]>());
    assert!(is_ints(&w(c, s("BF.INSERT i1 ITEMS a b c")), 3));
    let r = w(
        c,
        s("BF.INSERT i2 CAPACITY 1000 ERROR 0.001 EXPANSION 4 TIGHTENING 0.7 ITEMS a b"),
    );
    assert!(is_ints(&r, 2), "{r:?}");
    let r = w(
        c,
        cmd_of(&[
            b"BF.INSERT",
            b"i3",
            b"SEED",
            &seed3,
            b"CAPACITY",
            b"50",
            b"ERROR",
            b"0.02",
            b"ITEMS",
            b"a",
        ]),
    );
    assert!(is_ints(&r, 1), "{r:?}");
    assert!(is_ints(
        &w(c, s("BF.INSERT i4 NONSCALING CAPACITY 20 ITEMS a b")),
        2
    ));
    let r = w(
        c,
        s("BF.INSERT i5 VALIDATESCALETO 10000 CAPACITY 100 EXPANSION 2 ITEMS a"),
    );
    assert!(is_ints(&r, 1), "{r:?}");
    assert_eq!(
        w(c, s("BF.INSERT i6 CAPACITY 10 TIGHTENING 0.25")),
        arr(vec![])
    );
    let r = w(
        c,
        cmd_of(&[b"BF.INSERT", b"fx", b"SEED", &FIXED_SEED, b"ITEMS", b"a"]),
    );
    assert!(is_ints(&r, 1), "{r:?}");
    assert_eq!(
        w(c, s("BF.INSERT nc NOCREATE ITEMS a")),
        err("ERR not found")
    );
    assert_eq!(
        w(c, s("BF.INSERT vs NONSCALING VALIDATESCALETO 100 ITEMS a")),
        err("ERR cannot use NONSCALING and VALIDATESCALETO options together")
    );
    // BF.INSERT on existing filters: the creation options are ignored.
    assert!(is_ints(&w(c, s("BF.INSERT i1 NOCREATE ITEMS d e")), 2));
    let r = w(
        c,
        cmd_of(&[
            b"BF.INSERT",
            b"i2",
            b"TIGHTENING",
            b"0.9",
            b"SEED",
            &seed_other,
            b"CAPACITY",
            b"5",
            b"ITEMS",
            b"c",
        ]),
    );
    assert!(is_ints(&r, 1), "{r:?}");
    assert!(is_ints(
        &w(c, s("BF.INSERT i3 VALIDATESCALETO 1000 ITEMS b c")),
        2
    ));
    assert!(is_ints(
        &w(c, s("BF.INSERT i4 EXPANSION 3 NONSCALING ITEMS c")),
        1
    ));
    assert!(is_ints(
        &w(c, with_items("BF.INSERT i6 EXPANSION 2 ITEMS", "g", 0..40)),
        40
    ));
    // A MADD that stops at a full non-scaling filter; the same after an
    // auto-creation from non-scaling configs. Fixed seeds: with a random one
    // an item may be a false positive (1 %), which answers 0, not the error.
    let r = w(
        c,
        cmd_of(&[
            b"BF.INSERT",
            b"ns",
            b"CAPACITY",
            b"5",
            b"ERROR",
            b"0.01",
            b"NONSCALING",
            b"SEED",
            &FIXED_SEED,
        ]),
    );
    assert_eq!(r, arr(vec![]));
    let full = "ERR non scaling filter is full";
    let r = w(c, with_items("BF.MADD ns", "n", 0..8));
    assert!(ends_with(&r, 6, full), "{r:?}");
    assert!(ends_with(&w(c, s("BF.MADD ns n0 n8")), 2, full));
    assert!(ends_with(&w(c, s("BF.INSERT ns ITEMS n1 n9")), 2, full));
    assert_eq!(w(c, s("BF.ADD ns n9")), err(full));
    config_set(c, "bf.bloom-expansion", "0");
    config_set(c, "bf.bloom-capacity", "3");
    config_set(c, "bf.bloom-use-random-seed", "no");
    assert!(ends_with(&w(c, s("BF.MADD af a b c d e")), 4, full));
    config_set(c, "bf.bloom-use-random-seed", "yes");
    config_set(c, "bf.bloom-expansion", "2");
    config_set(c, "bf.bloom-capacity", "100");
    // A MADD that stops at the memory limit (set here only: the replica,
    // or the AOF replay, never checks it).
    config_set(c, "bf.bloom-use-random-seed", "no");
    assert_eq!(w(c, s("BF.RESERVE lim 0.01 10")), ok());
    config_set(c, "bf.bloom-use-random-seed", "yes");
    config_set(c, VB_LIMIT, "300");
    let over = "ERR operation exceeds bloom object memory limit";
    let r = w(c, with_items("BF.MADD lim", "l", 0..15));
    assert_eq!(r.as_array().last(), Some(&err(over)), "{r:?}");
    assert_eq!(w(c, s("BF.ADD newlim x")), err(over));
    assert_eq!(w(c, s("BF.INSERT lim2 CAPACITY 1000 ITEMS x")), err(over));
    assert_eq!(
        w(c, s("BF.INSERT lim ITEMS l0 l20")).as_array().last(),
        Some(&err(over))
    );
    config_set(c, VB_LIMIT, VB_DEFAULT_LIMIT);
    assert!(is_ints(&w(c, with_items("BF.MADD lim", "l", 10..15)), 5));
    // BF.LOAD: a blob of another server's AOF rewrite, two built here.
    assert_eq!(w(c, cmd_of(&[b"BF.LOAD", b"ld1", &blobs.rewritten])), ok());
    assert_eq!(w(c, cmd_of(&[b"BF.LOAD", b"ld2", &blobs.single])), ok());
    assert_eq!(w(c, cmd_of(&[b"BF.LOAD", b"ld3", &blobs.chain])), ok());
    assert_eq!(
        w(c, cmd_of(&[b"BF.LOAD", b"ld1", &blobs.single])),
        err("BUSYKEY Target key name already exists.")
    );
    assert_eq!(
        w(c, cmd_of(&[b"BF.LOAD", b"bad", b"\x01xyz"])),
        err("ERR bloom object decoding failed")
    );
    assert!(is_ints(&w(c, with_items("BF.MADD ld3", "q", 0..60)), 60));
    assert!(is_ints(&w(c, with_items("BF.MADD ld1", "q", 0..5)), 5));
    assert!(!w(c, s("BF.ADD ld2 q")).is_error());
}

/// Keys `vb_script` leaves.
const VB_KEYS: usize = 18;

/// Asserts every key is a `bloomfltr` filter (or, in `other`, RedisBloom's)
/// and the seeds are distinct, one of them the fixed seed; returns the
/// number of keys.
fn vb_check_seeds(c: &mut Conn, other: &[&str]) -> usize {
    let keys = c.cmd(&["KEYS", "*"]);
    let mut seeds: BTreeMap<Vec<u8>, String> = BTreeMap::new();
    let mut fixed = 0;
    for k in keys.as_array() {
        let k = k.as_bytes();
        if other.iter().any(|o| o.as_bytes() == k) {
            continue;
        }
        assert_eq!(c.cmd(&[b"TYPE", k]), simple("bloomfltr"), "{}", show(k));
        let d = vb_dump(c, k);
        let seed = d.seed();
        if seed == FIXED_SEED {
            assert_eq!(d.random, 0, "{}", show(k));
            fixed += 1;
            continue;
        }
        assert_eq!(d.random, 1, "{}", show(k));
        if let Some(o) = seeds.insert(seed, show(k)) {
            panic!("{} and {o} have the same seed", show(k));
        }
    }
    // `fx`, `ns`, `af` and `lim` of vb_script, when they are there.
    assert!(fixed <= 4, "{fixed} fixed seeds");
    keys.as_array().len()
}

/// DUMP, DIGEST-VALUE, TYPE of every key and DEBUG DIGEST the same on both.
fn vb_same(mc: &mut Conn, rc: &mut Conn, what: &str) {
    sync(mc, rc);
    let m = snapshot(mc, true);
    assert_same(&m, &snapshot(rc, true), what);
    assert_eq!(
        mc.cmd(&["DEBUG", "DIGEST"]),
        rc.cmd(&["DEBUG", "DIGEST"]),
        "{what}: DEBUG DIGEST"
    );
}

fn debug_reload(c: &mut Conn) {
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), ok());
}

/// The replica never answered its master with an error (a write it could
/// not replay).
fn no_errors_to_master(replica: &Server, what: &str) {
    let log = replica.log();
    let errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("is sending an error to its") || l.contains("CRITICAL"))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

/// valkey-bloom filters (docs/valkey-bloom.md §6) replicate byte for byte
/// from a master on the valkey-bloom flavour to a replica on the default
/// one, by every write path — random seeds travel in the replicated
/// creation, adds that stop at an error replicate the items before it, a
/// limit set on the master only stops nothing on the replica, BF.LOAD
/// travels as received —, after each write, after DEBUG RELOAD on both and
/// after a full resync. A default-flavour master holding `bloomfltr` keys
/// (made by BF.LOAD) replicates them identically too. And an AOF replay
/// after the flavour was changed with CONFIG SET (so the restarted server
/// has the default one again) brings every key back identical.
#[test]
fn valkey_bloom_filters_replicate_exactly() {
    let no_compression: &[&str] = &["--rdbcompression", "no"];
    let vb_master: &[&str] = &[
        "--bf.bloom-flavor",
        "valkey-bloom",
        "--rdbcompression",
        "no",
    ];
    for flavor in all_flavors() {
        let t0 = Instant::now();
        let blobs = Blobs::new(flavor);

        // Master valkey-bloom, replica default.
        let (_master, mut replica, mut mc, mut rc) = linked_with(
            flavor,
            Module::Rsbloom,
            Module::Rsbloom,
            [vb_master, no_compression],
        );
        let flavour =
            |c: &mut Conn| c.cmd(&["CONFIG", "GET", "bf.bloom-flavor"]).as_array()[1].clone();
        assert_eq!(flavour(&mut mc), bulk("valkey-bloom"));
        assert_eq!(flavour(&mut rc), bulk("redisbloom"));
        let mut writes = 0;
        vb_script(&mut mc, &blobs, &mut |mc, args| {
            let r = mc.cmd(args);
            writes += 1;
            let what = format!(
                "{flavor:?} after {}",
                common::diff::show_args(&args[..args.len().min(2)])
            );
            vb_same(mc, &mut rc, &what);
            r
        });
        assert_eq!(vb_check_seeds(&mut mc, &[]), VB_KEYS, "{flavor:?}");
        assert_eq!(vb_check_seeds(&mut rc, &[]), VB_KEYS, "{flavor:?} replica");
        assert_eq!(
            sync_full(&mut mc),
            1,
            "{flavor:?}: only the first sync was full"
        );
        no_errors_to_master(&replica, &format!("{flavor:?}"));
        debug_reload(&mut mc);
        debug_reload(&mut rc);
        vb_same(&mut mc, &mut rc, &format!("{flavor:?} after DEBUG RELOAD"));
        let mut rc = full_resync(&mut mc, &mut replica);
        vb_same(&mut mc, &mut rc, &format!("{flavor:?} full resync"));
        for a in [
            with_items("BF.MADD m1", "after", 0..300),
            with_items("BF.MADD new", "n", 0..3),
        ] {
            mc.cmd(&a);
            vb_same(&mut mc, &mut rc, &format!("{flavor:?} after the resync"));
        }
        assert_eq!(
            vb_check_seeds(&mut rc, &[]),
            VB_KEYS + 1,
            "{flavor:?} replica"
        );
        // A blob built here from a scaled filter's DUMP, for the next master.
        let m1 = vb_dump(&mut mc, b"m1");
        assert!(m1.subs.len() > 2 && m1.expansion == 2 && m1.fp == 0.01 && m1.tightening == 0.5);
        let converted = cmd_of(&[b"BF.LOAD", b"ld4", &m1.load_blob()]);
        drop(rc);
        println!(
            "{flavor:?}: valkey-bloom master -> default replica, {writes} writes, {:.1}s",
            t0.elapsed().as_secs_f64()
        );

        // A default-flavour master holding bloomfltr keys made by BF.LOAD.
        let (_master, mut replica, mut mc, mut rc) = linked_with(
            flavor,
            Module::Rsbloom,
            Module::Rsbloom,
            [no_compression, no_compression],
        );
        let rewritten = cmd_of(&[b"BF.LOAD", b"ld1", &blobs.rewritten]);
        let single = cmd_of(&[b"BF.LOAD", b"ld2", &blobs.single]);
        let chain = cmd_of(&[b"BF.LOAD", b"ld3", &blobs.chain]);
        for a in [
            rewritten,
            single,
            chain,
            converted,
            with_items("BF.MADD ld3", "q", 0..60),
            with_items("BF.MADD ld4", "q", 0..900),
            with_items("BF.INSERT ld1 CAPACITY 5 ERROR 0.1 ITEMS", "q", 0..5),
            with_items("BF.INSERT ld2 NOCREATE ITEMS", "q", 0..5),
            with_items("BF.ADD ld2", "z", 0..1),
            with_items("BF.MADD rb", "q", 0..5),
        ] {
            let r = mc.cmd(&a);
            assert!(
                !r.is_error(),
                "{flavor:?} {}: {r:?}",
                common::diff::show_args(&a[..2])
            );
            vb_same(&mut mc, &mut rc, &format!("{flavor:?} default master"));
        }
        assert_eq!(mc.cmd(&["TYPE", "rb"]), simple("MBbloom--"));
        assert_eq!(vb_check_seeds(&mut rc, &["rb"]), 5);
        debug_reload(&mut mc);
        debug_reload(&mut rc);
        vb_same(
            &mut mc,
            &mut rc,
            &format!("{flavor:?} default master, DEBUG RELOAD"),
        );
        let mut rc = full_resync(&mut mc, &mut replica);
        vb_same(
            &mut mc,
            &mut rc,
            &format!("{flavor:?} default master, full resync"),
        );
        no_errors_to_master(&replica, &format!("{flavor:?} default master"));

        // The AOF replay after CONFIG SET bf.bloom-flavor.
        let mut s = Server::builder(flavor, Module::Rsbloom)
            .aof_fsync_always("no")
            .uncompressed_rdb()
            .start();
        let mut c = s.conn();
        config_set(&mut c, "bf.bloom-flavor", "valkey-bloom");
        vb_script(&mut c, &blobs, &mut |c, args| c.cmd(args));
        let before = snapshot(&mut c, true);
        assert_eq!(before.len(), VB_KEYS);
        s.restart(false);
        let mut c = s.conn();
        assert_eq!(flavour(&mut c), bulk("redisbloom"));
        assert_same(
            &before,
            &snapshot(&mut c, true),
            &format!("{flavor:?} AOF replay"),
        );
        assert_eq!(vb_check_seeds(&mut c, &[]), VB_KEYS);
        // And from the rewrite (BF.LOAD of every key).
        assert!(!c.cmd(&["BGREWRITEAOF"]).is_error());
        common::info::wait_aof_rewrite(&mut c);
        s.restart(false);
        let mut c = s.conn();
        assert_same(
            &before,
            &snapshot(&mut c, true),
            &format!("{flavor:?} rewritten AOF"),
        );
        println!(
            "{flavor:?}: all valkey-bloom replication checks {:.1}s",
            t0.elapsed().as_secs_f64()
        );
    }
}
