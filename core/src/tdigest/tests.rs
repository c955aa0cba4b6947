//! The test vectors of docs/tdigest.md §9 (each measured on RedisBloom and
//! written as the server prints doubles, `%.17g`), the DUMP images of §7.1,
//! and property tests.

use super::query::Compressions;
use super::*;
use crate::args::parse_f64;
use crate::rdb::{Primitive, PrimitiveSource};
use proptest::prelude::*;

/// `%.17g`, the text Redis 7.0 replies for a double.
fn g17(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is large enough for any %.17g rendering, and
    // snprintf NUL-terminates within it.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.17g".as_ptr(), x) };
    String::from_utf8_lossy(&buf[..n as usize]).into_owned()
}

fn texts(v: &[f64]) -> String {
    v.iter().map(|&x| g17(x)).collect::<Vec<_>>().join(" ")
}

fn nums(s: &str) -> Vec<f64> {
    s.split(' ')
        .map(|t| parse_f64(t.as_bytes()).unwrap())
        .collect()
}

fn digest(compression: i64, values: &[f64]) -> TDigest {
    let mut td = TDigest::new(compression as f64).unwrap();
    for &v in values {
        td.add(v, 1).unwrap();
    }
    td
}

struct Info {
    merged: i32,
    unmerged: i32,
    merged_weight: i64,
    unmerged_weight: i64,
    compressions: i64,
}

fn info(td: &TDigest) -> Info {
    Info {
        merged: td.merged_nodes(),
        unmerged: td.unmerged_nodes(),
        merged_weight: td.merged_weight(),
        unmerged_weight: td.unmerged_weight(),
        compressions: td.total_compressions(),
    }
}

fn assert_info(td: &TDigest, want: (i32, i32, i64, i64, i64)) {
    let i = info(td);
    assert_eq!(
        (
            i.merged,
            i.unmerged,
            i.merged_weight,
            i.unmerged_weight,
            i.compressions
        ),
        want
    );
}

fn quantiles(td: &mut TDigest, qs: &str) -> String {
    let mut out = Vec::new();
    td.quantiles(&nums(qs), &mut out, &mut Compressions::default());
    texts(&out)
}

fn cdfs(td: &mut TDigest, vs: &str) -> String {
    let v: Vec<f64> = nums(vs)
        .into_iter()
        .map(|v| td.cdf(v, &mut Compressions::default()))
        .collect();
    texts(&v)
}

fn ranks(td: &mut TDigest, vs: &str, reverse: bool) -> String {
    let mut out = Vec::new();
    td.ranks(&nums(vs), reverse, &mut out, &mut Compressions::default());
    out.iter().map(i64::to_string).collect::<Vec<_>>().join(" ")
}

fn by_ranks(td: &mut TDigest, rs: &str, reverse: bool) -> String {
    let r: Vec<i64> = rs.split(' ').map(|t| t.parse().unwrap()).collect();
    let mut out = Vec::new();
    td.by_ranks(&r, reverse, &mut out, &mut Compressions::default());
    texts(&out)
}

fn trimmed(td: &mut TDigest, lo: f64, hi: f64) -> String {
    g17(td.trimmed_mean(lo, hi, &mut Compressions::default()))
}

fn seq_1000() -> TDigest {
    let values: Vec<f64> = (1..=1000).map(f64::from).collect();
    digest(100, &values)
}

