//! T-Digest persistence (docs/tdigest.md §7): DEBUG RELOAD, DUMP/RESTORE,
//! RDB files and AOF files (with and without RDB preamble) move between
//! rsbloom and the reference RedisBloom 2.8.2 in both directions, after
//! which every estimate answers identically on both.
use common::diff::{sargs, Args};
use common::*;

const KEYS: &[&str] = &[
    "small",
    "dups",
    "big",
    "merged",
    "extreme",
    "empty",
    "after-reset",
    "c1",
];

fn values(n: usize, f: impl Fn(usize) -> String) -> Vec<Vec<u8>> {
    (0..n).map(|i| f(i).into_bytes()).collect()
}

fn add(key: &str, v: Vec<Vec<u8>>) -> Args {
    let mut a = sargs(&["TDIGEST.ADD", key]);
    a.extend(v);
    a
}

/// Digests of every shape, built identically wherever the commands run:
/// small, duplicate-heavy, large (many compressions), merged, extreme
/// values, empty, reset, compression 1.
fn build() -> Vec<Args> {
    vec![
        sargs(&["TDIGEST.CREATE", "small", "COMPRESSION", "50"]),
        add("small", values(40, |i| format!("{}.5", i * 7 % 40))),
        sargs(&["TDIGEST.CREATE", "dups", "COMPRESSION", "20"]),
        add("dups", values(900, |i| (i % 3).to_string())),
        sargs(&["TDIGEST.CREATE", "big", "COMPRESSION", "200"]),
        add(
            "big",
            values(4000, |i| {
                format!("{:.3}", ((i * 7919) % 10007) as f64 / 7.0)
            }),
        ),
        add("big", values(3000, |i| format!("-{}", (i * 31) % 977))),
        sargs(&[
            "TDIGEST.MERGE",
            "merged",
            "2",
            "small",
            "big",
            "COMPRESSION",
            "80",
        ]),
        add("merged", values(55, |i| (i * i).to_string())),
        sargs(&["TDIGEST.CREATE", "extreme"]),
        add(
            "extreme",
            values(30, |i| {
                ["1e300", "-1.7e308", "1e-300", "-0", "0", "5e-324"][i % 6].into()
            }),
        ),
        sargs(&["TDIGEST.CREATE", "empty"]),
        sargs(&["TDIGEST.CREATE", "after-reset", "COMPRESSION", "3"]),
        add("after-reset", values(100, |i| i.to_string())),
        sargs(&["TDIGEST.RESET", "after-reset"]),
        add("after-reset", values(7, |i| (i * 3).to_string())),
        sargs(&["TDIGEST.CREATE", "c1", "COMPRESSION", "1"]),
        add("c1", values(77, |i| ((i * 13) % 17).to_string())),
    ]
}

fn run(c: &mut Conn, cmds: &[Args]) {
    for (cmd, r) in cmds.iter().zip(c.pipeline(cmds)) {
        assert!(!r.is_error(), "{}: {r:?}", diff::show_args(cmd));
    }
}

/// Every estimate of every digest (reads compress: do it on both sides).
fn probe(c: &mut Conn) -> Vec<Reply> {
    let mut cmds = Vec::new();
    for k in KEYS {
        cmds.extend([
            sargs(&[
                "TDIGEST.QUANTILE",
                k,
                "0",
                "0.01",
                "0.1",
                "0.3",
                "0.5",
                "0.9",
                "0.99",
                "1",
            ]),
            sargs(&[
                "TDIGEST.CDF",
                k,
                "-1e308",
                "-5",
                "0",
                "1",
                "2.5",
                "17",
                "333",
                "1e300",
            ]),
            sargs(&["TDIGEST.RANK", k, "-1", "0", "1", "5", "300", "1e301"]),
            sargs(&["TDIGEST.REVRANK", k, "-1", "0", "1", "5", "300", "1e301"]),
            sargs(&["TDIGEST.BYRANK", k, "0", "1", "3", "100", "5000"]),
            sargs(&["TDIGEST.BYREVRANK", k, "0", "1", "3", "100", "5000"]),
            sargs(&["TDIGEST.TRIMMED_MEAN", k, "0.1", "0.9"]),
            sargs(&["TDIGEST.MIN", k]),
            sargs(&["TDIGEST.MAX", k]),
        ]);
    }
    let mut out = c.pipeline(&cmds);
    for k in KEYS {
        // INFO without `Memory usage` (2.8.2 counts 72 bytes less).
        out.push(match c.cmd(&["TDIGEST.INFO", k]) {
            Reply::Array(mut info) => {
                info.truncate(16);
                Reply::Array(info)
            }
            other => other,
        });
    }
    out
}

fn start(flavor: Flavor, module: Module) -> Server {
    Server::start(flavor, module)
}

/// Every server of the matrix, each module as the source.
fn pairs() -> Vec<(Flavor, Module)> {
    flavors()
        .into_iter()
        .flat_map(|f| [(f, Module::Rsbloom), (f, Module::Reference)])
        .collect()
}

fn other(m: Module) -> Module {
    if m == Module::Rsbloom {
        Module::Reference
    } else {
        Module::Rsbloom
    }
}

