//! Windowed Count-Min Sketch (`CMSw-rsbl`, docs/cms-window.md): its own
//! replies and errors, and a window moved by explicit CMS.TICK times
//! (deterministic: ticks run ahead of the clock, so reads and writes see
//! no shift of their own). What every windowed type shares (the options
//! and TICK's errors, expiry by an idle key's reads, persistence, hostile
//! payloads, replicas and AOF replays byte-identical while the window
//! moves) runs from `common::window` on [`CMSW`].
use common::window::{info, Windowed};
use common::*;
use std::collections::BTreeMap;

const MISSING: &str = "CMS: key does not exist";
const NO_MERGE: &str = "CMS: MERGE does not support windowed sketches";

/// The windowed sketch as the shared scenarios drive it.
const CMSW: Windowed = Windowed {
    ty: &rsbloom_core::cms::WINDOW_TYPE,
    errors: "CMS: ",
    creates: [
        "CMS.INITBYDIM {} 50 4",
        "CMS.INITBYPROB {} 0.1 0.1 CELL_SIZE 1",
    ],
    write: |k, r| {
        vec![format!(
            "CMS.INCRBY {k} i{} {} i{} 1",
            r % 7,
            r % 5 + 1,
            r % 3
        )]
    },
    read: |c, k| {
        let mut query = vec!["CMS.QUERY", k, "a", "z"];
        query.extend(["i0", "i1", "i2", "i3", "i4", "i5", "i6"]);
        vec![c.cmd(&query), info(c, "CMS.INFO", k)["count"].clone()]
    },
};

#[test]
fn options_and_tick_errors() {
    CMSW.options_and_tick_errors();
}

#[test]
fn reads_age_an_idle_window() {
    CMSW.reads_age_an_idle_window();
}

#[test]
fn persistence_keeps_the_window() {
    CMSW.persistence_keeps_the_window();
}

/// Only the ring's span, head and clock (primitives 3, 5, 6) load
/// changed: never a bucket's total or counters.
#[test]
fn hostile_restore_payloads_are_refused() {
    let loaded = CMSW.hostile_restore_payloads();
    assert!(loaded.iter().all(|f| [3, 5, 6].contains(f)), "{loaded:?}");
}

#[test]
fn replicas_and_aof_replays_are_identical_while_the_window_moves() {
    CMSW.replicas_and_aof_replays_are_identical_while_the_window_moves();
}

fn count(c: &mut Conn, key: &str) -> i64 {
    CMSW.info_int(c, key, "count")
}

fn query(c: &mut Conn, key: &str, items: &[&str]) -> Vec<i64> {
    let mut a = vec!["CMS.QUERY", key];
    a.extend(items);
    c.cmd(&a).as_array().iter().map(Reply::as_int).collect()
}