#[test]
fn vectors_sequence_1_to_1000() {
    let mut t = seq_1000();
    assert_eq!(t.capacity(), 610);
    assert_eq!(t.memory_usage(), 9840);
    assert_info(&t, (40, 391, 609, 391, 1));
    assert_eq!(
        quantiles(&mut t, "0 0.001 0.01 0.1 0.25 0.5 0.75 0.9 0.99 0.999 1"),
        "1 2 10.5 100.5 250.5 500.5 750.5 900.5 990.5 1000 1000"
    );
    assert_info(&t, (42, 0, 1000, 0, 2));
    assert_eq!(
        cdfs(
            &mut t,
            "0 1 1.5 2 10 100 250.5 500 500.5 999 999.5 1000 1001"
        ),
        "0 0.00050000000000000001 0.001 0.0015 0.0094999999999999998 0.099500000000000005 \
         0.25 0.4995 0.5 0.99850000000000005 0.999 0.99950000000000006 1"
    );
    assert_eq!(
        ranks(&mut t, "0 1 1.5 10 250.5 500 999 1000 1001", false),
        "-1 0 1 9 250 499 998 999 1000"
    );
    assert_eq!(
        ranks(&mut t, "0 1 1.5 10 250.5 500 999 1000 1001", true),
        "1000 999 999 990 750 500 1 0 -1"
    );
    assert_eq!(
        by_ranks(&mut t, "0 1 2 10 250 500 998 999 1000", false),
        "1 2 3 10.5 250.5 500.5 999 1000 inf"
    );
    assert_eq!(
        by_ranks(&mut t, "0 1 2 10 250 500 998 999 1000", true),
        "1000 999 998 989.5 749.5 499.5 2 1 -inf"
    );
    assert_eq!(trimmed(&mut t, 0.1, 0.9), "500.495");
    assert_eq!(trimmed(&mut t, 0.0, 1.0), "500.5");
    assert_eq!(trimmed(&mut t, 0.25, 0.75), "500.25099999999998");
    assert_eq!(
        (g17(t.min_reply()), g17(t.max_reply())),
        ("1".into(), "1000".into())
    );
}

/// The 400 values of §9.2 as the strings sent to the server.
fn random_400() -> Vec<f64> {
    let mut x: u64 = 42;
    (0..400)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((x >> 11) % 20001) as f64 - 10000.0;
            parse_f64(format!("{:.2}", v / 100.0).as_bytes()).unwrap()
        })
        .collect()
}

fn random_r() -> (TDigest, Vec<f64>) {
    let values = random_400();
    (digest(20, &values[..200]), values)
}

#[test]
fn vectors_random_list_compression_20() {
    let (mut r, values) = random_r();
    assert_eq!((r.capacity(), r.memory_usage()), (130, 2160));
    assert_info(&r, (13, 71, 129, 71, 1));
    assert_eq!(
        quantiles(&mut r, "0 0.01 0.1 0.25 0.5 0.75 0.9 0.99 1"),
        "-99.859999999999999 -99.209999999999994 -86.06410000000001 -50.396396575342486 \
         2.0341790272810174 52.04644605064248 81.953875000000011 99.299999999999997 99.930000000000007"
    );
    for &v in &values[200..] {
        r.add(v, 1).unwrap();
    }
    assert_info(&r, (15, 85, 315, 85, 3));
    assert_eq!(
        quantiles(&mut r, "0 0.01 0.1 0.25 0.5 0.75 0.9 0.99 1"),
        "-99.859999999999999 -98.061785714285719 -80.534188571428544 -47.057482734437748 \
         -0.69374753414620383 47.646968656075565 79.790708333333342 98.244444444444454 99.930000000000007"
    );
    assert_eq!(
        quantiles(&mut r, "0.9 0.1 0.5"),
        "79.790708333333342 -80.534188571428544 -0.69374753414620383"
    );
    assert_eq!(
        cdfs(&mut r, "-100 -50 -0.5 0 12.34 50 99.99 100"),
        "0 0.23414284517346307 0.50104683551670792 0.5037483809101011 0.57042252121904446 \
         0.76103883991878307 1 1"
    );
    assert_eq!(
        ranks(&mut r, "-100 -50 0 50 100", false),
        "-1 94 201 304 400"
    );
    assert_eq!(
        ranks(&mut r, "-100 -50 0 50 100", true),
        "400 306 199 96 -1"
    );
    assert_eq!(
        by_ranks(&mut r, "0 1 7 100 200 399 400", false),
        "-99.859999999999999 -99.209999999999994 -96.672499999999999 -47.057482734437748 \
         -0.69374753414620383 99.930000000000007 inf"
    );
    assert_eq!(
        by_ranks(&mut r, "0 1 7 100 200 399 400", true),
        "99.930000000000007 99.299999999999997 96.339722222222235 47.114070416487763 \
         -1.1564456635416855 -99.859999999999999 -inf"
    );
    assert_eq!(trimmed(&mut r, 0.1, 0.9), "-0.39867321428571645");
    assert_eq!(trimmed(&mut r, 0.0, 1.0), "-0.32132499999999792");
    assert_eq!(g17(r.min_reply()), "-99.859999999999999");
    assert_eq!(g17(r.max_reply()), "99.930000000000007");
}

