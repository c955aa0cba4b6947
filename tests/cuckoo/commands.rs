//! CF.* commands over the wire (docs/cuckoo.md §12, §14, docs/module.md
//! §2.1): every reply and error path, in RESP2 and RESP3, on every server
//! flavor. Expected bytes and counters marked "verified" in docs/ or taken from RedisBloom 2.8.2
//! where its behaviour is the 8.x one.
use common::filters::cf_header;
use common::*;

// ---------------------------------------------------------------- helpers

/// 1/0 in RESP2, true/false in RESP3.
fn boolean(resp3: bool, v: bool) -> Reply {
    if resp3 {
        Reply::Bool(v)
    } else {
        int(i64::from(v))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn debug(c: &mut Conn, key: &str) -> String {
    String::from_utf8(c.cmd(&["CF.DEBUG", key]).as_bytes().to_vec()).unwrap()
}

/// CF.INFO values in order (RESP2 flat array or RESP3 map).
fn info_values(c: &mut Conn, key: &str) -> Vec<i64> {
    match c.cmd(&["CF.INFO", key]) {
        Reply::Map(m) => m.iter().map(|(_, v)| v.as_int()).collect(),
        Reply::Array(a) => a.iter().skip(1).step_by(2).map(Reply::as_int).collect(),
        other => panic!("CF.INFO: {other:?}"),
    }
}

/// The slot bytes of all sub-filters (the data chunks concatenated).
fn slots(c: &mut Conn, key: &str) -> Vec<u8> {
    filters::scandump(c, Fam::Cf, key)
        .into_iter()
        .skip(1)
        .flat_map(|(_, d)| d)
        .collect()
}

fn items(prefix: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{prefix}{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------- CF.RESERVE

#[test]
fn reserve_arguments_ranges_and_quirks() {
    each_of(all_flavors(), |c, _| {
        assert_eq!(line(c, "CF.RESERVE k"), arity("cf.reserve"));
        assert_eq!(line(c, "cf.Reserve k 100 x"), arity("cf.reserve"));
        assert_eq!(line(c, "CF.RESERVE k 100 BUCKETSIZE"), arity("cf.reserve"));
        assert_eq!(line(c, "CF.RESERVE k abc"), err("Bad capacity"));
        for (cmd, e) in [
            ("MAXITERATIONS x", "Couldn't parse MAXITERATIONS"),
            ("BUCKETSIZE 1.5", "Couldn't parse BUCKETSIZE"),
            ("EXPANSION +1", "Couldn't parse EXPANSION"),
            (
                "MAXITERATIONS 0",
                "MAXITERATIONS: value must be in the range [1, 65535]",
            ),
            (
                "MAXITERATIONS 65536",
                "MAXITERATIONS: value must be in the range [1, 65535]",
            ),
            (
                "BUCKETSIZE 0",
                "BUCKETSIZE: value must be in the range [1, 255]",
            ),
            (
                "BUCKETSIZE 256",
                "BUCKETSIZE: value must be in the range [1, 255]",
            ),
            (
                "EXPANSION -1",
                "EXPANSION: value must be in the range [0, 32768]",
            ),
            (
                "EXPANSION 32769",
                "EXPANSION: value must be in the range [0, 32768]",
            ),
            // Checked in the order MAXITERATIONS, BUCKETSIZE, EXPANSION.
            (
                "EXPANSION -1 BUCKETSIZE 0 MAXITERATIONS 0",
                "MAXITERATIONS: value must be in the range [1, 65535]",
            ),
            (
                "EXPANSION -1 BUCKETSIZE 0",
                "BUCKETSIZE: value must be in the range [1, 255]",
            ),
        ] {
            assert_eq!(line(c, &format!("CF.RESERVE k 100 {cmd}")), err(e), "{cmd}");
        }
        let cap = err("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]");
        assert_eq!(line(c, "CF.RESERVE k 3"), cap);
        assert_eq!(line(c, "CF.RESERVE k 5 BUCKETSIZE 3"), cap);
        assert_eq!(line(c, "CF.RESERVE k 1073741825"), cap);
        // Option ranges are checked before the capacity range.
        assert_eq!(
            line(c, "CF.RESERVE k 1 EXPANSION 99999"),
            err("EXPANSION: value must be in the range [0, 32768]")
        );
        assert_eq!(c.cmd(&["EXISTS", "k"]), int(0));

        assert_eq!(line(c, "CF.RESERVE k 6 BUCKETSIZE 3"), ok());
        assert_eq!(
            debug(c, "k"),
            "bktsize:3 buckets:2 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
        assert_eq!(line(c, "CF.RESERVE k 100"), err("ERR item exists"));
        assert_eq!(line(c, "SET str v"), ok());
        assert_eq!(line(c, "CF.RESERVE str 100"), err(WRONGTYPE));

        // Lower-case options, expansion rounded up, first occurrence wins,
        // unknown pairs ignored.
        assert_eq!(
            line(
                c,
                "CF.RESERVE o 100 bucketsize 4 maxiterations 7 expansion 3 EXPANSION 64 FOO 1"
            ),
            ok()
        );
        assert_eq!(
            debug(c, "o"),
            "bktsize:4 buckets:32 items:0 deletes:0 filters:1 max_iterations:7 expansion:4"
        );
        // Option words are searched from the key on (docs/differences.md §2).
        assert_eq!(line(c, "CF.RESERVE MAXITERATIONS 100"), ok());
        assert_eq!(
            debug(c, "MAXITERATIONS"),
            "bktsize:2 buckets:64 items:0 deletes:0 filters:1 max_iterations:100 expansion:1"
        );
        assert_eq!(line(c, "CF.RESERVE EXPANSION 16"), ok());
        assert_eq!(
            debug(c, "EXPANSION"),
            "bktsize:2 buckets:8 items:0 deletes:0 filters:1 max_iterations:20 expansion:16"
        );
        for (cmd, dbg) in [
            (
                "CF.RESERVE e0 9 EXPANSION 0",
                "buckets:4 items:0 deletes:0 filters:1 max_iterations:20 expansion:0",
            ),
            (
                "CF.RESERVE e1 1024",
                "buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1",
            ),
            (
                "CF.RESERVE e2 100 BUCKETSIZE 3 EXPANSION 32768",
                "buckets:64 items:0 deletes:0 filters:1 max_iterations:20 expansion:32768",
            ),
            (
                "CF.RESERVE e3 1073741824 BUCKETSIZE 255",
                "buckets:8388608 items:0 deletes:0 filters:1 max_iterations:20 expansion:1",
            ),
        ] {
            assert_eq!(line(c, cmd), ok(), "{cmd}");
            let key = cmd.split(' ').nth(1).unwrap();
            assert!(debug(c, key).ends_with(dbg), "{cmd}: {}", debug(c, key));
        }
        assert_eq!(line(c, "DEL e3"), int(1));
    });
}

#[test]
fn reserve_bucketsize_maximum_follows_cf_initial_size() {
    each_of(all_flavors(), |c, _| {
        config_set(c, "cf-initial-size", "20");
        assert_eq!(
            line(c, "CF.RESERVE z 100 BUCKETSIZE 11"),
            err("BUCKETSIZE: value must be in the range [1, 10]")
        );
        assert_eq!(line(c, "CF.RESERVE z 100 BUCKETSIZE 10"), ok());
        assert!(debug(c, "z").starts_with("bktsize:10 buckets:16 "));
    });
}

// ---------------------------------------------------------------- CF.INFO / CF.DEBUG

#[test]
fn info_and_debug() {
    each_of(all_flavors(), |c, resp3| {
        assert_eq!(line(c, "CF.RESERVE a 1000"), ok());
        let names = [
            "Size",
            "Number of buckets",
            "Number of filters",
            "Number of items inserted",
            "Number of items deleted",
            "Bucket size",
            "Expansion rate",
            "Max iterations",
        ];
        let values = [1080, 512, 1, 0, 0, 2, 1, 20];
        let pairs = names
            .iter()
            .zip(values)
            .map(|(n, v)| (Reply::Simple(n.to_string()), int(v)));
        let expected = if resp3 {
            Reply::Map(pairs.collect())
        } else {
            arr(pairs.flat_map(|(k, v)| [k, v]).collect())
        };
        assert_eq!(line(c, "CF.INFO a"), expected);
        assert_eq!(
            line(c, "CF.DEBUG a"),
            bulk("bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1")
        );
        assert_eq!(line(c, "CF.RESERVE b 9 EXPANSION 0"), ok());
        assert_eq!(info_values(c, "b"), [64, 4, 1, 0, 0, 2, 0, 20]);

        assert_eq!(line(c, "CF.INFO nope"), err("ERR not found"));
        assert_eq!(line(c, "CF.DEBUG nope"), err("ERR not found"));
        assert_eq!(line(c, "SET str v"), ok());
        assert_eq!(line(c, "CF.INFO str"), err(WRONGTYPE));
        assert_eq!(line(c, "CF.DEBUG str"), err(WRONGTYPE));
        assert_eq!(line(c, "CF.INFO a Size"), arity("cf.info"));
        assert_eq!(c.cmd(&["CF.INFO"]), arity("cf.info"));
        assert_eq!(line(c, "cf.DEBUG a b"), arity("cf.debug"));
    });
}

/// Issue 30 (docs/differences.md §1 item 18): a data chunk holding more
/// fingerprints than its header counts is refused, the key unchanged —
/// RedisBloom loads it, and CF.DEL then shows -1 items. The counters never
/// wrap: the key answers 0 items, 0 deletes.
#[test]
fn a_chunk_beyond_the_item_count_is_refused_unchanged() {
    each_of(all_flavors(), |c, resp3| {
        assert_eq!(line(c, "CF.ADD src x"), boolean(resp3, true));
        let header = c.cmd(&["CF.SCANDUMP", "src", "0"]).as_array()[1]
            .as_bytes()
            .to_vec();
        let data = c.cmd(&["CF.SCANDUMP", "src", "1"]);
        let [next, chunk] = data.as_array() else {
            panic!("{data:?}")
        };
        let mut zero_items = header.clone();
        zero_items[..8].fill(0);
        assert_eq!(
            c.cmd(&[&b"CF.LOADCHUNK"[..], b"dst", b"1", &zero_items]),
            ok()
        );
        let before = c.cmd(&["DUMP", "dst"]);
        let next = next.as_int().to_string();
        assert_eq!(
            c.cmd(&[
                &b"CF.LOADCHUNK"[..],
                b"dst",
                next.as_bytes(),
                chunk.as_bytes()
            ]),
            err("Couldn't load chunk!")
        );
        assert_eq!(c.cmd(&["DUMP", "dst"]), before);
        assert_eq!(line(c, "CF.EXISTS dst x"), boolean(resp3, false));
        assert_eq!(line(c, "CF.DEL dst x"), boolean(resp3, false));
        assert_eq!(info_values(c, "dst")[3..5], [0, 0]);
        // The genuine header takes the same chunk.
        assert_eq!(c.cmd(&[&b"CF.LOADCHUNK"[..], b"ok", b"1", &header]), ok());
        assert_eq!(
            c.cmd(&[
                &b"CF.LOADCHUNK"[..],
                b"ok",
                next.as_bytes(),
                chunk.as_bytes()
            ]),
            ok()
        );
        assert_eq!(c.cmd(&["DUMP", "ok"]), c.cmd(&["DUMP", "src"]));
    });
}

// ---------------------------------------------------------------- inserts

#[test]
fn verified_reply_table_example() {
    // docs/cuckoo.md §12.3 (verified in RESP3).
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        assert_eq!(line(c, "CF.RESERVE a 9 EXPANSION 0"), ok());
        assert_eq!(line(c, "CF.ADD a 3"), b(true));
        assert_eq!(line(c, "CF.ADD a 4"), b(true));
        assert_eq!(line(c, "CF.ADDNX a 4"), b(false));
        assert_eq!(line(c, "CF.ADDNX a 9"), b(true));
        assert_eq!(
            line(c, "CF.INSERT a ITEMS 4 5"),
            arr(vec![b(true), b(true)])
        );
        // CF.INSERTNX answers integers even in RESP3.
        assert_eq!(
            line(c, "CF.INSERTNX a ITEMS 4 6"),
            arr(vec![int(0), int(1)])
        );
        assert_eq!(info_values(c, "a")[3], 6);
    });
}

#[test]
fn full_filter_outcomes() {
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        let full = err("Filter is full");
        assert_eq!(line(c, "CF.RESERVE k1 4 EXPANSION 0"), ok());
        for i in 0..4 {
            assert_eq!(line(c, &format!("CF.ADD k1 {i}")), b(true));
        }
        assert_eq!(line(c, "CF.ADD k1 4"), full);
        assert_eq!(line(c, "CF.ADD k1 5"), full);
        // docs/cuckoo.md §6 (verified).
        assert_eq!(hex(&slots(c, "k1")), "dde41365");
        assert_eq!(line(c, "CF.ADDNX k1 6"), full);
        assert_eq!(line(c, "CF.ADDNX k1 0"), b(false));
        // CF.INSERT: -1 in RESP2, false in RESP3; the command goes on.
        let failed = if resp3 { Reply::Bool(false) } else { int(-1) };
        assert_eq!(
            line(c, "CF.INSERT k1 ITEMS 0 7"),
            arr(vec![failed.clone(), failed])
        );
        assert_eq!(
            line(c, "CF.INSERTNX k1 ITEMS 0 7"),
            arr(vec![int(0), int(-1)])
        );
        assert_eq!(info_values(c, "k1")[3], 4);
        assert_eq!(hex(&slots(c, "k1")), "dde41365");
    });
}

#[test]
fn autocreation_uses_current_configuration() {
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        let default =
            "bktsize:2 buckets:512 items:1 deletes:0 filters:1 max_iterations:20 expansion:1";
        assert_eq!(line(c, "CF.ADD n1 x"), b(true));
        assert_eq!(debug(c, "n1"), default);
        assert_eq!(line(c, "CF.ADDNX n2 x"), b(true));
        assert_eq!(debug(c, "n2"), default);
        assert_eq!(line(c, "CF.INSERT n3 ITEMS x"), arr(vec![b(true)]));
        assert_eq!(debug(c, "n3"), default);
        assert_eq!(
            line(c, "CF.INSERTNX n4 CAPACITY 100 ITEMS x x"),
            arr(vec![int(1), int(0)])
        );
        assert_eq!(
            debug(c, "n4"),
            "bktsize:2 buckets:64 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
        for cmd in ["CF.INSERT", "CF.INSERTNX"] {
            assert_eq!(
                line(c, &format!("{cmd} n5 NOCREATE ITEMS x")),
                err("ERR not found")
            );
        }
        assert_eq!(line(c, "EXISTS n5"), int(0));

        config_set(c, "cf-initial-size", "64");
        config_set(c, "cf-bucket-size", "4");
        config_set(c, "cf-max-iterations", "7");
        config_set(c, "cf-expansion-factor", "3");
        assert_eq!(line(c, "CF.ADD n6 x"), b(true));
        assert_eq!(
            debug(c, "n6"),
            "bktsize:4 buckets:16 items:1 deletes:0 filters:1 max_iterations:7 expansion:4"
        );
        assert_eq!(
            line(c, "CF.INSERT n7 CAPACITY 256 ITEMS x"),
            arr(vec![b(true)])
        );
        assert!(debug(c, "n7").starts_with("bktsize:4 buckets:64 "));
        // CF.RESERVE defaults follow the configuration too.
        assert_eq!(line(c, "CF.RESERVE n8 64"), ok());
        assert_eq!(
            debug(c, "n8"),
            "bktsize:4 buckets:16 items:0 deletes:0 filters:1 max_iterations:7 expansion:4"
        );
        // Existing filters keep their parameters.
        assert_eq!(debug(c, "n1"), default);

        assert_eq!(line(c, "SET str v"), ok());
        for cmd in [
            "CF.ADD str x",
            "CF.ADDNX str x",
            "CF.INSERT str ITEMS x",
            "CF.INSERTNX str NOCREATE ITEMS x",
        ] {
            assert_eq!(line(c, cmd), err(WRONGTYPE), "{cmd}");
        }
    });
}

