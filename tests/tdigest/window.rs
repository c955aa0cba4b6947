//! Windowed T-Digest (`TDigw-rsb`, docs/tdigest-window.md): replies and
//! errors, a window moved by explicit TDIGEST.TICK times (deterministic:
//! ticks run ahead of the clock, so reads and writes see no shift of
//! their own), expiry by an idle key's reads, persistence, hostile
//! payloads, and replicas and AOF replays byte-identical while the window
//! moves.
use common::dump::{parse, payload, rdb_version, Prim};
use common::info::{wait_link_up, wait_replica_synced};
use common::*;
use std::collections::BTreeMap;

const MISSING: &str = "ERR T-Digest: key does not exist";
const NO_MERGE: &str = "ERR T-Digest: MERGE does not support windowed digests";
const BAD_WINDOW: &str =
    "ERR T-Digest: WINDOW must be an integer number of milliseconds in [1, 315360000000]";
const BAD_BUCKETS: &str = "ERR T-Digest: BUCKETS must be an integer in [1, 1024]";
const FUTURE: &str = "ERR T-Digest: timestamp is more than 60 s past the server's clock";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// TDIGEST.INFO as name → value, in either protocol.
fn info(c: &mut Conn, key: &str) -> BTreeMap<String, i64> {
    let pairs: Vec<Reply> = match c.cmd(&["TDIGEST.INFO", key]) {
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

/// Every read command on `key`, replies as text (the same on two keys
/// holding the same observations the same way).
fn reads(c: &mut Conn, key: &str) -> Vec<Vec<String>> {
    [
        "TDIGEST.QUANTILE {} 0 0.1 0.5 0.99 1",
        "TDIGEST.CDF {} 0 10 55.5 1000",
        "TDIGEST.RANK {} -1 5 50 500",
        "TDIGEST.REVRANK {} -1 5 50 500",
        "TDIGEST.BYRANK {} 0 3 40 1000",
        "TDIGEST.BYREVRANK {} 0 3 40 1000",
        "TDIGEST.MIN {}",
        "TDIGEST.MAX {}",
        "TDIGEST.TRIMMED_MEAN {} 0.1 0.9",
    ]
    .iter()
    .map(|t| doubles(&line(c, &t.replace("{}", key))))
    .collect()
}

#[test]
fn creation_replies_and_errors() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE w WINDOW 60000 BUCKETS 6"), ok());
        assert_eq!(c.cmd(&["TYPE", "w"]), simple("TDigw-rsb"));
        assert_eq!(
            line(c, "TDIGEST.CREATE p compression 50 window 3600000"),
            ok()
        );
        assert_eq!(line(c, "TDIGEST.CREATE s WINDOW 5"), ok());
        let want: BTreeMap<String, i64> = [
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
        .map(|(k, v)| (k.to_string(), v))
        .into();
        let mut i = info(c, "p");
        assert!(i.remove("Memory usage").unwrap() > 61 * 310 * 16);
        assert_eq!(i, want);
        let s = info(c, "s");
        assert_eq!(
            (s["buckets"], s["bucket_ms"], s["Compression"]),
            (5, 1, 100)
        );
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
                "TDIGEST.CREATE w WINDOW 100",
                err("ERR T-Digest: key already exists"),
            ),
            ("TDIGEST.CREATE x WINDOW 0", err(BAD_WINDOW)),
            ("TDIGEST.CREATE x WINDOW -1", err(BAD_WINDOW)),
            ("TDIGEST.CREATE x WINDOW 1h", err(BAD_WINDOW)),
            ("TDIGEST.CREATE x WINDOW 315360000001", err(BAD_WINDOW)),
            ("TDIGEST.CREATE x WINDOW 1000 BUCKETS 0", err(BAD_BUCKETS)),
            (
                "TDIGEST.CREATE x WINDOW 1000 BUCKETS 1025",
                err(BAD_BUCKETS),
            ),
            (
                "TDIGEST.CREATE x WINDOW 10 BUCKETS 20",
                err("ERR T-Digest: WINDOW must be at least BUCKETS milliseconds"),
            ),
            (
                "TDIGEST.CREATE x WINDOW 10 WINDOW 10",
                err("ERR T-Digest: duplicate argument"),
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
        // Ticks: a window's only.
        assert_eq!(line(c, "TDIGEST.TICK plain 1000"), err(WRONGTYPE));
        assert_eq!(line(c, "TDIGEST.TICK nokey 1000"), err(MISSING));
        assert_eq!(
            line(c, "TDIGEST.TICK w 0"),
            err("ERR T-Digest: invalid timestamp")
        );
        assert_eq!(line(c, "TDIGEST.TICK w"), arity("tdigest.tick"));
        let far = format!("TDIGEST.TICK w {}", now_ms(c) + 120_000);
        assert_eq!(line(c, &far), err(FUTURE));
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

/// A 20 s window of 4 buckets moved by hand: observations leave bucket by
/// bucket; a window holding one bucket's observations answers every read
/// as a plain digest fed them does.
#[test]
fn a_window_moved_by_ticks_expires_old_observations() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE w WINDOW 20000 BUCKETS 4"), ok());
        assert_eq!(line(c, &add("w", 1..=100)), ok());
        let t = info(c, "w")["last_shift_ms"];
        assert!(t > 0);
        let tick = |c: &mut Conn, d: i64| line(c, &format!("TDIGEST.TICK w {}", t + d));
        assert_eq!(tick(c, 4_999), int(0));
        assert_eq!(tick(c, 5_000), int(1));
        assert_eq!(line(c, &add("w", 1001..=1100)), ok());
        assert_eq!(tick(c, 12_500), int(1));
        assert_eq!(line(c, &add("w", 2001..=2050)), ok());
        let i = info(c, "w");
        assert_eq!(i["Observations"], 250);
        assert_eq!(i["last_shift_ms"], t + 10_000);
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
        assert_eq!(info(c, "w")["Observations"], 250);
        // The first bucket (1..100) leaves, then the second.
        assert_eq!(tick(c, 20_000), int(2));
        assert_eq!(info(c, "w")["Observations"], 150);
        assert_eq!(num(&line(c, "TDIGEST.MIN w")), 1001.0);
        assert_eq!(tick(c, 25_000), int(1));
        assert_eq!(info(c, "w")["Observations"], 50);
        // One bucket left: the plain digest's answers, bit for bit.
        assert_eq!(line(c, "TDIGEST.CREATE plain"), ok());
        assert_eq!(line(c, &add("plain", 2001..=2050)), ok());
        assert_eq!(reads(c, "w"), reads(c, "plain"));
        assert_eq!(tick(c, 29_999), int(0));
        assert_eq!(tick(c, 30_000), int(1));
        assert_eq!(info(c, "w")["Observations"], 0);
        assert!(num(&line(c, "TDIGEST.MIN w")).is_nan());
        // RESET empties every bucket and keeps window and clock.
        assert_eq!(line(c, &add("w", 1..=10)), ok());
        assert_eq!(line(c, "TDIGEST.RESET w"), ok());
        let i = info(c, "w");
        assert_eq!((i["Observations"], i["window"]), (0, 20_000));
        assert_eq!(i["last_shift_ms"], t + 30_000);
    });
}

