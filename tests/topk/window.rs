//! Windowed Top-K (`TopKw-rsb`, docs/topk-window.md): replies and errors
//! (shaped as the plain key's, RESP2 and RESP3), a window moved by
//! explicit TOPK.TICK times (ticks run ahead of the clock, so reads and
//! writes see no shift of their own), an idle key aged by its reads,
//! persistence, hostile payloads, and replicas and AOF replays
//! byte-identical while the window moves; on all five servers.
use common::dump::{parse, payload, rdb_version, Prim};
use common::info::{wait_link_up, wait_replica_synced};
use common::*;
use std::collections::BTreeMap;

const MISSING: &str = "TopK: key does not exist";
const BAD_WINDOW: &str =
    "TopK: WINDOW must be an integer number of milliseconds in [1, 315360000000]";
const BAD_BUCKETS: &str = "TopK: BUCKETS must be an integer in [1, 1024]";
const FUTURE: &str = "TopK: timestamp is more than 60 s past the server's clock";

/// TOPK.INFO as name → reply, in either protocol.
fn info(c: &mut Conn, key: &str) -> BTreeMap<String, Reply> {
    let pairs: Vec<Reply> = match c.cmd(&["TOPK.INFO", key]) {
        Reply::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        Reply::Array(a) => a,
        r => panic!("{r:?}"),
    };
    pairs
        .chunks(2)
        .map(|p| match &p[0] {
            Reply::Simple(k) => (k.clone(), p[1].clone()),
            r => panic!("{r:?}"),
        })
        .collect()
}

