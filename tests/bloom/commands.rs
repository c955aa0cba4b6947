//! BF.* replies and errors on real servers, RESP2 and RESP3 (docs/bloom.md §8).
use common::bloom::*;
use common::*;

#[test]
fn wrong_arity_names_the_lower_case_command() {
    each_server(|c, _| {
        let cases = [
            ("BF.RESERVE k 0.01", "bf.reserve"),
            ("BF.RESERVE k 0.01 10 a b c d", "bf.reserve"),
            ("bf.Add k", "bf.add"),
            ("BF.ADD k a b", "bf.add"),
            ("BF.MADD k", "bf.madd"),
            ("BF.INSERT k ITEMS", "bf.insert"),
            ("BF.INSERT k CAPACITY 5 ITEMS", "bf.insert"),
            ("BF.INSERT k NOCREATE", "bf.insert"),
            ("BF.INSERT k NONSCALING ERROR", "bf.insert"),
            ("BF.EXISTS k", "bf.exists"),
            ("BF.EXISTS k a b", "bf.exists"),
            ("BF.MEXISTS k", "bf.mexists"),
            ("BF.INFO", "bf.info"),
            ("BF.INFO k CAPACITY x", "bf.info"),
            ("BF.CARD", "bf.card"),
            ("BF.CARD k x", "bf.card"),
            ("BF.DEBUG", "bf.debug"),
            ("BF.DEBUG k x", "bf.debug"),
            ("BF.SCANDUMP k", "bf.scandump"),
            ("BF.SCANDUMP k 0 0", "bf.scandump"),
            ("BF.LOADCHUNK k 1", "bf.loadchunk"),
            ("BF.LOADCHUNK k 1 a b", "bf.loadchunk"),
        ];
        for (cmd, name) in cases {
            let want = format!("ERR wrong number of arguments for '{name}' command");
            assert_eq!(line(c, cmd), err(&want), "{cmd}");
        }
        // Nothing was created by the failed calls.
        assert_eq!(line(c, "EXISTS k"), int(0));
    });
}