/// A window of many buckets answers close to the exact ranks over it.
#[test]
fn a_full_window_answers_within_its_rank_error() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE w WINDOW 60000 BUCKETS 60"), ok());
        assert_eq!(line(c, &add("w", 0..1)), ok());
        let t = info(c, "w")["last_shift_ms"];
        // 60 buckets of 1000 values each: 0..60000, interleaved.
        for b in 0..60i64 {
            assert_eq!(
                line(c, &format!("TDIGEST.TICK w {}", t + b * 1000)),
                int((b > 0) as i64)
            );
            assert_eq!(line(c, &add("w", (0..1000).map(|i| i * 60 + b))), ok());
        }
        assert_eq!(info(c, "w")["Observations"], 60_001);
        for q in [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99] {
            let v = num(&line(c, &format!("TDIGEST.QUANTILE w {q}")));
            let exact = q * 60_000.0;
            assert!((v - exact).abs() <= 0.01 * 60_000.0, "q {q}: {v}");
        }
    });
}

/// A key idle past its window: reads age it by the clock, without a
/// write (the value is unchanged).
#[test]
fn reads_age_an_idle_window() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE w WINDOW 200 BUCKETS 4"), ok());
        assert_eq!(line(c, "TDIGEST.ADD w 7 8 9"), ok());
        let dump = c.cmd(&["DUMP", "w"]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while info(c, "w")["Observations"] != 0 {
            assert!(std::time::Instant::now() < deadline, "never expired");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(num(&line(c, "TDIGEST.QUANTILE w 0.5")).is_nan());
        assert_eq!(line(c, "TDIGEST.RANK w 8"), arr(vec![int(-2)]));
        assert_eq!(c.cmd(&["DUMP", "w"]), dump);
    });
}

