//! Windowed T-Digest (`TDigw-rsb`, docs/tdigest-window.md): its own
//! replies and errors, a window moved by explicit TDIGEST.TICK times
//! (deterministic: ticks run ahead of the clock, so reads and writes see
//! no shift of their own) and its rank error. What every windowed type
//! shares (the options and TICK's errors, expiry by an idle key's reads,
//! persistence, hostile payloads, replicas and AOF replays byte-identical
//! while the window moves) runs from `common::window` on [`TDIGESTW`].
use common::window::{info, Windowed};
use common::*;
use std::collections::BTreeMap;

const NO_MERGE: &str = "ERR T-Digest: MERGE does not support windowed digests";

/// The windowed digest as the shared scenarios drive it.
const TDIGESTW: Windowed = Windowed {
    ty: &rsbloom_core::tdigest::WINDOW_TYPE,
    errors: "ERR T-Digest: ",
    creates: ["TDIGEST.CREATE {}", "TDIGEST.CREATE {} COMPRESSION 5"],
    write: |k, r| vec![add(k, (0..r * 25 + 5).map(|i| (i * 37 + r) % 1000))],
    read: |c, k| {
        let mut r: Vec<Reply> = READS.iter().map(|t| line(c, &t.replace("{}", k))).collect();
        r.push(info(c, "TDIGEST.INFO", k)["Observations"].clone());
        r
    },
};

#[test]
fn options_and_tick_errors() {
    TDIGESTW.options_and_tick_errors();
}

#[test]
fn reads_age_an_idle_window() {
    TDIGESTW.reads_age_an_idle_window();
}

#[test]
fn persistence_keeps_the_window() {
    TDIGESTW.persistence_keeps_the_window();
}

#[test]
fn hostile_restore_payloads_are_refused() {
    TDIGESTW.hostile_restore_payloads();
}

#[test]
fn replicas_and_aof_replays_are_identical_while_the_window_moves() {
    TDIGESTW.replicas_and_aof_replays_are_identical_while_the_window_moves();
}

fn info_int(c: &mut Conn, key: &str, field: &str) -> i64 {
    TDIGESTW.info_int(c, key, field)
}

/// Every read command, `{}` standing for the key.
const READS: [&str; 9] = [
    "TDIGEST.QUANTILE {} 0 0.1 0.5 0.99 1",
    "TDIGEST.CDF {} 0 10 55.5 1000",
    "TDIGEST.RANK {} -1 5 50 500",
    "TDIGEST.REVRANK {} -1 5 50 500",
    "TDIGEST.BYRANK {} 0 3 40 1000",
    "TDIGEST.BYREVRANK {} 0 3 40 1000",
    "TDIGEST.MIN {}",
    "TDIGEST.MAX {}",
    "TDIGEST.TRIMMED_MEAN {} 0.1 0.9",
];

/// The doubles of a reply (one or an array), as the server printed them.
fn doubles(r: &Reply) -> Vec<String> {
    let one = |r: &Reply| match r {
        Reply::Double(t) => t.clone(),
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Reply::Int(i) => i.to_string(),
        r => panic!("{r:?}"),
    };
    match r {
        Reply::Array(a) => a.iter().map(one).collect(),
        r => vec![one(r)],
    }
}

fn num(r: &Reply) -> f64 {
    doubles(r)[0].parse().unwrap_or(f64::NAN)
}

fn add(key: &str, values: impl Iterator<Item = i64>) -> String {
    let v: Vec<String> = values.map(|v| v.to_string()).collect();
    format!("TDIGEST.ADD {key} {}", v.join(" "))
}

/// Every read on `key`, replies as text (the same on two keys holding
/// the same observations the same way).
fn reads(c: &mut Conn, key: &str) -> Vec<Vec<String>> {
    READS
        .iter()
        .map(|t| doubles(&line(c, &t.replace("{}", key))))
        .collect()
}

