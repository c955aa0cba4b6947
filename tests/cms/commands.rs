//! CMS.* commands over the wire (docs/cms.md §5, §9): every reply and error
//! path, in RESP2 and RESP3, on every server flavor; the test vectors
//! verified on RedisBloom and those of the Redis 8.12 specification
//! (cell sizes, decrements, atomic rejections); the defects of §7.1
//! answered correctly.
use common::*;

fn ints(v: &[i64]) -> Reply {
    arr(v.iter().map(|&i| int(i)).collect())
}

/// CMS.INFO of a 4-byte sketch in the protocol's shape.
fn info(resp3: bool, width: i64, depth: i64, count: i64) -> Reply {
    info_sized(resp3, width, depth, count, 4)
}

/// CMS.INFO in the protocol's shape: RESP3 map, RESP2 flat array.
fn info_sized(resp3: bool, width: i64, depth: i64, count: i64, cell_size: i64) -> Reply {
    let pairs = [
        ("width", width),
        ("depth", depth),
        ("count", count),
        ("cell_size", cell_size),
    ];
    if resp3 {
        Reply::Map(pairs.iter().map(|&(k, v)| (simple(k), int(v))).collect())
    } else {
        arr(pairs
            .iter()
            .flat_map(|&(k, v)| [simple(k), int(v)])
            .collect())
    }
}

const MISSING: &str = "CMS: key does not exist";
const EXISTS: &str = "CMS: key already exists";
const OVERFLOW: &str = "CMS: INCRBY overflow";
const UNDERFLOW: &str = "CMS: INCRBY underflow";
const BAD_CELL_SIZE: &str = "CMS: CELL_SIZE must be 1, 2, 4 or 8";

// ---------------------------------------------------------------- creation

#[test]
fn initbydim_checks_in_order() {
    each(|c, resp3| {
        assert_eq!(line(c, "CMS.INITBYDIM k 5"), arity("cms.initbydim"));
        assert_eq!(line(c, "CMS.INITBYDIM k 5 2 1"), arity("cms.initbydim"));
        assert_eq!(line(c, "CMS.INITBYDIM k 0 2"), err("CMS: invalid width"));
        assert_eq!(line(c, "CMS.INITBYDIM k x y"), err("CMS: invalid width"));
        assert_eq!(line(c, "CMS.INITBYDIM k 05 1"), err("CMS: invalid width"));
        assert_eq!(line(c, "CMS.INITBYDIM k 5 -1"), err("CMS: invalid depth"));
        assert_eq!(line(c, "CMS.INITBYDIM k 5 1.0"), err("CMS: invalid depth"));
        for big in [
            "4611686018427387904 2",
            "2 4611686018427387904",
            "3074457345618258603 3",
        ] {
            assert_eq!(
                line(c, &format!("CMS.INITBYDIM k {big}")),
                err("CMS: invalid init arguments"),
                "{big}"
            );
        }
        // §7.1 item 4: accepted dimensions too large to allocate.
        for big in [
            "9223372036854775807 1",
            "2147483648 2147483648",
            "8589934592 1073741823",
        ] {
            assert_eq!(
                line(c, &format!("CMS.INITBYDIM k {big}")),
                err("CMS: Insufficient memory to create the key"),
                "{big}"
            );
        }
        assert_eq!(c.cmd(&["EXISTS", "k"]), int(0));
        assert_eq!(line(c, "CMS.INITBYDIM k 20 5"), ok());
        assert_eq!(line(c, "CMS.INFO k"), info(resp3, 20, 5, 0));
        // Any existing key, checked before the numbers.
        assert_eq!(line(c, "CMS.INITBYDIM k 20 5"), err(EXISTS));
        assert_eq!(line(c, "CMS.INITBYDIM k x 5"), err(EXISTS));
        c.cmd(&["SET", "str", "v"]);
        c.cmd(&["BF.ADD", "bf", "v"]);
        for key in ["str", "bf"] {
            assert_eq!(line(c, &format!("CMS.INITBYDIM {key} x 2")), err(EXISTS));
            assert_eq!(
                line(c, &format!("CMS.INITBYPROB {key} 0.1 0.1")),
                err(EXISTS)
            );
        }
        assert_eq!(c.cmd(&["TYPE", "k"]), simple("CMSk-TYPE"));
        assert_eq!(c.cmd(&["OBJECT", "ENCODING", "k"]), bulk("raw"));
    });
}

