//! TDIGEST.* commands over the wire (docs/tdigest.md §5): every reply and
//! error path, in RESP2 and RESP3, on every server flavor. Doubles are
//! compared as the numbers the server printed (Redis 7.0 prints `%.17g`,
//! newer servers the shortest text; both read back to the same bits).
use common::*;

// ---------------------------------------------------------------- helpers

fn td_err(text: &str) -> Reply {
    err(&format!("ERR T-Digest: {text}"))
}

/// The double a reply carries (RESP2 bulk text, RESP3 `,`).
fn double(r: &Reply, resp3: bool) -> f64 {
    let text = match r {
        Reply::Double(t) if resp3 => t.clone(),
        Reply::Bulk(b) if !resp3 => String::from_utf8_lossy(b).into_owned(),
        other => panic!("expected a double, got {other:?}"),
    };
    match text.as_str() {
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        "nan" | "-nan" => f64::NAN,
        t => t.parse().unwrap_or_else(|_| panic!("not a double: {t}")),
    }
}

fn doubles(r: &Reply, resp3: bool) -> Vec<f64> {
    r.as_array().iter().map(|x| double(x, resp3)).collect()
}

/// Bit-exact comparison, any NaN equal to any NaN (servers print signs
/// differently).
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

fn expect(c: &mut Conn, resp3: bool, cmd: &str, want: &[f64]) {
    let r = line(c, cmd);
    let got = doubles(&r, resp3);
    assert!(same(&got, want), "{cmd}: {got:?} != {want:?}");
}

fn info(c: &mut Conn, key: &str) -> Vec<(String, i64)> {
    let pairs: Vec<(Reply, Reply)> = match c.cmd(&["TDIGEST.INFO", key]) {
        Reply::Map(m) => m,
        Reply::Array(a) => a.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect(),
        other => panic!("TDIGEST.INFO: {other:?}"),
    };
    pairs
        .into_iter()
        .map(|(k, v)| {
            assert!(matches!(k, Reply::Simple(_)), "{k:?}");
            (
                String::from_utf8_lossy(k.as_bytes()).into_owned(),
                v.as_int(),
            )
        })
        .collect()
}

fn info_field(c: &mut Conn, key: &str, name: &str) -> i64 {
    info(c, key).into_iter().find(|(k, _)| k == name).unwrap().1
}

fn seq(key: &str, from: i64, to: i64) -> String {
    let values: Vec<String> = (from..=to).map(|v| v.to_string()).collect();
    format!("TDIGEST.ADD {key} {}", values.join(" "))
}

// ---------------------------------------------------------------- tests