/// TDIGEST.MERGE's core: a new digest, the old destination unless
/// OVERRIDE, then every source (§5.4 step 7).
fn merged(compression: i64, sources: &mut [&mut TDigest]) -> TDigest {
    let mut m = TDigest::new(compression as f64).unwrap();
    for s in sources.iter_mut() {
        m.merge_from(s).1.unwrap();
    }
    m
}

#[test]
fn vectors_merges() {
    // r as §9.2 left it: queried after 200 values, then 200 more.
    let (mut r, values) = random_r();
    r.compress();
    for &v in &values[200..] {
        r.add(v, 1).unwrap();
    }
    let mut t = seq_1000();
    let mut mm = merged(100, &mut [&mut r, &mut t]);
    assert_eq!(mm.capacity(), 610);
    assert_info(&mm, (16, 42, 400, 1000, 1));
    assert_eq!(
        quantiles(&mut mm, "0 0.01 0.1 0.5 0.9 0.99 1"),
        "-99.859999999999999 -93.830377192982453 -28.501081553073519 300.5 860.5 986.5 1000"
    );
    // MERGE r 1 t COMPRESSION 5: old r, then t.
    let mut r2 = merged(5, &mut [&mut r, &mut t]);
    assert_eq!((r2.capacity(), r2.memory_usage() - 72), (40, 648));
    assert_info(&r2, (8, 11, 1365, 35, 2));
    assert_eq!(
        quantiles(&mut r2, "0 0.01 0.1 0.5 0.9 0.99 1"),
        "-99.859999999999999 -93.840200228832956 -15.081206668019743 336.80239226809755 \
         862.74989700824051 986.5 1000"
    );
}

#[test]
fn vectors_small_cases() {
    let values: Vec<f64> = (1..=10).map(f64::from).collect();
    let mut d = digest(100, &values);
    assert_eq!(quantiles(&mut d, "0 0.3 0.5 1"), "1 4 6 10");
    assert_eq!(
        cdfs(&mut d, "0 3.5 5 11"),
        "0 0.29999999999999999 0.45000000000000001 1"
    );
    assert_eq!(trimmed(&mut d, 0.1, 0.9), "5.5");
    assert_eq!(by_ranks(&mut d, "0 3 10", false), "1 4 inf");
    assert_eq!(by_ranks(&mut d, "0 3 10", true), "10 7 -inf");
    assert_eq!(ranks(&mut d, "-5 5", false), "-1 4");
    d.add(16.0, 1).unwrap(); // ADD d 0x10
    assert_eq!(cdfs(&mut d, "inf -inf 5"), "1 0 0.40909090909090912");
    assert_eq!(ranks(&mut d, "-inf inf 5 0 11", false), "-1 11 4 -1 10");
    assert_eq!(ranks(&mut d, "-inf inf 5 0 11", true), "11 -1 6 11 1");
    assert_eq!(by_ranks(&mut d, "0 1 5 9 10 11", false), "1 2 6 10 16 inf");
    assert_eq!(by_ranks(&mut d, "0 1 5 9 10 11", true), "16 10 6 2 1 -inf");

    let mut z = digest(100, &[-0.0, 0.0, -0.0, 1.0]);
    assert_eq!(quantiles(&mut z, "0 0.3 1"), "0 -0 1");
    assert_eq!(g17(z.min_reply()), "-0");
    assert_eq!(by_ranks(&mut z, "0 1", false), "-0 -0");

    let mut n = digest(100, &[1.0, 2.0, 3.0]);
    assert_eq!(
        trimmed(&mut n, 0.3333333333333333, 0.33333333333333337),
        "-nan"
    );
    assert_eq!(ranks(&mut n, "2", false), "1");

    let e = TDigest::new(100.0).unwrap();
    assert_eq!(g17(e.min_reply()), "nan");
}

