//! Fuzz checks of valkey-bloom's Bloom flavour (COMPAT-VALKEY-BLOOM.md): its
//! RDB decoder, its BF.LOAD blob decoder and its argument parsers.

use rsbloom_core::args::rust_num::parse_i64_rust;
use rsbloom_core::bitunion::MergeError;
use rsbloom_core::config::{parse_fp_rate_config, parse_tightening_config};
use rsbloom_core::rdb::{ByteSource, LoadError, Primitive, PrimitiveSource};
use rsbloom_core::valkey_bloom::args::{parse_info_field, parse_insert, parse_reserve, Defaults};
use rsbloom_core::valkey_bloom::{validate_scale_to, Create, Object, VbError, FIXED_SEED};

use super::{check_arg_error, encode_primitives, le_u64, ALLOC_CAP, PROBE_ITEMS};

/// The memory limit adds and checks run under (scale-outs stay small).
const LIMIT: u64 = ALLOC_CAP as u64;

fn saved(o: &Object) -> Vec<Primitive> {
    let mut out = Vec::new();
    o.rdb_save(&mut out);
    out
}

fn digest(o: &Object) -> Vec<Primitive> {
    let mut out = Vec::new();
    o.digest(&mut out);
    out
}

fn blob(o: &Object) -> Vec<u8> {
    o.to_load_blob().unwrap()
}

/// Whether two objects answer alike: same blob bytes (NaN-safe), card,
/// capacity and digest. Size may differ (list capacity).
fn same(a: &Object, b: &Object) {
    assert_eq!(blob(a), blob(b));
    assert_eq!(digest(a), digest(b));
    assert_eq!((a.card(), a.capacity()), (b.card(), b.capacity()));
    for item in PROBE_ITEMS {
        assert_eq!(a.contains(item), b.contains(item));
    }
}

/// Each sub-filter's (num_items, capacity), read from the BF.LOAD blob,
/// which stores every count (§5.4).
fn counts(o: &Object) -> Vec<(i64, i64)> {
    let b = blob(o);
    let mut at = 22;
    let n = le_u64(&b, at);
    at += 8;
    (0..n)
        .map(|_| {
            at += 8 + le_u64(&b, at) as usize;
            let (num, cap) = (le_u64(&b, at) as i64, le_u64(&b, at + 8) as i64);
            at += 16;
            (num, cap)
        })
        .collect()
}

/// The counts within what the contents allow (issue 30): every num_items ≥ 0
/// and capacity > 0, CARD and Capacity their sums, neither overflowing.
fn check_counts(o: &Object) {
    let c = counts(o);
    assert_eq!(c.len(), o.num_filters());
    assert!(c.iter().all(|&(num, cap)| num >= 0 && cap > 0));
    let sum = |f: fn(&(i64, i64)) -> i64| c.iter().map(f).try_fold(0i64, i64::checked_add);
    assert_eq!(sum(|x| x.0), Some(o.card()), "CARD is not Σ num_items");
    assert_eq!(
        sum(|x| x.1),
        Some(o.capacity()),
        "Capacity is not Σ capacities"
    );
}

/// The invariants of any object, then adds of `items`: never a panic, an
/// item answered 1 or 0 is present, CARD grows by the items answered 1, an
/// error changes nothing, the counts stay in range; batches answer as
/// single calls.
fn exercise(o: &mut Object, items: &[&[u8]]) {
    assert!(o.num_filters() >= 1 && o.card() >= 0 && o.capacity() >= o.num_filters() as i64);
    assert!(o.size() >= 48 + 8 + 208 * o.num_filters() as u64);
    check_counts(o);
    let _ = o.max_scaled_capacity(LIMIT);
    let mut twin = o.try_clone().unwrap();
    same(o, &twin);
    let mut answers = Vec::new();
    twin.add_batch(items, Some(LIMIT), |r| {
        answers.push(r);
        true
    });
    for (item, want) in items.iter().zip(&answers) {
        let (card, before) = (o.card(), blob(o));
        let r = o.add(item, Some(LIMIT));
        assert_eq!(&r, want);
        match r {
            Ok(added) => {
                assert!(o.contains(item));
                assert_eq!(o.card(), card + i64::from(added));
            }
            Err(_) => assert_eq!(blob(o), before),
        }
        check_counts(o);
        if r.is_err() {
            break;
        }
    }
    if answers.iter().all(Result::is_ok) {
        assert_eq!(answers.len(), items.len());
    }
    let mut checks = Vec::new();
    o.contains_batch(items, |c| checks.push(c));
    let single: Vec<bool> = items.iter().map(|i| o.contains(i)).collect();
    assert_eq!(checks, single);
}

/// [`exercise`] with the probe items, then 3-byte items of the input, after
/// which the object still saves and reloads in both forms, and merges with
/// the object it was ([`merge_check`]).
fn exercise_input(mut o: Object, input: &[u8]) {
    let before = o.try_clone().unwrap();
    exercise(&mut o, &PROBE_ITEMS);
    let items: Vec<&[u8]> = input.chunks(3).take(64).collect();
    exercise(&mut o, &items);
    round_trips(&o, false);
    merge_check(&before, &o);
}