#[test]
fn creation_replies_and_errors() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE w WINDOW 60000 BUCKETS 6"), ok());
        assert_eq!(
            line(c, "TDIGEST.CREATE p compression 50 window 3600000"),
            ok()
        );
        assert_eq!(line(c, "TDIGEST.CREATE s WINDOW 5"), ok());
        let want: BTreeMap<String, Reply> = [
            ("Compression", 50),
            ("Capacity", 310),
            ("Merged nodes", 0),
            ("Unmerged nodes", 0),
            ("Merged weight", 0),
            ("Unmerged weight", 0),
            ("Observations", 0),
            ("Total compressions", 0),
            ("window", 3_600_000),
            ("buckets", 60),
            ("bucket_ms", 60_000),
            ("last_shift_ms", 0),
        ]
        .map(|(k, v)| (k.to_string(), int(v)))
        .into();
        let mut i = info(c, "TDIGEST.INFO", "p");
        assert!(i.remove("Memory usage").unwrap().as_int() > 61 * 310 * 16);
        assert_eq!(i, want);
        let s = ["buckets", "bucket_ms", "Compression"].map(|f| info_int(c, "s", f));
        assert_eq!(s, [5, 1, 100]);
        // Without WINDOW at an option's place, RedisBloom's replies.
        for (cmd, reply) in [
            (
                "TDIGEST.CREATE x BUCKETS 3",
                err("ERR T-Digest: wrong keyword"),
            ),
            (
                "TDIGEST.CREATE x COMPRESSION 100 BUCKETS 3",
                arity("tdigest.create"),
            ),
            ("TDIGEST.CREATE x WINDOW", arity("tdigest.create")),
            (
                "TDIGEST.CREATE x WINDOW 100 BUCKETS",
                arity("tdigest.create"),
            ),
            (
                "TDIGEST.CREATE x COMPRESSION WINDOW",
                err("ERR T-Digest: error parsing compression parameter"),
            ),
            (
                "TDIGEST.CREATE x WINDOW 10 SEED 10",
                err("ERR T-Digest: wrong keyword"),
            ),
            (
                "TDIGEST.CREATE x WINDOW 1000 COMPRESSION 0",
                err("ERR T-Digest: compression parameter needs to be a positive integer"),
            ),
            (
                "TDIGEST.CREATE x WINDOW 1000 COMPRESSION 1000000 BUCKETS 10",
                err("ERR T-Digest: a windowed digest holds at most 268435456 bytes of nodes"),
            ),
        ] {
            assert_eq!(line(c, cmd), reply, "{cmd}");
        }
        assert_eq!(c.cmd(&["EXISTS", "x"]), int(0));
        // Merges refuse windows, as destination or source.
        assert_eq!(line(c, "TDIGEST.CREATE plain"), ok());
        assert_eq!(line(c, "TDIGEST.MERGE w 1 plain"), err(NO_MERGE));
        assert_eq!(line(c, "TDIGEST.MERGE plain 1 w"), err(NO_MERGE));
        assert_eq!(line(c, "TDIGEST.MERGE new 2 plain w"), err(NO_MERGE));
        assert_eq!(c.cmd(&["EXISTS", "new"]), int(0));
        // Errors of the plain digest on a window.
        assert_eq!(
            line(c, "TDIGEST.ADD w 1 x"),
            err("ERR T-Digest: error parsing val parameter")
        );
        assert_eq!(
            line(c, "TDIGEST.QUANTILE w 2"),
            err("ERR T-Digest: quantile should be in [0,1]")
        );
        assert_eq!(line(c, "TDIGEST.INFO w x"), arity("tdigest.info"));
        // An empty window answers as an empty digest.
        assert_eq!(reads(c, "w"), reads(c, "plain"));
    });
}

