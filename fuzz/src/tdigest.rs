//! Fuzz checks of the T-Digest core (docs/tdigest.md): the RDB decoder on
//! arbitrary bytes, the argument parsers of the TDIGEST.* commands, and
//! random operation sequences against the digest's invariants.

use rsbloom_core::args::{parse_f64, parse_i64, ArgError};
use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};
use rsbloom_core::tdigest::args::{
    parse_add, parse_cdf, parse_create, parse_merge, parse_quantiles, parse_rank_values,
    parse_ranks, parse_trimmed_mean, Parsed,
};
use rsbloom_core::tdigest::{capacity_for, Compressions, TDigest};

use super::{encode_primitives, le_f64, Input, ALLOC_CAP};

/// Whether a digest of this compression may be allocated by a check.
fn affordable(compression: f64) -> bool {
    capacity_for(compression).is_none_or(|cap| 16 * cap as u128 <= ALLOC_CAP)
}

fn saved(td: &TDigest) -> Vec<Primitive> {
    let mut out = Vec::new();
    td.rdb_save(&mut out);
    out
}

fn words(td: &TDigest) -> Vec<u64> {
    let mut out = Vec::new();
    td.state_words(|w| out.push(w));
    out
}

/// What every digest satisfies, however it was made.
fn check(td: &TDigest) {
    let cap = td.capacity();
    assert_eq!(Some(cap), capacity_for(td.compression()));
    assert!(td.merged_nodes() >= 0 && td.unmerged_nodes() >= 0);
    assert!(td.merged_nodes() + td.unmerged_nodes() <= cap);
    assert_eq!(td.memory_usage(), 80 + 16 * cap as u64);
}

/// Every estimate, on the digest itself. `strict`: a digest of ordinary
/// observations (not loaded from arbitrary bytes, no value near ±1.7e308
/// that overflows a centroid), whose estimates lie in their ranges.
fn estimates(td: &mut TDigest, strict: bool) {
    let mut c = Compressions::default();
    let size = td.size();
    let (min, max) = (td.min(), td.max());
    let mut q = Vec::new();
    td.quantiles(&[0.0, 0.25, 0.5, 1.0, 0.1], &mut q, &mut c);
    let mut cdf = Vec::new();
    for v in [f64::NEG_INFINITY, -1.0, 0.0, 1.0, 1e300, f64::INFINITY] {
        cdf.push(td.cdf(v, &mut c));
    }
    let mut r = Vec::new();
    td.ranks(&[-1e300, 0.0, 3.0, 1e300], false, &mut r, &mut c);
    let mut b = Vec::new();
    td.by_ranks(&[0, 1, 7, i64::MAX], true, &mut b, &mut c);
    let t = td.trimmed_mean(0.1, 0.9, &mut c);
    if !strict || size < 2 {
        return;
    }
    // Within [min, max] up to the rounding of centroid updates.
    let slack = 1e-9 * (min.abs() + max.abs() + f64::MIN_POSITIVE);
    let within = |x: f64| min - slack <= x && x <= max + slack;
    // A first centroid of weight 2 divides by zero (§4.6 step 1): NaN.
    assert!(q.iter().all(|&x| x.is_nan() || within(x)), "{q:?}");
    assert!(cdf.iter().all(|x| (0.0..=1.0).contains(x)), "{cdf:?}");
    assert!(cdf.windows(2).all(|w| w[0] <= w[1]), "{cdf:?}");
    assert!(r.iter().all(|x| (-1..=size).contains(x)), "{r:?}");
    assert!(t.is_nan() || within(t), "{t}");
}

/// A compressed save, loaded back: the same state, and the same image
/// when saved again (issue 20: what is accepted survives).
fn round_trip(td: &mut TDigest) -> TDigest {
    td.compress();
    let image = saved(td);
    let back = TDigest::rdb_load(&mut PrimitiveSource::new(&image), 0).expect("own image");
    assert_eq!(words(&back), words(td), "reload changed the state");
    assert_eq!(
        encode_primitives(&saved(&back)),
        encode_primitives(&image),
        "save/load is not the identity"
    );
    back
}

/// INFO of a loaded digest is one a digest can report: no negative count
/// or weight, and (total above 1) nothing left unmerged by a compression.
fn check_info(td: &TDigest) {
    assert!(td.merged_weight() >= 0 && td.unmerged_weight() >= 0);
    assert!(td.size() >= 0, "negative Observations");
    assert!(td.total_compressions() >= 0);
    assert!(!td.min().is_nan() && !td.max().is_nan());
}