/// BF.MERGE (docs/valkey-bloom.md "BF.MERGE") of `a` and `b`, `b` being `a`
/// after adds: a copy and a self-merge are the source; the union answers
/// as `b` (adds only set bits), counts at least `b`'s within range, and
/// round-trips; a scaled-out `b` is refused as of another shape.
fn merge_check(a: &Object, b: &Object) {
    same(&Object::merge(a, &[]).unwrap(), a);
    same(&Object::merge(a, &[a, a]).unwrap(), a);
    match Object::merge(a, &[b]) {
        Ok(u) => {
            assert_eq!(a.num_filters(), b.num_filters());
            check_counts(&u);
            assert!(u.card() >= b.card());
            for item in PROBE_ITEMS {
                assert_eq!(u.contains(item), b.contains(item));
            }
            round_trips(&u, false);
        }
        Err(MergeError::Differs(d)) => {
            assert_ne!(a.num_filters(), b.num_filters(), "{d:?}");
            assert_eq!(d.field, "number of sub-filters");
        }
        // Counts summing above i64::MAX (crafted near-limit values).
        Err(e) => assert_eq!(e, MergeError::Overflow),
    }
}

/// Both persistence forms of a loaded object load back to the same. The RDB
/// value stores only the newest sub-filter's num_items (older ones reload as
/// their capacity, §5.7) and list capacity L = n after BF.LOAD, so a BF.LOADed
/// object (`from_rdb` false) reloads with the same answers and RDB value only.
fn round_trips(o: &Object, from_rdb: bool) {
    let p = saved(o);
    let back = Object::rdb_load(&mut PrimitiveSource::new(&p), 1, None).unwrap();
    assert_eq!(saved(&back), p);
    for item in PROBE_ITEMS {
        assert_eq!(o.contains(item), back.contains(item));
    }
    if from_rdb {
        same(o, &back);
        assert_eq!(back.size(), o.size());
    }
    let b = blob(o);
    let again = Object::from_load_blob(&b, None).unwrap();
    same(o, &again);
    assert_eq!(blob(&again), b);
}

/// `Object::rdb_load` over raw bytes. Byte 0: encoding (mod 3; 2 refused)
/// and, bit 2, whether the §4.8 size check applies. A loaded value keeps
/// the invariants, round-trips through both forms, and takes every command.
pub fn valkey_bloom_rdb(data: &[u8]) {
    let Some((&v, rest)) = data.split_first() else {
        return;
    };
    let encver = i32::from(v % 3);
    let limit = (v & 4 != 0).then_some(LIMIT);
    let o = match Object::rdb_load(&mut ByteSource::new(rest), encver, limit) {
        Ok(o) => o,
        Err(e) => {
            if encver > 1 {
                assert_eq!(e, LoadError::UnsupportedVersion);
            }
            return;
        }
    };
    assert!(encver <= 1);
    if let Some(l) = limit {
        // The check counts the list before its last growth (§4.8).
        assert!(o.size() <= l + 8 * o.num_filters() as u64);
    }
    round_trips(&o, true);
    exercise_input(o, rest);
}

/// `Object::from_load_blob`. Byte 0 bit 0: whether the limit applies. A
/// refusal is one of §5.4's texts; an accepted blob saves back to its
/// prefix (trailing bytes are ignored), round-trips, takes every command.
pub fn valkey_bloom_load(data: &[u8]) {
    let Some((&v, rest)) = data.split_first() else {
        return;
    };
    let limit = (v & 1 != 0).then_some(LIMIT);
    let o = match Object::from_load_blob(rest, limit) {
        Ok(o) => o,
        Err(e) => {
            let texts = [
                "ERR bloom object decoding failed",
                "ERR bloom object decoding failed. Unsupported version",
                "ERR (0 < error rate range < 1)",
                VbError::MaxFilters.message(),
                VbError::MemoryLimit.message(),
            ];
            assert!(texts.contains(&e), "{e}");
            return;
        }
    };
    let b = blob(&o);
    assert_eq!(&rest[..b.len()], &b[..]);
    if let Some(l) = limit {
        assert!(o.size() <= l);
    }
    round_trips(&o, false);
    exercise_input(o, rest);
}