#[test]
fn vectors_single_observation() {
    let mut one = digest(100, &[5.0]);
    assert_eq!(quantiles(&mut one, "0 0.5 1"), "nan nan nan");
    assert_eq!(cdfs(&mut one, "5"), "nan");
    assert_eq!(ranks(&mut one, "5", false), i64::MIN.to_string());
    assert_eq!(ranks(&mut one, "5", true), i64::MIN.to_string());
    assert_eq!(trimmed(&mut one, 0.1, 0.9), "nan");
    assert_eq!(by_ranks(&mut one, "0 1", false), "5 inf");
    assert_eq!(
        (g17(one.min_reply()), g17(one.max_reply())),
        ("5".into(), "5".into())
    );
    assert_info(&one, (0, 1, 0, 1, 0));
}

fn saved(td: &TDigest) -> Vec<Primitive> {
    let mut out = Vec::new();
    td.rdb_save(&mut out);
    out
}

fn load(p: &[Primitive]) -> Result<TDigest, LoadError> {
    TDigest::rdb_load(&mut PrimitiveSource::new(p), 0)
}

use Primitive::{Double as D, Unsigned as U};

#[test]
fn dump_images_of_7_1() {
    let mut s = TDigest::new(1.0).unwrap();
    let header = |cmp: f64, min: f64, max: f64| vec![D(cmp), D(min), D(max), U(16)];
    let mut empty = header(1.0, f64::MAX, -f64::MAX);
    empty.extend([U(0), U(0), U(0), D(0.0), D(0.0)]);
    assert_eq!(saved(&s), empty);
    s.add(5.0, 1).unwrap();
    s.compress();
    let mut single = header(1.0, 5.0, 5.0);
    single.extend([U(0), U(1), U(0), D(0.0), D(1.0)]);
    assert_eq!(saved(&s), single);
    for v in [3.0, 1.5, -2.0, 8.0] {
        s.add(v, 1).unwrap();
    }
    assert_info(&s, (0, 5, 0, 5, 0));
    s.compress();
    assert_info(&s, (3, 0, 5, 0, 1));
    let mut three = header(1.0, -2.0, 8.0);
    three.extend([U(3), U(0), U(1), D(5.0), D(0.0)]);
    three.extend([
        D(-2.0),
        D(3.1666666666666665),
        D(8.0),
        D(1.0),
        D(3.0),
        D(1.0),
    ]);
    assert_eq!(saved(&s), three);
    for v in 10..=21 {
        s.add(f64::from(v), 1).unwrap();
    }
    assert_info(&s, (3, 12, 5, 12, 1));
    s.compress();
    let mut after = header(1.0, -2.0, 21.0);
    after.extend([U(3), U(0), U(2), D(17.0), D(0.0)]);
    after.extend([
        D(-2.0),
        D(12.166666666666666),
        D(21.0),
        D(1.0),
        D(15.0),
        D(1.0),
    ]);
    assert_eq!(saved(&s), after);
    assert_eq!(
        quantiles(&mut s, "0 0.25 0.5 0.75 1"),
        "-2 4.1388888888888884 12.166666666666666 17.172222222222221 21"
    );
    // Loading gives back the same digest.
    let mut back = load(&saved(&s)).unwrap();
    assert_eq!(saved(&back), saved(&s));
    assert_eq!(
        quantiles(&mut back, "0 0.25 0.5 0.75 1"),
        "-2 4.1388888888888884 12.166666666666666 17.172222222222221 21"
    );
}

#[test]
fn single_observation_survives_a_reload() {
    let mut one = digest(100, &[5.0]);
    one.compress();
    let mut back = load(&saved(&one)).unwrap();
    let mut words = (Vec::new(), Vec::new());
    one.state_words(|w| words.0.push(w));
    back.state_words(|w| words.1.push(w));
    assert_eq!(words.0, words.1, "same node, same counters");
    back.add(10.0, 1).unwrap();
    assert_eq!(quantiles(&mut back, "0 0.5 1"), "5 10 10");
}