#[test]
fn initbyprob_dimensions_and_errors() {
    each(|c, resp3| {
        assert_eq!(line(c, "CMS.INITBYPROB k 0.1"), arity("cms.initbyprob"));
        for (e, p, want) in [
            ("0", "0.5", "CMS: invalid overestimation value"),
            ("1", "0.5", "CMS: invalid overestimation value"),
            ("x", "y", "CMS: invalid overestimation value"),
            ("nan", "0.5", "CMS: invalid overestimation value"),
            ("1e-400", "0.5", "CMS: invalid overestimation value"),
            ("0.1", "1", "CMS: invalid prob value"),
            ("0.1", "-0.5", "CMS: invalid prob value"),
            ("0.1", "inf", "CMS: invalid prob value"),
            ("0.1", "1e-46", "CMS: invalid init arguments"),
            ("1e-19", "0.9", "CMS: invalid init arguments"),
            ("1.5e-19", "0.9", "CMS: invalid init arguments"),
            ("3e-19", "0.9", "CMS: Insufficient memory to create the key"),
        ] {
            assert_eq!(c.cmd(&["CMS.INITBYPROB", "k", e, p]), err(want), "{e} {p}");
        }
        // docs/cms.md §3.2, verified on RedisBloom; the last three need
        // single-precision logarithms.
        for (i, (e, p, w, d)) in [
            ("0.001", "0.01", 2000, 7),
            ("0.01", "0.5", 200, 1),
            ("0.1", "0.125", 20, 3),
            ("0.3", "0.000001", 7, 20),
            ("3e-7", "0.5", 6666667, 1),
            ("0.1", "1e-45", 20, 149),
            ("0.1", "0.24999997019767761", 20, 2),
            ("0.1", "0.0078124990686774254", 20, 7),
            ("0.1", "0.00097656238358467817", 20, 10),
        ]
        .into_iter()
        .enumerate()
        {
            let key = format!("p{i}");
            assert_eq!(c.cmd(&["CMS.INITBYPROB", &key, e, p]), ok());
            assert_eq!(c.cmd(&["CMS.INFO", &key]), info(resp3, w, d, 0), "{e} {p}");
        }
    });
}

// ---------------------------------------------------------------- INCRBY, QUERY

#[test]
fn increment_query_and_info_vectors() {
    each(|c, resp3| {
        assert_eq!(line(c, "CMS.INITBYPROB k 0.001 0.01"), ok());
        assert_eq!(line(c, "CMS.INFO k"), info(resp3, 2000, 7, 0));
        assert_eq!(
            line(c, "CMS.INCRBY k foo 10 bar 3 foo 1"),
            ints(&[10, 3, 11])
        );
        assert_eq!(line(c, "CMS.QUERY k foo bar baz"), ints(&[11, 3, 0]));
        assert_eq!(line(c, "CMS.INFO k"), info(resp3, 2000, 7, 14));
        // Items are binary safe.
        assert_eq!(
            c.cmd(&["CMS.INCRBY", "k", "a\0b", "2", "", "5"]),
            ints(&[2, 5])
        );
        assert_eq!(
            c.cmd(&["CMS.QUERY", "k", "a\0b", "a", ""]),
            ints(&[2, 0, 5])
        );
    });
}

#[test]
fn fixed_stream_of_a_thousand_increments() {
    each(|c, resp3| {
        assert_eq!(line(c, "CMS.INITBYDIM s 50 4"), ok());
        let cmds: Vec<Vec<String>> = (0..1000)
            .map(|i| {
                vec![
                    "CMS.INCRBY".into(),
                    "s".into(),
                    format!("item-{}", i % 97),
                    (i % 5 + 1).to_string(),
                ]
            })
            .collect();
        for r in c.pipeline(&cmds) {
            assert!(matches!(r.as_array(), [Reply::Int(n)] if *n > 0), "{r:?}");
        }
        assert_eq!(
            line(c, "CMS.QUERY s item-0 item-1 item-42 item-96 absent"),
            ints(&[31, 62, 60, 30, 60])
        );
        assert_eq!(line(c, "CMS.INFO s"), info(resp3, 50, 4, 3000));
    });
}

