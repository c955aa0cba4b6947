//! Windowed Count-Min Sketch (`CMSw-rsbl`, docs/cms-window.md): replies
//! and errors, a window moved by explicit CMS.TICK times (deterministic:
//! ticks run ahead of the clock, so reads and writes see no shift of
//! their own), expiry, persistence, and replicas and AOF replays
//! byte-identical while the window moves.
use common::dump::{parse, payload, rdb_version, Prim};
use common::info::{wait_link_up, wait_replica_synced};
use common::*;
use std::collections::BTreeMap;

const MISSING: &str = "CMS: key does not exist";
const NO_MERGE: &str = "CMS: MERGE does not support windowed sketches";
const BAD_WINDOW: &str =
    "CMS: WINDOW must be an integer number of milliseconds in [1, 315360000000]";
const BAD_BUCKETS: &str = "CMS: BUCKETS must be an integer in [1, 1024]";
const FUTURE: &str = "CMS: timestamp is more than 60 s past the server's clock";

/// CMS.INFO as name → value, in either protocol.
fn info(c: &mut Conn, key: &str) -> BTreeMap<String, i64> {
    let pairs: Vec<Reply> = match c.cmd(&["CMS.INFO", key]) {
        Reply::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        Reply::Array(a) => a,
        r => panic!("{r:?}"),
    };
    pairs
        .chunks(2)
        .map(|p| match (&p[0], &p[1]) {
            (Reply::Simple(k), Reply::Int(v)) => (k.clone(), *v),
            r => panic!("{r:?}"),
        })
        .collect()
}