/// Issue 30: INFO's counts stay within what the contents allow, however
/// the digest was made: Observations is both weights (no wrap), the
/// unmerged nodes weigh at most the unmerged weight (exactly it but for
/// RedisBloom's zero-weight nodes), and the centroids at most what a load
/// accepts for the merged weight (docs/tdigest.md §7.2 item 4: a little
/// more, what rounding past 2^53 drops from the total, within i64).
fn check_counts(td: &TDigest) {
    let w = words(td);
    let merged = td.merged_nodes() as usize;
    let weights: Vec<i128> = w[9..].chunks(2).map(|p| i128::from(p[1] as i64)).collect();
    assert_eq!(weights.len(), merged + td.unmerged_nodes() as usize);
    assert!(weights.iter().all(|&x| x >= 0), "negative node weight");
    let (mw, uw) = (
        i128::from(td.merged_weight()),
        i128::from(td.unmerged_weight()),
    );
    assert_eq!(
        i128::from(td.size()),
        mw + uw,
        "Observations is not both weights"
    );
    let (centroids, unmerged) = weights.split_at(merged);
    assert!(
        unmerged.iter().sum::<i128>() <= uw,
        "unmerged nodes outweigh"
    );
    let sum: i128 = centroids.iter().sum();
    assert!(
        sum <= (mw + (mw >> 20)).min(i128::from(i64::MAX)),
        "centroids outweigh"
    );
}

/// A compressed save loads back, to a digest that saves the same image
/// (weights past 2^53 round in it, so the state itself may differ).
fn reloads(td: &mut TDigest) {
    td.compress();
    let image = saved(td);
    let back = TDigest::rdb_load(&mut PrimitiveSource::new(&image), 0).expect("saved image");
    check_counts(&back);
    assert_eq!(encode_primitives(&saved(&back)), encode_primitives(&image));
}

/// Commands on a loaded digest, driven by `ops` (issue 30): self-merges
/// (×2 to ×4), bursts of adds, an add of a weight up to 2^62 (as a merge's
/// centroid), compressions. Failures are overflows; after each the
/// counts hold, and at the end the digest saves into an image that loads.
fn commands(td: &mut TDigest, ops: &[u8]) {
    for &op in ops.iter().take(160) {
        let arg = op >> 2;
        match op & 3 {
            0 => {
                let Ok(mut m) = TDigest::new(td.compression()) else {
                    return;
                };
                let all = (0..=arg % 3 + 1).all(|_| m.merge_from(td).1.is_ok());
                if all {
                    *td = m;
                }
            }
            1 => {
                let values: Vec<f64> = (0..arg).map(|i| f64::from(i % 7)).collect();
                let _ = td.add_values(&values);
            }
            2 => {
                let _ = td.add(f64::from(arg), 1 << (arg % 63));
            }
            _ => {
                td.compress();
            }
        }
        check(td);
        check_counts(td);
    }
    reloads(td);
}