#[test]
fn create_and_info() {
    each(|c, resp3| {
        assert_eq!(line(c, "TDIGEST.CREATE t"), ok());
        let fields = info(c, "t");
        let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "Compression",
                "Capacity",
                "Merged nodes",
                "Unmerged nodes",
                "Merged weight",
                "Unmerged weight",
                "Observations",
                "Total compressions",
                "Memory usage"
            ]
        );
        let values: Vec<i64> = fields.iter().map(|(_, v)| *v).collect();
        assert_eq!(values, [100, 610, 0, 0, 0, 0, 0, 0, 9840]);
        assert!(matches!(c.cmd(&["TDIGEST.INFO", "t"]), Reply::Map(_)) == resp3);
        assert_eq!(line(c, "TDIGEST.CREATE c compression 5"), ok());
        assert_eq!(info_field(c, "c", "Capacity"), 40);
        assert_eq!(info_field(c, "c", "Memory usage"), 720);
        // MEMORY USAGE is the INFO figure plus the server's own overhead.
        assert!(c.cmd(&["MEMORY", "USAGE", "c"]).as_int() > 720);
        assert_eq!(line(c, "TDIGEST.CREATE t"), td_err("key already exists"));
        assert_eq!(
            line(c, "TDIGEST.CREATE t COMPRESSION abc"),
            td_err("key already exists")
        );
        assert_eq!(line(c, "SET s x"), ok());
        assert_eq!(line(c, "TDIGEST.CREATE s"), err(WRONGTYPE));
        for (cmd, reply) in [
            ("TDIGEST.CREATE n COMPRESSION", arity("tdigest.create")),
            ("TDIGEST.CREATE n a b c", arity("tdigest.create")),
            ("TDIGEST.CREATE", arity("tdigest.create")),
            ("TDIGEST.CREATE n foo 7", td_err("wrong keyword")),
            (
                "TDIGEST.CREATE n 100 COMPRESSION",
                td_err("error parsing compression parameter"),
            ),
            (
                "TDIGEST.CREATE n foo compression",
                td_err("error parsing compression parameter"),
            ),
            (
                "TDIGEST.CREATE n COMPRESSION 1.5",
                td_err("error parsing compression parameter"),
            ),
            (
                "TDIGEST.CREATE n COMPRESSION 0",
                td_err("compression parameter needs to be a positive integer"),
            ),
            (
                "TDIGEST.CREATE n COMPRESSION -3",
                td_err("compression parameter needs to be a positive integer"),
            ),
            // RedisBloom 2.8.2 crashes here; the capacity would not fit an int.
            (
                "TDIGEST.CREATE n COMPRESSION 100000000000000000",
                td_err("allocation failed"),
            ),
            (
                "TDIGEST.CREATE n COMPRESSION 357913940",
                td_err("allocation failed"),
            ),
        ] {
            assert_eq!(line(c, cmd), reply, "{cmd}");
        }
        assert_eq!(c.cmd(&["EXISTS", "n"]), int(0));
        for (cmd, reply) in [
            ("TDIGEST.INFO missing", td_err("key does not exist")),
            ("TDIGEST.INFO s", err(WRONGTYPE)),
            ("TDIGEST.INFO t x", arity("tdigest.info")),
        ] {
            assert_eq!(line(c, cmd), reply, "{cmd}");
        }
    });
}

#[test]
fn sequence_1_to_1000_vectors() {
    each(|c, resp3| {
        assert_eq!(line(c, "TDIGEST.CREATE t COMPRESSION 100"), ok());
        assert_eq!(line(c, &seq("t", 1, 500)), ok());
        assert_eq!(line(c, &seq("t", 501, 1000)), ok());
        let values = |c: &mut Conn| info(c, "t").iter().map(|(_, v)| *v).collect::<Vec<_>>();
        assert_eq!(values(c), [100, 610, 40, 391, 609, 391, 1000, 1, 9840]);
        expect(
            c,
            resp3,
            "TDIGEST.QUANTILE t 0 0.001 0.01 0.1 0.25 0.5 0.75 0.9 0.99 0.999 1",
            &[
                1.0, 2.0, 10.5, 100.5, 250.5, 500.5, 750.5, 900.5, 990.5, 1000.0, 1000.0,
            ],
        );
        assert_eq!(values(c), [100, 610, 42, 0, 1000, 0, 1000, 2, 9840]);
        expect(
            c,
            resp3,
            "TDIGEST.CDF t 0 1 1.5 2 10 100 250.5 500 500.5 999 999.5 1000 1001",
            &[
                0.0, 0.0005, 0.001, 0.0015, 0.0095, 0.0995, 0.25, 0.4995, 0.5, 0.9985, 0.999,
                0.9995, 1.0,
            ],
        );
        let ints = |r: Reply| r.as_array().iter().map(Reply::as_int).collect::<Vec<_>>();
        assert_eq!(
            ints(line(c, "TDIGEST.RANK t 0 1 1.5 10 250.5 500 999 1000 1001")),
            [-1, 0, 1, 9, 250, 499, 998, 999, 1000]
        );
        assert_eq!(
            ints(line(
                c,
                "TDIGEST.REVRANK t 0 1 1.5 10 250.5 500 999 1000 1001"
            )),
            [1000, 999, 999, 990, 750, 500, 1, 0, -1]
        );
        expect(
            c,
            resp3,
            "TDIGEST.BYRANK t 0 1 2 10 250 500 998 999 1000",
            &[
                1.0,
                2.0,
                3.0,
                10.5,
                250.5,
                500.5,
                999.0,
                1000.0,
                f64::INFINITY,
            ],
        );
        expect(
            c,
            resp3,
            "TDIGEST.BYREVRANK t 0 1 2 10 250 500 998 999 1000",
            &[
                1000.0,
                999.0,
                998.0,
                989.5,
                749.5,
                499.5,
                2.0,
                1.0,
                f64::NEG_INFINITY,
            ],
        );
        let one = |c: &mut Conn, cmd: &str| double(&line(c, cmd), resp3);
        assert_eq!(one(c, "TDIGEST.TRIMMED_MEAN t 0.1 0.9"), 500.495);
        assert_eq!(one(c, "TDIGEST.TRIMMED_MEAN t 0 1"), 500.5);
        assert_eq!(one(c, "TDIGEST.TRIMMED_MEAN t 0.25 0.75"), 500.251);
        assert_eq!(one(c, "TDIGEST.MIN t"), 1.0);
        assert_eq!(one(c, "TDIGEST.MAX t"), 1000.0);
    });
}