fn query(c: &mut Conn, key: &str, items: &[&str]) -> Vec<i64> {
    let mut a = vec!["CMS.QUERY", key];
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

#[test]
fn creation_replies_and_errors() {
    each(|c, _| {
        assert_eq!(
            line(c, "CMS.INITBYDIM w 100 5 WINDOW 60000 BUCKETS 6"),
            ok()
        );
        assert_eq!(c.cmd(&["TYPE", "w"]), simple("CMSw-rsbl"));
        assert_eq!(line(c, "CMS.INITBYPROB p 0.01 0.01 window 3600000"), ok());
        assert_eq!(line(c, "CMS.INITBYDIM s 10 2 CELL_SIZE 8 WINDOW 5"), ok());
        let i = info(c, "p");
        let want: BTreeMap<String, i64> = [
            ("width", 200),
            ("depth", 7),
            ("count", 0),
            ("cell_size", 4),
            ("window", 3_600_000),
            ("buckets", 60),
            ("bucket_ms", 60_000),
            ("last_shift_ms", 0),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .into();
        assert_eq!(i, want);
        let s = info(c, "s");
        assert_eq!((s["buckets"], s["bucket_ms"], s["cell_size"]), (5, 1, 8));
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
            (
                "CMS.INITBYDIM w 10 5 WINDOW 100",
                err("CMS: key already exists"),
            ),
            ("CMS.INITBYDIM x 0 5 WINDOW 100", err("CMS: invalid width")),
            ("CMS.INITBYDIM x 10 5 WINDOW 0", err(BAD_WINDOW)),
            ("CMS.INITBYDIM x 10 5 WINDOW -1", err(BAD_WINDOW)),
            ("CMS.INITBYDIM x 10 5 WINDOW 1h", err(BAD_WINDOW)),
            ("CMS.INITBYDIM x 10 5 WINDOW 315360000001", err(BAD_WINDOW)),
            (
                "CMS.INITBYDIM x 10 5 WINDOW 1000 BUCKETS 1025",
                err(BAD_BUCKETS),
            ),
            (
                "CMS.INITBYDIM x 10 5 WINDOW 10 BUCKETS 20",
                err("CMS: WINDOW must be at least BUCKETS milliseconds"),
            ),
            (
                "CMS.INITBYDIM x 10 5 WINDOW 10 WINDOW 10",
                err("CMS: duplicate argument"),
            ),
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
        // Ticks: a window's only.
        assert_eq!(
            line(c, "CMS.TICK plain 1000"),
            err("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
        assert_eq!(line(c, "CMS.TICK nokey 1000"), err(MISSING));
        assert_eq!(line(c, "CMS.TICK w 0"), err("CMS: invalid timestamp"));
        assert_eq!(line(c, "CMS.TICK w"), arity("cms.tick"));
        let far = format!("CMS.TICK w {}", now_ms(c) + 120_000);
        assert_eq!(line(c, &far), err(FUTURE));
        // Queries of a missing key, other types.
        assert_eq!(line(c, "CMS.QUERY nokey a"), err(MISSING));
        assert_eq!(line(c, "CMS.INCRBY w a x"), err("CMS: Cannot parse number"));
    });
}

/// The server's clock (Unix ms).
fn now_ms(c: &mut Conn) -> u64 {
    match c.cmd(&["TIME"]) {
        Reply::Array(t) => {
            let n = |r: &Reply| {
                String::from_utf8_lossy(r.as_bytes())
                    .parse::<u64>()
                    .unwrap()
            };
            n(&t[0]) * 1000 + n(&t[1]) / 1000
        }
        r => panic!("{r:?}"),
    }
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
        let t = info(c, "w")["last_shift_ms"];
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
        assert_eq!(info(c, "w")["count"], 10);
        // Backwards: nothing.
        assert_eq!(tick(c, 100), int(0));
        assert_eq!(query(c, "w", &["a", "b"]), [5, 5]);
        // The first bucket (a 3, b 1) leaves.
        assert_eq!(tick(c, 40_000), int(2));
        assert_eq!(query(c, "w", &["a", "b"]), [2, 4]);
        assert_eq!(info(c, "w")["count"], 6);
        assert_eq!(info(c, "w")["last_shift_ms"], t + 40_000);
        assert_eq!(tick(c, 59_000), int(1));
        assert_eq!(query(c, "w", &["a", "b"]), [0, 4]);
        assert_eq!(tick(c, 59_999), int(0));
        assert_eq!(info(c, "w")["count"], 4);
    });
}

/// A key idle past its window: reads age it by the clock, without a
/// write (the value is unchanged).
#[test]
fn reads_age_an_idle_window() {
    each(|c, _| {
        assert_eq!(line(c, "CMS.INITBYDIM w 100 3 WINDOW 200 BUCKETS 4"), ok());
        assert_eq!(line(c, "CMS.INCRBY w a 7"), arr(vec![int(7)]));
        let dump = c.cmd(&["DUMP", "w"]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while query(c, "w", &["a"]) != [0] {
            assert!(std::time::Instant::now() < deadline, "never expired");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(info(c, "w")["count"], 0);
        assert_eq!(c.cmd(&["DUMP", "w"]), dump);
    });
}

fn dumps(c: &mut Conn, keys: &[&str]) -> Vec<Reply> {
    keys.iter().map(|k| c.cmd(&["DUMP", k])).collect()
}

/// DEBUG RELOAD, restart, DUMP/RESTORE and COPY keep the value exactly.
#[test]
fn persistence_keeps_the_window() {
    for flavor in flavors() {
        let mut s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(
            line(&mut c, "CMS.INITBYDIM w 50 4 WINDOW 3600000 BUCKETS 100"),
            ok()
        );
        assert_eq!(
            line(&mut c, "CMS.INITBYPROB p 0.1 0.1 CELL_SIZE 1 WINDOW 600000"),
            ok()
        );
        for k in ["w", "p"] {
            assert!(!line(&mut c, &format!("CMS.INCRBY {k} a 3 b 9 c 1")).is_error());
            let t = info(&mut c, k)["last_shift_ms"];
            let tick = format!("CMS.TICK {k} {}", t + 59_000);
            assert_eq!(line(&mut c, &tick), int(if k == "w" { 1 } else { 5 }));
            assert!(!line(&mut c, &format!("CMS.INCRBY {k} a 1 d 2")).is_error());
        }
        let keys = ["w", "p"];
        let before = dumps(&mut c, &keys);
        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
        assert_eq!(dumps(&mut c, &keys), before, "{flavor:?} reload");
        drop(c);
        s.restart(true);
        let mut c = s.conn();
        assert_eq!(dumps(&mut c, &keys), before, "{flavor:?} restart");
        for (k, d) in keys.iter().zip(&before) {
            let copy = format!("{k}-r");
            assert_eq!(
                c.cmd(&args!["RESTORE", &copy, "0", d.as_bytes().to_vec()]),
                ok()
            );
            assert_eq!(&c.cmd(&["DUMP", &copy]), d);
            assert_eq!(c.cmd(&["COPY", k, &format!("{k}-c")]), int(1));
            assert_eq!(&c.cmd(&["DUMP", &format!("{k}-c")]), d);
            assert_eq!(
                query(&mut c, &copy, &["a", "b", "d"]),
                query(&mut c, k, &["a", "b", "d"])
            );
        }
    }
}

/// Crafted variants of a genuine value: refused (aggregate other than the
/// buckets' sum, header out of range, sizes) or, for the free fields,
/// accepted and answering; the server lives.
#[test]
fn hostile_restore_payloads_are_refused() {
    for flavor in flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .uncompressed_rdb()
            .start();
        let mut c = s.conn();
        assert_eq!(
            line(&mut c, "CMS.INITBYDIM k 8 2 WINDOW 60000 BUCKETS 3"),
            ok()
        );
        assert!(!line(&mut c, "CMS.INCRBY k a 3 b 5").is_error());
        let genuine = c.cmd(&["DUMP", "k"]).as_bytes().to_vec();
        let version = rdb_version(&genuine);
        let (id, prims) = parse(&genuine);
        let mut variants = vec![
            prims[..prims.len() - 1].to_vec(),
            [prims.clone(), vec![Prim::U(0)]].concat(),
        ];
        for field in 0..9 {
            for v in [0, 1, 3, 1 << 40, u64::MAX] {
                let mut p = prims.clone();
                if matches!(p[field], Prim::U(_)) {
                    p[field] = Prim::U(v);
                    variants.push(p);
                }
            }
        }
        if let Prim::S(cells) = &prims[8] {
            let mut p = prims.clone();
            let mut bad = cells.clone();
            bad[0] ^= 1;
            p[8] = Prim::S(bad);
            variants.push(p);
        }
        let mut accepted = Vec::new();
        for (i, p) in variants.iter().enumerate() {
            if *p == prims {
                continue;
            }
            let key = format!("h{i}");
            match c.cmd(&args!["RESTORE", &key, "0", payload(id, p, version)]) {
                r if r == ok() => {
                    accepted.push(i);
                    assert!(!line(&mut c, &format!("CMS.INCRBY {key} a 1")).is_error());
                    assert!(!line(&mut c, &format!("CMS.QUERY {key} a")).is_error());
                    assert!(!line(&mut c, &format!("CMS.INFO {key}")).is_error());
                }
                r => {
                    assert_eq!(r, err("ERR Bad data format"), "variant {i}");
                    assert_eq!(c.cmd(&["EXISTS", &key]), int(0));
                }
            }
        }
        // Only the free fields load changed: a window of 3 ms (3 buckets),
        // another head, another clock; never a changed counter or total.
        assert!(accepted.len() <= 8, "{flavor:?}: {accepted:?}");
        assert!(!accepted.contains(&(variants.len() - 1)), "{flavor:?}");
        alive(&mut c);
    }
}

/// Writes while ticks move the window: the replica (fed the master's
/// ticks) and a replay of the master's AOF end byte-identical to the
/// master. One key also ages by the master's own clock (a 300 ms window).
#[test]
fn replicas_and_aof_replays_are_identical_while_the_window_moves() {
    for flavor in flavors() {
        let mut master = Server::builder(flavor, Module::Rsbloom)
            .aof_fsync_always("no")
            .arg("--repl-diskless-sync-delay")
            .arg("0")
            .start();
        let mut mc = master.conn();
        let replica = master.start_replica();
        let mut rc = replica.conn();
        wait_link_up(&mut rc);
        let keys = ["w", "fast"];
        assert_eq!(
            line(&mut mc, "CMS.INITBYDIM w 64 4 WINDOW 10000 BUCKETS 10"),
            ok()
        );
        assert_eq!(
            line(&mut mc, "CMS.INITBYDIM fast 64 4 WINDOW 300 BUCKETS 3"),
            ok()
        );
        assert!(!line(&mut mc, "CMS.INCRBY w a 1").is_error());
        assert!(!line(&mut mc, "CMS.INCRBY fast a 1").is_error());
        let t = info(&mut mc, "w")["last_shift_ms"];
        let f0 = info(&mut mc, "fast")["last_shift_ms"];
        for round in 0..40i64 {
            let tick = format!("CMS.TICK w {}", t + round * 700);
            assert!(!line(&mut mc, &tick).is_error());
            for k in keys {
                let cmd = format!("CMS.INCRBY {k} i{} {} i{} 1", round % 7, round, round % 3);
                assert!(!line(&mut mc, &cmd).is_error(), "{cmd}");
            }
            if round % 10 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(120));
            }
        }
        assert!(
            info(&mut mc, "fast")["last_shift_ms"] > f0,
            "{flavor:?}: no shift by the clock"
        );
        wait_replica_synced(&mut mc, &mut rc);
        let on_master = dumps(&mut mc, &keys);
        assert_eq!(dumps(&mut rc, &keys), on_master, "{flavor:?} replica");
        assert_eq!(
            query(&mut rc, "w", &["i1", "i2"]),
            query(&mut mc, "w", &["i1", "i2"])
        );
        drop(mc);
        master.restart(false);
        let mut mc = master.conn();
        assert_eq!(dumps(&mut mc, &keys), on_master, "{flavor:?} AOF replay");
    }
}