/// The inputs of docs/cms.md §9's saturation vector (RedisBloom 8.4
/// saturated and wrapped the total): Redis 8.12 refuses what does not
/// fit and reaches 4294967295 exactly without an error.
#[test]
fn increments_never_saturate_nor_wrap() {
    each(|c, resp3| {
        assert_eq!(line(c, "CMS.INITBYDIM a 20 5"), ok());
        assert_eq!(line(c, "CMS.INCRBY a x 5 y 0 x 2"), ints(&[5, 0, 7]));
        assert_eq!(line(c, "CMS.INFO a"), info(resp3, 20, 5, 7));
        assert_eq!(line(c, "CMS.INCRBY a big 4294967295"), ints(&[4294967295]));
        assert_eq!(line(c, "CMS.INCRBY a big2 4294967294"), ints(&[4294967294]));
        for item in ["big3 4294967296", "big4 9223372036854775807"] {
            assert_eq!(
                line(c, &format!("CMS.INCRBY a {item}")),
                arr(vec![err(OVERFLOW)])
            );
        }
        assert_eq!(
            line(c, "CMS.QUERY a big big2 big3 big4"),
            ints(&[4294967295, 4294967294, 0, 0])
        );
        assert_eq!(line(c, "CMS.INFO a"), info(resp3, 20, 5, 8589934596));
        // RedisBloom's test_overflow: 5×2, three rounds; only a is refused
        // the third time, and the total grows by the others alone.
        assert_eq!(line(c, "CMS.INITBYDIM t 5 2"), ok());
        let round = "CMS.INCRBY t a 2147483647 b 10 c 7 d 5";
        line(c, round);
        line(c, round);
        assert_eq!(line(c, "CMS.QUERY t a"), ints(&[4294967294]));
        assert_eq!(
            line(c, round),
            arr(vec![err(OVERFLOW), int(44), int(51), int(15)])
        );
        assert_eq!(line(c, "CMS.QUERY t a"), ints(&[4294967294]));
        assert_eq!(
            line(c, "CMS.INFO t"),
            info(resp3, 5, 2, 2 * (2147483647 + 22) + 22)
        );
    });
}

#[test]
fn incrby_rejects_before_changing_anything() {
    each(|c, _| {
        assert_eq!(line(c, "CMS.INCRBY k a"), arity("cms.incrby"));
        assert_eq!(line(c, "CMS.INCRBY k a 1 b"), arity("cms.incrby"));
        assert_eq!(line(c, "CMS.INCRBY k a 1"), err(MISSING));
        assert_eq!(line(c, "CMS.QUERY k a"), err(MISSING));
        assert_eq!(line(c, "CMS.INFO k"), err(MISSING));
        c.cmd(&["SET", "str", "v"]);
        c.cmd(&["CF.ADD", "cf", "v"]);
        for key in ["str", "cf"] {
            assert_eq!(line(c, &format!("CMS.INCRBY {key} a 1")), err(WRONGTYPE));
            assert_eq!(line(c, &format!("CMS.QUERY {key} a")), err(WRONGTYPE));
            assert_eq!(line(c, &format!("CMS.INFO {key}")), err(WRONGTYPE));
        }
        assert_eq!(line(c, "CMS.INITBYDIM k 20 5"), ok());
        let before = c.cmd(&["DUMP", "k"]);
        // Key errors first, then the first bad increment decides.
        assert_eq!(
            line(c, "CMS.INCRBY k x 1 y -9223372036854775808"),
            err("CMS: invalid increment")
        );
        assert_eq!(
            line(c, "CMS.INCRBY k x q y -9223372036854775808"),
            err("CMS: Cannot parse number")
        );
        assert_eq!(
            line(c, "CMS.INCRBY k x -9223372036854775808 y q"),
            err("CMS: invalid increment")
        );
        for bad in [
            "-0",
            "+1",
            "1.5",
            "9223372036854775808",
            "01",
            "-9223372036854775809",
        ] {
            assert_eq!(
                c.cmd(&["CMS.INCRBY", "k", "x", "1", "y", bad]),
                err("CMS: Cannot parse number"),
                "{bad}"
            );
        }
        assert_eq!(
            c.cmd(&["DUMP", "k"]),
            before,
            "a rejected INCRBY changed the sketch"
        );
        assert_eq!(line(c, "CMS.QUERY k"), arity("cms.query"));
        assert_eq!(line(c, "CMS.INFO k x"), arity("cms.info"));
    });
}