#[test]
fn add_arity() {
    each_of(all_flavors(), |c, _| {
        assert_eq!(line(c, "CF.ADD k"), arity("cf.add"));
        assert_eq!(line(c, "CF.ADD k a b"), arity("cf.add"));
        assert_eq!(line(c, "cf.addNX k"), arity("cf.addnx"));
        assert_eq!(line(c, "CF.ADDNX k a b"), arity("cf.addnx"));
        assert_eq!(line(c, "EXISTS k"), int(0));
    });
}

#[test]
fn insert_option_parsing() {
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        for name in ["cf.insert", "cf.insertnx"] {
            for cmd in [
                "k",
                "k ITEMS",
                "k CAPACITY 10 ITEMS",
                "k NOCREATE CAPACITY",
                "k CAPACITY 100 NOCREATE",
            ] {
                assert_eq!(line(c, &format!("{name} {cmd}")), arity(name), "{cmd}");
            }
            assert_eq!(
                line(c, &format!("{name} k foo ITEMS a")),
                err("Unknown argument received")
            );
            assert_eq!(
                line(c, &format!("{name} k CAPACITY x ITEMS a")),
                err("Bad capacity")
            );
            let cap = err("Capacity must be in the range [cf-bucket-size * 2, 1073741824]");
            assert_eq!(line(c, &format!("{name} k CAPACITY 3 ITEMS a")), cap);
            assert_eq!(
                line(c, &format!("{name} k CAPACITY 1073741825 ITEMS a")),
                cap
            );
            // Option errors come before key errors.
            assert_eq!(line(c, "SET str v"), ok());
            assert_eq!(
                line(c, &format!("{name} str foo ITEMS a")),
                err("Unknown argument received")
            );
            // Any word starting with n is NOCREATE.
            assert_eq!(
                line(c, &format!("{name} k never ITEMS a")),
                err("ERR not found")
            );
        }
        assert_eq!(c.cmd(&["EXISTS", "k"]), int(0));
        // Classified by first letter; repeated CAPACITY: the last one counts;
        // words after the items marker are items.
        assert_eq!(
            line(c, "CF.INSERT k cap 100 Capacity 4000 i CAPACITY NOCREATE"),
            arr(vec![b(true), b(true)])
        );
        assert!(debug(c, "k").starts_with("bktsize:2 buckets:2048 items:2 "));
        assert_eq!(
            line(c, "CF.MEXISTS k CAPACITY NOCREATE i"),
            arr(vec![b(true), b(true), b(false)])
        );
        // cf-bucket-size raises the CAPACITY minimum.
        config_set(c, "cf-bucket-size", "3");
        assert_eq!(
            line(c, "CF.INSERT k2 CAPACITY 5 ITEMS a"),
            err("Capacity must be in the range [cf-bucket-size * 2, 1073741824]")
        );
        assert_eq!(
            line(c, "CF.INSERT k2 CAPACITY 6 ITEMS a"),
            arr(vec![b(true)])
        );
        assert_eq!(
            debug(c, "k2"),
            "bktsize:3 buckets:2 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
    });
}