#[test]
fn creation_replies_and_errors() {
    each(|c, _| {
        assert_eq!(
            line(c, "CMS.INITBYDIM w 100 5 WINDOW 60000 BUCKETS 6"),
            ok()
        );
        assert_eq!(line(c, "CMS.INITBYPROB p 0.01 0.01 window 3600000"), ok());
        assert_eq!(line(c, "CMS.INITBYDIM s 10 2 CELL_SIZE 8 WINDOW 5"), ok());
        let want: BTreeMap<String, Reply> = [
            ("width", 200),
            ("depth", 7),
            ("count", 0),
            ("cell_size", 4),
            ("window", 3_600_000),
            ("buckets", 60),
            ("bucket_ms", 60_000),
            ("last_shift_ms", 0),
        ]
        .map(|(k, v)| (k.to_string(), int(v)))
        .into();
        assert_eq!(info(c, "CMS.INFO", "p"), want);
        let s = ["buckets", "bucket_ms", "cell_size"].map(|f| CMSW.info_int(c, "s", f));
        assert_eq!(s, [5, 1, 8]);
        // Errors RedisBloom gives are unchanged without WINDOW.
        for (cmd, reply) in [
            (
                "CMS.INITBYDIM x 10 5 BUCKETS 3",
                err("CMS: unknown argument"),
            ),
            ("CMS.INITBYDIM x 10 5 WINDOW", arity("cms.initbydim")),
            (
                "CMS.INITBYDIM x 10 5 WINDOW 100 BUCKETS",
                arity("cms.initbydim"),
            ),
            ("CMS.INITBYDIM x 0 5 WINDOW 100", err("CMS: invalid width")),
            (
                "CMS.INITBYDIM x 8388608 4 WINDOW 1000 BUCKETS 3",
                err("CMS: a windowed sketch holds at most 268435456 bytes of counters"),
            ),
        ] {
            assert_eq!(line(c, cmd), reply, "{cmd}");
        }
        assert_eq!(c.cmd(&["EXISTS", "x"]), int(0));
        // Merges refuse windows, as destination or source.
        assert_eq!(line(c, "CMS.INITBYDIM plain 100 5"), ok());
        assert_eq!(line(c, "CMS.MERGE w 1 plain"), err(NO_MERGE));
        assert_eq!(line(c, "CMS.MERGE plain 1 w"), err(NO_MERGE));
        assert_eq!(
            line(c, "CMS.MERGE plain 2 plain w WEIGHTS 1 1"),
            err(NO_MERGE)
        );
        // Queries of a missing key, other types.
        assert_eq!(line(c, "CMS.QUERY nokey a"), err(MISSING));
        assert_eq!(line(c, "CMS.INCRBY w a x"), err("CMS: Cannot parse number"));
    });
}

/// A 40 s window of 4 buckets moved by hand: counts leave bucket by
/// bucket, reads and writes in between see no shift of their own (the
/// ticks run ahead of the clock).
#[test]
fn a_window_moved_by_ticks_expires_old_counts() {
    each(|c, _| {
        assert_eq!(
            line(c, "CMS.INITBYDIM w 1000 5 WINDOW 40000 BUCKETS 4"),
            ok()
        );
        assert_eq!(line(c, "CMS.INCRBY w a 3 b 1"), arr(vec![int(3), int(1)]));
        let t = CMSW.info_int(c, "w", "last_shift_ms");
        assert!(t > 0);
        let tick = |c: &mut Conn, d: i64| line(c, &format!("CMS.TICK w {}", t + d));
        assert_eq!(tick(c, 9_999), int(0));
        assert_eq!(tick(c, 10_000), int(1));
        assert_eq!(line(c, "CMS.INCRBY w a 2"), arr(vec![int(5)]));
        assert_eq!(tick(c, 25_000), int(1));
        assert_eq!(line(c, "CMS.INCRBY w b 4"), arr(vec![int(5)]));
        // A decrement takes back the youngest bucket's counts only.
        assert_eq!(
            line(c, "CMS.INCRBY w a -1"),
            arr(vec![err("CMS: INCRBY underflow")])
        );
        assert_eq!(query(c, "w", &["a", "b", "z"]), [5, 5, 0]);
        assert_eq!(count(c, "w"), 10);
        // Backwards: nothing.
        assert_eq!(tick(c, 100), int(0));
        assert_eq!(query(c, "w", &["a", "b"]), [5, 5]);
        // The first bucket (a 3, b 1) leaves.
        assert_eq!(tick(c, 40_000), int(2));
        assert_eq!(query(c, "w", &["a", "b"]), [2, 4]);
        assert_eq!(count(c, "w"), 6);
        assert_eq!(CMSW.info_int(c, "w", "last_shift_ms"), t + 40_000);
        assert_eq!(tick(c, 59_000), int(1));
        assert_eq!(query(c, "w", &["a", "b"]), [0, 4]);
        assert_eq!(tick(c, 59_999), int(0));
        assert_eq!(count(c, "w"), 4);
    });
}