#[test]
fn small_cases_signed_zero_and_nan() {
    each(|c, resp3| {
        assert_eq!(line(c, "TDIGEST.CREATE d"), ok());
        assert_eq!(line(c, &seq("d", 1, 10)), ok());
        expect(
            c,
            resp3,
            "TDIGEST.QUANTILE d 0 0.3 0.5 1",
            &[1.0, 4.0, 6.0, 10.0],
        );
        expect(c, resp3, "TDIGEST.CDF d 0 3.5 5 11", &[0.0, 0.3, 0.45, 1.0]);
        assert_eq!(line(c, "TDIGEST.ADD d 16"), ok());
        expect(
            c,
            resp3,
            "TDIGEST.CDF d inf -inf 5",
            &[1.0, 0.0, 0.4090909090909091],
        );
        expect(
            c,
            resp3,
            "TDIGEST.BYRANK d 0 1 5 9 10 11",
            &[1.0, 2.0, 6.0, 10.0, 16.0, f64::INFINITY],
        );
        // -0 and 0: the first seen stays min; sign of zero kept in replies.
        assert_eq!(line(c, "TDIGEST.CREATE z"), ok());
        assert_eq!(line(c, "TDIGEST.ADD z -0.0 0 -0.0 1"), ok());
        expect(c, resp3, "TDIGEST.QUANTILE z 0 0.3 1", &[0.0, -0.0, 1.0]);
        expect(c, resp3, "TDIGEST.BYRANK z 0 1", &[-0.0, -0.0]);
        assert_eq!(
            double(&line(c, "TDIGEST.MIN z"), resp3).to_bits(),
            (-0.0f64).to_bits()
        );
        // Empty digest: NaN everywhere, -2 ranks.
        assert_eq!(line(c, "TDIGEST.CREATE e"), ok());
        for cmd in [
            "TDIGEST.MIN e",
            "TDIGEST.MAX e",
            "TDIGEST.TRIMMED_MEAN e 0.1 0.9",
        ] {
            assert!(double(&line(c, cmd), resp3).is_nan(), "{cmd}");
        }
        expect(
            c,
            resp3,
            "TDIGEST.QUANTILE e 0.5 0.1",
            &[f64::NAN, f64::NAN],
        );
        expect(c, resp3, "TDIGEST.BYRANK e 0 1", &[f64::NAN, f64::NAN]);
        assert_eq!(line(c, "TDIGEST.RANK e 1 2"), arr(vec![int(-2), int(-2)]));
        // 0/0 of a trimmed mean over nothing.
        assert_eq!(line(c, "TDIGEST.CREATE n"), ok());
        assert_eq!(line(c, "TDIGEST.ADD n 1 2 3"), ok());
        assert!(double(
            &line(
                c,
                "TDIGEST.TRIMMED_MEAN n 0.3333333333333333 0.33333333333333337"
            ),
            resp3
        )
        .is_nan());
        assert_eq!(line(c, "TDIGEST.RANK n 2"), arr(vec![int(1)]));
    });
}