#[test]
fn loader_refuses_what_redisbloom_cannot_write() {
    let mut t = digest(12, &[1.0, 2.0, 3.0]);
    t.compress();
    let good = saved(&t);
    assert!(load(&good).is_ok());
    let with = |i: usize, p: Primitive| {
        let mut v = good.clone();
        v[i] = p;
        v
    };
    // The 2026 out-of-bounds payload: cap 1, 97 merged nodes.
    let mut oob = vec![
        D(12.0),
        D(1.0),
        D(1.0),
        U(1),
        U(97),
        U(1),
        U(1),
        D(1.0),
        D(1.0),
    ];
    oob.extend(std::iter::repeat_n(D(1.0), 194));
    assert_eq!(load(&oob).err(), Some(LoadError::Invalid));
    for bad in [
        with(3, U(97)),       // stored cap not the compression's
        with(4, U(83)),       // merged past cap
        with(5, U(u64::MAX)), // negative unmerged
        with(5, U(81)),       // merged + unmerged past cap
        with(0, D(0.5)),      // compression below 1
        with(0, D(f64::NAN)),
        with(0, D(-1.0)),
        with(0, D(1e300)),
        with(0, D(357913940.0)), // capacity past i32::MAX
    ] {
        assert_eq!(load(&bad).err(), Some(LoadError::Invalid), "{bad:?}");
    }
    for n in 0..good.len() {
        assert_eq!(load(&good[..n]).err(), Some(LoadError::Read), "cut at {n}");
    }
    // Values no command sequence produces, which would not save and load
    // back to themselves or would fail later commands (issue 20).
    let two63 = 2f64.powi(63);
    for (i, v) in [
        (7, f64::NAN), // merged weight
        (7, f64::INFINITY),
        (7, -1.0),
        (7, two63),
        (7, 1e19),
        (7, 2.5),
        (7, 1.0),      // merged nodes of a total of 1
        (8, f64::NAN), // unmerged weight, with no unmerged node
        (8, f64::INFINITY),
        (8, f64::NEG_INFINITY),
        (8, two63),
        (8, 1.0),
        (12, -1.0), // node weights
        (12, f64::NAN),
        (12, 0.5),
        (12, two63),
        (12, 4.0e18),  // node weights far above the merged weight
        (1, f64::NAN), // min, max
        (2, f64::NAN),
        (1, 4.0), // min above max
    ] {
        assert_eq!(
            load(&with(i, D(v))).err(),
            Some(LoadError::Invalid),
            "{i}: {v}"
        );
    }
    assert_eq!(
        load(&with(6, U(u64::MAX))).err(),
        Some(LoadError::Invalid),
        "compressions"
    );
    // The largest count stays loadable after one more compression.
    let mut most = load(&with(6, U(i64::MAX as u64))).unwrap();
    most.add(7.0, 1).unwrap();
    most.compress();
    assert_eq!(most.total_compressions(), i64::MAX);
    assert!(load(&saved(&most)).is_ok());
    // Merged nodes up to the capacity: a compression can fill every slot
    // (a merge into compression 1 leaves 16 centroids in 16 slots).
    let full = |merged: u64| {
        let mut v = vec![D(12.0), D(1.0), D(1.0), U(82), U(merged), U(0), U(1)];
        v.extend([D(merged as f64), D(0.0)]);
        v.extend(std::iter::repeat_n(D(1.0), 2 * merged as usize));
        v
    };
    assert!(load(&full(81)).is_ok());
    // Such a digest answers as the one commands built: with no unmerged
    // node to compress, an observation merges two centroids to free a slot
    // (§4.3); a merge's centroid finds none.
    let mut filled = load(&full(82)).unwrap();
    assert_eq!(filled.add(2.0, 1), Err(Overflow));
    assert!(filled.add_values(&[2.0]).is_ok());
    assert_eq!((filled.merged_nodes(), filled.unmerged_nodes()), (81, 1));
    filled.compress(); // as every save does first (§8.3)
    assert!(load(&saved(&filled)).is_ok());
    assert_eq!(load(&full(83)).err(), Some(LoadError::Invalid));
    // An empty digest carries the sentinels and no weight.
    let empty = saved(&TDigest::new(12.0).unwrap());
    assert!(load(&empty).is_ok());
    let mut e = empty.clone();
    e[1] = D(1.0);
    assert_eq!(load(&e).err(), Some(LoadError::Invalid));
    // Unmerged nodes only as one observation (or RedisBloom's zero slots).
    let mut one = digest(12, &[5.0]);
    one.compress();
    let one = saved(&one);
    assert!(load(&one).is_ok());
    let mut two = one.clone();
    two[5] = U(2);
    assert!(load(&two).is_ok(), "zero-weight nodes of RedisBloom");
    two[8] = D(2.0);
    assert_eq!(load(&two).err(), Some(LoadError::Invalid));
    // Zero weights, weights that do not add up (RedisBloom's §7.3 forms),
    // NaN or infinite means (extreme values overflow a centroid update) and
    // the largest weights are RedisBloom's own, and rsbloom's.
    assert!(load(&with(12, D(0.0))).is_ok());
    assert!(load(&with(7, D(5.0))).is_ok());
    assert!(load(&with(9, D(f64::NAN))).is_ok());
    assert!(load(&with(9, D(f64::NEG_INFINITY))).is_ok());
    let mut big = with(7, D(2f64.powi(63) - 1024.0));
    big[12] = D(9.0e18);
    assert!(load(&big).is_ok());
}

