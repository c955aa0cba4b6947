//! Windowed Top-K (`TopKw-rsb`, docs/topk-window.md): its own replies and
//! errors (shaped as the plain key's, RESP2 and RESP3) and a window moved
//! by explicit TOPK.TICK times (ticks run ahead of the clock, so reads and
//! writes see no shift of their own). What every windowed type shares (the
//! options and TICK's errors, expiry by an idle key's reads, persistence,
//! hostile payloads, replicas and AOF replays byte-identical while the
//! window moves) runs from `common::window` on [`TOPKW`]; on all five
//! servers.
use common::window::{info, Windowed};
use common::*;
use std::collections::BTreeMap;

/// The windowed Top-K as the shared scenarios drive it.
const TOPKW: Windowed = Windowed {
    ty: &rsbloom_core::topk::WINDOW_TYPE,
    errors: "TopK: ",
    creates: ["TOPK.RESERVE {} 3", "TOPK.RESERVE {} 2 8 2 0.9"],
    write: |k, r| {
        vec![
            format!(
                "TOPK.INCRBY {k} i{} {} i{} 1 i{} 2",
                r % 7,
                r,
                r % 3,
                r % 11
            ),
            format!("TOPK.ADD {k} j{} j{}", r % 5, r % 13),
        ]
    },
    read: |c, k| {
        let items = [
            "a", "z", "i0", "i1", "i2", "i3", "i4", "i5", "i6", "j0", "j1",
        ];
        let with = |cmd: &'static str| [&[cmd, k][..], &items[..]].concat();
        vec![
            c.cmd(&["TOPK.LIST", k, "WITHCOUNT"]),
            c.cmd(&with("TOPK.COUNT")),
            c.cmd(&with("TOPK.QUERY")),
        ]
    },
};

#[test]
fn options_and_tick_errors() {
    TOPKW.options_and_tick_errors();
}

#[test]
fn reads_age_an_idle_window() {
    TOPKW.reads_age_an_idle_window();
}

#[test]
fn persistence_keeps_the_window() {
    TOPKW.persistence_keeps_the_window();
}

#[test]
fn hostile_restore_payloads_are_refused() {
    TOPKW.hostile_restore_payloads();
}

#[test]
fn replicas_and_aof_replays_are_identical_while_the_window_moves() {
    TOPKW.replicas_and_aof_replays_are_identical_while_the_window_moves();
}

fn info_int(c: &mut Conn, key: &str, field: &str) -> i64 {
    TOPKW.info_int(c, key, field)
}

/// TOPK.LIST key WITHCOUNT as (item, count) pairs.
fn list(c: &mut Conn, key: &str) -> Vec<(String, i64)> {
    match c.cmd(&["TOPK.LIST", key, "WITHCOUNT"]) {
        Reply::Array(a) => a
            .chunks(2)
            .map(|p| match (&p[0], &p[1]) {
                (Reply::Bulk(b), Reply::Int(n)) => (String::from_utf8_lossy(b).into_owned(), *n),
                r => panic!("{r:?}"),
            })
            .collect(),
        r => panic!("{r:?}"),
    }
}

fn listed(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(s, n)| (s.to_string(), *n)).collect()
}

fn counts(c: &mut Conn, key: &str, items: &[&str]) -> Vec<i64> {
    let mut a = vec!["TOPK.COUNT", key];
    a.extend(items);
    match c.cmd(&a) {
        Reply::Array(v) => v
            .into_iter()
            .map(|r| match r {
                Reply::Int(i) => i,
                r => panic!("{r:?}"),
            })
            .collect(),
        r => panic!("{r:?}"),
    }
}

/// TOPK.QUERY as booleans, in either protocol.
fn query(c: &mut Conn, key: &str, items: &[&str]) -> Vec<bool> {
    let mut a = vec!["TOPK.QUERY", key];
    a.extend(items);
    match c.cmd(&a) {
        Reply::Array(v) => v
            .into_iter()
            .map(|r| match r {
                Reply::Int(i) => i == 1,
                Reply::Bool(b) => b,
                r => panic!("{r:?}"),
            })
            .collect(),
        r => panic!("{r:?}"),
    }
}