/// `TDigest::rdb_load` over raw bytes (`ByteSource` primitives): refused
/// cleanly, or a digest that keeps its invariants, saves and reloads to
/// itself, answers, merges, takes more values (short of 2^61 of them),
/// and still saves and reloads to itself.
pub fn tdigest_rdb(data: &[u8]) {
    if !affordable(le_f64(data, 0)) {
        return;
    }
    let Ok(mut td) = TDigest::rdb_load(&mut ByteSource::new(data), 0) else {
        return;
    };
    // The header's nine words, then a mean and a weight per centroid.
    let ops = data
        .get(8 * (9 + 2 * td.merged_nodes() as usize)..)
        .unwrap_or_default();
    check(&td);
    check_info(&td);
    check_counts(&td);
    let mut td = round_trip(&mut td);
    // Merges and adds succeed, and what they add survives a reload, short
    // of 2^61 observations and unless RedisBloom's zero-weight unmerged
    // nodes (docs/tdigest.md §7.2 item 7) fill the capacity: never
    // compressed, they leave no room and lose what is added (as in RedisBloom).
    // Merged centroids filling every slot (a genuine compression-1 digest
    // can: §7.2 item 2) make room for an observation by merging two (§4.3
    // step 2); a merge's centroids find none, as in RedisBloom.
    let roomy = td.size() <= 1 << 61 && td.unmerged_nodes() <= 1;
    if let Ok(mut m) = TDigest::new(td.compression().trunc().max(1.0)) {
        let (_, merged) = m.merge_from(&mut td);
        assert!(
            merged.is_ok() || !roomy || td.merged_nodes() >= td.capacity(),
            "merge of a loaded digest failed"
        );
        check(&m);
        check_info(&m);
        // One observation is saved as its count only and read back as min
        // (= max, docs/tdigest.md §7.3): one of NaN mean (made by RedisBloom's
        // zero-weight nodes, 0/0) updates neither, so it cannot come back.
        let lone_nan = m.unmerged_nodes() == 1 && m.min() > m.max();
        if !lone_nan {
            round_trip(&mut m);
        }
    }
    estimates(&mut td, false);
    for v in [1.0, -0.0, 5e-324] {
        assert!(
            td.add_values(&[v]).is_ok() || !roomy,
            "add to a loaded digest failed"
        );
    }
    check(&td);
    check_info(&td);
    check_counts(&td);
    if roomy {
        let back = round_trip(&mut td);
        if td.size() > 1 {
            assert_eq!(
                back.unmerged_nodes(),
                0,
                "unmerged nodes after a compression"
            );
        }
    }
    commands(&mut td, ops);
}

fn reply_text(e: ArgError) -> Option<&'static str> {
    match e {
        ArgError::WrongArity => None,
        ArgError::Reply(t) => Some(t),
    }
}

/// The TDIGEST.* argument parsers on argument vectors cut from the input
/// (separator `\n`): accepted values are in range and equal to what the
/// server's number parsers read; refusals are T-Digest errors or arity.
pub fn tdigest_args(data: &[u8]) {
    let parts: Vec<&[u8]> = if data.is_empty() {
        Vec::new()
    } else {
        data.split(|&b| b == b'\n').collect()
    };
    let argv: Vec<&[u8]> = [&b"TDIGEST.X"[..], b"key"]
        .into_iter()
        .chain(parts.iter().copied())
        .collect();
    let rest = &argv[2..];
    let errors = |r: Result<(), ArgError>| {
        if let Err(e) = r {
            if let Some(t) = reply_text(e) {
                assert!(t.starts_with("ERR T-Digest: "), "{t}");
            }
        }
    };
    match parse_create(&argv) {
        Ok(c) => {
            assert!(c > 0);
            if argv.len() == 4 {
                assert_eq!(Some(c), parse_i64(argv[3]));
            } else {
                assert_eq!((argv.len(), c), (2, 100));
            }
        }
        Err(e) => errors(Err(e)),
    }
    let check_doubles = |r: Result<Parsed<f64>, ArgError>, finite: bool, unit: bool| match r {
        Ok(v) => {
            assert_eq!(v.len(), rest.len());
            for (x, a) in v.iter().zip(rest) {
                assert_eq!(Some(x.to_bits()), parse_f64(a).map(f64::to_bits));
                assert!(!finite || x.is_finite());
                assert!(!unit || (0.0..=1.0).contains(x));
            }
        }
        Err(e) => errors(Err(e)),
    };
    check_doubles(parse_add(&argv), true, false);
    check_doubles(parse_quantiles(&argv), false, true);
    check_doubles(parse_cdf(&argv), false, false);
    check_doubles(parse_rank_values(&argv), false, false);
    match parse_ranks(&argv) {
        Ok(v) => assert!(v
            .iter()
            .zip(rest)
            .all(|(r, a)| *r >= 0 && Some(*r) == parse_i64(a))),
        Err(e) => errors(Err(e)),
    }
    match parse_trimmed_mean(&argv) {
        Ok((lo, hi)) => assert!(argv.len() == 4 && 0.0 <= lo && lo < hi && hi <= 1.0),
        Err(e) => errors(Err(e)),
    }
    match parse_merge(&argv) {
        Ok(m) => {
            assert!(m.numkeys >= 1 && m.numkeys <= argv.len() - 3);
            assert_eq!(Some(m.numkeys as i64), parse_i64(argv[2]));
            assert!(m.compression.is_none_or(|c| c > 0));
            let extra = &argv[3 + m.numkeys..];
            let has = |w: &str| extra.iter().any(|a| a.eq_ignore_ascii_case(w.as_bytes()));
            assert_eq!(m.override_dest, has("OVERRIDE"));
            assert_eq!(m.compression.is_some(), has("COMPRESSION"));
        }
        Err(e) => errors(Err(e)),
    }
}