// ---------------------------------------------------------------- MERGE

#[test]
fn merge_vectors() {
    each(|c, resp3| {
        for k in ["s1", "s2", "d"] {
            assert_eq!(line(c, &format!("CMS.INITBYDIM {k} 10 2")), ok());
        }
        line(c, "CMS.INCRBY s1 a 3 b 4");
        line(c, "CMS.INCRBY s2 a 10");
        assert_eq!(line(c, "CMS.MERGE d 2 s1 s2 WEIGHTS 2 3"), ok());
        assert_eq!(line(c, "CMS.QUERY d a b"), ints(&[36, 8]));
        assert_eq!(line(c, "CMS.INFO d"), info(resp3, 10, 2, 44));
        // Subtracting through the destination, then too far: unchanged.
        assert_eq!(line(c, "CMS.MERGE d 2 d s1 WEIGHTS 1 -1"), ok());
        assert_eq!(line(c, "CMS.QUERY d a b"), ints(&[33, 4]));
        assert_eq!(line(c, "CMS.MERGE d 2 d s1 WEIGHTS 1 -1"), ok());
        assert_eq!(line(c, "CMS.QUERY d a b"), ints(&[30, 0]));
        let before = c.cmd(&["DUMP", "d"]);
        assert_eq!(
            line(c, "CMS.MERGE d 2 d s1 WEIGHTS 1 -1"),
            err("CMS: MERGE overflow")
        );
        assert_eq!(
            line(c, "CMS.MERGE d 1 d WEIGHTS -1"),
            err("CMS: MERGE overflow")
        );
        assert_eq!(c.cmd(&["DUMP", "d"]), before);
        assert_eq!(line(c, "CMS.INFO d"), info(resp3, 10, 2, 30));
        assert_eq!(line(c, "CMS.MERGE d 2 s1 s2 WEIGHTS 0 0"), ok());
        assert_eq!(line(c, "CMS.INFO d"), info(resp3, 10, 2, 0));
        assert_eq!(line(c, "CMS.MERGE d 1 s1 weightS 1000000000"), ok());
        assert_eq!(line(c, "CMS.QUERY d a b"), ints(&[3000000000, 4000000000]));
        assert_eq!(line(c, "CMS.INFO d"), info(resp3, 10, 2, 7000000000));
        // §7.1 item 3: no silent wrap of a cell.
        assert_eq!(line(c, "CMS.MERGE d 2 d d"), err("CMS: MERGE overflow"));
        // Without WEIGHTS every weight is 1; a source may repeat.
        assert_eq!(line(c, "CMS.MERGE d 3 s1 s2 s1"), ok());
        assert_eq!(line(c, "CMS.QUERY d a b"), ints(&[16, 8]));
    });
}