fn dumps(c: &mut Conn, keys: &[&str]) -> Vec<Reply> {
    keys.iter().map(|k| c.cmd(&["DUMP", k])).collect()
}

/// DEBUG RELOAD, restart, DUMP/RESTORE and COPY keep the value exactly,
/// unmerged observations included, and every reply.
#[test]
fn persistence_keeps_the_window() {
    for flavor in flavors() {
        let mut s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(
            line(&mut c, "TDIGEST.CREATE w WINDOW 3600000 BUCKETS 100"),
            ok()
        );
        assert_eq!(
            line(&mut c, "TDIGEST.CREATE p COMPRESSION 20 WINDOW 600000"),
            ok()
        );
        let keys = ["w", "p"];
        for k in keys {
            assert_eq!(line(&mut c, &add(k, (0..500).map(|i| i * 7 % 301))), ok());
            let t = info(&mut c, k)["last_shift_ms"];
            let tick = format!("TDIGEST.TICK {k} {}", t + 59_000);
            assert_eq!(line(&mut c, &tick), int(if k == "w" { 1 } else { 5 }));
            assert_eq!(line(&mut c, &add(k, 1..=30)), ok());
        }
        let before = dumps(&mut c, &keys);
        let answers: Vec<_> = keys.iter().map(|k| reads(&mut c, k)).collect();
        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
        assert_eq!(dumps(&mut c, &keys), before, "{flavor:?} reload");
        drop(c);
        s.restart(true);
        let mut c = s.conn();
        assert_eq!(dumps(&mut c, &keys), before, "{flavor:?} restart");
        for ((k, d), a) in keys.iter().zip(&before).zip(&answers) {
            assert_eq!(&reads(&mut c, k), a, "{flavor:?} {k}");
            let copy = format!("{k}-r");
            assert_eq!(
                c.cmd(&args!["RESTORE", &copy, "0", d.as_bytes().to_vec()]),
                ok()
            );
            assert_eq!(&c.cmd(&["DUMP", &copy]), d);
            assert_eq!(c.cmd(&["COPY", k, &format!("{k}-c")]), int(1));
            assert_eq!(&c.cmd(&["DUMP", &format!("{k}-c")]), d);
            assert_eq!(&reads(&mut c, &copy), a);
            assert_eq!(&reads(&mut c, &format!("{k}-c")), a);
        }
    }
}

