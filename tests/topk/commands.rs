//! TOPK.* commands over the wire (docs/topk.md §4): every reply and error
//! path, in RESP2 and RESP3, on every server flavor, with the test vectors
//! of docs/topk.md §8 (verified against RedisBloom).
use common::diff::sargs;
use common::*;

// ---------------------------------------------------------------- helpers

fn boolean(resp3: bool, v: bool) -> Reply {
    if resp3 {
        Reply::Bool(v)
    } else {
        int(i64::from(v))
    }
}

/// Expected elements: `Some(item)` a bulk string, `None` a null.
fn items(resp3: bool, v: &[Option<&str>]) -> Reply {
    arr(v.iter().map(|i| i.map_or(null(resp3), bulk)).collect())
}

/// TOPK.LIST WITHCOUNT as expected: (item, count), `None` = null item.
fn with_counts(resp3: bool, v: &[(Option<&str>, i64)]) -> Reply {
    arr(v
        .iter()
        .flat_map(|&(i, n)| [i.map_or(null(resp3), bulk), int(n)])
        .collect())
}

const NO_KEY: &str = "TopK: key does not exist";
const INCREMENT: &str = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";

/// The stream of docs/topk.md §8.2.
fn stream_item(i: u64) -> String {
    let x = (7 * i * i + 3 * i) % 101;
    if !x.is_multiple_of(3) {
        format!("w{}", x % 13)
    } else {
        format!("w{}", x % 5)
    }
}

/// Runs `f` on one server of every flavor, with a RESP2 and a RESP3
/// connection in turn (the keys are flushed in between).
fn each_flushed(f: impl Fn(&mut Conn, bool)) {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        for resp3 in [false, true] {
            let mut c = if resp3 { s.conn3() } else { s.conn() };
            assert_eq!(c.cmd(&["FLUSHALL"]), ok());
            f(&mut c, resp3);
            alive(&mut c);
        }
    }
}

/// Whether the server formats doubles with 17 digits (Redis < 7.2).
fn old_doubles(c: &mut Conn) -> bool {
    let v = info::field(c, "server", "redis_version");
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap()) < (7, 2)
}

// ---------------------------------------------------------------- TOPK.RESERVE

#[test]
fn reserve_arguments_and_errors() {
    each_flushed(|c, _| {
        for (cmd, want) in [
            ("TOPK.RESERVE t 1 2", arity("topk.reserve")),
            ("TOPK.RESERVE t 1 2 3", arity("topk.reserve")),
            ("TOPK.RESERVE t 1 2 3 0.5 x", arity("topk.reserve")),
            ("TOPK.RESERVE t", arity("topk.reserve")),
            ("TOPK.RESERVE t 0", err("TopK: invalid k")),
            ("TOPK.RESERVE t -1 8 7 0.9", err("TopK: invalid k")),
            ("TOPK.RESERVE t 1.5", err("TopK: invalid k")),
            // docs/topk.md §9: RedisBloom truncates k to 32 bits (and aborts on 2^32).
            (
                "TOPK.RESERVE poc 4294967296 1 1 0.1",
                err("TopK: invalid k"),
            ),
            ("TOPK.RESERVE t 3 0 7 0.9", err("TopK: invalid width")),
            (
                "TOPK.RESERVE t 3 4294967296 7 0.9",
                err("TopK: invalid width"),
            ),
            ("TOPK.RESERVE t 3 8 0 0.9", err("TopK: invalid depth")),
            (
                "TOPK.RESERVE t 3 8 4294967296 0.9",
                err("TopK: invalid depth"),
            ),
            (
                "TOPK.RESERVE t 3 8 7 0",
                err("TopK: invalid decay value. must be '<= 1' & '> 0'"),
            ),
            (
                "TOPK.RESERVE t 3 8 7 1.01",
                err("TopK: invalid decay value. must be '<= 1' & '> 0'"),
            ),
            (
                "TOPK.RESERVE t 3 8 7 nan",
                err("TopK: invalid decay value. must be '<= 1' & '> 0'"),
            ),
            (
                "TOPK.RESERVE t 3 8 7 1e-400",
                err("TopK: invalid decay value. must be '<= 1' & '> 0'"),
            ),
            // Sizes no memory holds (RedisBloom aborts the server on Redis < 7.4).
            (
                "TOPK.RESERVE x 3 2000000000 200000000 1",
                err("ERR Insufficient memory to create topk data structure"),
            ),
            (
                "TOPK.RESERVE x 4294967295 4294967295 4294967295 1",
                err("ERR Insufficient memory to create topk data structure"),
            ),
            ("TOPK.RESERVE t 3 8 7 4.9e-324", ok()),
            ("TOPK.RESERVE t 3", err("TopK: key already exists")),
            // The key is checked before the numbers, and any type exists.
            ("TOPK.RESERVE t x", err("TopK: key already exists")),
            ("SET s x", ok()),
            ("TOPK.RESERVE s 3", err("TopK: key already exists")),
            ("CF.RESERVE b 100", ok()),
            ("TOPK.RESERVE b 3 8 7 x", err("TopK: key already exists")),
        ] {
            assert_eq!(line(c, cmd), want, "{cmd}");
        }
        assert_eq!(c.cmd(&["EXISTS", "x", "poc"]), int(0));
    });
}

