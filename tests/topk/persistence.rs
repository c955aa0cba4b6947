//! Top-K persistence (docs/topk.md §5): DEBUG RELOAD, DUMP/RESTORE and
//! COPY keep every byte (generator state included); the AOF rewrite is
//! `RESTORE key 0 <DUMP payload>`; and RDB files, DUMP payloads and AOF
//! rewrites move both ways between rsbloom and RedisBloom 2.8.2, the keys
//! answering identically afterwards (DUMP compared with the heap records'
//! pointer fields masked).
use common::diff::{sargs, subject_module, Args, Side};
use common::topk::{masked, TopkStream};
use common::*;
use std::path::Path;

/// A mix of sketches with decay < 1 written by the seeded stream.
fn fill(c: &mut Conn, seed: u64, n: usize) {
    TopkStream::new(seed).run(c, n, true, false);
}

fn dumps(c: &mut Conn, keys: &[&str], cmd: &[&str]) -> Vec<Reply> {
    keys.iter()
        .map(|k| {
            let mut a: Vec<&str> = cmd.to_vec();
            a.push(k);
            c.cmd(&a)
        })
        .collect()
}

#[test]
fn reload_restore_and_copy_keep_every_byte() {
    let keys = common::topk::STREAM_KEYS;
    for flavor in flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .uncompressed_rdb()
            .start();
        let mut c = s.conn();
        fill(&mut c, 7, 3000);
        let dump = dumps(&mut c, &keys, &["DUMP"]);
        let digest = dumps(&mut c, &keys, &["DEBUG", "DIGEST-VALUE"]);
        assert!(keys
            .iter()
            .all(|k| c.cmd(&["TYPE", k]) == simple("TopK-TYPE")));
        assert!(
            dump.iter()
                .any(|d| common::topk::generator_state(d.as_bytes()) != 0),
            "{flavor:?}: no draw in the stream"
        );
        assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), ok());
        assert_eq!(
            dumps(&mut c, &keys, &["DUMP"]),
            dump,
            "{flavor:?} DEBUG RELOAD"
        );
        assert_eq!(dumps(&mut c, &keys, &["DEBUG", "DIGEST-VALUE"]), digest);
        for (k, d) in keys.iter().zip(&dump) {
            let copy = format!("{k}-restored");
            assert_eq!(c.cmd(&args!["RESTORE", &copy, "0", d.as_bytes()]), ok());
            assert_eq!(&c.cmd(&["DUMP", &copy]), d, "{flavor:?} RESTORE {k}");
            let twin = format!("{k}-copied");
            assert_eq!(c.cmd(&["COPY", k, &twin]), int(1));
            assert_eq!(&c.cmd(&["DUMP", &twin]), d, "{flavor:?} COPY {k}");
            // The three go on alike: the draws travel with the value.
            let add = |key: &str| sargs(&["TOPK.INCRBY", key, "i1", "50", "x9", "70", "i2", "30"]);
            let r = c.cmd(&add(k));
            assert_eq!(c.cmd(&add(&copy)), r);
            assert_eq!(c.cmd(&add(&twin)), r);
            let after = c.cmd(&["DUMP", k]);
            assert_eq!(c.cmd(&["DUMP", &copy]), after);
            assert_eq!(c.cmd(&["DUMP", &twin]), after);
        }
    }
}

fn wait_rewrite_done(c: &mut Conn) {
    let done =
        |i: &str| i.contains("aof_rewrite_in_progress:0") && i.contains("aof_rewrite_scheduled:0");
    let info = info::wait_for(c, "persistence", wait::STATE, done);
    assert!(info.contains("aof_last_bgrewrite_status:ok"), "{info}");
}