#[test]
fn growth_until_maximum_expansions() {
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        assert_eq!(line(c, "CF.RESERVE m 4"), ok());
        // One command may grow past cf-max-expansions (32): checked once.
        let r = line(c, &format!("CF.INSERT m ITEMS {}", items("", 150)));
        assert_eq!(r, arr(vec![b(true); 150]));
        assert_eq!(info_values(c, "m"), [800, 2, 38, 150, 0, 2, 1, 20]);
        let max = err("Maximum expansions reached");
        for cmd in [
            "CF.ADD m x",
            "CF.ADDNX m x",
            "CF.INSERT m ITEMS x",
            "CF.INSERTNX m ITEMS x y",
        ] {
            assert_eq!(line(c, cmd), max, "{cmd}");
        }
        // Reads still work; nothing changed.
        assert_eq!(line(c, "CF.EXISTS m 149"), b(true));
        assert_eq!(info_values(c, "m"), [800, 2, 38, 150, 0, 2, 1, 20]);
        config_set(c, "cf-max-expansions", "39");
        assert_eq!(line(c, "CF.ADD m x"), b(true));
        assert_eq!(info_values(c, "m")[3], 151);

        // A filter auto-created by the command itself is kept although the
        // limit refuses the insert (RedisBloom behaviour).
        config_set(c, "cf-max-expansions", "1");
        assert_eq!(line(c, "CF.ADD fresh x"), max);
        assert_eq!(
            debug(c, "fresh"),
            "bktsize:2 buckets:512 items:0 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
        assert_eq!(line(c, "CF.INSERT fresh2 ITEMS x"), max);
        assert_eq!(line(c, "EXISTS fresh2"), int(1));
    });
}