#[test]
fn reserve_creates_and_reports_every_error() {
    each_server(|c, _| {
        other_types(c);
        assert_eq!(line(c, "BF.RESERVE bf 0.001 100"), ok());
        assert_eq!(
            line(c, "BF.INFO bf"),
            arr(vec![
                simple("Capacity"),
                int(100),
                simple("Size"),
                int(296),
                simple("Number of filters"),
                int(1),
                simple("Number of items inserted"),
                int(0),
                simple("Expansion rate"),
                int(2),
            ])
        );
        assert_eq!(line(c, "TYPE bf"), simple("MBbloom--"));
        assert_eq!(line(c, "BF.RESERVE bf 0.01 10"), err("ERR item exists"));
        assert_eq!(line(c, "BF.RESERVE str 0.01 10"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.RESERVE cf 0.01 10"), err(WRONGTYPE));
        // Parse errors come before the key check.
        assert_eq!(line(c, "BF.RESERVE bf x 10"), err("ERR bad error rate"));
        let cases = [
            ("BF.RESERVE k x 10", "ERR bad error rate"),
            ("BF.RESERVE k nan 10", "ERR bad error rate"),
            (
                "BF.RESERVE k 0 10",
                "ERR error rate must be in the range (0.000000, 1.000000)",
            ),
            (
                "BF.RESERVE k 1 x",
                "ERR error rate must be in the range (0.000000, 1.000000)",
            ),
            ("BF.RESERVE k 0.1 x", "ERR bad capacity"),
            ("BF.RESERVE k 0.1 010", "ERR bad capacity"),
            (
                "BF.RESERVE k 0.1 0",
                "ERR capacity must be in the range [1, 1073741824]",
            ),
            (
                "BF.RESERVE k 0.1 1073741825",
                "ERR capacity must be in the range [1, 1073741824]",
            ),
            ("BF.RESERVE k 0.1 10 EXPANSION", "ERR no expansion"),
            ("BF.RESERVE k 0.1 10 expansion x", "ERR bad expansion"),
            (
                "BF.RESERVE k 0.1 10 EXPANSION 32769",
                "ERR expansion must be in the range [0, 32768]",
            ),
            (
                "BF.RESERVE k 0.1 10 EXPANSION -1",
                "ERR expansion must be in the range [0, 32768]",
            ),
            (
                "BF.RESERVE k 0.1 10 NONSCALING EXPANSION 2",
                "Nonscaling filters cannot expand",
            ),
            (
                "BF.RESERVE k 0.1 10 EXPANSION 3 nonscaling",
                "Nonscaling filters cannot expand",
            ),
            // The key position counts as an option word (docs/differences.md §2).
            ("BF.RESERVE EXPANSION 0.01 10", "ERR bad expansion"),
            (
                "BF.RESERVE NONSCALING 0.01 10 EXPANSION 2",
                "Nonscaling filters cannot expand",
            ),
            // Half of it underflows to 0.
            ("BF.RESERVE k 5e-324 10", "ERR could not create filter"),
        ];
        for (cmd, want) in cases {
            assert_eq!(line(c, cmd), err(want), "{cmd}");
        }
        assert_eq!(line(c, "EXISTS k EXPANSION"), int(0));
    });
}

#[test]
fn reserve_options_and_quirks() {
    each_server(|c, c3| {
        // A key named NONSCALING makes a non-scaling filter.
        assert_eq!(line(c, "BF.RESERVE NONSCALING 0.01 10"), ok());
        assert_eq!(info_field(c, "NONSCALING", "EXPANSION"), Reply::Nil);
        assert_eq!(
            debug_lines(c, "NONSCALING")[1],
            "bytes:16 bits:128 hashes:7 hashwidth:64 capacity:10 size:0 ratio:0.01"
        );
        // EXPANSION 0 means non-scaling.
        assert_eq!(line(c, "BF.RESERVE z 0.01 3 EXPANSION 0"), ok());
        assert_eq!(info_field(c, "z", "expansion"), Reply::Nil);
        assert_eq!(
            line(c3, "BF.INFO z EXPANSION"),
            Reply::Map(vec![(simple("Expansion rate"), Reply::Null)])
        );
        assert_eq!(
            debug_lines(c, "z")[1],
            "bytes:8 bits:64 hashes:7 hashwidth:64 capacity:3 size:0 ratio:0.01"
        );
        assert_eq!(
            line(c, "BF.RESERVE x 0.01 10 EXPANSION 32768 NONSCALINGX"),
            ok()
        );
        assert_eq!(info_field(c, "x", "EXPANSION"), int(32768));
        // Unknown extra arguments are ignored.
        assert_eq!(line(c, "BF.RESERVE f 0.01 10 foo"), ok());
        assert_eq!(info_field(c, "f", "CAPACITY"), int(10));
        // Error rates above 0.25 are capped: first link 0.125, not 0.25.
        assert_eq!(line(c, "BF.RESERVE cap 0.5 10"), ok());
        assert_eq!(
            debug_lines(c, "cap"),
            [
                "size:0",
                "bytes:8 bits:64 hashes:4 hashwidth:64 capacity:10 size:0 ratio:0.125"
            ]
        );
        assert_eq!(line(c, "BF.RESERVE one 0.25 1"), ok());
        assert_eq!(
            debug_lines(c, "one")[1],
            "bytes:8 bits:64 hashes:4 hashwidth:64 capacity:1 size:0 ratio:0.125"
        );
        assert_eq!(line(c, "BF.RESERVE max 0.9 1073741824 NONSCALING"), ok());
        assert_eq!(info_field(c, "max", "CAPACITY"), int(1 << 30));
        assert_eq!(
            debug_lines(c, "max")[1].rsplit(' ').next(),
            Some("ratio:0.25")
        );
        assert_eq!(line(c, "DEL max"), int(1));
    });
}

#[test]
fn add_and_madd_reply_bool_or_int_and_scale() {
    each_server(|c, c3| {
        other_types(c);
        assert_eq!(line(c, "BF.ADD a foo"), int(1));
        assert_eq!(line(c, "BF.ADD a foo"), int(0));
        assert_eq!(line(c3, "BF.ADD a bar"), Reply::Bool(true));
        assert_eq!(line(c3, "BF.ADD a bar"), Reply::Bool(false));
        assert_eq!(line(c, "BF.MADD a foo baz"), arr(vec![int(0), int(1)]));
        assert_eq!(
            line(c3, "BF.MADD a foo qux"),
            arr(vec![Reply::Bool(false), Reply::Bool(true)])
        );
        // Auto-created with the default configuration.
        assert_eq!(
            line(c3, "BF.INFO a"),
            Reply::Map(vec![
                (simple("Capacity"), int(100)),
                (simple("Size"), int(240)),
                (simple("Number of filters"), int(1)),
                (simple("Number of items inserted"), int(4)),
                (simple("Expansion rate"), int(2)),
            ])
        );
        assert_eq!(
            line(c, "BF.MADD m x y x"),
            arr(vec![int(1), int(1), int(0)])
        );
        assert_eq!(line(c, "BF.CARD m"), int(2));
        assert_eq!(line(c, "BF.ADD str x"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.MADD cf x"), err(WRONGTYPE));
        // Scaling example of docs/bloom.md §6.
        assert_eq!(line(c, "BF.RESERVE bf 0.01 10"), ok());
        let items: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let mut cmd = vec!["BF.MADD".to_string(), "bf".into()];
        cmd.extend(items.iter().cloned());
        let added = c.cmd(&cmd);
        let ones = added.as_array().iter().filter(|r| **r == int(1)).count();
        assert_eq!((added.as_array().len(), ones), (100, 99));
        assert_eq!(
            debug_lines(c, "bf"),
            [
                "size:99",
                "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005",
                "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025",
                "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125",
                "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:29 ratio:0.000625",
            ]
        );
    });
}

#[test]
fn full_nonscaling_filter_stops_madd_and_insert() {
    each_server(|c, c3| {
        assert_eq!(line(c, "BF.RESERVE n 0.01 1 NONSCALING"), ok());
        assert_eq!(line(c, "BF.ADD n a"), int(1));
        assert_eq!(line(c, "BF.ADD n b"), err("ERR non scaling filter is full"));
        assert_eq!(line(c, "BF.ADD n a"), int(0));
        assert_eq!(
            line(c, "BF.MADD n a e b"),
            arr(vec![int(0), err("ERR non scaling filter is full")])
        );
        assert_eq!(
            line(c3, "BF.MADD n a e b"),
            arr(vec![
                Reply::Bool(false),
                err("ERR non scaling filter is full")
            ])
        );
        assert_eq!(
            line(c, "BF.INSERT n ITEMS e a"),
            arr(vec![err("ERR non scaling filter is full")])
        );
        assert_eq!(
            line(c, "BF.MEXISTS n a e b"),
            arr(vec![int(1), int(0), int(0)])
        );
        assert_eq!(line(c, "BF.CARD n"), int(1));
    });
}

#[test]
fn insert_options_classification_and_errors() {
    each_server(|c, c3| {
        other_types(c);
        // DEBUG example of docs/bloom.md §7.
        assert_eq!(
            line(
                c,
                "BF.INSERT k ERROR 0.001 CAPACITY 50000 EXPANSION 2 ITEMS foo"
            ),
            arr(vec![int(1)])
        );
        assert_eq!(
            debug_lines(c, "k"),
            [
                "size:1",
                "bytes:98880 bits:791040 hashes:11 hashwidth:64 capacity:50000 size:1 ratio:0.0005"
            ]
        );
        // First-letter classification: c/er/e/iTeMz.
        assert_eq!(
            line(c3, "BF.INSERT k2 c 7 er 0.1 e 3 iTeMz a a"),
            arr(vec![Reply::Bool(true), Reply::Bool(false)])
        );
        assert_eq!(
            debug_lines(c, "k2")[1],
            "bytes:8 bits:64 hashes:5 hashwidth:64 capacity:7 size:1 ratio:0.05"
        );
        assert_eq!(info_field(c, "k2", "EXPANSION"), int(3));
        // n-tokens: nx, n and NO are NONSCALING; nxc… is NOCREATE.
        for (i, word) in ["nx", "n", "NO", "NONSCALING"].iter().enumerate() {
            let key = format!("ns{i}");
            assert_eq!(
                c.cmd(&["BF.INSERT", &key, word, "ITEMS", "a"]),
                arr(vec![int(1)])
            );
            assert_eq!(info_field(c, &key, "EXPANSION"), Reply::Nil, "{word}");
        }
        assert_eq!(line(c, "BF.INSERT nc nxc ITEMS a"), err("ERR not found"));
        assert_eq!(
            line(c, "BF.INSERT nc NOCREATE ITEMS a"),
            err("ERR not found")
        );
        assert_eq!(line(c, "EXISTS nc"), int(0));
        // EXPANSION 0 → non-scaling; ERROR capped to 0.25 (first link 0.25).
        assert_eq!(
            line(c, "BF.INSERT e0 EXPANSION 0 ERROR 0.9 CAPACITY 2 ITEMS a"),
            arr(vec![int(1)])
        );
        assert_eq!(info_field(c, "e0", "EXPANSION"), Reply::Nil);
        assert_eq!(
            debug_lines(c, "e0")[1].rsplit(' ').next(),
            Some("ratio:0.25")
        );
        // Items after the marker may look like options.
        assert_eq!(
            line(c, "BF.INSERT it ITEMS CAPACITY NOCREATE"),
            arr(vec![int(1), int(1)])
        );
        assert_eq!(info_field(c, "it", "CAPACITY"), int(100));
        // Existing filter: options validated, then ignored.
        assert_eq!(
            line(c, "BF.INSERT k2 CAPACITY 5000 ERROR 0.2 NONSCALING ITEMS b"),
            arr(vec![int(1)])
        );
        assert_eq!(info_field(c, "k2", "CAPACITY"), int(7));
        assert_eq!(info_field(c, "k2", "EXPANSION"), int(3));
        assert_eq!(
            line(c, "BF.INSERT k2 CAPACITY 0 ITEMS b"),
            err("Bad capacity")
        );
        let cases = [
            ("BF.INSERT k2 ERROR 1 ITEMS a", "Bad error rate"),
            ("BF.INSERT k2 ERROR x ITEMS a", "Bad error rate"),
            ("BF.INSERT q ERROR 0 ITEMS a", "Bad error rate"),
            ("BF.INSERT q CAPACITY 1073741825 ITEMS a", "Bad capacity"),
            ("BF.INSERT q CAPACITY x ITEMS a", "Bad capacity"),
            ("BF.INSERT q EXPANSION 32769 ITEMS a", "Bad expansion"),
            ("BF.INSERT q E -1 ITEMS a", "Bad expansion"),
            ("BF.INSERT q FOO ITEMS a", "Unknown argument received"),
            // Range errors are found while scanning, before the items check.
            ("BF.INSERT q CAPACITY 0 x", "Bad capacity"),
            ("BF.INSERT str ITEMS a", WRONGTYPE),
            ("BF.INSERT cf NOCREATE ITEMS a", WRONGTYPE),
        ];
        for (cmd, want) in cases {
            assert_eq!(line(c, cmd), err(want), "{cmd}");
        }
        assert_eq!(line(c, "EXISTS q"), int(0));
        // CAPACITY 1073741824 passes parsing and reaches the key check
        // (creating it is covered by BF.RESERVE; no need to allocate again).
        assert_eq!(
            line(
                c,
                "BF.INSERT big CAPACITY 1073741824 ERROR 0.9 NONSCALING NOCREATE ITEMS a"
            ),
            err("ERR not found")
        );
    });
}

#[test]
fn exists_and_mexists_never_fail_on_other_types() {
    each_server(|c, c3| {
        other_types(c);
        assert_eq!(line(c, "BF.EXISTS missing a"), int(0));
        assert_eq!(line(c3, "BF.EXISTS missing a"), Reply::Bool(false));
        assert_eq!(line(c, "BF.MEXISTS missing a b"), arr(vec![int(0), int(0)]));
        for key in ["str", "cf"] {
            assert_eq!(c.cmd(&["BF.EXISTS", key, "a"]), int(0));
            assert_eq!(
                c3.cmd(&["BF.MEXISTS", key, "a", "v"]),
                arr(vec![Reply::Bool(false), Reply::Bool(false)])
            );
        }
        assert_eq!(line(c, "BF.MADD k a b"), arr(vec![int(1), int(1)]));
        assert_eq!(line(c, "BF.EXISTS k a"), int(1));
        assert_eq!(line(c3, "BF.EXISTS k b"), Reply::Bool(true));
        assert_eq!(line(c3, "BF.EXISTS k c"), Reply::Bool(false));
        assert_eq!(
            line(c3, "BF.MEXISTS k a c b"),
            arr(vec![
                Reply::Bool(true),
                Reply::Bool(false),
                Reply::Bool(true)
            ])
        );
        assert_eq!(line(c, "BF.MEXISTS k c b"), arr(vec![int(0), int(1)]));
        // Reads create nothing.
        assert_eq!(line(c, "EXISTS missing"), int(0));
    });
}

#[test]
fn info_card_debug() {
    each_server(|c, c3| {
        other_types(c);
        for cmd in ["BF.INFO", "BF.DEBUG"] {
            assert_eq!(c.cmd(&[cmd, "missing"]), err("ERR not found"));
            assert_eq!(c.cmd(&[cmd, "str"]), err(WRONGTYPE));
            assert_eq!(c.cmd(&[cmd, "cf"]), err(WRONGTYPE));
        }
        // The key is checked before the field.
        assert_eq!(line(c, "BF.INFO missing bogus"), err("ERR not found"));
        assert_eq!(line(c, "BF.INFO str bogus"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.CARD missing"), int(0));
        assert_eq!(line(c, "BF.CARD str"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.CARD cf"), err(WRONGTYPE));

        assert_eq!(line(c, "BF.RESERVE ex 0.01 100"), ok());
        assert_eq!(line(c, "BF.ADD ex foo"), int(1));
        assert_eq!(
            line(c, "BF.INFO ex bogus"),
            err("Invalid information value")
        );
        assert_eq!(
            line(c, "BF.INFO ex capacit"),
            err("Invalid information value")
        );
        let fields = [
            ("CAPACITY", "Capacity", 100),
            ("size", "Size", 240),
            ("Filters", "Number of filters", 1),
            ("ITEMS", "Number of items inserted", 1),
            ("EXPANSION", "Expansion rate", 2),
        ];
        for (field, label, value) in fields {
            assert_eq!(c.cmd(&["BF.INFO", "ex", field]), arr(vec![int(value)]));
            assert_eq!(
                c3.cmd(&["BF.INFO", "ex", field]),
                Reply::Map(vec![(simple(label), int(value))])
            );
        }
        assert_eq!(line(c, "BF.CARD ex"), int(1));
        assert_eq!(
            line(c, "BF.DEBUG ex"),
            arr(vec![
                bulk("size:1"),
                bulk("bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005"),
            ])
        );
        // Non-scaling: Expansion rate is null in both protocols.
        assert_eq!(line(c, "BF.RESERVE n 0.01 3 NONSCALING"), ok());
        let full = line(c, "BF.INFO n");
        assert_eq!(full.as_array().len(), 10);
        assert_eq!(full.as_array()[8], simple("Expansion rate"));
        assert_eq!(full.as_array()[9], Reply::Nil);
        match line(c3, "BF.INFO n") {
            Reply::Map(pairs) => {
                assert_eq!(pairs.len(), 5);
                assert_eq!(pairs[1], (simple("Size"), int(104)));
                assert_eq!(pairs[4], (simple("Expansion rate"), Reply::Null));
            }
            other => panic!("BF.INFO in RESP3: {other:?}"),
        }
    });
}

#[test]
fn scandump_chunks_and_loadchunk_roundtrip() {
    each_server(|c, c3| {
        // Verified header of docs/bloom.md §10.
        assert_eq!(line(c, "BF.RESERVE ex 0.01 100"), ok());
        assert_eq!(line(c, "BF.ADD ex foo"), int(1));
        let header = hex(
            "0100000000000000 01000000 05000000 02000000 9000000000000000 8004000000000000
             0100000000000000 7b14ae47e17a743f e9862fb2350e2640 08000000 6400000000000000 00",
        );
        assert_eq!(
            line(c, "BF.SCANDUMP ex 0"),
            arr(vec![int(1), bulk(&header)])
        );
        let first = line(c, "BF.SCANDUMP ex 1");
        assert_eq!(first.as_array()[0], int(145));
        let bits = first.as_array()[1].as_bytes().to_vec();
        assert_eq!(bits.len(), 144);
        // Bits 269, 847, 145, 723, 21, 599, 25, 475 are set (docs/bloom.md §5).
        let set: Vec<usize> = (0..1152)
            .filter(|i| bits[i / 8] & (1 << (i % 8)) != 0)
            .collect();
        assert_eq!(set, [21, 25, 145, 269, 475, 599, 723, 847]);
        assert_eq!(
            line(c, "BF.SCANDUMP ex 2"),
            arr(vec![int(145), bulk(&bits[1..])])
        );
        assert_eq!(
            line(c, "BF.SCANDUMP ex 144"),
            arr(vec![int(145), bulk(&bits[143..])])
        );
        for end in ["145", "-5", "9999999999"] {
            assert_eq!(
                c.cmd(&["BF.SCANDUMP", "ex", end]),
                arr(vec![int(0), bulk("")])
            );
            assert_eq!(
                c3.cmd(&["BF.SCANDUMP", "ex", end]),
                arr(vec![int(0), bulk("")])
            );
        }

        // Verified chunk example of docs/bloom.md §6, then a replay into a new key.
        assert_eq!(line(c, "BF.RESERVE e 0.1 4"), ok());
        assert_eq!(line(c, "BF.MADD e a b c d e f g h"), arr(vec![int(1); 8]));
        let pairs = filters::scandump(c, Fam::Bf, "e");
        let want_header = hex(
            "0800000000000000 02000000 05000000 02000000
             0800000000000000 4000000000000000 0400000000000000 9a9999999999a93f 4af7d49edef01840 05000000 0400000000000000 00
             0800000000000000 4000000000000000 0400000000000000 9a9999999999993f 0bd81f7830b61e40 06000000 0800000000000000 00",
        );
        assert_eq!(pairs.len(), 3);
        assert_eq!(pairs[0], (1, want_header));
        assert_eq!(pairs[1], (9, hex("3045a08c50922120")));
        assert_eq!(pairs[2], (17, hex("3199c0c04449098c")));
        filters::load_ok(c, Fam::Bf, "copy", &pairs);
        assert_eq!(debug_lines(c, "copy"), debug_lines(c, "e"));
        for i in 0..4 {
            let (a, b) = (
                line(c, &format!("BF.SCANDUMP e {i}")),
                line(c, &format!("BF.SCANDUMP copy {i}")),
            );
            assert_eq!(a, b, "iterator {i}");
        }
        assert_eq!(
            line(c, "BF.MEXISTS copy a h z"),
            arr(vec![int(1), int(1), int(0)])
        );
        assert_eq!(line(c, "BF.INFO copy"), line(c, "BF.INFO e"));
    });
}

#[test]
fn scandump_and_loadchunk_errors_in_order() {
    each_server(|c, _| {
        other_types(c);
        // SCANDUMP: key before iterator.
        assert_eq!(line(c, "BF.SCANDUMP missing x"), err("ERR not found"));
        assert_eq!(line(c, "BF.SCANDUMP str x"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.SCANDUMP cf 0"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.RESERVE ex 0.01 100"), ok());
        assert_eq!(
            line(c, "BF.SCANDUMP ex x"),
            err("Second argument must be numeric")
        );
        assert_eq!(
            line(c, "BF.SCANDUMP ex 1.0"),
            err("Second argument must be numeric")
        );
        // LOADCHUNK: iterator before key.
        assert_eq!(
            line(c, "BF.LOADCHUNK str x d"),
            err("ERR Second argument must be numeric")
        );
        assert_eq!(line(c, "BF.LOADCHUNK missing 2 d"), err("ERR not found"));
        assert_eq!(line(c, "BF.LOADCHUNK str 1 d"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.LOADCHUNK cf 1 d"), err(WRONGTYPE));

        let header = line(c, "BF.SCANDUMP ex 0").as_array()[1]
            .as_bytes()
            .to_vec();
        assert_eq!(header.len(), 73);
        let bad = "ERR received bad data";
        let mut bad_headers = vec![
            header[..19].to_vec(), // shorter than 20
            header[..72].to_vec(), // not 20 + 53n
            [&header[..], &[0]].concat(),
        ];
        let mut zero_links = header.clone();
        zero_links[8] = 0;
        bad_headers.push(zero_links);
        let mut options = header.clone();
        options[12] |= 0x10;
        bad_headers.push(options);
        let mut sizes = header.clone();
        sizes[0] = 1; // chain size 1, link size 0
        bad_headers.push(sizes);
        let mut error = header.clone();
        error[20 + 24..20 + 32].copy_from_slice(&1.5f64.to_le_bytes());
        bad_headers.push(error);
        let mut n2 = header.clone();
        n2[20 + 52] = 64;
        bad_headers.push(n2);
        for h in &bad_headers {
            assert_eq!(
                c.cmd(&args!["BF.LOADCHUNK", "new", "1", h]),
                err(bad),
                "{h:?}"
            );
        }
        assert_eq!(line(c, "EXISTS new"), int(0));
        assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "new", "1", &header]), ok());
        assert_eq!(line(c, "BF.CARD new"), int(0));
        // A header sent to an existing key is a (bad) data chunk.
        assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "new", "1", &header]), err(bad));
        let cases: [(&str, &[u8], &str); 6] = [
            ("0", b"", bad),
            ("-3", b"", bad),
            ("2", b"abc", bad),
            ("146", b"", "ERR invalid offset - no link found"),
            ("147", b"x", "ERR invalid offset - no link found"),
            (
                "150",
                &[7u8; 10],
                "ERR invalid chunk - Too big for current filter",
            ),
        ];
        for (iter, data, want) in cases {
            assert_eq!(
                c.cmd(&args!["BF.LOADCHUNK", "new", iter, data]),
                err(want),
                "{iter}"
            );
        }
        // Empty data at 1 copies nothing; a chunk ending at the last byte fits.
        assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "new", "1", ""]), ok());
        assert_eq!(
            c.cmd(&args!["BF.LOADCHUNK", "new", "145", [0xffu8; 4]]),
            ok()
        );
        let data = line(c, "BF.SCANDUMP new 141");
        assert_eq!(data, arr(vec![int(145), bulk([0xffu8; 4])]));
    });
}

#[test]
fn autocreation_follows_the_configuration() {
    each_server(|c, _| {
        config_set(c, "bf-initial-size", "7");
        config_set(c, "bf-error-rate", "0.1");
        assert_eq!(line(c, "BF.ADD a x"), int(1));
        assert_eq!(
            debug_lines(c, "a")[1],
            "bytes:8 bits:64 hashes:5 hashwidth:64 capacity:7 size:1 ratio:0.05"
        );
        assert_eq!(line(c, "BF.INSERT i ITEMS x"), arr(vec![int(1)]));
        assert_eq!(info_field(c, "i", "CAPACITY"), int(7));
        config_set(c, "bf-expansion-factor", "5");
        assert_eq!(line(c, "BF.MADD m x"), arr(vec![int(1)]));
        assert_eq!(info_field(c, "m", "EXPANSION"), int(5));
        // Existing filters keep their parameters.
        assert_eq!(info_field(c, "a", "EXPANSION"), int(2));

        config_set(c, "bf-expansion-factor", "0");
        assert_eq!(line(c, "BF.ADD n x"), int(1));
        assert_eq!(info_field(c, "n", "EXPANSION"), Reply::Nil);
        assert_eq!(
            line(c, "BF.RESERVE r 0.01 10 EXPANSION 2"),
            err("Nonscaling filters cannot expand")
        );
        assert_eq!(line(c, "BF.RESERVE r 0.01 10"), ok());
        assert_eq!(info_field(c, "r", "EXPANSION"), Reply::Nil);
        // EXPANSION does not clear the configured non-scaling default.
        assert_eq!(
            line(c, "BF.INSERT ins EXPANSION 4 ITEMS x"),
            arr(vec![int(1)])
        );
        assert_eq!(info_field(c, "ins", "EXPANSION"), Reply::Nil);
        // Error rates above 0.25 are stored as 0.25: non-scaling keeps it.
        config_set(c, "bf-error-rate", "0.9");
        assert_eq!(line(c, "BF.ADD hi x"), int(1));
        assert_eq!(
            debug_lines(c, "hi")[1],
            "bytes:8 bits:64 hashes:3 hashwidth:64 capacity:7 size:1 ratio:0.25"
        );
    });
}

// ---- BF.MERGE (docs/bloom.md §12) ----

fn dump(c: &mut Conn, key: &str) -> Vec<u8> {
    c.cmd(&["DUMP", key]).as_bytes().to_vec()
}

fn madd_range(c: &mut Conn, key: &str, prefix: &str, n: usize) {
    let mut cmd = vec!["BF.MADD".to_string(), key.into()];
    cmd.extend((0..n).map(|i| format!("{prefix}{i}")));
    let r = c.cmd(&cmd);
    assert!(!r.as_array().iter().any(Reply::is_error), "{r:?}");
}

#[test]
fn merge_stores_the_union_of_filters_of_one_shape() {
    each_server(|c, _| {
        assert_eq!(line(c, "BF.RESERVE a 0.01 1000"), ok());
        assert_eq!(line(c, "BF.RESERVE b 0.01 1000"), ok());
        madd_range(c, "a", "x", 300);
        madd_range(c, "b", "y", 300);
        assert_eq!(line(c, "BF.MERGE d a b"), ok());
        assert_eq!(line(c, "TYPE d"), simple("MBbloom--"));
        let found = c.cmd(&["BF.MEXISTS", "d", "x0", "x299", "y0", "y299"]);
        assert_eq!(found, arr(vec![int(1); 4]));
        // Estimated from the bits: 600 distinct items, within a few percent.
        let card = line(c, "BF.CARD d").as_int();
        assert!((570..=600).contains(&card), "{card}");
        assert_eq!(info_field(c, "d", "ITEMS").as_int(), card);
        assert_eq!(info_field(c, "d", "SIZE"), info_field(c, "a", "SIZE"));
        assert_eq!(info_field(c, "d", "CAPACITY"), int(1000));

        // One source is a copy; a filter merged with itself is unchanged.
        assert_eq!(line(c, "BF.MERGE d a"), ok());
        assert_eq!(dump(c, "d"), dump(c, "a"));
        let a = dump(c, "a");
        assert_eq!(line(c, "BF.MERGE a a a"), ok());
        assert_eq!(dump(c, "a"), a);
        // destkey among the sources.
        assert_eq!(line(c, "BF.MERGE d a b"), ok());
        assert_eq!(line(c, "BF.MERGE a a b"), ok());
        assert_eq!(dump(c, "a"), dump(c, "d"));
        // Scaled chains merge link by link.
        assert_eq!(line(c, "BF.RESERVE s1 0.01 10"), ok());
        assert_eq!(line(c, "BF.RESERVE s2 0.01 10"), ok());
        madd_range(c, "s1", "p", 25);
        madd_range(c, "s2", "q", 25);
        assert_eq!(line(c, "BF.MERGE s s1 s2"), ok());
        assert_eq!(info_field(c, "s", "FILTERS"), int(2));
        // The first link is full in both: it counts its capacity.
        let card = line(c, "BF.CARD s").as_int();
        assert!((10 + 15..=10 + 30).contains(&card), "{card}");
        assert_eq!(line(c, "BF.EXISTS s q24"), int(1));
        // INFO bf: overwritten values freed, new ones counted; the calls.
        assert_eq!(info::num::<i64>(c, "bf", "bf_bloom_keys"), 6);
        let calls = info::field(c, "bf", "bf_cmd_bf_merge");
        assert_eq!(calls, "calls=6,failed=0");
    });
}

#[test]
fn merge_refuses_and_writes_nothing() {
    each_server(|c, _| {
        other_types(c);
        assert_eq!(line(c, "BF.MERGE d"), arity("bf.merge"));
        assert_eq!(line(c, "BF.RESERVE a 0.01 100"), ok());
        madd_range(c, "a", "x", 10);
        assert_eq!(line(c, "BF.MERGE d a missing"), err("ERR not found"));
        assert_eq!(line(c, "BF.MERGE d missing a"), err("ERR not found"));
        assert_eq!(line(c, "BF.MERGE d a str"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.MERGE d cf"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.MERGE str a"), err(WRONGTYPE));
        assert_eq!(line(c, "BF.MERGE cf a"), err(WRONGTYPE));
        assert_eq!(line(c, "EXISTS d"), int(0));

        assert_eq!(line(c, "BF.RESERVE d 0.01 100"), ok());
        madd_range(c, "d", "z", 5);
        let before = dump(c, "d");
        let cases = [
            ("BF.RESERVE o 0.01 200", "link 1's capacity"),
            ("BF.RESERVE o 0.001 100", "link 1's error rate"),
            ("BF.RESERVE o 0.01 100 EXPANSION 4", "expansion"),
            ("BF.RESERVE o 0.01 100 NONSCALING", "NONSCALING"),
        ];
        for (create, what) in cases {
            assert_eq!(line(c, create), ok());
            let want = format!("ERR BF.MERGE: sources differ in {what}");
            assert_eq!(line(c, "BF.MERGE d a o"), err(&want), "{create}");
            assert_eq!(line(c, "BF.MERGE d o a d"), err(&want), "{create}");
            assert_eq!(line(c, "DEL o"), int(1));
        }
        assert_eq!(line(c, "BF.RESERVE o 0.01 100"), ok());
        madd_range(c, "o", "w", 250);
        assert_eq!(
            line(c, "BF.MERGE d a o"),
            err("ERR BF.MERGE: sources differ in number of links")
        );
        assert_eq!(dump(c, "d"), before);

        // The per-key limit, checked before anything is allocated.
        let size = info_field(c, "a", "SIZE").as_int();
        config_set(c, "max-key-memory", &(size - 1).to_string());
        assert_eq!(
            line(c, "BF.MERGE d a"),
            err("ERR operation exceeds the key memory limit (bf.max-key-memory)")
        );
        assert_eq!(dump(c, "d"), before);
        config_set(c, "max-key-memory", &size.to_string());
        assert_eq!(line(c, "BF.MERGE d a"), ok());
        config_set(c, "max-key-memory", "0");

        // A valkey-bloom filter beside RedisBloom chains.
        assert_eq!(
            c.cmd(&["CONFIG", "SET", "bf.bloom-flavor", "valkey-bloom"]),
            ok()
        );
        assert_eq!(line(c, "BF.RESERVE v 0.01 100"), ok());
        let mixed = err("ERR BF.MERGE: sources mix RedisBloom and valkey-bloom filters");
        assert_eq!(line(c, "BF.MERGE d a v"), mixed);
        assert_eq!(line(c, "BF.MERGE d v a"), mixed);
        // destkey of the other flavour is replaced.
        assert_eq!(line(c, "BF.MERGE v a"), ok());
        assert_eq!(line(c, "TYPE v"), simple("MBbloom--"));
    });
}