#[test]
fn merge_checks_in_order() {
    each(|c, _| {
        for (k, w) in [("d", 10), ("s1", 10), ("s2", 10), ("o", 11)] {
            assert_eq!(line(c, &format!("CMS.INITBYDIM {k} {w} 2")), ok());
        }
        c.cmd(&["SET", "str", "v"]);
        assert_eq!(line(c, "CMS.MERGE d 1"), arity("cms.merge"));
        assert_eq!(line(c, "CMS.MERGE nokey x s1"), err(MISSING));
        assert_eq!(line(c, "CMS.MERGE str x s1"), err(WRONGTYPE));
        let cases = [
            ("CMS.MERGE d x s1", "CMS: invalid numkeys"),
            ("CMS.MERGE d 1.0 s1", "CMS: invalid numkeys"),
            // §7.1 item 1: negative numKeys must not allocate or crash.
            ("CMS.MERGE d -1 d", "CMS: Number of keys must be positive"),
            (
                "CMS.MERGE d 0 WEIGHTS",
                "CMS: Number of keys must be positive",
            ),
            ("CMS.MERGE d 2 s1", "CMS: wrong number of keys"),
            ("CMS.MERGE d 1 s1 s2", "CMS: wrong number of keys"),
            // §7.1 item 2: the missing weight is never read.
            (
                "CMS.MERGE d 1 s1 WEIGHTS",
                "CMS: wrong number of keys/weights",
            ),
            (
                "CMS.MERGE d 1 WEIGHTS WEIGHTS 1",
                "CMS: wrong number of keys/weights",
            ),
            (
                "CMS.MERGE d 2 s1 WEIGHTS s2 1 1",
                "CMS: wrong number of keys/weights",
            ),
            (
                "CMS.MERGE d 2 nokey s2 WEIGHTS x 1",
                "CMS: invalid weight value",
            ),
            ("CMS.MERGE d 2 nokey s2 WEIGHTS 1 x", MISSING),
            (
                "CMS.MERGE d 2 s1 nokey WEIGHTS 1 x",
                "CMS: invalid weight value",
            ),
            ("CMS.MERGE d 2 s1 str WEIGHTS 1 1", WRONGTYPE),
            ("CMS.MERGE d 2 o nokey", "CMS: width/depth is not equal"),
            ("CMS.MERGE d 1 s1 WEIGHTS 1.5", "CMS: invalid weight value"),
        ];
        for (cmd, want) in cases {
            assert_eq!(line(c, cmd), err(want), "{cmd}");
        }
        assert_eq!(
            line(c, "CMS.MERGE d 2 s1 s2 WEIGHTS -9223372036854775808 1"),
            ok()
        );
    });
}

// ---------------------------------------------------------------- Redis 8.12