// ---------------------------------------------------------------- reads

#[test]
fn exists_mexists_count() {
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        assert_eq!(line(c, "CF.RESERVE k 1000"), ok());
        for _ in 0..3 {
            assert_eq!(line(c, "CF.ADD k x"), b(true));
        }
        assert_eq!(line(c, "CF.EXISTS k x"), b(true));
        assert_eq!(line(c, "CF.EXISTS k y"), b(false));
        assert_eq!(line(c, "CF.MEXISTS k y x"), arr(vec![b(false), b(true)]));
        // Multiset: every copy counts; integer in both protocols.
        assert_eq!(line(c, "CF.COUNT k x"), int(3));
        assert_eq!(line(c, "CF.COUNT k y"), int(0));
        // Both candidate buckets coincide: counted twice (docs/cuckoo.md §8, verified).
        assert_eq!(line(c, "CF.RESERVE d 4 EXPANSION 0"), ok());
        assert_eq!(line(c, "CF.ADD d v3"), b(true));
        assert_eq!(line(c, "CF.COUNT d v3"), int(2));

        // Missing key and key of another type: 0 / false, no error.
        assert_eq!(line(c, "SET str v"), ok());
        for key in ["nope", "str"] {
            assert_eq!(line(c, &format!("CF.EXISTS {key} x")), b(false));
            assert_eq!(
                line(c, &format!("CF.MEXISTS {key} x y")),
                arr(vec![b(false), b(false)])
            );
            assert_eq!(line(c, &format!("CF.COUNT {key} x")), int(0));
        }
        assert_eq!(line(c, "CF.EXISTS k"), arity("cf.exists"));
        assert_eq!(line(c, "CF.EXISTS k a b"), arity("cf.exists"));
        assert_eq!(line(c, "cf.mExists k"), arity("cf.mexists"));
        assert_eq!(line(c, "CF.COUNT k"), arity("cf.count"));
        assert_eq!(line(c, "CF.COUNT k a b"), arity("cf.count"));
    });
}

