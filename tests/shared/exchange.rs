//! Data exchange between rsbloom and the reference RedisBloom 2.8.2, both
//! ways, byte for byte: DUMP/RESTORE, SCANDUMP/LOADCHUNK and RDB files.
//!
//! A set of Bloom (resp. Cuckoo) filters covering the interesting layouts is
//! built with the same commands on both servers (replies must agree). Each
//! filter is then moved from one server to the other under a new key name
//! and compared with its original: full SCANDUMP output, DUMP payload (same
//! value → same bytes), BF.INFO/CF.INFO, and 10 000 probe items (half added,
//! half not) through BF.MEXISTS resp. CF.MEXISTS and CF.COUNT.

use common::diff::*;
use common::*;

const PROBES: usize = 10_000;

/// A filter of the set: key, creation command (if any), number of items
/// added (named `<key>:<i>`), items deleted afterwards (every `del_every`-th),
/// whether to run CF.COMPACT at the end.
struct Spec {
    key: &'static str,
    create: &'static [&'static str],
    adds: usize,
    del_every: usize,
    compact: bool,
}

fn bloom_set() -> Vec<Spec> {
    let s = |key, create, adds| Spec {
        key,
        create,
        adds,
        del_every: 0,
        compact: false,
    };
    vec![
        // Auto-created by BF.ADD with the defaults (100, 0.01, expansion 2), scaled.
        s("b:default", &[], 700),
        s("b:empty", &["BF.RESERVE", "b:empty", "0.01", "100"], 0),
        s(
            "b:e0.001",
            &["BF.RESERVE", "b:e0.001", "0.001", "1000"],
            900,
        ),
        s("b:e0.1", &["BF.RESERVE", "b:e0.1", "0.1", "50"], 400),
        s(
            "b:e1e-6",
            &["BF.RESERVE", "b:e1e-6", "0.000001", "300"],
            500,
        ),
        s("b:e0.25", &["BF.RESERVE", "b:e0.25", "0.25", "7"], 100),
        s(
            "b:exp1",
            &["BF.RESERVE", "b:exp1", "0.01", "50", "EXPANSION", "1"],
            300,
        ),
        s(
            "b:exp4",
            &["BF.RESERVE", "b:exp4", "0.02", "10", "EXPANSION", "4"],
            900,
        ),
        s(
            "b:nonscaling",
            &["BF.RESERVE", "b:nonscaling", "0.01", "1000", "NONSCALING"],
            600,
        ),
        // Non-scaling and filled to the brim (later adds answer "full").
        s(
            "b:full",
            &["BF.RESERVE", "b:full", "0.05", "40", "NONSCALING"],
            120,
        ),
        // A chain of ≥ 10 links (capacity 4 per link, expansion 1).
        s(
            "b:chain",
            &["BF.RESERVE", "b:chain", "0.01", "4", "EXPANSION", "1"],
            120,
        ),
        s(
            "b:insert",
            &[
                "BF.INSERT",
                "b:insert",
                "CAPACITY",
                "30",
                "ERROR",
                "0.005",
                "EXPANSION",
                "3",
                "ITEMS",
                "seed",
            ],
            500,
        ),
    ]
}

fn cuckoo_set() -> Vec<Spec> {
    let s = |key, create, adds, del_every, compact| Spec {
        key,
        create,
        adds,
        del_every,
        compact,
    };
    vec![
        // Auto-created by CF.ADD with the defaults (1024, bucket size 2, expansion 1).
        s("c:default", &[], 900, 0, false),
        s("c:empty", &["CF.RESERVE", "c:empty", "100"], 0, 0, false),
        s(
            "c:bs1",
            &["CF.RESERVE", "c:bs1", "64", "BUCKETSIZE", "1"],
            200,
            0,
            false,
        ),
        s(
            "c:bs2",
            &[
                "CF.RESERVE",
                "c:bs2",
                "64",
                "BUCKETSIZE",
                "2",
                "MAXITERATIONS",
                "5",
            ],
            300,
            0,
            false,
        ),
        s(
            "c:bs4",
            &["CF.RESERVE", "c:bs4", "100", "BUCKETSIZE", "4"],
            400,
            0,
            false,
        ),
        s(
            "c:bs8",
            &[
                "CF.RESERVE",
                "c:bs8",
                "200",
                "BUCKETSIZE",
                "8",
                "MAXITERATIONS",
                "50",
            ],
            600,
            0,
            false,
        ),
        // Never grows; later adds answer "Filter is full".
        s(
            "c:exp0",
            &["CF.RESERVE", "c:exp0", "64", "EXPANSION", "0"],
            120,
            0,
            false,
        ),
        // Several sub-filters of equal size.
        s(
            "c:exp1",
            &[
                "CF.RESERVE",
                "c:exp1",
                "16",
                "EXPANSION",
                "1",
                "BUCKETSIZE",
                "2",
            ],
            150,
            0,
            false,
        ),
        // Several sub-filters of doubling size.
        s(
            "c:exp2",
            &[
                "CF.RESERVE",
                "c:exp2",
                "16",
                "EXPANSION",
                "2",
                "MAXITERATIONS",
                "10",
            ],
            400,
            0,
            false,
        ),
        // Grown, then deletes (automatic compaction).
        s(
            "c:deleted",
            &["CF.RESERVE", "c:deleted", "32", "EXPANSION", "1"],
            300,
            3,
            false,
        ),
        // Grown, deletes, then CF.COMPACT.
        s(
            "c:compacted",
            &["CF.RESERVE", "c:compacted", "16", "EXPANSION", "2"],
            300,
            2,
            true,
        ),
    ]
}