#[test]
fn info_and_memory_usage() {
    each_flushed(|c, resp3| {
        let old = old_doubles(c);
        assert_eq!(line(c, "TOPK.RESERVE t 3"), ok());
        assert_eq!(line(c, "TOPK.RESERVE u 50 2000 7 0.925"), ok());
        assert_eq!(line(c, "TOPK.RESERVE v 1 1 1 1"), ok());
        for (key, k, w, d, decay) in [
            (
                "t",
                3,
                8,
                7,
                if old { "0.90000000000000002" } else { "0.9" },
            ),
            (
                "u",
                50,
                2000,
                7,
                if old { "0.92500000000000004" } else { "0.925" },
            ),
            ("v", 1, 1, 1, "1"),
        ] {
            let fields = [("k", int(k)), ("width", int(w)), ("depth", int(d))];
            let got = c.cmd(&["TOPK.INFO", key]);
            let want = if resp3 {
                let mut m: Vec<(Reply, Reply)> =
                    fields.into_iter().map(|(n, v)| (simple(n), v)).collect();
                m.push((simple("decay"), Reply::Double(decay.into())));
                Reply::Map(m)
            } else {
                let mut a: Vec<Reply> = fields
                    .into_iter()
                    .flat_map(|(n, v)| [simple(n), v])
                    .collect();
                a.extend([simple("decay"), bulk(decay)]);
                arr(a)
            };
            assert_eq!(got, want, "{key}");
        }
        // 2088 + 8·width·depth + 24·k, plus the server's own per-key bytes.
        let usage = |c: &mut Conn, k: &str| c.cmd(&["MEMORY", "USAGE", k]).as_int();
        let (t, u, v) = (usage(c, "t"), usage(c, "u"), usage(c, "v"));
        assert_eq!(u - t, (8 * 2000 * 7 + 24 * 50) - (8 * 8 * 7 + 24 * 3));
        assert_eq!(t - v, (8 * 8 * 7 + 24 * 3) - (8 + 24));
        assert!((2088 + 32..2088 + 200).contains(&v), "{v}");
        assert_eq!(line(c, "TOPK.INFO nokey"), err(NO_KEY));
        assert_eq!(line(c, "TOPK.INFO t x"), arity("topk.info"));
        assert_eq!(line(c, "TYPE t"), simple("TopK-TYPE"));
        assert_eq!(line(c, "OBJECT ENCODING t"), bulk("raw"));
    });
}

// ---------------------------------------------------------------- ADD / LIST

/// docs/topk.md §8.2: every reply of the deterministic stream.
#[test]
fn deterministic_stream_vector() {
    each_flushed(|c, resp3| {
        assert_eq!(line(c, "TOPK.RESERVE t1 5 8 7 1"), ok());
        let cmds: Vec<Vec<String>> = (0..100)
            .map(|call| {
                let mut a = vec!["TOPK.ADD".to_string(), "t1".into()];
                a.extend((call * 10..call * 10 + 10).map(stream_item));
                a
            })
            .collect();
        let mut expelled = Vec::new();
        for r in c.pipeline(&cmds) {
            for e in r.as_array() {
                match e {
                    Reply::Bulk(b) => expelled.push(String::from_utf8(b.clone()).unwrap()),
                    n => assert_eq!(*n, null(resp3)),
                }
            }
        }
        assert_eq!(expelled.len(), 172);
        assert_eq!(
            expelled[..10],
            ["w8", "w11", "w9", "w0", "w11", "w8", "w0", "w4", "w3", "w6"]
        );
        assert_eq!(
            line(c, "TOPK.LIST t1 WITHCOUNT"),
            with_counts(
                resp3,
                &[
                    (Some("w1"), 140),
                    (Some("w4"), 138),
                    (Some("w3"), 100),
                    (Some("w0"), 81),
                    (Some("w2"), 80)
                ]
            )
        );
        assert_eq!(
            line(c, "TOPK.LIST t1"),
            items(
                resp3,
                &[Some("w1"), Some("w4"), Some("w3"), Some("w0"), Some("w2")]
            )
        );
        assert_eq!(
            line(c, "TOPK.COUNT t1 w0 w1 w2 w5"),
            arr(vec![int(81), int(140), int(80), int(0)])
        );
        let b = |v| boolean(resp3, v);
        assert_eq!(
            line(c, "TOPK.QUERY t1 w0 w1 w2 w5"),
            arr(vec![b(true), b(true), b(true), b(false)])
        );
    });
}