// ---------------------------------------------------------------- CF.DEL / CF.COMPACT

#[test]
fn delete_with_automatic_compaction() {
    // docs/cuckoo.md §6 (verified end-to-end example).
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        assert_eq!(
            line(
                c,
                "CF.RESERVE k2 4 BUCKETSIZE 1 MAXITERATIONS 5 EXPANSION 1"
            ),
            ok()
        );
        for i in 0..10 {
            assert_eq!(line(c, &format!("CF.ADD k2 k{i}")), b(true));
        }
        assert_eq!(hex(&slots(c, "k2")), "2f92d04c00766b892200e832");
        assert_eq!(line(c, "CF.DEL k2 k3"), b(true));
        assert_eq!(hex(&slots(c, "k2")), "2f32d04c22766b890000e800");
        assert_eq!(
            debug(c, "k2"),
            "bktsize:1 buckets:4 items:9 deletes:0 filters:3 max_iterations:5 expansion:1"
        );
        assert_eq!(line(c, "CF.DEL k2 absent"), b(false));
        assert_eq!(info_values(c, "k2")[3..5], [9, 0]);

        assert_eq!(line(c, "CF.RESERVE one 100"), ok());
        assert_eq!(line(c, "CF.ADD one x"), b(true));
        assert_eq!(line(c, "CF.ADD one x"), b(true));
        assert_eq!(line(c, "CF.DEL one x"), b(true));
        // A single sub-filter is never compacted: the counter stays.
        assert_eq!(info_values(c, "one")[3..5], [1, 1]);
        assert_eq!(line(c, "CF.COUNT one x"), int(1));
        assert_eq!(line(c, "CF.DEL one x"), b(true));
        assert_eq!(line(c, "CF.DEL one x"), b(false));
        assert_eq!(info_values(c, "one")[3..5], [0, 2]);

        assert_eq!(line(c, "SET str v"), ok());
        assert_eq!(line(c, "CF.DEL nope x"), err("Not found"));
        assert_eq!(line(c, "CF.DEL str x"), err("Not found"));
        assert_eq!(line(c, "CF.DEL k2"), arity("cf.del"));
        assert_eq!(line(c, "CF.DEL k2 a b"), arity("cf.del"));
    });
}