#[test]
fn single_observation() {
    each(|c, resp3| {
        assert_eq!(line(c, "TDIGEST.CREATE one"), ok());
        assert_eq!(line(c, "TDIGEST.ADD one 5"), ok());
        expect(c, resp3, "TDIGEST.QUANTILE one 0 0.5 1", &[f64::NAN; 3]);
        expect(c, resp3, "TDIGEST.CDF one 5", &[f64::NAN]);
        assert_eq!(line(c, "TDIGEST.RANK one 5"), arr(vec![int(i64::MIN)]));
        assert_eq!(
            line(c, "TDIGEST.REVRANK one 5 4 6"),
            arr(vec![int(i64::MIN), int(1), int(-1)])
        );
        expect(c, resp3, "TDIGEST.BYRANK one 0 1", &[5.0, f64::INFINITY]);
        assert_eq!(double(&line(c, "TDIGEST.MIN one"), resp3), 5.0);
        assert_eq!(info_field(c, "one", "Unmerged nodes"), 1);
        // The observation survives a reload (docs/tdigest.md §7.3).
        let dump = c.cmd(&["DUMP", "one"]);
        assert_eq!(c.cmd(&args!["RESTORE", "back", "0", dump.as_bytes()]), ok());
        for k in ["one", "back"] {
            assert_eq!(c.cmd(&["TDIGEST.ADD", k, "10"]), ok());
            expect(
                c,
                resp3,
                &format!("TDIGEST.QUANTILE {k} 0 0.5 1"),
                &[5.0, 10.0, 10.0],
            );
        }
    });
}

#[test]
fn argument_errors_in_order() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE d"), ok());
        assert_eq!(line(c, "SET s x"), ok());
        for (cmd, reply) in [
            // Key errors come before argument errors.
            ("TDIGEST.QUANTILE nokey abc", td_err("key does not exist")),
            (
                "TDIGEST.TRIMMED_MEAN nokey abc 0.9",
                td_err("key does not exist"),
            ),
            ("TDIGEST.ADD nokey 1", td_err("key does not exist")),
            ("TDIGEST.ADD s abc", err(WRONGTYPE)),
            ("TDIGEST.ADD d 1 abc", td_err("error parsing val parameter")),
            ("TDIGEST.ADD d 1 nan", td_err("error parsing val parameter")),
            ("TDIGEST.ADD d 1e400", td_err("error parsing val parameter")),
            (
                "TDIGEST.ADD d inf 1",
                td_err("val parameter needs to be a finite number"),
            ),
            ("TDIGEST.ADD d", arity("tdigest.add")),
            (
                "TDIGEST.QUANTILE d 2 abc",
                td_err("quantile should be in [0,1]"),
            ),
            ("TDIGEST.QUANTILE d abc 2", td_err("error parsing quantile")),
            (
                "TDIGEST.QUANTILE d -0.1",
                td_err("quantile should be in [0,1]"),
            ),
            ("TDIGEST.QUANTILE d", arity("tdigest.quantile")),
            ("TDIGEST.CDF d 1 x", td_err("error parsing cdf")),
            ("TDIGEST.CDF d nan", td_err("error parsing cdf")),
            ("TDIGEST.RANK d x", td_err("error parsing value")),
            ("TDIGEST.REVRANK d 1 x", td_err("error parsing value")),
            ("TDIGEST.BYRANK d 1.5", td_err("error parsing rank")),
            (
                "TDIGEST.BYRANK d -1 x",
                td_err("rank needs to be non negative"),
            ),
            ("TDIGEST.BYREVRANK d x -1", td_err("error parsing rank")),
            (
                "TDIGEST.TRIMMED_MEAN d x 0.5",
                td_err("error parsing low_cut_percentile"),
            ),
            (
                "TDIGEST.TRIMMED_MEAN d 0.1 x",
                td_err("error parsing high_cut_percentile"),
            ),
            (
                "TDIGEST.TRIMMED_MEAN d 0.1 2",
                td_err("low_cut_percentile and high_cut_percentile should be in [0,1]"),
            ),
            (
                "TDIGEST.TRIMMED_MEAN d 0.5 0.5",
                td_err("low_cut_percentile should be lower than high_cut_percentile"),
            ),
            ("TDIGEST.TRIMMED_MEAN d 0.1", arity("tdigest.trimmed_mean")),
            ("TDIGEST.RESET nokey", td_err("key does not exist")),
            ("TDIGEST.RESET d x", arity("tdigest.reset")),
            ("TDIGEST.MIN s", err(WRONGTYPE)),
            ("TDIGEST.MAX d x", arity("tdigest.max")),
        ] {
            assert_eq!(line(c, cmd), reply, "{cmd}");
        }
        // Nothing was added by the failed ADDs.
        assert_eq!(info_field(c, "d", "Observations"), 0);
    });
}