/// Random operations on two digests: counts add up, compression merges
/// everything (total weight above 1) into at most the capacity, estimates
/// stay in their ranges, and a compressed digest reloads to itself.
pub fn tdigest_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let compression = f64::from(inp.u16() % 400 + 1);
    let Ok(mut a) = TDigest::new(compression) else {
        return;
    };
    let Ok(mut b) = TDigest::new(f64::from(inp.u8() % 50 + 1)) else {
        return;
    };
    let mut added: i64 = 0;
    let mut extreme = false;
    const VALUES: [f64; 10] = [
        0.0, -0.0, 1.0, 2.0, 2.0, -3.5, 1e300, -1.7e308, 5e-324, 1e-10,
    ];
    while !inp.is_empty() {
        match inp.u8() % 10 {
            0..=4 => {
                let n = inp.u8() % 64;
                for _ in 0..n {
                    let sel = inp.u8();
                    let v = if sel < 200 {
                        f64::from(sel % 17) / 4.0
                    } else {
                        VALUES[usize::from(sel) % VALUES.len()]
                    };
                    extreme |= v.abs() > 1e299;
                    a.add(v, 1).expect("add");
                    added += 1;
                }
            }
            5 => {
                a.compress();
                assert_eq!(a.size(), added);
                if added > 1 {
                    assert_eq!((a.unmerged_nodes(), a.merged_weight()), (0, added));
                }
            }
            6 => estimates(&mut a, !extreme),
            7 => {
                let (_, r) = b.merge_from(&mut a);
                r.expect("merge");
                check(&b);
            }
            8 => {
                a.reset();
                added = 0;
                extreme = false;
            }
            _ => {
                a.compress();
                let image = saved(&a);
                let back = TDigest::rdb_load(&mut PrimitiveSource::new(&image), 0).expect("reload");
                assert_eq!(encode_primitives(&saved(&back)), encode_primitives(&image));
            }
        }
        check(&a);
        check_counts(&a);
        check_counts(&b);
        assert_eq!(a.size(), added);
        assert!(a.total_compressions() >= 0);
    }
}

/// Seeds: genuine images (as `ByteSource` bytes), command lines, op strings.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    for (c, n) in [(1.0, 0usize), (100.0, 1), (12.0, 13), (20.0, 400), (5.0, 3)] {
        let mut td = TDigest::new(c).expect("seed digest");
        for i in 0..n {
            td.add(((i * 37) % 101) as f64 / 3.0, 1).expect("seed add");
        }
        td.compress();
        out.push(("tdigest_rdb", encode_primitives(&saved(&td))));
    }
    // A digest then commands (issue 30): self-merges ×4; weights 2^62 down
    // to 2^10 (a total 2^63 − 1024, where a double is every 1024); bursts of
    // adds that each compression drops from the total.
    let mut td = TDigest::new(100.0).expect("seed digest");
    td.add(1.0, 1).expect("seed add");
    td.add(2.0, 1).expect("seed add");
    td.compress();
    let mut image = encode_primitives(&saved(&td));
    image.extend([0x00, 0x04]);
    image.extend((10..=62u8).rev().map(|bit| bit << 2 | 2));
    image.extend([0xfd, 0x03].repeat(32));
    out.push(("tdigest_rdb", image));
    for line in [
        "COMPRESSION\n100",
        "1\n2.5\n-0\n0x10\ninf",
        "0\n0.5\n1",
        "2\na\nb\nCOMPRESSION\n7\nOVERRIDE",
        "0.1\n0.9",
        "1\nx\nCOMPRESSION",
        "nan\n1e400\n-1",
    ] {
        out.push(("tdigest_args", line.as_bytes().to_vec()));
    }
    for ops in [
        &b"\x10\x00\x05\x00\x40\x01\x02\x03\x05\x06\x07\x09"[..],
        b"\x01\x00\x01\x00\x3f\xc8\xc9\xca\xcb\xcc\xcd\xce\x05\x06\x09\x08\x00\x02\x01\x01\x07",
        b"\x90\x01\x20\x04\x30\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x06",
    ] {
        out.push(("tdigest_model", ops.to_vec()));
    }
    out
}