#[test]
fn manual_compaction() {
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        assert_eq!(
            line(c, "CF.RESERVE c 8 BUCKETSIZE 1 EXPANSION 1 MAXITERATIONS 5"),
            ok()
        );
        let r = line(c, &format!("CF.INSERT c ITEMS {}", items("c", 25)));
        assert_eq!(r, arr(vec![b(true); 25]));
        assert_eq!(line(c, "CF.DEL c c0"), b(true));
        assert_eq!(line(c, "CF.DEL c c1"), b(true));
        assert_eq!(
            debug(c, "c"),
            "bktsize:1 buckets:8 items:23 deletes:2 filters:4 max_iterations:5 expansion:1"
        );
        assert_eq!(line(c, "CF.COMPACT c"), ok());
        assert_eq!(
            debug(c, "c"),
            "bktsize:1 buckets:8 items:23 deletes:0 filters:3 max_iterations:5 expansion:1"
        );
        assert_eq!(
            hex(&slots(c, "c")),
            "3c0455ecba7f75651d9b8be9fa85809e00b8f60cdaf170c7"
        );
        let mut expected = vec![b(false), b(false)];
        expected.extend(vec![b(true); 23]);
        assert_eq!(
            line(c, &format!("CF.MEXISTS c {}", items("c", 25))),
            arr(expected)
        );
        // Nothing left to move: still OK, layout unchanged.
        assert_eq!(line(c, "CF.COMPACT c"), ok());
        assert_eq!(info_values(c, "c")[2], 3);

        assert_eq!(line(c, "SET str v"), ok());
        let nf = err("Cuckoo filter was not found");
        assert_eq!(line(c, "CF.COMPACT nope"), nf);
        assert_eq!(line(c, "CF.COMPACT str"), nf);
        assert_eq!(c.cmd(&["CF.COMPACT"]), arity("cf.compact"));
        assert_eq!(line(c, "CF.COMPACT c x"), arity("cf.compact"));
    });
}

// ---------------------------------------------------------------- SCANDUMP / LOADCHUNK

#[test]
fn scandump_positions_and_errors() {
    each_of(all_flavors(), |c, resp3| {
        // Sub-filters of 8, 16 and 32 bytes (docs/cuckoo.md §14, verified positions).
        assert_eq!(line(c, "CF.RESERVE s 8 BUCKETSIZE 2 EXPANSION 2"), ok());
        for i in 0..30 {
            line(c, &format!("CF.ADD s s{i}"));
        }
        assert_eq!(info_values(c, "s"), [144, 4, 3, 30, 0, 2, 2, 20]);
        let chunk = |c: &mut Conn, pos: &str| {
            let r = c.cmd(&["CF.SCANDUMP", "s", pos]);
            let a = r.as_array();
            (a[0].as_int(), a[1].clone())
        };
        let all = slots(c, "s");
        assert_eq!(all.len(), 56);
        assert_eq!(chunk(c, "1"), (9, bulk(&all[..8])));
        assert_eq!(chunk(c, "2"), (10, bulk(&all[..8])));
        assert_eq!(chunk(c, "9"), (25, bulk(&all[8..24])));
        assert_eq!(chunk(c, "20"), (36, bulk(&all[8..24])));
        assert_eq!(chunk(c, "25"), (57, bulk(&all[24..])));
        assert_eq!(chunk(c, "57"), (0, null(resp3)));
        assert_eq!(chunk(c, "9223372036854775807"), (0, null(resp3)));

        // Header (verified example).
        assert_eq!(line(c, "CF.RESERVE cx 1000"), ok());
        line(c, "CF.ADD cx a");
        let r = line(c, "CF.SCANDUMP cx 0");
        assert_eq!(r.as_array()[0], int(1));
        assert_eq!(
            hex(r.as_array()[1].as_bytes()),
            "01000000000000000002000000000000000000000000000001000000000000000200140001 00"
                .replace(' ', "")
        );

        // An empty filter cannot be dumped.
        assert_eq!(line(c, "CF.RESERVE e 100"), ok());
        for pos in ["0", "1"] {
            assert_eq!(
                c.cmd(&["CF.SCANDUMP", "e", pos]),
                arr(vec![int(0), null(resp3)])
            );
        }
        // Position checked before the key.
        for pos in ["-1", "x", "1.0", ""] {
            assert_eq!(
                c.cmd(&["CF.SCANDUMP", "nope", pos]),
                err("Invalid position")
            );
        }
        assert_eq!(line(c, "CF.SCANDUMP nope 0"), err("ERR not found"));
        assert_eq!(line(c, "SET str v"), ok());
        assert_eq!(line(c, "CF.SCANDUMP str 0"), err(WRONGTYPE));
        assert_eq!(line(c, "CF.SCANDUMP s"), arity("cf.scandump"));
        assert_eq!(line(c, "CF.SCANDUMP s 0 0"), arity("cf.scandump"));
    });
}

