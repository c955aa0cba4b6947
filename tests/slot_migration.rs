//! Atomic slot migration (Valkey ≥ 9, `CLUSTER MIGRATESLOTS`) of Bloom and
//! Cuckoo filters: small ones, scaled chains and filters of more than
//! 16 MiB (several LOADCHUNK commands in their AOF form), while a client
//! keeps writing to them.
//!
//! On a real 3+3 cluster: a first migration is held before its hand-over
//! (DEBUG SLOTMIGRATION PREVENT-PAUSE) and cancelled: the target, whose
//! module counted the imported values, drops them, and the source serves
//! its filters unchanged. A second one completes under writes. Then every
//! filter on the target is byte-identical (DUMP, SCANDUMP, DEBUG
//! DIGEST-VALUE) to the same commands replayed on a standalone server,
//! the target's replica agrees, and the source holds nothing of the slots.
//! Servers without atomic slot migration are skipped (the module declares
//! it only where the server offers it: `tests/module.rs`).
//!
//! The filters are created and written through redis-rs's cluster client,
//! which follows the slots to their new owner; the standalone replay goes
//! through redis-rs too, so that replies compare as the same client sees
//! them.
mod common;
use common::client::{self, query, try_query};
use common::cluster::{keyslot, redirects, Cluster};
use common::diff::{sargs, Args};
use common::stream::{assert_same, snapshot, KeySnap};
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redis::{ConnectionLike, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

/// Slots `0..MIGRATED` move; they belong to the master that owns slot 0.
const MIGRATED: u16 = 2048;
/// Writes before the migration starts, and after it completed.
const WRITES_AROUND: usize = 300;

#[derive(Clone)]
struct Filter {
    key: String,
    fam: Fam,
    create: Args,
    /// Commands that fill it before the migrations.
    fill: Vec<Args>,
}

fn items(prefix: &str, from: usize, n: usize) -> Vec<Vec<u8>> {
    (from..from + n)
        .map(|i| format!("{prefix}-{i}").into_bytes())
        .collect()
}

fn with(mut head: Args, rest: Vec<Vec<u8>>) -> Args {
    head.extend(rest);
    head
}

/// A command's reply as redis-rs gives it, an error as its text: the same
/// through the cluster client and a plain connection.
type Answer = Result<Value, String>;

fn answer(c: &mut dyn ConnectionLike, cmd: &Args) -> Answer {
    try_query(c, cmd).map_err(|e| e.to_string())
}

/// Hash tags whose slots (as node `via` computes them) lie in `range`, `n`
/// of them, distinct slots.
fn tags(via: u16, range: std::ops::Range<u16>, n: usize) -> Vec<String> {
    let mut seen = Vec::new();
    (0..)
        .map(|i| format!("{{asm{i}}}"))
        .filter(|t| {
            let s = keyslot(via, t);
            let fresh = range.contains(&s) && !seen.contains(&s);
            if fresh {
                seen.push(s);
            }
            fresh
        })
        .take(n)
        .collect()
}

/// A small Bloom and Cuckoo filter per tag, of varied parameters.
fn small(tags: &[String]) -> Vec<Filter> {
    let mut out = Vec::new();
    for (i, t) in tags.iter().enumerate() {
        let key = format!("{t}:bf");
        let create = match i % 3 {
            0 => sargs(&["BF.RESERVE", &key, "0.01", "200"]),
            1 => sargs(&["BF.RESERVE", &key, "0.001", "500", "NONSCALING"]),
            _ => sargs(&["BF.RESERVE", &key, "0.05", "50", "EXPANSION", "4"]),
        };
        let fill = vec![with(sargs(&["BF.MADD", &key]), items(&key, 0, 40))];
        out.push(Filter {
            key,
            fam: Fam::Bf,
            create,
            fill,
        });
        let key = format!("{t}:cf");
        let create = match i % 3 {
            0 => sargs(&["CF.RESERVE", &key, "256"]),
            1 => sargs(&["CF.RESERVE", &key, "512", "BUCKETSIZE", "4"]),
            _ => sargs(&["CF.RESERVE", &key, "64", "EXPANSION", "2"]),
        };
        let fill = vec![with(
            sargs(&["CF.INSERT", &key, "ITEMS"]),
            items(&key, 0, 40),
        )];
        out.push(Filter {
            key,
            fam: Fam::Cf,
            create,
            fill,
        });
    }
    out
}

/// [`small`] plus scaled chains, two filters of more than 16 MiB, and
/// (last) the key CF.COMPACT writes to; `tags` has at least three.
fn filters(tags: &[String]) -> Vec<Filter> {
    let mut out = small(tags);
    let t = &tags[0];
    let key = format!("{t}:bf-chain");
    out.push(Filter {
        create: sargs(&["BF.RESERVE", &key, "0.01", "100", "EXPANSION", "2"]),
        fill: items(&key, 0, 3000)
            .chunks(500)
            .map(|c| with(sargs(&["BF.MADD", &key]), c.to_vec()))
            .collect(),
        key,
        fam: Fam::Bf,
    });
    let key = format!("{t}:cf-chain");
    out.push(Filter {
        create: sargs(&["CF.RESERVE", &key, "64", "EXPANSION", "2"]),
        fill: items(&key, 0, 1500)
            .chunks(300)
            .map(|c| with(sargs(&["CF.INSERT", &key, "ITEMS"]), c.to_vec()))
            .collect(),
        key,
        fam: Fam::Cf,
    });
    let t = &tags[1];
    // 49 MiB and 32 MiB: a header and four, resp. two, 16 MiB LOADCHUNKs
    // (the Cuckoo filter grows 32 MiB sub-filters as the writer adds
    // duplicates).
    let key = format!("{t}:bf-big");
    out.push(Filter {
        create: sargs(&["BF.RESERVE", &key, "0.0001", "20000000"]),
        fill: vec![with(sargs(&["BF.MADD", &key]), items(&key, 0, 2000))],
        key,
        fam: Fam::Bf,
    });
    let key = format!("{t}:cf-big");
    out.push(Filter {
        create: sargs(&["CF.RESERVE", &key, "33554432"]),
        fill: vec![with(
            sargs(&["CF.INSERT", &key, "ITEMS"]),
            items(&key, 0, 2000),
        )],
        key,
        fam: Fam::Cf,
    });
    let key = format!("{}:cf-compact", tags[2]);
    out.push(Filter {
        create: sargs(&["CF.RESERVE", &key, "64", "EXPANSION", "1"]),
        fill: vec![with(
            sargs(&["CF.INSERT", &key, "ITEMS"]),
            items(&key, 0, 100),
        )],
        key,
        fam: Fam::Cf,
    });
    out
}

/// One write of the concurrent client, drawn for `f` (`n`: a counter that
/// keeps items fresh). CF.COMPACT only goes to the compact key: run while
/// the source pauses writes, it is skipped there (it may not replicate),
/// so its effect on the layout depends on timing. That key's deletions
/// take each filled item once (`deleted` counts them), so that no deletion
/// can remove another item's fingerprint.
fn draw(rng: &mut SmallRng, f: &Filter, n: usize, compact_key: &str, deleted: &mut usize) -> Args {
    let k = f.key.as_str();
    let fresh = || format!("w{n}").into_bytes();
    let old = |rng: &mut SmallRng| format!("{k}-{}", rng.gen_range(0..40)).into_bytes();
    if k == compact_key {
        return match rng.gen_range(0..4) {
            0 => sargs(&["CF.COMPACT", k]),
            1 if *deleted < 100 => {
                *deleted += 1;
                sargs(&["CF.DEL", k, &format!("{k}-{}", *deleted - 1)])
            }
            _ => with(sargs(&["CF.ADD", k]), vec![fresh()]),
        };
    }
    match (f.fam, rng.gen_range(0..4)) {
        (Fam::Bf, 0) => with(sargs(&["BF.ADD", k]), vec![fresh()]),
        (Fam::Bf, 1) => with(sargs(&["BF.MADD", k]), vec![fresh(), old(rng)]),
        (Fam::Bf, 2) => with(sargs(&["BF.INSERT", k, "NOCREATE", "ITEMS"]), vec![fresh()]),
        (Fam::Bf, _) => with(sargs(&["BF.ADD", k]), vec![old(rng)]),
        (Fam::Cf, 0) => with(sargs(&["CF.ADD", k]), vec![fresh()]),
        (Fam::Cf, 1) => with(sargs(&["CF.ADDNX", k]), vec![fresh()]),
        (Fam::Cf, 2) => with(sargs(&["CF.DEL", k]), vec![old(rng)]),
        (Fam::Cf, _) => with(sargs(&["CF.INSERT", k, "ITEMS"]), vec![fresh(), old(rng)]),
    }
}

/// `CLUSTER GETSLOTMIGRATIONS` entries of `operation` (IMPORT / EXPORT), as
/// field → value maps, oldest first.
fn migrations(port: u16, operation: &str) -> Vec<HashMap<String, String>> {
    let jobs: Vec<HashMap<String, String>> = query(
        &mut client::connect(port),
        &["CLUSTER", "GETSLOTMIGRATIONS"],
    );
    jobs.into_iter()
        .filter(|m| m.get("operation").map(String::as_str) == Some(operation))
        .collect()
}

/// Waits until the `operation` job on `port` that is not in `known` (the
/// jobs listed before the migration started) is in one of `states`.
fn wait_job(port: u16, operation: &str, known: &[String], states: &[&str]) {
    wait::until(
        &format!("the new {operation} job on {port} in {states:?}"),
        wait::STATE,
        || {
            let jobs = migrations(port, operation);
            let new = jobs.iter().find(|j| !known.contains(&j["name"]));
            match new {
                Some(j) if states.contains(&j["state"].as_str()) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
}

/// Names of the jobs `port` lists.
fn job_names(port: u16) -> Vec<String> {
    ["IMPORT", "EXPORT"]
        .iter()
        .flat_map(|op| migrations(port, op))
        .map(|j| j["name"].clone())
        .collect()
}

fn bf_info(c: &mut Conn, field: &str) -> i64 {
    info::field(c, "bf", field).parse().expect("number")
}

/// Waits until the node's module counts `keys` values of each type.
fn wait_counts(port: u16, bloom: i64, cuckoo: i64, what: &str) {
    let mut c = Conn::connect(port).expect("connect");
    wait::until(what, wait::STATE, || {
        let got = (
            bf_info(&mut c, "bf_bloom_keys"),
            bf_info(&mut c, "bf_cuckoo_keys"),
        );
        match got == (bloom, cuckoo) {
            true => Ok(()),
            false => Err(format!(
                "bloom, cuckoo values {got:?}, want {:?}",
                (bloom, cuckoo)
            )),
        }
    });
}

fn migrate(src: &mut Conn, target_id: &str) {
    let end = (MIGRATED - 1).to_string();
    let r = src.cmd(&[
        "CLUSTER",
        "MIGRATESLOTS",
        "SLOTSRANGE",
        "0",
        &end,
        "NODE",
        target_id,
    ]);
    assert_eq!(r, ok(), "CLUSTER MIGRATESLOTS");
}

/// The migrated keys of a snapshot, without `skip`.
fn only(
    mut snap: BTreeMap<Vec<u8>, KeySnap>,
    keep: &[&Filter],
    skip: &str,
) -> BTreeMap<Vec<u8>, KeySnap> {
    snap.retain(|k, _| keep.iter().any(|f| f.key.as_bytes() == k) && k != skip.as_bytes());
    snap
}

/// Counts lines of the module's migration log in a server log.
fn logged(s: &Server, what: &str) -> usize {
    s.log()
        .lines()
        .filter(|l| l.contains("rsbloom: atomic slot migration") && l.contains(what))
        .count()
}

fn migration_test(flavor: Flavor) {
    let t0 = Instant::now();
    let cluster = Cluster::start(flavor, Module::Rsbloom);
    let ports = cluster.live_ports();
    let masters = cluster.masters(ports[0]);
    let (&source, ranges) = masters
        .iter()
        .find(|(_, r)| r.iter().any(|&(s, _)| s == 0))
        .expect("owner of slot 0");
    let own_end = ranges.iter().find(|&&(s, _)| s == 0).expect("range").1;
    assert!(
        own_end > MIGRATED + 100,
        "slot range of the source {ranges:?}"
    );
    let target = *masters.keys().find(|&&p| p != source).expect("target");
    let target_id = Cluster::node_id(target);
    let target_replica = cluster.replica_of(target);
    let mut src = Conn::connect(source).expect("connect");
    let mut dst = Conn::connect(target).expect("connect");

    // ---- Filters in the migrated slots, bystanders in the source's others.
    let set = filters(&tags(source, 0..MIGRATED, 8));
    let compact_key = set.last().expect("compact key").key.clone();
    let bystanders = small(&tags(source, MIGRATED..own_end, 2));
    let client = cluster.client();
    let mut c = client.get_connection().expect("cluster connection");
    let mut log: Vec<(Args, Answer)> = Vec::new();
    for f in set.iter().chain(&bystanders) {
        for cmd in std::iter::once(&f.create).chain(&f.fill) {
            let r = answer(&mut c, cmd);
            assert!(r.is_ok(), "{}: {r:?}", show(cmd));
            if set.iter().any(|s| s.key == f.key) {
                log.push((cmd.clone(), r));
            }
        }
    }
    let count = |fs: &[Filter], fam: Fam| fs.iter().filter(|f| f.fam == fam).count() as i64;
    let (bf_n, cf_n) = (count(&set, Fam::Bf), count(&set, Fam::Cf));
    let (bf_by, cf_by) = (count(&bystanders, Fam::Bf), count(&bystanders, Fam::Cf));
    wait_counts(source, bf_n + bf_by, cf_n + cf_by, "the source's filters");
    let before = snapshot(&mut src, true);

    // ---- A migration held before its hand-over, then cancelled.
    assert_eq!(
        src.cmd(&["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "1"]),
        ok()
    );
    let known = [job_names(source), job_names(target)].concat();
    migrate(&mut src, &target_id);
    wait_job(target, "IMPORT", &known, &["waiting-for-paused"]);
    // The target's module holds the imported values (invisible to clients).
    wait_counts(target, bf_n, cf_n, "the imported filters on the target");
    wait_counts(
        target_replica,
        bf_n,
        cf_n,
        "the imported filters on the target's replica",
    );
    assert_eq!(src.cmd(&["CLUSTER", "CANCELSLOTMIGRATIONS"]), ok());
    wait_job(source, "EXPORT", &known, &["cancelled"]);
    wait_job(target, "IMPORT", &known, &["failed", "cancelled"]);
    wait_counts(target, 0, 0, "the aborted import dropped on the target");
    wait_counts(
        target_replica,
        0,
        0,
        "the aborted import dropped on the replica",
    );
    for node in [target, target_replica] {
        let mut c = Conn::connect(node).expect("connect");
        let bytes = [
            bf_info(&mut c, "bf_bloom_memory"),
            bf_info(&mut c, "bf_cuckoo_memory"),
        ];
        assert_eq!(bytes, [0, 0], "{node}: bytes of the dropped import");
    }
    assert_same(&before, &snapshot(&mut src, true), "source after the abort");
    assert_eq!(dst.cmd(&["DBSIZE"]), int(0));
    assert_eq!(
        src.cmd(&["DEBUG", "SLOTMIGRATION", "PREVENT-PAUSE", "0"]),
        ok()
    );
    for (node, what) in [(target, "import aborted"), (source, "export aborted")] {
        let n = cluster.node(node);
        wait::until(&format!("{what} logged"), wait::STATE, || {
            match logged(n, what) {
                1 => Ok(()),
                k => Err(format!("{k} lines")),
            }
        });
    }

    // ---- The migration, under writes from another client.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let moved_before = redirects(&[source]).moved;
    let writer = {
        let (stop, written) = (stop.clone(), written.clone());
        let (set, client, compact_key) = (set.clone(), client.clone(), compact_key.clone());
        thread::spawn(move || {
            let mut c = client.get_connection().expect("cluster connection");
            let mut rng = SmallRng::seed_from_u64(12);
            let mut out: Vec<(Args, Answer, Instant)> = Vec::new();
            let mut deleted = 0;
            while !stop.load(Ordering::SeqCst) {
                let f = &set[rng.gen_range(0..set.len())];
                let cmd = draw(&mut rng, f, out.len(), &compact_key, &mut deleted);
                let r = answer(&mut c, &cmd);
                out.push((cmd, r, Instant::now()));
                written.store(out.len(), Ordering::SeqCst);
            }
            out
        })
    };
    let writes_reach = |n: usize| {
        wait::until(&format!("{n} writes"), wait::STATE, || {
            match written.load(Ordering::SeqCst) {
                w if w >= n => Ok(()),
                w => Err(format!("{w} writes")),
            }
        })
    };
    writes_reach(WRITES_AROUND);
    let known = [job_names(source), job_names(target)].concat();
    let moving = bf_info(&mut src, "bf_bloom_memory") + bf_info(&mut src, "bf_cuckoo_memory");
    let started = Instant::now();
    migrate(&mut src, &target_id);
    wait_job(source, "EXPORT", &known, &["success"]);
    wait_job(target, "IMPORT", &known, &["success"]);
    let took = started.elapsed();
    let done = Instant::now();
    // Writes go on at the new owner.
    writes_reach(written.load(Ordering::SeqCst) + WRITES_AROUND);
    stop.store(true, Ordering::SeqCst);
    let writes = writer.join().expect("writer thread");
    let during = writes
        .iter()
        .filter(|(_, _, t)| *t >= started && *t <= done)
        .count();
    let moved = redirects(&[source]).moved - moved_before;
    assert!(moved > 0, "the writer was redirected to the new owner");

    // ---- The same commands on a standalone server: same replies, same filters.
    let model = Server::start(flavor, Module::Rsbloom);
    let mut m = model.conn();
    let mut plain = client::connect(model.port);
    log.extend(writes.into_iter().map(|(a, r, _)| (a, r)));
    for (cmd, want) in &log {
        let got = answer(&mut plain, cmd);
        assert_eq!(&got, want, "{}: standalone vs cluster reply", show(cmd));
    }
    let keep: Vec<&Filter> = set.iter().collect();
    cluster.wait_converged("cluster after the migration");
    for &p in &ports {
        let owner = cluster
            .masters(p)
            .into_iter()
            .find(|(_, r)| r.iter().any(|&(s, _)| s == 0));
        assert_eq!(
            owner.map(|(o, _)| o),
            Some(target),
            "owner of slot 0 as {p} sees it"
        );
    }
    let on_target = snapshot(&mut dst, true);
    assert_eq!(on_target.len(), set.len(), "keys on the target");
    let bytes = bf_info(&mut dst, "bf_bloom_memory") + bf_info(&mut dst, "bf_cuckoo_memory");
    assert_same(
        &only(snapshot(&mut m, true), &keep, &compact_key),
        &only(on_target, &keep, &compact_key),
        "target vs the writes replayed",
    );
    // The compact key: every item added and not deleted is still found.
    let mut live: HashMap<Vec<u8>, i64> = HashMap::new();
    for (cmd, r) in &log {
        if cmd[1] == compact_key.as_bytes() {
            match (cmd[0].as_slice(), r) {
                (b"CF.ADD", Ok(Value::Int(1))) => *live.entry(cmd[2].clone()).or_default() += 1,
                (b"CF.DEL", Ok(Value::Int(1))) => *live.entry(cmd[2].clone()).or_default() -= 1,
                (b"CF.INSERT", Ok(Value::Array(_))) => {
                    for it in &cmd[3..] {
                        *live.entry(it.clone()).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
    }
    for (it, n) in live.iter().filter(|(_, &n)| n > 0) {
        let count: i64 = query(&mut c, &[b"CF.COUNT", compact_key.as_bytes(), it]);
        assert!(
            count >= *n,
            "{compact_key} {:?}: CF.COUNT {count}",
            String::from_utf8_lossy(it)
        );
    }
    // The target's replica has the same filters, the compact key included.
    assert!(dst.cmd(&["WAIT", "1", "60000"]).as_int() >= 1);
    let mut r = Conn::connect(target_replica).expect("connect");
    assert_eq!(r.cmd(&["READONLY"]), ok());
    wait::until("the replica caught up", wait::STATE, || {
        let a = info::field(&mut dst, "replication", "master_repl_offset");
        let b = info::field(&mut r, "replication", "master_repl_offset");
        if a == b {
            Ok(())
        } else {
            Err(format!("{a} vs {b}"))
        }
    });
    assert_same(
        &snapshot(&mut dst, true),
        &snapshot(&mut r, true),
        "target vs its replica",
    );
    // Nothing of the slots is left on the source; the bystanders stay.
    for s in 0..MIGRATED {
        let n = src.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &s.to_string()]);
        assert_eq!(n, int(0), "slot {s} on the source");
    }
    wait_counts(source, bf_by, cf_by, "only the bystanders on the source");
    let left: Vec<Vec<u8>> = snapshot(&mut src, false).into_keys().collect();
    let mut want: Vec<Vec<u8>> = bystanders
        .iter()
        .map(|f| f.key.clone().into_bytes())
        .collect();
    want.sort();
    assert_eq!(left, want, "keys left on the source");
    for (node, what) in [
        (source, "export started"),
        (source, "export completed"),
        (target, "import started"),
        (target, "import completed"),
    ] {
        assert!(logged(cluster.node(node), what) >= 1, "{what} on {node}");
    }
    for n in &cluster.nodes {
        n.check_log();
    }
    eprintln!(
        "{flavor:?}: migrated {} filters ({bf_n} Bloom, {cf_n} Cuckoo; source {moving} bytes \
         with bystanders at the start, target {bytes} bytes after) in {took:?} with {during} \
         writes during the migration ({} in all); test took {:?}",
        set.len(),
        log.len(),
        t0.elapsed()
    );
}

fn show(cmd: &Args) -> String {
    common::diff::show_args(&cmd[..cmd.len().min(3)])
}

#[test]
fn atomic_slot_migration_under_writes() {
    let asm: Vec<Flavor> = flavors()
        .into_iter()
        .filter(|f| f.atomic_slot_migration())
        .collect();
    if asm.is_empty() {
        eprintln!("no selected server has atomic slot migration: skipped");
    }
    for flavor in asm {
        migration_test(flavor);
    }
}