/// docs/topk.md §8.4 small cases.
#[test]
fn small_cases() {
    each_flushed(|c, resp3| {
        assert_eq!(line(c, "TOPK.RESERVE t 3"), ok());
        assert_eq!(
            line(c, "TOPK.ADD t a b c d"),
            items(resp3, &[None, None, None, Some("a")])
        );
        assert_eq!(
            line(c, "TOPK.LIST t WITHCOUNT"),
            with_counts(resp3, &[(Some("c"), 1), (Some("d"), 1), (Some("b"), 1)])
        );
        // The empty item, before and after a reload (saved like "no item",
        // loaded as the empty item: RedisBloom's #1053 fix; 2.8.2 shows null).
        assert_eq!(line(c, "TOPK.RESERVE e 3 8 7 1"), ok());
        assert_eq!(
            c.cmd(&["TOPK.ADD", "e", "", "a", "", ""]),
            items(resp3, &[None; 4])
        );
        assert_eq!(
            line(c, "TOPK.LIST e WITHCOUNT"),
            with_counts(resp3, &[(Some(""), 3), (Some("a"), 1)])
        );
        assert_eq!(line(c, "DEBUG RELOAD"), ok());
        assert_eq!(
            line(c, "TOPK.LIST e WITHCOUNT"),
            with_counts(resp3, &[(Some(""), 3), (Some("a"), 1)])
        );
        assert_eq!(
            c.cmd(&["TOPK.QUERY", "e", ""]),
            arr(vec![boolean(resp3, true)])
        );
        assert_eq!(c.cmd(&["TOPK.COUNT", "e", ""]), arr(vec![int(3)]));
        assert_eq!(line(c, "TOPK.RESERVE u 1 8 7 1"), ok());
        assert_eq!(c.cmd(&["TOPK.ADD", "u", ""]), items(resp3, &[None]));
        assert_eq!(line(c, "TOPK.ADD u z z"), items(resp3, &[Some(""), None]));
        // Added with increment 0 (count 0), reloaded, then expelled: still "".
        assert_eq!(line(c, "TOPK.RESERVE v 1 8 7 1"), ok());
        let zero = c.cmd(&["TOPK.INCRBY", "v", "", "0"]);
        assert_eq!(zero, items(resp3, &[None]));
        assert_eq!(line(c, "DEBUG RELOAD"), ok());
        assert_eq!(line(c, "TOPK.ADD v z z"), items(resp3, &[Some(""), None]));
        // Items are replied as C strings; QUERY compares whole items.
        assert_eq!(
            c.cmd(&["TOPK.ADD", "t", "bin\0ary"]),
            items(resp3, &[Some("c")])
        );
        assert_eq!(
            line(c, "TOPK.LIST t"),
            items(resp3, &[Some("d"), Some("bin"), Some("b")])
        );
        let q = c.cmd(&["TOPK.QUERY", "t", "bin\0ary", "bin"]);
        assert_eq!(q, arr(vec![boolean(resp3, true), boolean(resp3, false)]));
    });
}

/// docs/topk.md §3.4: INCRBY 0 makes a phantom heap entry.
#[test]
fn incrby_vectors_and_phantom_entries() {
    each_flushed(|c, resp3| {
        assert_eq!(line(c, "TOPK.RESERVE topk 3 10 3 1"), ok());
        assert_eq!(
            line(c, "TOPK.INCRBY topk bar 3 baz 6 42 2"),
            items(resp3, &[None, None, None])
        );
        assert_eq!(
            line(c, "TOPK.INCRBY topk 42 8 xyzzy 4"),
            items(resp3, &[None, Some("bar")])
        );
        assert_eq!(
            line(c, "TOPK.COUNT topk bar baz 42 xyzzy 4"),
            arr(vec![int(3), int(6), int(10), int(4), int(0)])
        );
        assert_eq!(line(c, "TOPK.RESERVE t 2 8 7 0.925"), ok());
        assert_eq!(line(c, "TOPK.INCRBY t x 0"), items(resp3, &[None]));
        assert_eq!(line(c, "TOPK.QUERY t x"), arr(vec![boolean(resp3, true)]));
        assert_eq!(line(c, "TOPK.LIST t"), arr(vec![]));
        assert_eq!(
            line(c, "TOPK.ADD t y z w"),
            items(resp3, &[None, Some("x"), Some("y")])
        );
    });
}