/// 8.12 spec §3.1: `CELL_SIZE` trailing and once, any case, 1/2/4/8;
/// every check in order, nothing created on an error.
#[test]
fn cell_size_option_checks_in_order() {
    each(|c, resp3| {
        for (cmd, want) in [
            ("CMS.INITBYDIM k 20 5 CELL_SIZE", arity("cms.initbydim")),
            ("CMS.INITBYDIM k 20 5 CELL_SIZE 1 2", arity("cms.initbydim")),
            (
                "CMS.INITBYDIM k 20 5 CELL_SIZE 1 CELL_SIZE 2",
                arity("cms.initbydim"),
            ),
            (
                "CMS.INITBYPROB k 0.1 0.1 CELL_SIZE",
                arity("cms.initbyprob"),
            ),
            ("CMS.INITBYDIM k 0 5 CELL_SIZE 1", err("CMS: invalid width")),
            ("CMS.INITBYDIM k 5 x CELL_SIZE 1", err("CMS: invalid depth")),
            (
                "CMS.INITBYPROB k 2 0.01 CELL_SIZE 1",
                err("CMS: invalid overestimation value"),
            ),
            (
                "CMS.INITBYPROB k 0.1 1 CELL_SIZE 9",
                err("CMS: invalid prob value"),
            ),
            (
                "CMS.INITBYDIM k 4611686018427387904 2 CELL_SIZE 9",
                err("CMS: invalid init arguments"),
            ),
            (
                "CMS.INITBYPROB k 0.1 1e-46 CELL_SIZE 9",
                err("CMS: invalid init arguments"),
            ),
            ("CMS.INITBYDIM k 20 5 OOR 1", err("CMS: unknown argument")),
            (
                "CMS.INITBYPROB k 0.001 0.01 OOR 1",
                err("CMS: unknown argument"),
            ),
            (
                "CMS.INITBYDIM k 20 5 CELLSIZE 1",
                err("CMS: unknown argument"),
            ),
            // 8 · 2^60 bytes overflow 64 bits where 4 · 2^60 did not.
            (
                "CMS.INITBYDIM k 1152921504606846976 2 CELL_SIZE 8",
                err("CMS: Insufficient memory to create the key"),
            ),
            (
                "CMS.INITBYDIM k 9223372036854775807 1 CELL_SIZE 1",
                err("CMS: Insufficient memory to create the key"),
            ),
        ] {
            assert_eq!(line(c, cmd), want, "{cmd}");
        }
        for bad in [
            "0", "3", "5", "6", "7", "9", "16", "-1", "-4", "blah", "", "4.5", "+4", "04",
        ] {
            assert_eq!(
                c.cmd(&["CMS.INITBYDIM", "k", "20", "5", "CELL_SIZE", bad]),
                err(BAD_CELL_SIZE),
                "{bad:?}"
            );
        }
        // The token followed by a NUL is not the token (decided, docs/cms.md §5.2).
        assert_eq!(
            c.cmd(&["CMS.INITBYDIM", "k", "20", "5", "CELL_SIZE\0", "1"]),
            err("CMS: unknown argument")
        );
        assert_eq!(c.cmd(&["EXISTS", "k"]), int(0));
        // Any existing key, before the option.
        c.cmd(&["SET", "str", "v"]);
        assert_eq!(line(c, "CMS.INITBYDIM str 20 5 CELL_SIZE 9"), err(EXISTS));
        for (i, (token, size)) in [
            ("CELL_SIZE", 1),
            ("cell_size", 2),
            ("Cell_Size", 4),
            ("CELL_SIZE", 8),
        ]
        .into_iter()
        .enumerate()
        {
            let key = format!("c{i}");
            assert_eq!(
                line(c, &format!("CMS.INITBYDIM {key} 100 5 {token} {size}")),
                ok()
            );
            assert_eq!(
                c.cmd(&["CMS.INFO", &key]),
                info_sized(resp3, 100, 5, 0, size)
            );
        }
        assert_eq!(line(c, "CMS.INITBYPROB p 0.001 0.01 cell_size 2"), ok());
        assert_eq!(line(c, "CMS.INFO p"), info_sized(resp3, 2000, 7, 0, 2));
        assert_eq!(line(c, "CMS.INITBYPROB q 0.001 0.01"), ok());
        assert_eq!(line(c, "CMS.INFO q"), info_sized(resp3, 2000, 7, 0, 4));
    });
}

/// 8.12 spec §2, §3.2: each size reaches its maximum (2^63 − 1 for 8),
/// one more is refused; 256 on 1-byte cells changes nothing.
#[test]
fn cell_size_maxima() {
    each(|c, resp3| {
        for (size, max) in [(1, 255i64), (2, 65535), (4, 4294967295), (8, i64::MAX)] {
            let key = format!("m{size}");
            assert_eq!(
                line(c, &format!("CMS.INITBYDIM {key} 1 1 CELL_SIZE {size}")),
                ok()
            );
            assert_eq!(
                c.cmd(&["CMS.INCRBY", &key, "a", &max.to_string()]),
                ints(&[max])
            );
            assert_eq!(
                c.cmd(&["CMS.INCRBY", &key, "a", "1"]),
                arr(vec![err(OVERFLOW)])
            );
            assert_eq!(c.cmd(&["CMS.QUERY", &key, "a"]), ints(&[max]));
            assert_eq!(
                c.cmd(&["CMS.INFO", &key]),
                info_sized(resp3, 1, 1, max, size)
            );
        }
        assert_eq!(line(c, "CMS.INITBYDIM one 20 5 CELL_SIZE 1"), ok());
        assert_eq!(line(c, "CMS.INCRBY one a 256"), arr(vec![err(OVERFLOW)]));
        assert_eq!(line(c, "CMS.QUERY one a"), ints(&[0]));
        assert_eq!(line(c, "CMS.INFO one"), info_sized(resp3, 20, 5, 0, 1));
        // 4×2, 1-byte cells (the spec's computed vector).
        assert_eq!(line(c, "CMS.INITBYDIM c 4 2 CELL_SIZE 1"), ok());
        assert_eq!(
            line(c, "CMS.INCRBY c foo 250 foo 10"),
            arr(vec![int(250), err(OVERFLOW)])
        );
        assert_eq!(
            line(c, "CMS.INCRBY c bar 5 foo -251"),
            arr(vec![int(5), err(UNDERFLOW)])
        );
        assert_eq!(line(c, "CMS.INFO c"), info_sized(resp3, 4, 2, 255, 1));
        // The total's headroom: a full 8-byte cell leaves none.
        assert_eq!(line(c, "CMS.INITBYDIM e 100 1 CELL_SIZE 8"), ok());
        assert_eq!(
            line(c, "CMS.INCRBY e a 9223372036854775807"),
            ints(&[i64::MAX])
        );
        assert_eq!(line(c, "CMS.QUERY e b"), ints(&[0]));
        assert_eq!(line(c, "CMS.INCRBY e b 1"), arr(vec![err(OVERFLOW)]));
        assert_eq!(
            line(c, "CMS.INFO e"),
            info_sized(resp3, 100, 1, i64::MAX, 8)
        );
    });
}