#[test]
fn an_infinite_single_observation_survives_a_reload() {
    for v in [f64::INFINITY, f64::NEG_INFINITY] {
        // A centroid of weight 1 and infinite mean, carried by a merge.
        let mut td = TDigest::new(40.0).unwrap();
        td.add(v, 1).unwrap();
        let back = load(&saved(&td)).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        td.state_words(|w| a.push(w));
        back.state_words(|w| b.push(w));
        assert_eq!(a, b, "{v}");
    }
}

#[test]
fn extreme_values_make_nan_means_that_reload() {
    let mut td = digest(
        5,
        &[
            -1.7e308, 1.7e308, 1e308, -1e308, 1.7e308, 0.0, 1.7e308, -1.7e308,
        ],
    );
    for _ in 0..4 {
        for v in [1.7e308, -1.7e308, 1e308, 3.0, -1.7e308, 1.7e308] {
            td.add(v, 1).unwrap();
        }
        td.compress();
    }
    let n = td.merged_nodes() as usize;
    assert!(
        td.nodes.means()[..n].iter().any(|m| m.is_nan()),
        "{:?}",
        &td.nodes.means()[..n]
    );
    let back = load(&saved(&td)).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    td.state_words(|w| a.push(w));
    back.state_words(|w| b.push(w));
    assert_eq!(a, b);
}

#[test]
fn total_weight_stops_short_of_2_pow_63() {
    let mut td = digest(12, &[1.0]);
    // 2^63 − 400 rounds up to 2^63: the double total does not convert back.
    assert_eq!(td.add(2.0, i64::MAX - 400), Err(Overflow));
    // A save may round each weight up by 2^-53 of it: the centroids stop
    // where that cannot pass i64::MAX, 2^63 − 2048.
    td.add(2.0, i64::MAX - 2048).unwrap();
    assert_eq!(td.add(3.0, 1), Err(Overflow));
    td.compress();
    assert!(load(&saved(&td)).is_ok());
    let mut td = digest(12, &[1.0]);
    td.add(2.0, (1 << 62) + (1 << 61)).unwrap();
    td.compress();
    let back = load(&saved(&td)).unwrap();
    assert_eq!(saved(&back), saved(&td));
}

#[test]
fn record_is_redisbloom_s_80_bytes() {
    assert_eq!(std::mem::size_of::<TDigest>(), RECORD_BYTES as usize);
}

#[test]
fn capacity_limits() {
    assert_eq!(capacity_for(1.0), Some(16));
    assert_eq!(capacity_for(100.9), Some(610));
    assert_eq!(capacity_for(357913939.0), Some(2147483644));
    assert_eq!(capacity_for(357913940.0), None);
    assert_eq!(capacity_for(1e17), None);
    assert_eq!(capacity_for(0.9), None);
    assert_eq!(capacity_for(f64::INFINITY), None);
    assert!(TDigest::new(1e17).is_err());
}

#[test]
#[allow(clippy::approx_constant)] // the literal is what is checked
fn two_pi_is_redisbloom_s_constant() {
    assert_eq!(TWO_PI.to_bits(), 6.283185307179586f64.to_bits());
    assert_eq!(TWO_PI, 2.0 * std::f64::consts::PI);
}