/// docs/topk.md §4.3: a bad increment stops the command, and every later
/// element repeats the error (RedisBloom leaves them out, which
/// desynchronises the connection); earlier pairs stay applied.
#[test]
fn incrby_bad_increment_part_way() {
    each_flushed(|c, resp3| {
        assert_eq!(line(c, "TOPK.RESERVE t 5 8 7 1"), ok());
        let e = err(INCREMENT);
        assert_eq!(
            line(c, "TOPK.INCRBY t a 2 b -1 c 3"),
            arr(vec![null(resp3), e.clone(), e.clone()])
        );
        // The connection is in step: the next reply is the next command's.
        assert_eq!(
            line(c, "TOPK.LIST t WITHCOUNT"),
            with_counts(resp3, &[(Some("a"), 2)])
        );
        for bad in ["100001", "-1", "1.5", "x", "01", ""] {
            let r = c.cmd(&["TOPK.INCRBY", "t", "d", "1", "e", bad, "f", "1", "g", "1"]);
            assert_eq!(
                r,
                arr(vec![null(resp3), e.clone(), e.clone(), e.clone()]),
                "{bad:?}"
            );
        }
        assert_eq!(line(c, "TOPK.INCRBY t h 100000"), items(resp3, &[None]));
        assert_eq!(
            line(c, "TOPK.COUNT t a d e f h"),
            arr(vec![int(2), int(6), int(0), int(0), int(100000)])
        );
        assert_eq!(line(c, "TOPK.INCRBY t a"), arity("topk.incrby"));
        assert_eq!(line(c, "TOPK.INCRBY t a 1 b"), arity("topk.incrby"));
        assert_eq!(line(c, "TOPK.INCRBY nokey a 1"), err(NO_KEY));
        assert_eq!(line(c, "TOPK.INCRBY nokey a x"), err(NO_KEY));
    });
}

#[test]
fn list_option_and_key_errors() {
    each_flushed(|c, resp3| {
        assert_eq!(line(c, "TOPK.RESERVE t 4 8 7 1"), ok());
        assert_eq!(line(c, "TOPK.LIST t"), arr(vec![]));
        assert_eq!(
            line(c, "TOPK.ADD t a a b"),
            items(resp3, &[None, None, None])
        );
        for opt in ["WITHCOUNT", "withcount", "w", "WiTh", "withc", ""] {
            let want = with_counts(resp3, &[(Some("a"), 2), (Some("b"), 1)]);
            assert_eq!(c.cmd(&["TOPK.LIST", "t", opt]), want, "{opt:?}");
        }
        // Checked before the key.
        for opt in ["WITHCOUNTS", "bad", "count"] {
            assert_eq!(
                c.cmd(&["TOPK.LIST", "nokey", opt]),
                err("WITHCOUNT keyword expected")
            );
            assert_eq!(
                c.cmd(&["TOPK.LIST", "t", opt]),
                err("WITHCOUNT keyword expected")
            );
        }
        assert_eq!(line(c, "TOPK.LIST nokey w"), err(NO_KEY));
        assert_eq!(line(c, "TOPK.LIST t w x"), arity("topk.list"));
        assert_eq!(line(c, "TOPK.LIST"), arity("topk.list"));
        assert_eq!(line(c, "SET s x"), ok());
        assert_eq!(line(c, "CF.RESERVE b 100"), ok());
        for cmd in ["TOPK.ADD", "TOPK.QUERY", "TOPK.COUNT"] {
            for (key, want) in [
                ("s", err(WRONGTYPE)),
                ("b", err(WRONGTYPE)),
                ("nokey", err(NO_KEY)),
            ] {
                assert_eq!(c.cmd(&[cmd, key, "a"]), want, "{cmd} {key}");
            }
            assert_eq!(c.cmd(&[cmd, "t"]), arity(&cmd.to_lowercase()));
        }
        for (cmd, name) in [
            ("TOPK.LIST s", "list"),
            ("TOPK.INFO b", "info"),
            ("TOPK.INCRBY s a 1", "incrby"),
        ] {
            assert_eq!(line(c, cmd), err(WRONGTYPE), "{name}");
        }
    });
}