/// A 20 s window of 4 buckets moved by hand: observations leave bucket by
/// bucket; a window holding one bucket's observations answers every read
/// as a plain digest fed them does.
#[test]
fn a_window_moved_by_ticks_expires_old_observations() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE w WINDOW 20000 BUCKETS 4"), ok());
        assert_eq!(line(c, &add("w", 1..=100)), ok());
        let t = info_int(c, "w", "last_shift_ms");
        assert!(t > 0);
        let tick = |c: &mut Conn, d: i64| line(c, &format!("TDIGEST.TICK w {}", t + d));
        assert_eq!(tick(c, 4_999), int(0));
        assert_eq!(tick(c, 5_000), int(1));
        assert_eq!(line(c, &add("w", 1001..=1100)), ok());
        assert_eq!(tick(c, 12_500), int(1));
        assert_eq!(line(c, &add("w", 2001..=2050)), ok());
        assert_eq!(info_int(c, "w", "Observations"), 250);
        assert_eq!(info_int(c, "w", "last_shift_ms"), t + 10_000);
        assert_eq!(num(&line(c, "TDIGEST.MIN w")), 1.0);
        assert_eq!(num(&line(c, "TDIGEST.MAX w")), 2050.0);
        assert_eq!(
            line(c, "TDIGEST.RANK w 0 3000"),
            arr(vec![int(-1), int(250)])
        );
        let median = num(&line(c, "TDIGEST.QUANTILE w 0.5"));
        assert!((1020.0..=1030.0).contains(&median), "{median}");
        // Backwards: nothing.
        assert_eq!(tick(c, 100), int(0));
        assert_eq!(info_int(c, "w", "Observations"), 250);
        // The first bucket (1..100) leaves, then the second.
        assert_eq!(tick(c, 20_000), int(2));
        assert_eq!(info_int(c, "w", "Observations"), 150);
        assert_eq!(num(&line(c, "TDIGEST.MIN w")), 1001.0);
        assert_eq!(tick(c, 25_000), int(1));
        assert_eq!(info_int(c, "w", "Observations"), 50);
        // One bucket left: the plain digest's answers, bit for bit.
        assert_eq!(line(c, "TDIGEST.CREATE plain"), ok());
        assert_eq!(line(c, &add("plain", 2001..=2050)), ok());
        assert_eq!(reads(c, "w"), reads(c, "plain"));
        assert_eq!(tick(c, 29_999), int(0));
        assert_eq!(tick(c, 30_000), int(1));
        assert_eq!(info_int(c, "w", "Observations"), 0);
        assert!(num(&line(c, "TDIGEST.MIN w")).is_nan());
        // RESET empties every bucket and keeps window and clock.
        assert_eq!(line(c, &add("w", 1..=10)), ok());
        assert_eq!(line(c, "TDIGEST.RESET w"), ok());
        let i = ["Observations", "window", "last_shift_ms"].map(|f| info_int(c, "w", f));
        assert_eq!(i, [0, 20_000, t + 30_000]);
    });
}

/// A window of many buckets answers close to the exact ranks over it.
#[test]
fn a_full_window_answers_within_its_rank_error() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE w WINDOW 60000 BUCKETS 60"), ok());
        assert_eq!(line(c, &add("w", 0..1)), ok());
        let t = info_int(c, "w", "last_shift_ms");
        // 60 buckets of 1000 values each: 0..60000, interleaved.
        for b in 0..60i64 {
            assert_eq!(
                line(c, &format!("TDIGEST.TICK w {}", t + b * 1000)),
                int((b > 0) as i64)
            );
            assert_eq!(line(c, &add("w", (0..1000).map(|i| i * 60 + b))), ok());
        }
        assert_eq!(info_int(c, "w", "Observations"), 60_001);
        for q in [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99] {
            let v = num(&line(c, &format!("TDIGEST.QUANTILE w {q}")));
            let exact = q * 60_000.0;
            assert!((v - exact).abs() <= 0.01 * 60_000.0, "q {q}: {v}");
        }
    });
}