#[test]
fn c_conversions() {
    assert_eq!(c_i64(f64::NAN), i64::MIN);
    assert_eq!(c_i64(1e19), i64::MIN);
    assert_eq!(c_i64(-1e19), i64::MIN);
    assert_eq!(c_i64(-2.9), -2);
    assert_eq!(c_i64(9.2e18), 9_200_000_000_000_000_000);
}

/// A digest from a generated workload: values over a few ADD batches.
fn workload() -> impl Strategy<Value = (i64, Vec<f64>)> {
    (
        1i64..60,
        proptest::collection::vec(
            prop_oneof![
                (-1000i32..1000).prop_map(|v| f64::from(v) / 8.0),
                (0i32..4).prop_map(f64::from),
                -1e6f64..1e6,
            ],
            2..400,
        ),
    )
}

proptest! {
    #[test]
    fn quantiles_are_monotone_in_q((c, values) in workload(), mut qs in proptest::collection::vec(0.0f64..=1.0, 1..20)) {
        qs.sort_by(f64::total_cmp);
        let mut td = digest(c, &values);
        let mut out = Vec::new();
        td.quantiles(&qs, &mut out, &mut Compressions::default());
        for w in out.windows(2) {
            prop_assert!(w[0] <= w[1], "{out:?}");
        }
        let (lo, hi) = (td.min(), td.max());
        prop_assert!(out.iter().all(|&x| lo <= x && x <= hi));
    }

    #[test]
    fn cdf_is_monotone_in_the_value((c, values) in workload(), mut vs in proptest::collection::vec(-2e6f64..2e6, 1..20)) {
        vs.sort_by(f64::total_cmp);
        let mut td = digest(c, &values);
        let cdf: Vec<f64> = vs.iter().map(|&v| td.cdf(v, &mut Compressions::default())).collect();
        for w in cdf.windows(2) {
            prop_assert!(w[0] <= w[1], "{cdf:?}");
        }
        prop_assert!(cdf.iter().all(|&x| (0.0..=1.0).contains(&x)));
    }

    #[test]
    fn counts_stay_consistent((c, values) in workload()) {
        let mut td = digest(c, &values);
        prop_assert_eq!(td.size(), values.len() as i64);
        td.compress();
        prop_assert_eq!(td.unmerged_nodes(), 0);
        prop_assert_eq!(td.merged_weight(), values.len() as i64);
        let weights: i64 = td.nodes.weights()[..td.merged_nodes() as usize].iter().sum();
        prop_assert_eq!(weights, values.len() as i64);
        prop_assert!(td.merged_nodes() <= td.capacity());
        let mut r = Vec::new();
        td.ranks(&[td.max() + 1.0, td.min() - 1.0], false, &mut r, &mut Compressions::default());
        prop_assert_eq!(r, vec![values.len() as i64, -1]);
        // Ranks never exceed the observations.
        let mut r = Vec::new();
        td.ranks(&values, false, &mut r, &mut Compressions::default());
        prop_assert!(r.iter().all(|&x| (0..=values.len() as i64).contains(&x)));
    }

    #[test]
    fn save_and_load_round_trip((c, values) in workload()) {
        let mut td = digest(c, &values);
        td.compress();
        let image = saved(&td);
        let back = load(&image).unwrap();
        prop_assert_eq!(saved(&back), image);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        td.state_words(|w| a.push(w));
        back.state_words(|w| b.push(w));
        prop_assert_eq!(a, b);
    }

    #[test]
    fn loads_never_panic(prims in proptest::collection::vec(prop_oneof![
        any::<u64>().prop_map(U),
        (0u64..200).prop_map(U),
        any::<f64>().prop_map(D),
        (0u32..50).prop_map(|v| D(f64::from(v))),
    ], 0..40)) {
        if let Ok(mut td) = load(&prims) {
            td.add(1.0, 1).unwrap_or(());
            td.compress();
            let mut out = Vec::new();
            td.quantiles(&[0.0, 0.5, 1.0], &mut out, &mut Compressions::default());
        }
    }
}