fn info_int(c: &mut Conn, key: &str, field: &str) -> i64 {
    match info(c, key).remove(field) {
        Some(Reply::Int(v)) => v,
        r => panic!("{field}: {r:?}"),
    }
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

#[test]
fn creation_replies_and_errors() {
    each_of(all_flavors(), |c, resp3| {
        assert_eq!(line(c, "TOPK.RESERVE w 3 WINDOW 60000 BUCKETS 6"), ok());
        assert_eq!(c.cmd(&["TYPE", "w"]), simple("TopKw-rsb"));
        assert_eq!(line(c, "TOPK.RESERVE p 5 100 4 0.5 window 3600000"), ok());
        assert_eq!(line(c, "TOPK.RESERVE s 2 BUCKETS 5 WINDOW 5"), ok());
        let i = info(c, "p");
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
        assert_eq!(info_int(c, "s", "bucket_ms"), 1);
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
            (
                "TOPK.RESERVE w 3 WINDOW 100",
                err("TopK: key already exists"),
            ),
            ("TOPK.RESERVE x 0 WINDOW 100", err("TopK: invalid k")),
            (
                "TOPK.RESERVE x 3 8 7 2 WINDOW 100",
                err("TopK: invalid decay value. must be '<= 1' & '> 0'"),
            ),
            ("TOPK.RESERVE x 3 WINDOW 0", err(BAD_WINDOW)),
            ("TOPK.RESERVE x 3 WINDOW -1", err(BAD_WINDOW)),
            ("TOPK.RESERVE x 3 WINDOW 1h", err(BAD_WINDOW)),
            ("TOPK.RESERVE x 3 WINDOW 315360000001", err(BAD_WINDOW)),
            ("TOPK.RESERVE x 3 WINDOW 1000 BUCKETS 0", err(BAD_BUCKETS)),
            (
                "TOPK.RESERVE x 3 WINDOW 1000 BUCKETS 1025",
                err(BAD_BUCKETS),
            ),
            (
                "TOPK.RESERVE x 3 WINDOW 10 BUCKETS 20",
                err("TopK: WINDOW must be at least BUCKETS milliseconds"),
            ),
            (
                "TOPK.RESERVE x 3 WINDOW 10 WINDOW 10",
                err("TopK: duplicate argument"),
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
        // Ticks: a window's only.
        assert_eq!(line(c, "TOPK.RESERVE plain 3"), ok());
        assert_eq!(line(c, "TOPK.TICK plain 1000"), err(WRONGTYPE));
        assert_eq!(line(c, "TOPK.TICK nokey 1000"), err(MISSING));
        assert_eq!(line(c, "TOPK.TICK w 0"), err("TopK: invalid timestamp"));
        assert_eq!(line(c, "TOPK.TICK w x"), err("TopK: invalid timestamp"));
        assert_eq!(line(c, "TOPK.TICK w"), arity("topk.tick"));
        let far = format!("TOPK.TICK w {}", now_ms(c) + 120_000);
        assert_eq!(line(c, &far), err(FUTURE));
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
        let (p, w) = (info(c, "p"), info(c, "w"));
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

/// A key idle past its window: reads age it by the clock, without a
/// write (the value is unchanged).
#[test]
fn reads_age_an_idle_window() {
    each_of(all_flavors(), |c, _| {
        assert_eq!(line(c, "TOPK.RESERVE w 3 WINDOW 200 BUCKETS 4"), ok());
        assert!(!line(c, "TOPK.INCRBY w a 7").is_error());
        let dump = c.cmd(&["DUMP", "w"]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !list(c, "w").is_empty() {
            assert!(std::time::Instant::now() < deadline, "never expired");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(counts(c, "w", &["a"]), [0]);
        assert_eq!(query(c, "w", &["a"]), [false]);
        assert_eq!(c.cmd(&["DUMP", "w"]), dump);
    });
}

fn dumps(c: &mut Conn, keys: &[&str]) -> Vec<Reply> {
    keys.iter().map(|k| c.cmd(&["DUMP", k])).collect()
}

/// DEBUG RELOAD, restart, DUMP/RESTORE and COPY keep the value exactly,
/// and the answers (the aggregate rebuilt from the buckets).
#[test]
fn persistence_keeps_the_window() {
    for flavor in all_flavors() {
        let mut s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(
            line(
                &mut c,
                "TOPK.RESERVE w 3 64 4 0.9 WINDOW 3600000 BUCKETS 100"
            ),
            ok()
        );
        assert_eq!(line(&mut c, "TOPK.RESERVE p 2 WINDOW 600000"), ok());
        for k in ["w", "p"] {
            assert!(!line(&mut c, &format!("TOPK.INCRBY {k} a 3 b 9 c 1")).is_error());
            let t = info_int(&mut c, k, "last_shift_ms");
            let tick = format!("TOPK.TICK {k} {}", t + 59_000);
            assert_eq!(line(&mut c, &tick), int(if k == "w" { 1 } else { 5 }));
            assert!(!line(&mut c, &format!("TOPK.INCRBY {k} a 1 d 20")).is_error());
        }
        let keys = ["w", "p"];
        let before = dumps(&mut c, &keys);
        let lists: Vec<_> = keys.iter().map(|k| list(&mut c, k)).collect();
        assert_eq!(lists[0], listed(&[("d", 20), ("b", 9), ("a", 4)]));
        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
        assert_eq!(dumps(&mut c, &keys), before, "{flavor:?} reload");
        drop(c);
        s.restart(true);
        let mut c = s.conn();
        assert_eq!(dumps(&mut c, &keys), before, "{flavor:?} restart");
        for ((k, d), l) in keys.iter().zip(&before).zip(&lists) {
            assert_eq!(&list(&mut c, k), l);
            let copy = format!("{k}-r");
            assert_eq!(
                c.cmd(&args!["RESTORE", &copy, "0", d.as_bytes().to_vec()]),
                ok()
            );
            assert_eq!(&c.cmd(&["DUMP", &copy]), d);
            assert_eq!(&list(&mut c, &copy), l);
            assert_eq!(c.cmd(&["COPY", k, &format!("{k}-c")]), int(1));
            assert_eq!(&c.cmd(&["DUMP", &format!("{k}-c")]), d);
            assert_eq!(&list(&mut c, &format!("{k}-c")), l);
        }
    }
}

/// Crafted variants of a genuine value: refused (header out of range,
/// buckets of other parameters, sizes) or, for the free fields, accepted
/// and answering; the server lives.
#[test]
fn hostile_restore_payloads_are_refused() {
    for flavor in all_flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .uncompressed_rdb()
            .start();
        let mut c = s.conn();
        assert_eq!(
            line(&mut c, "TOPK.RESERVE k 2 8 2 0.9 WINDOW 60000 BUCKETS 3"),
            ok()
        );
        assert!(!line(&mut c, "TOPK.INCRBY k a 3 b 5").is_error());
        let genuine = c.cmd(&["DUMP", "k"]).as_bytes().to_vec();
        let version = rdb_version(&genuine);
        let (id, prims) = parse(&genuine);
        let mut variants = vec![
            prims[..prims.len() - 1].to_vec(),
            [prims.clone(), vec![Prim::U(0)]].concat(),
        ];
        for field in 0..prims.len() {
            for v in [0, 1, 3, 1 << 40, u64::MAX] {
                let mut p = prims.clone();
                if matches!(p[field], Prim::U(_)) {
                    p[field] = Prim::U(v);
                    variants.push(p);
                }
            }
            if let Prim::S(b) = &prims[field] {
                let mut p = prims.clone();
                p[field] = Prim::S(b[..b.len() / 2].to_vec());
                variants.push(p);
            }
        }
        let mut accepted = 0;
        for (i, p) in variants.iter().enumerate() {
            if *p == prims {
                continue;
            }
            let key = format!("h{i}");
            match c.cmd(&args!["RESTORE", &key, "0", payload(id, p, version)]) {
                r if r == ok() => {
                    accepted += 1;
                    for cmd in [
                        "TOPK.ADD {} a",
                        "TOPK.LIST {} WITHCOUNT",
                        "TOPK.COUNT {} a",
                        "TOPK.INFO {}",
                    ] {
                        assert!(
                            !line(&mut c, &cmd.replace("{}", &key)).is_error(),
                            "{cmd} {i}"
                        );
                    }
                }
                r => {
                    assert_eq!(r, err("ERR Bad data format"), "variant {i}");
                    assert_eq!(c.cmd(&["EXISTS", &key]), int(0));
                }
            }
        }
        assert!(accepted < variants.len() / 2, "{flavor:?}: {accepted}");
        alive(&mut c);
    }
}

/// Writes while ticks move the window: the replica (fed the master's
/// ticks) and a replay of the master's AOF end byte-identical to the
/// master. One key also ages by the master's own clock (a 300 ms window).
#[test]
fn replicas_and_aof_replays_are_identical_while_the_window_moves() {
    for flavor in all_flavors() {
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
            line(&mut mc, "TOPK.RESERVE w 3 32 3 0.9 WINDOW 10000 BUCKETS 10"),
            ok()
        );
        assert_eq!(
            line(&mut mc, "TOPK.RESERVE fast 3 32 3 0.9 WINDOW 300 BUCKETS 3"),
            ok()
        );
        assert!(!line(&mut mc, "TOPK.ADD w a").is_error());
        assert!(!line(&mut mc, "TOPK.ADD fast a").is_error());
        let t = info_int(&mut mc, "w", "last_shift_ms");
        let f0 = info_int(&mut mc, "fast", "last_shift_ms");
        for round in 0..40i64 {
            let tick = format!("TOPK.TICK w {}", t + round * 700);
            assert!(!line(&mut mc, &tick).is_error());
            for k in keys {
                let cmd = format!(
                    "TOPK.INCRBY {k} i{} {} i{} 1 i{} 2",
                    round % 7,
                    round,
                    round % 3,
                    round % 11
                );
                assert!(!line(&mut mc, &cmd).is_error(), "{cmd}");
                assert!(!line(
                    &mut mc,
                    &format!("TOPK.ADD {k} j{} j{}", round % 5, round % 13)
                )
                .is_error());
            }
            if round % 10 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(120));
            }
        }
        assert!(
            info_int(&mut mc, "fast", "last_shift_ms") > f0,
            "{flavor:?}: no shift by the clock"
        );
        wait_replica_synced(&mut mc, &mut rc);
        let on_master = dumps(&mut mc, &keys);
        assert_eq!(dumps(&mut rc, &keys), on_master, "{flavor:?} replica");
        assert_eq!(list(&mut rc, "w"), list(&mut mc, "w"));
        drop(mc);
        master.restart(false);
        let mut mc = master.conn();
        assert_eq!(dumps(&mut mc, &keys), on_master, "{flavor:?} AOF replay");
    }
}