#[test]
fn creation_replies_and_errors() {
    each_of(all_flavors(), |c, resp3| {
        assert_eq!(line(c, "TOPK.RESERVE w 3 WINDOW 60000 BUCKETS 6"), ok());
        assert_eq!(line(c, "TOPK.RESERVE p 5 100 4 0.5 window 3600000"), ok());
        let i = info(c, "TOPK.INFO", "p");
        let decay = if resp3 {
            Reply::Double("0.5".into())
        } else {
            bulk("0.5")
        };
        let want: BTreeMap<String, Reply> = [
            ("k", int(5)),
            ("width", int(100)),
            ("depth", int(4)),
            ("decay", decay),
            ("window", int(3_600_000)),
            ("buckets", int(60)),
            ("bucket_ms", int(60_000)),
            ("last_shift_ms", int(0)),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .into();
        assert_eq!(i, want);
        assert_eq!(info_int(c, "w", "width"), 8);
        for (cmd, reply) in [
            // RedisBloom's replies, unchanged.
            ("TOPK.RESERVE x 3 BUCKETS 3", arity("topk.reserve")),
            ("TOPK.RESERVE x 3 WINDOW", arity("topk.reserve")),
            ("TOPK.RESERVE x 3 8 7 0.9 WINDOW", arity("topk.reserve")),
            (
                "TOPK.RESERVE x 3 WINDOW 100 BUCKETS",
                err("TopK: invalid width"),
            ),
            ("TOPK.RESERVE x 0 WINDOW 100", err("TopK: invalid k")),
            (
                "TOPK.RESERVE x 3 8 7 2 WINDOW 100",
                err("TopK: invalid decay value. must be '<= 1' & '> 0'"),
            ),
            (
                "TOPK.RESERVE x 3 WINDOW 10 SEED 10",
                err("TopK: unknown argument"),
            ),
            (
                "TOPK.RESERVE x 3 8388608 8 1 WINDOW 1000 BUCKETS 1",
                err("TopK: a windowed Top-K holds at most 268435456 bytes of buckets and heap records"),
            ),
        ] {
            assert_eq!(line(c, cmd), reply, "{cmd}");
        }
        assert_eq!(c.cmd(&["EXISTS", "x"]), int(0));
        assert_eq!(
            line(c, "TOPK.LIST w bad"),
            err("WITHCOUNT keyword expected")
        );
        assert_eq!(
            line(c, "TOPK.INCRBY w a 100001"),
            arr(vec![err("TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000")])
        );
    });
}

/// Within one bucket a window answers as a plain key of its shape: the
/// same replies, in either protocol, INFO's first four fields included.
#[test]
fn one_bucket_answers_as_the_plain_key() {
    each_of(all_flavors(), |c, resp3| {
        assert_eq!(line(c, "TOPK.RESERVE p 3 64 4 0.9"), ok());
        assert_eq!(line(c, "TOPK.RESERVE w 3 64 4 0.9 WINDOW 3600000"), ok());
        for cmd in [
            "TOPK.ADD K a b a c a b d e",
            "TOPK.INCRBY K f 5 b 2",
            "TOPK.ADD K g",
            "TOPK.QUERY K a b c f z",
            "TOPK.COUNT K a b c f z",
            "TOPK.LIST K",
            "TOPK.LIST K WITHCOUNT",
        ] {
            let on = |c: &mut Conn, k: &str| line(c, &cmd.replace(" K", &format!(" {k}")));
            assert_eq!(on(c, "w"), on(c, "p"), "{cmd} resp3={resp3}");
        }
        assert_eq!(
            line(c, "TOPK.ADD w x"),
            arr(vec![null(resp3)]),
            "nothing expelled"
        );
        let (p, w) = (info(c, "TOPK.INFO", "p"), info(c, "TOPK.INFO", "w"));
        for f in ["k", "width", "depth", "decay"] {
            assert_eq!(p[f], w[f], "{f}");
        }
        if resp3 {
            assert!(matches!(c.cmd(&["TOPK.INFO", "w"]), Reply::Map(m) if m.len() == 8));
            assert_eq!(
                line(c, "TOPK.QUERY w a z"),
                arr(vec![Reply::Bool(true), Reply::Bool(false)])
            );
        } else {
            assert!(matches!(c.cmd(&["TOPK.INFO", "w"]), Reply::Array(a) if a.len() == 16));
        }
    });
}

/// A 40 s window of 4 buckets moved by hand: items leave bucket by
/// bucket; the list combines the live buckets.
#[test]
fn a_window_moved_by_ticks_expires_old_items() {
    each_of(all_flavors(), |c, _| {
        assert_eq!(
            line(c, "TOPK.RESERVE w 2 64 4 0.9 WINDOW 40000 BUCKETS 4"),
            ok()
        );
        assert!(!line(c, "TOPK.INCRBY w a 5 b 3").is_error());
        let t = info_int(c, "w", "last_shift_ms");
        assert!(t > 0);
        let tick = |c: &mut Conn, d: i64| line(c, &format!("TOPK.TICK w {}", t + d));
        assert_eq!(list(c, "w"), listed(&[("a", 5), ("b", 3)]));
        assert_eq!(tick(c, 9_999), int(0));
        assert_eq!(tick(c, 10_000), int(1));
        assert!(!line(c, "TOPK.INCRBY w c 7 b 1").is_error());
        assert_eq!(list(c, "w"), listed(&[("c", 7), ("a", 5)]));
        assert_eq!(counts(c, "w", &["a", "b", "c", "z"]), [5, 4, 7, 0]);
        assert_eq!(query(c, "w", &["a", "b", "c"]), [true, false, true]);
        assert_eq!(tick(c, 25_000), int(1));
        assert!(!line(c, "TOPK.INCRBY w b 2").is_error());
        // The list counts an item over every live bucket (3 + 1 + 2).
        assert_eq!(list(c, "w"), listed(&[("c", 7), ("b", 6)]));
        // Backwards: nothing.
        assert_eq!(tick(c, 100), int(0));
        assert_eq!(counts(c, "w", &["a", "b"]), [5, 6]);
        // The first bucket (a 5, b 3) leaves.
        assert_eq!(tick(c, 40_000), int(2));
        assert_eq!(list(c, "w"), listed(&[("c", 7), ("b", 3)]));
        assert_eq!(counts(c, "w", &["a", "b"]), [0, 3]);
        assert_eq!(info_int(c, "w", "last_shift_ms"), t + 40_000);
        assert_eq!(tick(c, 59_000), int(1));
        assert_eq!(list(c, "w"), listed(&[("b", 2)]));
        assert_eq!(tick(c, 59_999), int(0));
    });
}