/// Both modules on the same server (DUMP payloads carry its RDB version).
#[test]
fn dump_restore_both_ways() {
    for (flavor, from) in pairs() {
        let (a, b) = (start(flavor, from), start(flavor, other(from)));
        let (mut ca, mut cb) = (a.conn(), b.conn());
        run(&mut ca, &build());
        for k in KEYS {
            let dump = ca.cmd(&["DUMP", k]);
            assert_eq!(
                cb.cmd(&args!["RESTORE", k, "0", dump.as_bytes()]),
                ok(),
                "{from:?} {k}"
            );
            // A second trip gives the same bytes.
            assert_eq!(cb.cmd(&["DUMP", k]), dump, "{from:?} {k}");
        }
        assert_eq!(
            probe(&mut ca),
            probe(&mut cb),
            "{from:?} → {:?}",
            other(from)
        );
    }
}

#[test]
fn rdb_files_both_ways() {
    for (flavor, from) in pairs() {
        let mut a = start(flavor, from);
        let mut ca = a.conn();
        run(&mut ca, &build());
        assert_eq!(ca.cmd(&["SAVE"]), ok());
        // The SAVE compressed the live digests (in both modules).
        let want = probe(&mut ca);
        a.stop(false);
        let b = Server::builder(flavor, other(from)).dir(a.dir()).start();
        let mut cb = b.conn();
        assert_eq!(
            probe(&mut cb),
            want,
            "{flavor:?} {from:?} RDB into {:?}",
            other(from)
        );
    }
}

fn rewrite(c: &mut Conn) {
    assert!(!c.cmd(&["BGREWRITEAOF"]).is_error());
    common::info::wait_aof_rewrite(c);
}

/// An AOF written by one module (rewritten, then appended to) replays in
/// the other into the same digests. RedisBloom does not replicate the
/// compressions its reads make, so on that side nothing is read before the
/// file is complete; rsbloom's AOF carries them and may be read any time.
#[test]
fn aof_files_both_ways() {
    for (flavor, from) in pairs() {
        for preamble in ["no", "yes"] {
            let mut a = Server::builder(flavor, from)
                .aof_fsync_always(preamble)
                .start();
            let mut ca = a.conn();
            let cmds = build();
            let (first, rest) = cmds.split_at(cmds.len() / 2);
            run(&mut ca, first);
            if from == Module::Rsbloom {
                probe(&mut ca);
            }
            rewrite(&mut ca);
            // New digests after the rewrite (an existing one would be
            // compressed differently in RedisBloom's replay).
            run(&mut ca, rest);
            let want = probe(&mut ca);
            a.stop(false);
            let b = Server::builder(flavor, other(from))
                .arg("--appendonly")
                .arg("yes")
                .dir(a.dir())
                .start();
            let mut cb = b.conn();
            let what = format!(
                "{flavor:?} {from:?} AOF (preamble {preamble}) into {:?}",
                other(from)
            );
            assert_eq!(probe(&mut cb), want, "{what}");
        }
    }
}

#[test]
fn debug_reload_keeps_every_digest() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        run(&mut c, &build());
        run(
            &mut c,
            &[
                sargs(&["TDIGEST.CREATE", "one"]),
                sargs(&["TDIGEST.ADD", "one", "42"]),
            ],
        );
        let dumps: Vec<Reply> = KEYS.iter().map(|k| c.cmd(&["DUMP", k])).collect();
        let want = probe(&mut c);
        assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), ok());
        assert_eq!(probe(&mut c), want, "{flavor:?}");
        let again: Vec<Reply> = KEYS.iter().map(|k| c.cmd(&["DUMP", k])).collect();
        assert_eq!(again, dumps, "{flavor:?}");
        // The one-observation digest kept its observation (§7.3).
        assert_eq!(c.cmd(&["TDIGEST.ADD", "one", "50"]), ok());
        let q = c.cmd(&["TDIGEST.QUANTILE", "one", "0"]);
        assert!(
            matches!(&q, Reply::Array(a) if a[0].as_bytes() == b"42"),
            "{flavor:?}: {q:?}"
        );
    }
}

/// RedisBloom loses the observation of a one-observation digest on reload
/// (it reads a zero node instead); rsbloom keeps it, from its own dumps and
/// from RedisBloom's alike: this is the one documented difference in what
/// a moved digest answers afterwards.
#[test]
fn one_observation_digest_keeps_its_value_across_modules() {
    for flavor in flavors() {
        one_observation_across_modules(flavor);
    }
}

fn one_observation_across_modules(flavor: Flavor) {
    let (rs, rf) = (
        start(flavor, Module::Rsbloom),
        start(flavor, Module::Reference),
    );
    let (mut cs, mut cf) = (rs.conn(), rf.conn());
    for c in [&mut cs, &mut cf] {
        run(
            c,
            &[
                sargs(&["TDIGEST.CREATE", "one"]),
                sargs(&["TDIGEST.ADD", "one", "5"]),
            ],
        );
    }
    let dump = cf.cmd(&["DUMP", "one"]);
    assert_eq!(cs.cmd(&["DUMP", "one"]), dump, "same image");
    for c in [&mut cs, &mut cf] {
        assert_eq!(c.cmd(&args!["RESTORE", "copy", "0", dump.as_bytes()]), ok());
        assert_eq!(c.cmd(&["TDIGEST.ADD", "copy", "10"]), ok());
    }
    let q = |c: &mut Conn| c.cmd(&["TDIGEST.QUANTILE", "copy", "0", "0.5", "1"]);
    assert_eq!(q(&mut cs), arr(vec![bulk("5"), bulk("10"), bulk("10")]));
    assert_eq!(q(&mut cf), arr(vec![bulk("10"), bulk("10"), bulk("10")]));
}