/// Every valkey-bloom parser on argument vectors cut from the input (`\n`);
/// byte 0 picks the expansion default (bit 0: non-scaling).
pub fn valkey_bloom_args(data: &[u8]) {
    let Some((&v, rest)) = data.split_first() else {
        return;
    };
    let d = Defaults {
        capacity: 100,
        fp_rate: 0.01,
        tightening: 0.5,
        expansion: u32::from(v & 1 == 0) * 2,
    };
    let parts: Vec<&[u8]> = rest.split(|&b| b == b'\n').collect();
    for p in &parts {
        let reference = std::str::from_utf8(p).ok();
        assert_eq!(parse_i64_rust(p), reference.and_then(|s| s.parse().ok()));
        for parsed in [parse_fp_rate_config(p), parse_tightening_config(p)] {
            match parsed {
                Ok(x) => assert!(x > 0.0 && x < 1.0),
                Err(e) => assert!(e == "Invalid floating-point value" || e.starts_with("ERR (0 <")),
            }
        }
        if let Err(e) = parse_info_field(p) {
            check_arg_error(e);
        }
    }
    for n in 0..=parts.len().min(8) {
        let argv: Vec<&[u8]> = [&b"BF.X"[..], b"k"]
            .into_iter()
            .chain(parts[..n].iter().copied())
            .collect();
        reserve(&argv, &d);
        insert(&argv, &d);
    }
}

fn reserve(argv: &[&[u8]], d: &Defaults) {
    match parse_reserve(argv, d) {
        Ok(r) => {
            assert!((4..=6).contains(&argv.len()));
            assert!(r.fp_rate > 0.0 && r.fp_rate < 1.0 && r.capacity >= 1);
            assert_eq!(
                r.expansion == 0,
                argv.len() == 5 || (argv.len() == 4 && d.expansion == 0)
            );
            create(r.capacity, r.fp_rate, d.tightening, r.expansion, None);
        }
        Err(e) => check_arg_error(e),
    }
}

fn insert(argv: &[&[u8]], d: &Defaults) {
    match parse_insert(argv, d) {
        Ok(o) => {
            assert!(o.items_at >= 2 && o.items_at <= argv.len());
            assert!(o.fp_rate > 0.0 && o.fp_rate < 1.0 && o.capacity >= 1);
            assert!(o.tightening > 0.0 && o.tightening < 1.0);
            if let Some(t) = o.validate_scale_to {
                assert!(t >= 1 && o.expansion != 0);
                let _ =
                    validate_scale_to(o.capacity, o.fp_rate, o.tightening, o.expansion, t, LIMIT);
            }
            create(o.capacity, o.fp_rate, o.tightening, o.expansion, o.seed);
        }
        Err(e) => check_arg_error(e),
    }
}

/// Parsed arguments always make an object, or a memory-limit refusal.
fn create(capacity: i64, fp_rate: f64, tightening: f64, expansion: u32, seed: Option<[u8; 32]>) {
    let c = Create {
        capacity,
        fp_rate,
        tightening,
        expansion,
        seed: seed.unwrap_or(FIXED_SEED),
        seed_random: seed.is_some_and(|s| s != FIXED_SEED),
    };
    match Object::new(&c, Some(LIMIT)) {
        Ok(mut o) => {
            assert_eq!((o.capacity(), o.card()), (capacity, 0));
            exercise(&mut o, &PROBE_ITEMS);
        }
        Err(e) => assert_eq!(e, VbError::MemoryLimit),
    }
}

/// Seed inputs: genuine values (one sub-filter, scaled, non-scaling and
/// full, random seed, subnormal rate) in both forms, argument lines.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let seeded = *b"0123456789abcdefghijklmnopqrstuv";
    for (capacity, fp_rate, expansion, seed, n) in [
        (100, 0.01, 2, FIXED_SEED, 7),
        (5, 0.01, 2, FIXED_SEED, 30),
        (10, 0.001, 0, FIXED_SEED, 12),
        (5, 0.05, 4, seeded, 30),
        (10, 1e-310, 2, FIXED_SEED, 3),
    ] {
        let c = Create {
            capacity,
            fp_rate,
            tightening: 0.5,
            expansion,
            seed,
            seed_random: seed != FIXED_SEED,
        };
        let mut o = Object::new(&c, None).unwrap();
        for i in 0..n {
            let _ = o.add(format!("i:{i}").as_bytes(), None);
        }
        let rdb = encode_primitives(&saved(&o));
        out.push(("valkey_bloom_rdb", [vec![1], rdb.clone()].concat()));
        out.push(("valkey_bloom_rdb", [vec![5], rdb].concat()));
        out.push(("valkey_bloom_load", [vec![1], blob(&o)].concat()));
    }
    for line in [
        &b"\x000.01\n100\nNONSCALING"[..],
        b"\x010.01\n010\nEXPANSION\n+4",
        b"\x00ERROR\n0.05\nCAPACITY\n5\nTIGHTENING\n.3\nSEED\n0123456789abcdefghijklmnopqrstuv\nITEMS\na",
        b"\x00capacity\n7\nnonscaling\nexpansion\n3\nvalidatescaleto\n1000\nnocreate",
        "\u{1}\u{fb01}lters\nnon\u{17f}caling\n1e-400\ninf\nnan\n-0\n5e-324".as_bytes(),
    ] {
        out.push(("valkey_bloom_args", line.to_vec()));
    }
    out
}