/// 8.12 spec §3.2: decrements, underflow per element, later pairs still
/// applied and seeing the earlier ones, zero answering the estimate.
#[test]
fn decrements_and_underflow() {
    each(|c, resp3| {
        for size in [1, 2, 4, 8] {
            let key = format!("d{size}");
            assert_eq!(
                line(c, &format!("CMS.INITBYDIM {key} 1000 5 CELL_SIZE {size}")),
                ok()
            );
            assert_eq!(c.cmd(&["CMS.INCRBY", &key, "a", "100"]), ints(&[100]));
            assert_eq!(c.cmd(&["CMS.INCRBY", &key, "a", "-40"]), ints(&[60]));
            assert_eq!(c.cmd(&["CMS.INCRBY", &key, "a", "-60"]), ints(&[0]));
            assert_eq!(
                c.cmd(&["CMS.INFO", &key]),
                info_sized(resp3, 1000, 5, 0, size)
            );
        }
        assert_eq!(line(c, "CMS.INITBYDIM cms 1000 5"), ok());
        assert_eq!(line(c, "CMS.INCRBY cms a 10"), ints(&[10]));
        let before = c.cmd(&["DUMP", "cms"]);
        assert_eq!(line(c, "CMS.INCRBY cms a -11"), arr(vec![err(UNDERFLOW)]));
        assert_eq!(
            line(c, "CMS.INCRBY cms never_added -1"),
            arr(vec![err(UNDERFLOW)])
        );
        assert_eq!(c.cmd(&["DUMP", "cms"]), before);
        assert_eq!(line(c, "CMS.INCRBY cms a 0 zz 0"), ints(&[10, 0]));
        assert_eq!(
            line(c, "CMS.INCRBY cms a -100 b 3 a -4"),
            arr(vec![err(UNDERFLOW), int(3), int(6)])
        );
        assert_eq!(line(c, "CMS.QUERY cms a b"), ints(&[6, 3]));
        assert_eq!(line(c, "CMS.INFO cms"), info(resp3, 1000, 5, 9));
        assert_eq!(
            line(c, "CMS.INCRBY cms a -9223372036854775807"),
            arr(vec![err(UNDERFLOW)])
        );
        // −2^63 has no magnitude: the whole command is refused.
        assert_eq!(
            line(c, "CMS.INCRBY cms a 1 a -9223372036854775808"),
            err("CMS: invalid increment")
        );
        assert_eq!(line(c, "CMS.QUERY cms a"), ints(&[6]));
    });
}