/// Crafted variants of a genuine value: refused (a bucket out of what ADD
/// builds, a header out of range, sizes) or, for the free fields, accepted
/// and answering; the server lives.
#[test]
fn hostile_restore_payloads_are_refused() {
    for flavor in flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .uncompressed_rdb()
            .start();
        let mut c = s.conn();
        assert_eq!(
            line(
                &mut c,
                "TDIGEST.CREATE k COMPRESSION 5 WINDOW 60000 BUCKETS 3"
            ),
            ok()
        );
        assert_eq!(line(&mut c, &add("k", 1..=50)), ok());
        assert_eq!(line(&mut c, "TDIGEST.ADD k 3 5"), ok());
        let genuine = c.cmd(&["DUMP", "k"]).as_bytes().to_vec();
        let version = rdb_version(&genuine);
        let (id, prims) = parse(&genuine);
        let mut variants = vec![
            prims[..prims.len() - 1].to_vec(),
            [prims.clone(), vec![Prim::U(0)]].concat(),
        ];
        for field in 0..prims.len() {
            let mut values = vec![];
            match prims[field] {
                Prim::U(_) => {
                    values = [0, 1, 2, 3, 1 << 40, 1 << 53, u64::MAX]
                        .map(Prim::U)
                        .to_vec()
                }
                Prim::D(_) => {
                    values = [f64::NAN, f64::INFINITY, -1e300, 0.5, 1e300]
                        .map(Prim::D)
                        .to_vec()
                }
                _ => {}
            }
            for v in values {
                let mut p = prims.clone();
                p[field] = v;
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
                    assert_eq!(line(&mut c, &format!("TDIGEST.ADD {key} 1 2 3")), ok());
                    for r in reads(&mut c, &key) {
                        assert!(!r.is_empty());
                    }
                    assert!(!line(&mut c, &format!("TDIGEST.INFO {key}")).is_error());
                }
                r => {
                    assert_eq!(r, err("ERR Bad data format"), "variant {i}");
                    assert_eq!(c.cmd(&["EXISTS", &key]), int(0));
                }
            }
        }
        assert!(accepted > 0 && accepted < variants.len() / 2, "{accepted}");
        alive(&mut c);
    }
}

/// Writes while ticks move the window: the replica (fed the master's
/// ticks) and a replay of the master's AOF end byte-identical to the
/// master, and answer alike. One key also ages by the master's own clock
/// (a 300 ms window).
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
            line(
                &mut mc,
                "TDIGEST.CREATE w COMPRESSION 10 WINDOW 10000 BUCKETS 10"
            ),
            ok()
        );
        assert_eq!(
            line(&mut mc, "TDIGEST.CREATE fast WINDOW 300 BUCKETS 3"),
            ok()
        );
        assert_eq!(line(&mut mc, "TDIGEST.ADD w 1"), ok());
        assert_eq!(line(&mut mc, "TDIGEST.ADD fast 1"), ok());
        let t = info(&mut mc, "w")["last_shift_ms"];
        let f0 = info(&mut mc, "fast")["last_shift_ms"];
        for round in 0..40i64 {
            let tick = format!("TDIGEST.TICK w {}", t + round * 700);
            assert!(!line(&mut mc, &tick).is_error());
            for k in keys {
                let cmd = add(k, (0..round * 3).map(|i| (i * 37 + round) % 1000));
                if round > 0 {
                    assert_eq!(line(&mut mc, &cmd), ok(), "{cmd}");
                }
            }
            // A read between writes changes nothing.
            assert!(!line(&mut mc, "TDIGEST.QUANTILE w 0.5").is_error());
            if round % 10 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(120));
            }
        }
        assert!(
            info(&mut mc, "fast")["last_shift_ms"] > f0,
            "{flavor:?}: no shift by the clock"
        );
        // A snapshot forked now (full sync, BGSAVE) leaves the buckets as
        // they are.
        assert_eq!(line(&mut mc, "BGSAVE"), simple("Background saving started"));
        wait_replica_synced(&mut mc, &mut rc);
        let on_master = dumps(&mut mc, &keys);
        assert_eq!(dumps(&mut rc, &keys), on_master, "{flavor:?} replica");
        assert_eq!(reads(&mut rc, "w"), reads(&mut mc, "w"));
        drop(mc);
        drop(rc);
        drop(replica);
        master.restart(false);
        let mut mc = master.conn();
        assert_eq!(dumps(&mut mc, &keys), on_master, "{flavor:?} AOF replay");
    }
}