fn set(fam: Fam) -> Vec<Spec> {
    match fam {
        Fam::Bf => bloom_set(),
        Fam::Cf => cuckoo_set(),
    }
}

fn item(key: &str, i: usize) -> Vec<u8> {
    format!("{key}:{i}").into_bytes()
}

/// The commands building the set.
fn build_commands(fam: Fam) -> Vec<Args> {
    let mut out = Vec::new();
    for spec in set(fam) {
        if !spec.create.is_empty() {
            out.push(sargs(spec.create));
        }
        let add = match fam {
            Fam::Bf => "BF.ADD",
            Fam::Cf => "CF.ADD",
        };
        for i in 0..spec.adds {
            out.push(vec![add.into(), spec.key.into(), item(spec.key, i)]);
        }
        if spec.del_every > 0 {
            for i in (0..spec.adds).step_by(spec.del_every) {
                out.push(vec![b"CF.DEL".to_vec(), spec.key.into(), item(spec.key, i)]);
            }
        }
        if spec.compact {
            out.push(sargs(&["CF.COMPACT", spec.key]));
        }
    }
    out
}

/// Builds the set on both servers with the same commands; replies must agree.
/// Returns the (reference) replies.
fn build_on_both(fam: Fam, rs: &mut Side, rf: &mut Side) -> Vec<Reply> {
    let cmds = build_commands(fam);
    let (ra, rb) = pipeline2(rs.conn(false), rf.conn(false), &cmds);
    let mut diffs = Vec::new();
    for ((c, a), b) in cmds.iter().zip(&ra).zip(&rb) {
        if a != b {
            diffs.push(format!(
                "{} → rsbloom {} / reference {}",
                show_args(c),
                show_reply(a),
                show_reply(b)
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{fam:?} set built differently ({} replies differ):\n{}",
        diffs.len(),
        diffs[..diffs.len().min(20)].join("\n")
    );
    rb
}

fn probes(key: &str, adds: usize) -> Vec<Vec<u8>> {
    (0..PROBES)
        .map(|i| {
            if i < PROBES / 2 && adds > 0 {
                item(key, i % adds)
            } else {
                format!("absent:{key}:{i}").into_bytes()
            }
        })
        .collect()
}

/// Everything observable about one filter, for comparison.
#[derive(Debug, PartialEq)]
struct Snapshot {
    scandump: Result<Vec<(i64, Vec<u8>)>, Reply>,
    dump: Reply,
    info: Reply,
    debug: Reply,
    mexists: Reply,
    counts: Vec<Reply>,
}

fn snapshot(fam: Fam, side: &mut Side, key: &[u8], spec: &Spec) -> Snapshot {
    let p = fam.prefix();
    let c = side.conn(false);
    let scandump = filters::try_scandump(c, fam, key);
    let dump = c.cmd(&[b"DUMP".to_vec(), key.to_vec()]);
    let info = c.cmd(&[format!("{p}.INFO").into_bytes(), key.to_vec()]);
    let debug = c.cmd(&[format!("{p}.DEBUG").into_bytes(), key.to_vec()]);
    let items = probes(spec.key, spec.adds);
    let mut mexists = vec![format!("{p}.MEXISTS").into_bytes(), key.to_vec()];
    mexists.extend(items.iter().cloned());
    let mexists = c.cmd(&mexists);
    let counts = match fam {
        Fam::Bf => Vec::new(),
        Fam::Cf => {
            let cmds: Vec<Args> = items
                .iter()
                .map(|i| vec![b"CF.COUNT".to_vec(), key.to_vec(), i.clone()])
                .collect();
            c.pipeline(&cmds)
        }
    };
    Snapshot {
        scandump,
        dump,
        info,
        debug,
        mexists,
        counts,
    }
}

/// Compares `dst_key` on `dst` with `src_key` on `src`; returns a failure
/// description per differing aspect.
fn compare(
    fam: Fam,
    what: &str,
    src: &mut Side,
    src_key: &[u8],
    dst: &mut Side,
    dst_key: &[u8],
    spec: &Spec,
) -> Vec<String> {
    let a = snapshot(fam, src, src_key, spec);
    let b = snapshot(fam, dst, dst_key, spec);
    let mut out = Vec::new();
    let mut check = |aspect: &str, same: bool, detail: String| {
        if !same {
            out.push(format!("{what}: {} {aspect} differs: {detail}", spec.key));
        }
    };
    check("SCANDUMP", a.scandump == b.scandump, String::new());
    check(
        "DUMP payload",
        a.dump == b.dump,
        format!("{} vs {}", show_reply(&a.dump), show_reply(&b.dump)),
    );
    check(
        "INFO",
        a.info == b.info,
        format!("{:?} vs {:?}", a.info, b.info),
    );
    check(
        "DEBUG",
        a.debug == b.debug,
        format!("{:?} vs {:?}", a.debug, b.debug),
    );
    check("MEXISTS over probes", a.mexists == b.mexists, String::new());
    check("CF.COUNT over probes", a.counts == b.counts, String::new());
    // The source must be a real filter and the probes meaningful.
    if !matches!(a.dump, Reply::Bulk(_)) {
        out.push(format!(
            "{what}: source {} has no DUMP payload: {:?}",
            spec.key, a.dump
        ));
    }
    if spec.adds > 0 {
        let positives = a
            .mexists
            .as_array()
            .iter()
            .filter(|r| matches!(r, Reply::Int(1)))
            .count();
        if positives < PROBES / 10 {
            out.push(format!(
                "{what}: source {} answers only {positives} probes positively",
                spec.key
            ));
        }
    }
    out
}

fn moved_key(key: &str, how: &str) -> Vec<u8> {
    format!("{key}@{how}").into_bytes()
}

/// DUMP on `src` → RESTORE on `dst` under a new name.
fn move_by_restore(fam: Fam, src: &mut Side, dst: &mut Side, how: &str) -> Vec<String> {
    let mut fails = Vec::new();
    for spec in set(fam) {
        let payload = src.cmd(&[b"DUMP".to_vec(), spec.key.into()]);
        let Reply::Bulk(payload) = payload else {
            fails.push(format!("{how}: DUMP {} → {payload:?}", spec.key));
            continue;
        };
        let to = moved_key(spec.key, how);
        let r = dst.cmd(&[
            b"RESTORE".to_vec(),
            to.clone(),
            b"0".to_vec(),
            payload,
            b"REPLACE".to_vec(),
        ]);
        if r != ok() {
            fails.push(format!("{how}: RESTORE {} → {r:?}", spec.key));
            continue;
        }
        fails.extend(compare(fam, how, src, spec.key.as_bytes(), dst, &to, &spec));
    }
    fails
}

/// Full SCANDUMP on `src` → LOADCHUNK on `dst` under a new name.
fn move_by_chunks(fam: Fam, src: &mut Side, dst: &mut Side, how: &str) -> Vec<String> {
    let mut fails = Vec::new();
    for spec in set(fam) {
        let pairs = match filters::try_scandump(src.conn(false), fam, spec.key) {
            Ok(p) => p,
            Err(e) => {
                fails.push(format!("{how}: SCANDUMP {} → {e:?}", spec.key));
                continue;
            }
        };
        if pairs.is_empty() {
            // An empty Cuckoo filter cannot be dumped (docs/cuckoo.md §14 step 3).
            assert_eq!(fam, Fam::Cf, "{how}: empty SCANDUMP of {}", spec.key);
            continue;
        }
        let to = moved_key(spec.key, how);
        let replies = filters::loadchunks(dst.conn(false), fam, &to, &pairs);
        if let Some(bad) = replies.iter().find(|r| **r != ok()) {
            fails.push(format!("{how}: LOADCHUNK of {} → {bad:?}", spec.key));
            continue;
        }
        fails.extend(compare(fam, how, src, spec.key.as_bytes(), dst, &to, &spec));
    }
    fails
}

/// SAVE on `src`, start a server of `dst_module` on a copy of the RDB file,
/// compare every key of the set with the source.
fn move_by_rdb(fam: Fam, src: &mut Side, dst_module: Module, how: &str) -> Vec<String> {
    assert_eq!(src.cmd(&sargs(&["SAVE"])), ok());
    let dir = tempfile::Builder::new()
        .prefix("rsbloom-exchange-")
        .tempdir()
        .expect("tempdir");
    std::fs::copy(
        src.server.dir().join("dump.rdb"),
        dir.path().join("dump.rdb"),
    )
    .expect("copy dump.rdb");
    let mut dst = Side::from_server(
        Server::builder(src.server.flavor(), dst_module)
            .dir(dir.path())
            .start(),
    );
    let dbsize = dst.cmd(&sargs(&["DBSIZE"]));
    let src_dbsize = src.cmd(&sargs(&["DBSIZE"]));
    let mut fails = Vec::new();
    if dbsize != src_dbsize {
        fails.push(format!(
            "{how}: DBSIZE {dbsize:?} after loading, source has {src_dbsize:?}"
        ));
    }
    for spec in set(fam) {
        fails.extend(compare(
            fam,
            how,
            src,
            spec.key.as_bytes(),
            &mut dst,
            spec.key.as_bytes(),
            &spec,
        ));
    }
    dst.server.stop(false);
    fails
}

fn exchange(fam: Fam, moves: &[&str]) {
    for flavor in flavors() {
        exchange_on(flavor, fam, moves);
    }
}

/// Both modules on the same server binary.
fn exchange_on(flavor: Flavor, fam: Fam, moves: &[&str]) {
    let mut rs = Side::start(flavor, subject_module());
    let mut rf = Side::start(flavor, Module::Reference);
    let replies = build_on_both(fam, &mut rs, &mut rf);
    // The set really contains the interesting states.
    let texts: Vec<String> = replies
        .iter()
        .filter_map(|r| match r {
            Reply::Error(e) => Some(e.clone()),
            _ => None,
        })
        .collect();
    match fam {
        Fam::Bf => {
            assert!(
                texts.iter().any(|e| e == "ERR non scaling filter is full"),
                "b:full never filled"
            );
            let links = rf.cmd(&sargs(&["BF.INFO", "b:chain", "FILTERS"]));
            assert!(
                links.as_array()[0].as_int() >= 10,
                "b:chain has {links:?} links"
            );
        }
        Fam::Cf => {
            assert!(
                texts.iter().any(|e| e == "Filter is full"),
                "c:exp0 never filled"
            );
            for key in ["c:exp1", "c:exp2", "c:deleted", "c:compacted"] {
                let dbg = rf.cmd(&sargs(&["CF.DEBUG", key]));
                let filters: u32 = String::from_utf8_lossy(dbg.as_bytes())
                    .split(' ')
                    .find_map(|f| f.strip_prefix("filters:").map(|v| v.parse().unwrap()))
                    .unwrap();
                assert!(filters >= 3, "{key} has only {filters} sub-filters");
            }
        }
    }
    let mut fails = Vec::new();
    // Built natively on both sides, the filters must already be identical.
    for spec in set(fam) {
        fails.extend(compare(
            fam,
            "native",
            &mut rf,
            spec.key.as_bytes(),
            &mut rs,
            spec.key.as_bytes(),
            &spec,
        ));
    }
    for m in moves {
        let f = match *m {
            "restore-ref-to-rs" => move_by_restore(fam, &mut rf, &mut rs, m),
            "restore-rs-to-ref" => move_by_restore(fam, &mut rs, &mut rf, m),
            "chunks-ref-to-rs" => move_by_chunks(fam, &mut rf, &mut rs, m),
            "chunks-rs-to-ref" => move_by_chunks(fam, &mut rs, &mut rf, m),
            "rdb-ref-to-rs" => move_by_rdb(fam, &mut rf, subject_module(), m),
            "rdb-rs-to-ref" => move_by_rdb(fam, &mut rs, Module::Reference, m),
            _ => unreachable!(),
        };
        eprintln!(
            "{fam:?} {m} on {flavor:?}: {} keys moved, {} differences",
            set(fam).len(),
            f.len()
        );
        fails.extend(f);
    }
    assert!(
        fails.is_empty(),
        "{fam:?} on {flavor:?}: {} differences:\n{}",
        fails.len(),
        fails.join("\n")
    );
}

#[test]
fn bloom_dump_restore_both_ways() {
    exchange(Fam::Bf, &["restore-ref-to-rs", "restore-rs-to-ref"]);
}

#[test]
fn bloom_scandump_loadchunk_both_ways() {
    exchange(Fam::Bf, &["chunks-ref-to-rs", "chunks-rs-to-ref"]);
}

#[test]
fn bloom_rdb_files_both_ways() {
    exchange(Fam::Bf, &["rdb-ref-to-rs", "rdb-rs-to-ref"]);
}

#[test]
fn cuckoo_dump_restore_both_ways() {
    exchange(Fam::Cf, &["restore-ref-to-rs", "restore-rs-to-ref"]);
}

#[test]
fn cuckoo_scandump_loadchunk_both_ways() {
    exchange(Fam::Cf, &["chunks-ref-to-rs", "chunks-rs-to-ref"]);
}

#[test]
fn cuckoo_rdb_files_both_ways() {
    exchange(Fam::Cf, &["rdb-ref-to-rs", "rdb-rs-to-ref"]);
}