/// docs/topk.md §5.4: the rewrite holds one `RESTORE key 0 <payload>` per
/// key, the payload being what DUMP returns.
#[test]
fn aof_rewrite_is_restore_of_the_dump() {
    for flavor in flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .aof_without_preamble()
            .start();
        let mut c = s.conn();
        fill(&mut c, 11, 500);
        assert!(!c.cmd(&["BGREWRITEAOF"]).is_error());
        wait_rewrite_done(&mut c);
        let base = s.base_aof();
        for k in common::topk::STREAM_KEYS {
            let payload = c.cmd(&["DUMP", k]);
            let mut cmd = Vec::new();
            resp::encode_into(&mut cmd, &args!["RESTORE", k, "0", payload.as_bytes()]);
            assert!(
                base.windows(cmd.len()).any(|w| w == cmd),
                "{flavor:?}: no RESTORE of {k} in the rewrite"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Exchange with RedisBloom 2.8.2

/// The sketches moved: (key, commands building it on the source).
fn exchange_set() -> Vec<(&'static str, Vec<Args>)> {
    let stream: Vec<Args> = (0..100u64)
        .map(|call| {
            let mut a = sargs(&["TOPK.ADD", "e1"]);
            a.extend((call * 10..call * 10 + 10).map(|i| {
                let x = (7 * i * i + 3 * i) % 101;
                format!("w{}", if x % 3 != 0 { x % 13 } else { x % 5 }).into_bytes()
            }));
            a
        })
        .collect();
    let zipf: Vec<Args> = (0..300u64)
        .map(|call| {
            let mut a = sargs(&["TOPK.ADD", "e2"]);
            a.extend((0..100u64).map(|j| {
                let n = (call * 7919 + j * 104729) % 10007;
                format!("z{}", n % (1 + n % 97)).into_bytes()
            }));
            a
        })
        .collect();
    let incr: Vec<Args> = (0..200u64)
        .map(|i| {
            let item = format!("y{}", i % 37);
            sargs(&["TOPK.INCRBY", "e5", &item, &(1 + i % 300).to_string()])
        })
        .collect();
    vec![
        (
            "e1",
            [
                vec![sargs(&["TOPK.RESERVE", "e1", "5", "8", "7", "1"])],
                stream,
            ]
            .concat(),
        ),
        (
            "e2",
            [
                vec![sargs(&["TOPK.RESERVE", "e2", "50", "2000", "7", "0.925"])],
                zipf,
            ]
            .concat(),
        ),
        (
            "e3",
            vec![sargs(&["TOPK.RESERVE", "e3", "1", "1", "1", "0.5"])],
        ),
        (
            "e4",
            vec![
                sargs(&["TOPK.RESERVE", "e4", "3", "8", "7", "1"]),
                args!["TOPK.ADD", "e4", "", "a", "", "", "bin\0ary"].to_vec(),
            ],
        ),
        (
            "e5",
            [
                vec![sargs(&["TOPK.RESERVE", "e5", "200", "64", "3", "0.9"])],
                incr,
            ]
            .concat(),
        ),
    ]
}

/// Items asked with QUERY and COUNT (not the item with a NUL byte: 2.8.2
/// compares past its truncated copy after a load, docs/topk.md §9).
fn probes() -> Vec<String> {
    let mut v: Vec<String> = (0..13).map(|i| format!("w{i}")).collect();
    v.extend((0..40).map(|i| format!("z{i}")));
    v.extend((0..37).map(|i| format!("y{i}")));
    v.extend(["", "a", "bin", "absent"].map(String::from));
    v
}

/// What a key shows: LIST WITHCOUNT, INFO, QUERY, COUNT, masked DUMP.
/// The blob of e4 records its item's length, which 2.8.2 keeps from the
/// blob on load and 8.x derives from the truncated item: compared by
/// replies only.
fn observe(c: &mut Conn, key: &str) -> Vec<String> {
    let (list, info) = common::topk::observe(c, key.as_bytes());
    let mut q = sargs(&["TOPK.QUERY", key]);
    q.extend(probes().into_iter().map(String::into_bytes));
    let mut n = q.clone();
    n[0] = b"TOPK.COUNT".to_vec();
    let mut out = vec![
        format!("{list:?}"),
        format!("{info:?}"),
        format!("{:?}", c.cmd(&q)),
        format!("{:?}", c.cmd(&n)),
    ];
    if key != "e4" {
        out.push(format!("{:?}", masked(c.cmd(&["DUMP", key]).as_bytes())));
    }
    out
}

fn start(flavor: Flavor, module: Module, dir: Option<&Path>, aof: bool) -> Side {
    let mut b = Server::builder(flavor, module).uncompressed_rdb();
    if aof {
        b = b.aof_without_preamble();
    }
    if let Some(d) = dir {
        b = b.dir(d);
    }
    Side::from_server(b.start())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else if !e.file_name().to_string_lossy().ends_with(".log") {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Builds the set on a `src` server, moves it to a `dst` server `how`
/// ("dump", "rdb", "aof"), and compares every key with the source: as it
/// was when rsbloom loads (its load keeps the empty item), after a reload
/// of its own when 2.8.2 loads (2.8.2's load shows the empty item as null,
/// docs/topk.md §5.2, so e4 from rsbloom cannot compare).
fn exchange(flavor: Flavor, src: Module, dst: Module, how: &str) -> Vec<String> {
    let mut s = start(flavor, src, None, how == "aof");
    for (_, cmds) in exchange_set() {
        for r in s.conn(false).pipeline(&cmds) {
            assert!(!r.is_error(), "{r:?}");
        }
    }
    let keys: Vec<&str> = exchange_set()
        .iter()
        .map(|(k, _)| *k)
        .filter(|&k| !(k == "e4" && dst == Module::Reference && src == Module::Rsbloom))
        .collect();
    let live: Vec<Vec<String>> = keys.iter().map(|k| observe(s.conn(false), k)).collect();
    let dir = tempfile::Builder::new()
        .prefix("rsbloom-topk-")
        .tempdir()
        .unwrap();
    let mut d = match how {
        "dump" => {
            let mut d = start(flavor, dst, None, false);
            for k in &keys {
                let payload = s.cmd(&sargs(&["DUMP", k]));
                assert_eq!(
                    d.cmd(&args!["RESTORE", k, "0", payload.as_bytes()]),
                    ok(),
                    "{how} {k}"
                );
            }
            d
        }
        "rdb" => {
            assert_eq!(s.cmd(&sargs(&["SAVE"])), ok());
            copy_dir(s.server.dir(), dir.path());
            start(flavor, dst, Some(dir.path()), false)
        }
        _ => {
            assert!(!s.cmd(&sargs(&["BGREWRITEAOF"])).is_error());
            wait_rewrite_done(s.conn(false));
            assert!(s.server.base_aof().windows(7).any(|w| w == b"RESTORE"));
            copy_dir(s.server.dir(), dir.path());
            start(flavor, dst, Some(dir.path()), true)
        }
    };
    if dst == Module::Reference {
        assert_eq!(s.cmd(&sargs(&["DEBUG", "RELOAD"])), ok());
    }
    let mut fails = Vec::new();
    for (k, live) in keys.into_iter().zip(live) {
        let a = match dst {
            Module::Reference => observe(s.conn(false), k),
            _ => live,
        };
        let b = observe(d.conn(false), k);
        if a != b {
            fails.push(format!(
                "{src:?} → {dst:?} by {how}, key {k}:\n  source {a:?}\n  moved  {b:?}"
            ));
        }
    }
    fails
}

#[test]
fn rdb_dump_and_aof_rewrite_move_both_ways_with_the_reference() {
    let subject = subject_module();
    let mut fails = Vec::new();
    for flavor in flavors() {
        for how in ["dump", "rdb", "aof"] {
            fails.extend(exchange(flavor, subject, Module::Reference, how));
            fails.extend(exchange(flavor, Module::Reference, subject, how));
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// A sketch loaded from RedisBloom decays deterministically from then on:
/// the state comes from the payload (docs/topk.md §3.5).
#[test]
fn loaded_reference_sketch_decays_alike_on_every_rsbloom() {
    let flavor = flavors()[0];
    let mut rf = start(flavor, Module::Reference, None, false);
    let mut cmds = vec![sargs(&["TOPK.RESERVE", "d", "10", "16", "3", "0.9"])];
    cmds.extend((0..200u64).map(|i| {
        sargs(&[
            "TOPK.ADD",
            "d",
            &format!("u{}", i % 23),
            &format!("v{}", i % 7),
        ])
    }));
    rf.conn(false).pipeline(&cmds);
    let payload = rf.cmd(&sargs(&["DUMP", "d"]));
    let more: Vec<Args> = (0..300u64)
        .map(|i| {
            sargs(&[
                "TOPK.INCRBY",
                "d",
                &format!("u{}", i % 29),
                &(1 + i % 5).to_string(),
            ])
        })
        .collect();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let mut rs = start(flavor, subject_module(), None, false);
        assert_eq!(
            rs.cmd(&args!["RESTORE", "d", "0", payload.as_bytes()]),
            ok()
        );
        let replies = rs.conn(false).pipeline(&more);
        seen.push((replies, rs.cmd(&sargs(&["DUMP", "d"]))));
    }
    assert_eq!(seen[0], seen[1]);
}