#[test]
fn scandump_of_a_large_sub_filter_is_chunked() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        // One 64 MiB sub-filter (docs/cuckoo.md §14, verified positions).
        assert_eq!(line(&mut c, "CF.RESERVE big 67108864"), ok());
        assert_eq!(line(&mut c, "CF.ADD big x"), int(1));
        const MIB16: usize = 16 << 20;
        for (pos, next, len) in [
            ("1", 16777217, MIB16),
            ("5", 16777221, MIB16),
            ("67108854", 67108865, 11),
            ("67108865", 0, 0),
        ] {
            let r = c.cmd(&["CF.SCANDUMP", "big", pos]);
            let a = r.as_array();
            assert_eq!(a[0], int(next), "pos {pos}");
            if next == 0 {
                assert_eq!(a[1], Reply::Nil);
            } else {
                assert_eq!(a[1].as_bytes().len(), len, "pos {pos}");
            }
        }
        let total: usize = filters::scandump(&mut c, Fam::Cf, "big")
            .iter()
            .skip(1)
            .map(|(_, d)| d.len())
            .sum();
        assert_eq!(total, 64 << 20);
    }
}

#[test]
fn scandump_loadchunk_round_trip() {
    each_of(all_flavors(), |c, resp3| {
        let b = |v| boolean(resp3, v);
        assert_eq!(
            line(
                c,
                "CF.RESERVE src 16 BUCKETSIZE 3 MAXITERATIONS 9 EXPANSION 2"
            ),
            ok()
        );
        let r = line(c, &format!("CF.INSERT src ITEMS {}", items("i", 200)));
        assert_eq!(r.as_array().len(), 200);
        assert_eq!(line(c, "CF.DEL src i7"), b(true));
        let dump = filters::scandump(c, Fam::Cf, "src");
        assert!(dump.len() > 3, "want several sub-filters: {}", dump.len());
        for (pos, data) in &dump {
            let r = c.cmd(&args!["CF.LOADCHUNK", "dst", pos.to_string(), data]);
            assert_eq!(r, ok(), "pos {pos}");
        }
        assert_eq!(filters::scandump(c, Fam::Cf, "dst"), dump);
        assert_eq!(info_values(c, "dst"), info_values(c, "src"));
        assert_eq!(debug(c, "dst"), debug(c, "src"));
        let mut expected = vec![b(true); 200];
        expected[7] = b(false);
        let check = format!("CF.MEXISTS dst {}", items("i", 200));
        assert_eq!(line(c, &check), arr(expected));
        // The copy is a working filter.
        assert_eq!(line(c, "CF.ADD dst new"), b(true));
        assert_eq!(line(c, "CF.COUNT dst new"), int(1));
    });
}

#[test]
fn loadchunk_errors() {
    each_of(all_flavors(), |c, _| {
        // 8 items: the 8 slots the chunks below fill.
        let good = cf_header(8, 4, 0, 1, 2, 20, 1);
        let load = |c: &mut Conn, key: &str, pos: &str, data: &[u8]| {
            c.cmd(&args!["CF.LOADCHUNK", key, pos, data])
        };
        assert_eq!(line(c, "CF.LOADCHUNK k 1"), arity("cf.loadchunk"));
        assert_eq!(line(c, "CF.LOADCHUNK k 1 a b"), arity("cf.loadchunk"));
        for pos in ["0", "x", "", "1.5"] {
            assert_eq!(load(c, "k", pos, &good), err("Invalid position"), "{pos:?}");
        }
        // Header: length first, then parameters.
        assert_eq!(load(c, "k", "1", &good[..37]), err("Invalid header"));
        assert_eq!(load(c, "k", "1", b""), err("Invalid header"));
        let cannot = err("Couldn't create filter!");
        for bad in [
            cf_header(1, 4, 0, 0, 2, 20, 1),       // no sub-filter
            cf_header(1, 4, 0, 65536, 2, 20, 1),   // 65536 mod 2^16 = 0
            cf_header(1, 3, 0, 1, 2, 20, 1),       // buckets not a power of two
            cf_header(1, 0, 0, 1, 2, 20, 1),       // no buckets
            cf_header(1, 1 << 56, 0, 1, 2, 20, 1), // above 2^56 - 1
            cf_header(1, 4, 0, 1, 0, 20, 1),       // bucket size 0
            cf_header(1, 4, 0, 1, 256, 20, 1),     // bucket size above 255
            cf_header(1, 4, 0, 1, 2, 0, 1),        // max iterations 0
            cf_header(1, 4, 0, 1, 2, 20, 32769),   // expansion above 32768
            cf_header(1, 4, 0, 2, 2, 20, 0),       // expansion 0 with 2 sub-filters
            cf_header(1, 4, 0, 3, 2, 20, 3),       // expansion not a power of two
            cf_header(9, 4, 0, 1, 2, 20, 1),       // more items than its 8 slots
        ] {
            assert_eq!(load(c, "k", "1", &bad), cannot, "{bad:?}");
        }
        assert_eq!(c.cmd(&["EXISTS", "k"]), int(0));
        // pos ≠ 1 needs the key.
        assert_eq!(load(c, "k", "9", b"12345678"), err("ERR not found"));
        assert_eq!(load(c, "k", "-1", b"x"), err("ERR not found"));
        assert_eq!(line(c, "SET str v"), ok());
        assert_eq!(load(c, "str", "1", &good), err(WRONGTYPE));
        assert_eq!(load(c, "str", "9", b"12345678"), err(WRONGTYPE));

        assert_eq!(load(c, "k", "1", &good), ok());
        assert_eq!(
            debug(c, "k"),
            "bktsize:2 buckets:4 items:8 deletes:0 filters:1 max_iterations:20 expansion:1"
        );
        assert_eq!(load(c, "k", "1", &good), err("ERR item exists"));
        let bad_chunk = err("Couldn't load chunk!");
        // 8 bytes of slots: chunk must end at pos - 1 and lie inside.
        for (pos, data) in [
            ("9", &b""[..]),
            ("-9", b"12345678"),
            ("8", b"12345678"),
            ("10", b"12345678"),
            ("11", b"xx"),
        ] {
            assert_eq!(load(c, "k", pos, data), bad_chunk, "{pos} {data:?}");
        }
        assert_eq!(load(c, "k", "9", b"\x01\x02\x03\x04\x05\x06\x07\x08"), ok());
        assert_eq!(load(c, "k", "5", b"\xaa\xbb"), ok());
        assert_eq!(hex(&slots(c, "k")), "0102aabb05060708");

        // The header's bucket size bound follows cf-initial-size.
        config_set(c, "cf-initial-size", "8");
        assert_eq!(load(c, "k5", "1", &cf_header(1, 4, 0, 1, 5, 20, 1)), cannot);
        assert_eq!(load(c, "k4", "1", &cf_header(1, 4, 0, 1, 4, 20, 1)), ok());
    });
}