#[test]
fn merge_variants() {
    each(|c, resp3| {
        assert_eq!(line(c, "TDIGEST.CREATE a COMPRESSION 50"), ok());
        assert_eq!(line(c, &seq("a", 1, 100)), ok());
        assert_eq!(line(c, "TDIGEST.CREATE b COMPRESSION 200"), ok());
        assert_eq!(line(c, &seq("b", 101, 300)), ok());
        assert_eq!(line(c, "SET s x"), ok());
        // New destination: the largest source compression.
        assert_eq!(line(c, "TDIGEST.MERGE m 2 a b"), ok());
        assert_eq!(info_field(c, "m", "Compression"), 200);
        assert_eq!(info_field(c, "m", "Observations"), 300);
        assert_eq!(double(&line(c, "TDIGEST.MIN m"), resp3), 1.0);
        // Existing destination keeps its compression and its data.
        assert_eq!(line(c, "TDIGEST.CREATE d COMPRESSION 7"), ok());
        assert_eq!(line(c, "TDIGEST.ADD d 1000"), ok());
        assert_eq!(line(c, "TDIGEST.MERGE d 1 a"), ok());
        assert_eq!(info_field(c, "d", "Compression"), 7);
        assert_eq!(info_field(c, "d", "Observations"), 101);
        // OVERRIDE: the old data is dropped, compression is the sources' max.
        assert_eq!(line(c, "TDIGEST.MERGE d 1 a OVERRIDE"), ok());
        assert_eq!(info_field(c, "d", "Compression"), 50);
        assert_eq!(info_field(c, "d", "Observations"), 100);
        // The destination as a source, and a source twice.
        assert_eq!(line(c, "TDIGEST.MERGE d 2 d d COMPRESSION 9"), ok());
        assert_eq!(info_field(c, "d", "Observations"), 300);
        assert_eq!(info_field(c, "d", "Compression"), 9);
        // The first COMPRESSION counts; other words are ignored.
        assert_eq!(
            line(c, "TDIGEST.MERGE x 1 a compression 12 junk COMPRESSION 13"),
            ok()
        );
        assert_eq!(info_field(c, "x", "Compression"), 12);
        // MERGE replaces the destination: its TTL goes.
        assert_eq!(line(c, "EXPIRE d 1000"), int(1));
        assert_eq!(line(c, "TDIGEST.MERGE d 1 d"), ok());
        assert_eq!(line(c, "TTL d"), int(-1));
        for (cmd, reply) in [
            ("TDIGEST.MERGE m 1", arity("tdigest.merge")),
            ("TDIGEST.MERGE m 3 a b", arity("tdigest.merge")),
            ("TDIGEST.MERGE m x a", td_err("error parsing numkeys")),
            (
                "TDIGEST.MERGE m 0 a",
                td_err("numkeys needs to be a positive integer"),
            ),
            ("TDIGEST.MERGE m 1 a junk", td_err("wrong keyword")),
            ("TDIGEST.MERGE m 1 a COMPRESSION", arity("tdigest.merge")),
            (
                "TDIGEST.MERGE m 1 a COMPRESSION OVERRIDE",
                td_err("error parsing compression parameter"),
            ),
            (
                "TDIGEST.MERGE m 1 a COMPRESSION 0",
                td_err("compression parameter needs to be a positive integer"),
            ),
            ("TDIGEST.MERGE m 2 a missing", td_err("key does not exist")),
            ("TDIGEST.MERGE new 1 new", td_err("key does not exist")),
            ("TDIGEST.MERGE m 2 a s", err(WRONGTYPE)),
            ("TDIGEST.MERGE s 1 a", err(WRONGTYPE)),
            (
                "TDIGEST.MERGE m 1 a COMPRESSION 100000000000000",
                td_err("allocation of destination digest failed"),
            ),
        ] {
            assert_eq!(line(c, cmd), reply, "{cmd}");
        }
        assert_eq!(c.cmd(&["EXISTS", "new"]), int(0));
    });
}