/// Writes invalidate WATCH (RedisBloom 8.x opens the key for writing).
#[test]
fn writes_abort_watching_transactions() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let (mut a, mut b) = (s.conn(), s.conn());
        assert_eq!(line(&mut a, "TOPK.RESERVE w 3 8 7 1"), ok());
        for (write, aborts) in [
            ("TOPK.QUERY w x", false),
            ("TOPK.LIST w", false),
            ("TOPK.ADD w x", true),
            ("TOPK.INCRBY w y 2", true),
        ] {
            assert_eq!(line(&mut a, "WATCH w"), ok());
            assert!(!line(&mut b, write).is_error());
            assert_eq!(line(&mut a, "MULTI"), ok());
            assert_eq!(line(&mut a, "SET x 1"), simple("QUEUED"));
            let exec = line(&mut a, "EXEC");
            assert_eq!(exec == Reply::Nil, aborts, "{flavor:?} {write}: {exec:?}");
        }
    }
}

/// The decay draws are the key's own: the same commands give the same
/// result on two servers, also when one reloads in between.
#[test]
fn decay_is_deterministic() {
    let flavor = flavors()[0];
    let start = || {
        Server::builder(flavor, Module::Rsbloom)
            .uncompressed_rdb()
            .start()
    };
    let servers = [start(), start()];
    let [mut a, mut b] = servers.each_ref().map(Server::conn);
    let mut cmds = vec![sargs(&["TOPK.RESERVE", "d", "10", "16", "4", "0.9"])];
    for call in 0..300u64 {
        let mut cmd = sargs(&["TOPK.INCRBY", "d"]);
        for j in 0..5 {
            let n = (call * 31 + j * 17) % 97;
            cmd.push(format!("u{}", n % (1 + n % 13)).into_bytes());
            cmd.push((1 + n % 7).to_string().into_bytes());
        }
        cmds.push(cmd);
    }
    let (head, tail) = cmds.split_at(150);
    let mut ra = a.pipeline(head);
    assert_eq!(line(&mut a, "DEBUG RELOAD"), ok());
    ra.extend(a.pipeline(tail));
    assert_eq!(ra, b.pipeline(&cmds));
    let dump = a.cmd(&["DUMP", "d"]);
    assert_eq!(dump, b.cmd(&["DUMP", "d"]));
    // The stream decayed buckets: the state saved with the key moved.
    assert_ne!(common::topk::generator_state(dump.as_bytes()), 0);
    let more = sargs(&["TOPK.ADD", "d", "u1", "zz", "u3"]);
    assert_eq!(a.cmd(&more), b.cmd(&more));
    assert_eq!(a.cmd(&["DUMP", "d"]), b.cmd(&["DUMP", "d"]));
}

/// Sketches beyond a core's cache add batches by blocks (hashed and
/// prefetched ahead): the same replies and state as one item at a time.
#[test]
fn batched_adds_on_a_large_sketch_equal_single_adds() {
    let s = Server::start(flavors()[0], Module::Rsbloom);
    let mut c = s.conn();
    for key in ["batch", "single"] {
        assert_eq!(
            c.cmd(&["TOPK.RESERVE", key, "20", "40000", "3", "0.9"]),
            ok()
        );
    }
    let items: Vec<String> = (0..1000)
        .map(|i| format!("i{}", (i * 7919) % (1 + i % 97)))
        .collect();
    let mut batched = Vec::new();
    for chunk in items.chunks(100) {
        let mut cmd = vec!["TOPK.ADD".to_string(), "batch".into()];
        cmd.extend(chunk.iter().cloned());
        batched.extend(c.cmd(&cmd).as_array().to_vec());
    }
    let singles: Vec<Vec<String>> = items
        .iter()
        .map(|i| vec!["TOPK.ADD".to_string(), "single".into(), i.clone()])
        .collect();
    let single: Vec<Reply> = c
        .pipeline(&singles)
        .into_iter()
        .map(|r| r.as_array()[0].clone())
        .collect();
    assert_eq!(batched, single);
    let list = |c: &mut Conn, k: &str| c.cmd(&["TOPK.LIST", k, "WITHCOUNT"]);
    assert_eq!(list(&mut c, "batch"), list(&mut c, "single"));
    assert_eq!(
        c.cmd(&["DEBUG", "DIGEST-VALUE", "batch"]),
        c.cmd(&["DEBUG", "DIGEST-VALUE", "single"])
    );
}