// ------------------------------------------------ replication (docs/module.md §2.1)

/// The master's replication offset: it grows synchronously with every
/// command propagated (no WAIT here: its GETACK would move it too, and
/// replica pings are disabled by the test).
fn repl_offset(c: &mut Conn) -> i64 {
    info::num(c, "replication", "master_repl_offset")
}

#[test]
fn replication_follows_the_command_table() {
    for flavor in all_flavors() {
        let master = Server::builder(flavor, Module::Rsbloom)
            .arg("--repl-ping-replica-period")
            .arg("3600")
            .start();
        let replica = master.start_replica();
        let mut c = master.conn();
        line(&mut c, "SET warmup 1");
        // (command, replicated?)
        let cases: &[(&str, bool)] = &[
            ("CF.RESERVE k 4 EXPANSION 0", true),
            ("CF.RESERVE k 4", false),
            ("CF.RESERVE x 1", false),
            ("CF.ADD k a", true),
            ("CF.ADDNX k a", true),
            ("CF.ADDNX k b", true),
            ("CF.INSERT k ITEMS c d", true),
            ("CF.ADD k e", false),
            ("CF.ADDNX k e", false),
            ("CF.INSERT k ITEMS e", true),
            ("CF.INSERTNX k ITEMS e", true),
            ("CF.INSERT nope NOCREATE ITEMS e", false),
            ("CF.ADD str x", false),
            ("CF.EXISTS k a", false),
            ("CF.MEXISTS k a b", false),
            ("CF.COUNT k a", false),
            ("CF.INFO k", false),
            ("CF.DEBUG k", false),
            ("CF.SCANDUMP k 0", false),
            ("CF.DEL k zzz", true),
            ("CF.DEL k a", true),
            ("CF.DEL nope a", false),
            ("CF.COMPACT k", true),
            ("CF.COMPACT nope", false),
            ("CF.ADD auto x", true),
        ];
        line(&mut c, "SET str v");
        for &(cmd, replicated) in cases {
            let before = repl_offset(&mut c);
            line(&mut c, cmd);
            let after = repl_offset(&mut c);
            assert_eq!(after != before, replicated, "{flavor:?}: {cmd}");
        }
        // Growth past the limit: refused before processing, not replicated.
        assert_eq!(line(&mut c, "CF.RESERVE m 4"), ok());
        line(&mut c, &format!("CF.INSERT m ITEMS {}", items("", 150)));
        let before = repl_offset(&mut c);
        assert_eq!(
            line(&mut c, "CF.ADD m x"),
            err("Maximum expansions reached")
        );
        assert_eq!(repl_offset(&mut c), before);
        // LOADCHUNK: header and data chunks.
        let dump = filters::scandump(&mut c, Fam::Cf, "m");
        for (pos, data) in &dump {
            let before = repl_offset(&mut c);
            let r = c.cmd(&args!["CF.LOADCHUNK", "copy", pos.to_string(), data]);
            assert_eq!(r, ok(), "pos {pos}");
            assert_ne!(repl_offset(&mut c), before, "LOADCHUNK pos {pos}");
        }
        let before = repl_offset(&mut c);
        assert!(c
            .cmd(&args!["CF.LOADCHUNK", "copy", "1", dump[0].1.clone()])
            .is_error());
        assert_eq!(repl_offset(&mut c), before);

        // The replica ends up with identical filters.
        assert_eq!(c.cmd(&["WAIT", "1", "5000"]), int(1));
        let mut rc = replica.conn();
        for key in ["k", "auto", "m", "copy"] {
            assert_eq!(
                filters::scandump(&mut rc, Fam::Cf, key),
                filters::scandump(&mut c, Fam::Cf, key),
                "{key}"
            );
            assert_eq!(info_values(&mut rc, key), info_values(&mut c, key), "{key}");
        }
    }
}