#[test]
fn writes_keep_the_ttl_and_reset_empties() {
    each(|c, resp3| {
        assert_eq!(line(c, "TDIGEST.CREATE t"), ok());
        assert_eq!(line(c, "EXPIRE t 1000"), int(1));
        assert_eq!(line(c, &seq("t", 1, 50)), ok());
        expect(c, resp3, "TDIGEST.QUANTILE t 0.5", &[25.5]);
        assert_eq!(line(c, "TDIGEST.RESET t"), ok());
        assert!(line(c, "TTL t").as_int() > 0);
        let values: Vec<i64> = info(c, "t").iter().map(|(_, v)| *v).collect();
        assert_eq!(values, [100, 610, 0, 0, 0, 0, 0, 0, 9840]);
        assert!(double(&line(c, "TDIGEST.MIN t"), resp3).is_nan());
        assert_eq!(line(c, "TDIGEST.ADD t 7"), ok());
        assert_eq!(double(&line(c, "TDIGEST.MAX t"), resp3), 7.0);
    });
}

/// Reads compress: RANK only for values within [min, max] (§4.11).
#[test]
fn which_reads_compress() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE w"), ok());
        assert_eq!(line(c, "TDIGEST.ADD w 1 2 3"), ok());
        line(c, "TDIGEST.RANK w 100");
        line(c, "TDIGEST.MIN w");
        line(c, "TDIGEST.INFO w");
        assert_eq!(info_field(c, "w", "Unmerged nodes"), 3);
        line(c, "TDIGEST.RANK w 2");
        assert_eq!(info_field(c, "w", "Merged nodes"), 3);
        assert_eq!(info_field(c, "w", "Total compressions"), 1);
        // A DUMP compresses too, as RedisBloom's does.
        assert_eq!(line(c, "TDIGEST.ADD w 4 5"), ok());
        c.cmd(&["DUMP", "w"]);
        assert_eq!(info_field(c, "w", "Unmerged nodes"), 0);
    });
}

#[test]
fn type_name_and_encoding() {
    each(|c, _| {
        assert_eq!(line(c, "TDIGEST.CREATE t"), ok());
        assert_eq!(line(c, "TYPE t"), simple("TDIS-TYPE"));
        let dump = c.cmd(&["DUMP", "t"]);
        // RDB_TYPE_MODULE_2 and the module id of TDIS-TYPE, encoding 0.
        assert_eq!(
            &dump.as_bytes()[..10],
            b"\x07\x81\x4c\x32\x12\xf9\x36\x0f\x10\x00"
        );
    });
}