/// The command sequence of docs/tdigest.md §4.3 (and of the replication
/// test): compression 1, nine rounds of `TDIGEST.MERGE d 48 d … d` (×49)
/// and a new extreme value, then a read: its compression merges none of
/// the 16 nodes (RedisBloom 2.8.2 gets there too, the replication test
/// compares); the next add frees a slot.
#[test]
fn commands_fill_every_slot() {
    let mut d = digest(1, &[0.0]);
    for extreme in [-1.0, 2.0, -3.0, 4.0, -5.0, 6.0, -7.0, 8.0, -9.0] {
        let mut m = TDigest::new(1.0).unwrap();
        for _ in 0..49 {
            m.merge_from(&mut d).1.unwrap();
        }
        d = m;
        d.add(extreme, 1).unwrap();
    }
    assert_eq!(d.compress(), Compressed::Done);
    assert_info(&d, (16, 0, 1662338881200250, 0, 674));
    d.add_values(&[20.0]).unwrap();
    assert_info(&d, (15, 1, 1662338881200250, 1, 674));
}

/// Issue 30: merged centroids filling every slot (what compression 1 after
/// TDIGEST.MERGE leaves). The next observation merges the lightest
/// adjacent pair to free a slot, instead of failing; a merge's centroid
/// still fails there, as in RedisBloom.
#[test]
fn full_digest_takes_further_observations() {
    let mut p = vec![
        Primitive::Double(1.0),
        Primitive::Double(0.0),
        Primitive::Double(15.0),
        Primitive::Unsigned(16),
        Primitive::Unsigned(16),
        Primitive::Unsigned(0),
        Primitive::Unsigned(1),
    ];
    let weights: Vec<i64> = (0..16)
        .map(|i| if i == 5 || i == 6 { 1 } else { 10 })
        .collect();
    p.push(Primitive::Double(weights.iter().sum::<i64>() as f64));
    p.push(Primitive::Double(0.0));
    p.extend((0..16).map(|i| Primitive::Double(f64::from(i))));
    p.extend(weights.iter().map(|&w| Primitive::Double(w as f64)));
    let mut td = TDigest::rdb_load(&mut PrimitiveSource::new(&p), 0).unwrap();
    assert_eq!((td.capacity(), td.merged_nodes()), (16, 16));
    let total = td.merged_weight();
    assert_eq!(td.add(20.0, 1), Err(Overflow));
    assert_eq!(td.merged_nodes(), 16);
    td.add_values(&[20.0]).unwrap();
    assert_eq!(info(&td).merged, 15);
    assert_eq!(info(&td).unmerged, 1);
    assert_eq!(td.merged_weight(), total);
    // Centroids 5 and 6 (weight 1 each) became one of weight 2 at 5.5.
    assert_eq!(td.nodes.weights()[5], 2);
    assert_eq!(td.nodes.means()[5], 5.5);
    assert_eq!(td.nodes.means()[6], 7.0);
    assert_eq!(td.max(), 20.0);
    let more: Vec<f64> = (0..100).map(f64::from).collect();
    td.add_values(&more).unwrap();
    assert_eq!(td.size(), total + 101);
}

/// Past 2^53 a compression's total rounds: 500 observations added to a
/// total near 2^63 (a double every 1024) are dropped from the merged weight
/// but stay in the centroids. Cycle after cycle their sum would pass what a
/// load accepts (and i64); the adds stop first, so every state saves and
/// loads back (issue 30).
#[test]
fn centroids_never_outweigh_what_loads() {
    let merged = i64::MAX - ((1 << 14) - 1);
    let image = [
        D(100.0),
        D(0.0),
        D(1.0),
        U(610),
        U(2),
        U(0),
        U(1),
        D(merged as f64),
        D(0.0),
        D(0.0),
        D(1.0),
        D((merged / 2) as f64),
        D((merged / 2) as f64),
    ];
    let mut td = load(&image).unwrap();
    let values: Vec<f64> = (0..500).map(f64::from).collect();
    let mut stopped = 0;
    for _ in 0..40 {
        stopped += usize::from(td.add_values(&values).is_err());
        td.compress();
        assert_eq!(td.merged_weight(), merged, "the rounding drops the adds");
        let back = load(&saved(&td)).expect("a compressed digest loads back");
        assert_eq!(saved(&back), saved(&td));
    }
    assert!((1..40).contains(&stopped), "{stopped} cycles stopped");
}