/// 8.12 spec §3.4: equal cell sizes (after the dimensions), the sum
/// within the destination's maximum, the new source key spec.
#[test]
fn merge_requires_equal_cell_sizes() {
    each(|c, resp3| {
        for k in ["a", "b", "dest"] {
            assert_eq!(
                line(c, &format!("CMS.INITBYDIM {k} 20 5 CELL_SIZE 2")),
                ok()
            );
        }
        assert_eq!(line(c, "CMS.INITBYDIM four 20 5"), ok());
        assert_eq!(line(c, "CMS.INITBYDIM narrow 10 5 CELL_SIZE 2"), ok());
        assert_eq!(line(c, "CMS.INITBYDIM narrow4 10 5"), ok());
        line(c, "CMS.INCRBY a x 10");
        line(c, "CMS.INCRBY b x 7");
        assert_eq!(line(c, "CMS.MERGE dest 2 a b"), ok());
        assert_eq!(line(c, "CMS.QUERY dest x"), ints(&[17]));
        assert_eq!(line(c, "CMS.INFO dest"), info_sized(resp3, 20, 5, 17, 2));
        assert_eq!(line(c, "CMS.MERGE dest 2 a b WEIGHTS 1000 1"), ok());
        assert_eq!(line(c, "CMS.QUERY dest x"), ints(&[10007]));
        let before = c.cmd(&["DUMP", "dest"]);
        assert_eq!(
            line(c, "CMS.MERGE dest 2 a b WEIGHTS 10000 1"),
            err("CMS: MERGE overflow")
        );
        for (cmd, want) in [
            ("CMS.MERGE dest 2 a four", "CMS: cell size is not equal"),
            ("CMS.MERGE four 1 a", "CMS: cell size is not equal"),
            (
                "CMS.MERGE dest 2 narrow4 four",
                "CMS: width/depth is not equal",
            ),
            (
                "CMS.MERGE dest 2 narrow four",
                "CMS: width/depth is not equal",
            ),
            ("CMS.MERGE dest 2 four nokey", "CMS: cell size is not equal"),
            ("CMS.MERGE dest 2 a nokey", MISSING),
        ] {
            assert_eq!(line(c, cmd), err(want), "{cmd}");
        }
        assert_eq!(c.cmd(&["DUMP", "dest"]), before);
        assert_eq!(
            line(c, "COMMAND GETKEYS CMS.MERGE dest 2 a b WEIGHTS 1 2"),
            arr(vec![bulk("dest"), bulk("a"), bulk("b")])
        );
    });
}

/// 8.12 spec §4.4: MEMORY USAGE grows by exactly the cells of each size
/// (the module reports 40 + size · width · depth).
#[test]
fn memory_usage_follows_the_cell_size() {
    each(|c, _| {
        let mut usage = Vec::new();
        for size in [1, 2, 4, 8] {
            let key = format!("u{size}");
            assert_eq!(
                line(c, &format!("CMS.INITBYDIM {key} 1000 5 CELL_SIZE {size}")),
                ok()
            );
            usage.push(c.cmd(&["MEMORY", "USAGE", &key]).as_int());
        }
        // Same key length: the server's overhead cancels out.
        let steps: Vec<i64> = usage.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(steps, [5000, 10000, 20000], "{usage:?}");
    });
}

// ---------------------------------------------------------------- WATCH

/// §7.1 item 6: CMS.INCRBY from another client aborts a transaction that
/// WATCHes its key (RedisBloom 2.8.2 opened the key read-only).
#[test]
fn incrby_invalidates_watch() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let (mut a, mut b) = (s.conn(), s.conn());
        assert_eq!(line(&mut a, "CMS.INITBYDIM w 10 2"), ok());
        for (write, aborts) in [("CMS.INCRBY w a 1", true), ("CMS.QUERY w a", false)] {
            assert_eq!(line(&mut a, "WATCH w"), ok());
            assert!(!line(&mut b, write).is_error());
            assert_eq!(line(&mut a, "MULTI"), ok());
            assert_eq!(line(&mut a, "SET x 1"), simple("QUEUED"));
            let exec = line(&mut a, "EXEC");
            assert_eq!(exec == Reply::Nil, aborts, "{flavor:?} {write}: {exec:?}");
        }
    }
}
