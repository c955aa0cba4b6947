//! Every number of COMPAT-VALKEY-BLOOM.md §4–§5 and each refusal of §5.4 and §8.

use super::filter::{self, hash, keys, probes, Hash};
use super::*;
use crate::rdb::{LoadError, Primitive, PrimitiveSource};
use std::num::NonZeroU64;

pub(super) fn create(capacity: i64, fp_rate: f64, expansion: u32) -> Create {
    Create {
        capacity,
        fp_rate,
        tightening: 0.5,
        expansion,
        seed: FIXED_SEED,
        seed_random: false,
    }
}

pub(super) fn object(capacity: i64, fp_rate: f64, expansion: u32) -> Object {
    Object::new(&create(capacity, fp_rate, expansion), None).unwrap()
}

pub(super) fn saved(o: &Object) -> Vec<Primitive> {
    let mut v = Vec::new();
    o.rdb_save(&mut v);
    v
}

fn load(p: &[Primitive], limit: Option<u64>) -> Result<Object, LoadError> {
    Object::rdb_load(&mut PrimitiveSource::new(p), ENCODING_VERSION, limit)
}

/// `o` with `n` items `{prefix}{i}` added.
fn filled(mut o: Object, prefix: &str, n: usize) -> Object {
    for i in 0..n {
        o.add(format!("{prefix}{i}").as_bytes(), None).unwrap();
    }
    o
}

#[test]
fn hash_vector_of_4_3() {
    let k = keys(&FIXED_SEED);
    assert_eq!(
        k,
        [
            0xda1178ea22f50f59,
            0xd97b3e3b09d814a7,
            0x8788983e738a891d,
            0x83330728cd977f30
        ]
    );
    let h = hash(&k, b"foo");
    assert_eq!(
        h,
        Hash {
            h0: 0x949fe507b41c1bef,
            h1: 0xec2b7174fa3461da
        }
    );
    let bits = NonZeroU64::new(960).unwrap();
    let p: Vec<u64> = probes(h, 7, bits).collect();
    assert_eq!(p, [687, 90, 355, 189, 23, 817, 651]);
    // Only g_i for i ≥ 2 is reduced modulo the prime 2^64 − 59.
    let top = Hash {
        h0: u64::MAX - 10,
        h1: 0,
    };
    let all = NonZeroU64::new(u64::MAX).unwrap();
    let p: Vec<u64> = probes(top, 3, all).collect();
    assert_eq!(p, [u64::MAX - 10, 0, 48]);
}

#[test]
fn sizing_examples_of_4_2() {
    let cases: [(i64, f64, u64, u32, u64); 10] = [
        (100, 0.01, 120, 7, 384),
        (1000, 0.01, 1199, 7, 1463),
        (500, 0.001, 899, 10, 1163),
        (10, 0.01, 12, 7, 276),
        (2, 0.01, 3, 8, 267),
        (7, 0.00001, 21, 17, 285),
        (100000, 0.001, 179720, 10, 179984),
        (1, 0.5, 1, 6, 265),
        (10, 1e-300, 1798, 997, 2062),
        (1, 5e-324, 194, 1076, 458),
    ];
    for (n, p, bytes, k, size) in cases {
        let o = object(n, p, 2);
        let blob = o.filters[0].blob();
        assert_eq!(blob.len() as u64, 45 + bytes, "{n} {p}");
        assert_eq!(blob[9..13], k.to_le_bytes(), "{n} {p}");
        assert_eq!(o.size(), size, "{n} {p}");
        assert_eq!((o.capacity(), o.card(), o.num_filters()), (n, 0, 1));
    }
}

#[test]
fn max_scaled_capacity_reference_values_of_4_7() {
    const LIMIT: u64 = 134217728;
    let max = |c, fp, t, x| {
        let mut o = object(c, fp, x);
        o.tightening = t;
        o.max_scaled_capacity(LIMIT)
    };
    assert_eq!(max(100, 0.01, 0.5, 2), Ok(26214300));
    assert_eq!(object(100, 0.01, 2).max_scaled_capacity(100000), Ok(25500));
    assert_eq!(max(1000, 0.01, 0.5, 2), Ok(32767000));
    assert_eq!(max(10, 0.01, 0.5, 2), Ok(20971510));
    assert_eq!(max(100000, 0.001, 0.5, 2), Ok(25500000));
    assert_eq!(max(1, 0.01, 0.001, 1), Ok(102));
    assert_eq!(
        max(1, 0.999999, 0.9999999, u32::MAX),
        Err(VbError::BadCapacity)
    );
    assert_eq!(validate_scale_to(1, 0.01, 0.001, 1, 102, LIMIT), Ok(()));
    assert_eq!(
        validate_scale_to(1, 0.01, 0.001, 1, 103, LIMIT),
        Err("ERR provided VALIDATESCALETO causes false positive to degrade to 0")
    );
    assert_eq!(
        validate_scale_to(1, 0.999999, 0.9999999, u32::MAX, 10_000_000_000, LIMIT),
        Err("ERR bad capacity")
    );
    // The walk stops at the top once the target is reached.
    assert_eq!(
        validate_scale_to(1, 0.999999, 0.9999999, u32::MAX, 1, LIMIT),
        Ok(())
    );
    assert_eq!(
        validate_scale_to(100, 0.01, 0.5, 2, 100_000_000_000_000, LIMIT),
        Err("ERR provided VALIDATESCALETO causes bloom object to exceed memory limit")
    );
    assert_eq!(
        validate_scale_to(100, 0.01, 0.5, 2, 26214300, LIMIT),
        Ok(())
    );
    assert!(validate_scale_to(100, 0.01, 0.5, 2, 26214301, LIMIT).is_err());
}

#[test]
fn memory_limit_boundaries_of_4_8() {
    let c = create(100, 0.01, 2);
    assert!(Object::new(&c, Some(384)).is_ok());
    assert_eq!(Object::new(&c, Some(383)), Err(VbError::MemoryLimit));
    let mut o = filled(object(2, 0.01, 2), "i", 2);
    assert_eq!(o.size(), 267);
    let before = saved(&o);
    assert_eq!(o.add(b"x", Some(480)), Err(VbError::MemoryLimit));
    assert_eq!(saved(&o), before, "a refused scale-out changes nothing");
    assert_eq!(o.add(b"x", Some(481)), Ok(true));
    assert_eq!((o.num_filters(), o.size()), (2, 48 + 32 + 211 + 214));
    let p = saved(&o);
    assert_eq!(load(&p, Some(480)).err(), Some(LoadError::Invalid));
    let back = load(&p, Some(481)).unwrap();
    assert_eq!(back.size(), 505);
    assert_eq!(back, o);
}

#[test]
fn creation_refuses_what_cannot_be_allocated() {
    let c = create(1_000_000_000_000_000_000, 0.01, 2);
    assert_eq!(Object::new(&c, None), Err(VbError::MemoryLimit));
    assert_eq!(Object::new(&c, Some(u64::MAX)), Err(VbError::MemoryLimit));
    assert_eq!(
        Object::new(&create(0, 0.01, 2), None),
        Err(VbError::BadCapacity)
    );
    assert_eq!(
        Object::new(&create(1, 1.0, 2), None),
        Err(VbError::FpDegrades)
    );
    assert!(Object::new(&create(10, 1e-310, 2), None).is_ok());
}

/// §5.1's whole-payload example: the module fields between the header
/// (`07` + module id) and the trailer (`00`, RDB version, CRC).
#[test]
fn rdb_payload_example_of_5_1() {
    let hex = "0201 0202 04000000000000e03f 04000000000000e03f 0200 0201 0200 052e \
               01 0100000000000000 06000000 590ff522ea7811daa714d8093b3e7bd91d898a733e988887307f97cd28073383 00";
    let want = rdb_fields(&unhex(hex));
    assert_eq!(saved(&object(1, 0.5, 2)), want);
    let back = load(&want, Some(265)).unwrap();
    assert_eq!(saved(&back), want);
}

pub(super) fn unhex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// Decodes module opcodes (2 unsigned, 4 double, 5 uncompressed string) in
/// the server's RDB length encoding.
fn rdb_fields(mut b: &[u8]) -> Vec<Primitive> {
    fn len(b: &mut &[u8]) -> u64 {
        let (first, rest) = b.split_first().unwrap();
        let (v, used) = match first >> 6 {
            0 => (u64::from(first & 0x3f), 0),
            1 => (u64::from(first & 0x3f) << 8 | u64::from(rest[0]), 1),
            _ if *first == 0x80 => (
                u64::from(u32::from_be_bytes(rest[..4].try_into().unwrap())),
                4,
            ),
            _ => (u64::from_be_bytes(rest[..8].try_into().unwrap()), 8),
        };
        *b = &rest[used..];
        v
    }
    let mut out = Vec::new();
    while let Some((op, rest)) = b.split_first() {
        b = rest;
        out.push(match op {
            2 => Primitive::Unsigned(len(&mut b)),
            4 => {
                let (d, rest) = b.split_at(8);
                b = rest;
                Primitive::Double(f64::from_le_bytes(d.try_into().unwrap()))
            }
            5 => {
                let n = len(&mut b) as usize;
                let (s, rest) = b.split_at(n);
                b = rest;
                Primitive::Buffer(s.to_vec())
            }
            _ => panic!("opcode {op}"),
        });
    }
    out
}

#[test]
fn add_and_check_of_4_4() {
    // §2.1: BF.MADD ns a b c d on BF.RESERVE ns 0.01 2 NONSCALING.
    let mut ns = object(2, 0.01, 0);
    let mut answers = Vec::new();
    ns.add_batch(&["a", "b", "c", "d"], None, |r| {
        answers.push(r);
        true
    });
    assert_eq!(answers, [Ok(true), Ok(true), Err(VbError::NonScalingFull)]);
    answers.clear();
    ns.add_batch(&["a", "c", "d"], None, |r| {
        answers.push(r);
        true
    });
    assert_eq!(answers, [Ok(false), Err(VbError::NonScalingFull)]);
    assert_eq!(ns.add(b"a", None), Ok(false));
    assert_eq!(ns.card(), 2);
    // BF.RESERVE k 0.01 10 + 40 items: capacities 10, 20, 40, Size 807.
    let o = filled(object(10, 0.01, 2), "item", 40);
    let caps: Vec<i64> = o.filters.iter().map(|f| f.capacity).collect();
    assert_eq!(caps, [10, 20, 40]);
    assert_eq!((o.capacity(), o.size()), (70, 807));
    assert!((0..40).all(|i| o.contains(format!("item{i}").as_bytes())));
}

#[test]
fn scale_out_errors_in_order() {
    let mut o = filled(object(1, 0.01, 2), "x", 1);
    o.tightening = 0.0;
    assert_eq!(o.add(b"new", None), Err(VbError::FpDegrades));
    o.tightening = 3.0;
    o.fp_rate = 0.5;
    assert_eq!(o.add(b"new", None), Err(VbError::FpDegrades), "p' ≥ 1");
    let mut o = object(1, 0.5, 2);
    o.filters[0].capacity = i64::MAX / 2 + 1;
    o.filters[0].num_items = i64::MAX / 2 + 1;
    assert_eq!(o.add(b"new", None), Err(VbError::BadCapacity));
    assert_eq!(o.num_filters(), 1);
    // C' fits, but Capacity (Σ) would not.
    o.filters[0].capacity = i64::MAX / 2 - 1;
    o.filters[0].num_items = i64::MAX / 2 - 1;
    assert_eq!(o.add(b"new", None), Err(VbError::BadCapacity));
}

#[test]
fn batches_answer_like_single_calls() {
    let items: Vec<String> = (0..100).map(|i| format!("b{i}")).collect();
    let mut single = object(20, 0.01, 2);
    let want: Vec<_> = items
        .iter()
        .map(|i| single.add(i.as_bytes(), None))
        .collect();
    let mut batched = object(20, 0.01, 2);
    let mut got = Vec::new();
    batched.add_batch(&items, None, |r| {
        got.push(r);
        true
    });
    assert_eq!((got, &batched), (want, &single));
    let probe: Vec<String> = (50..250).map(|i| format!("b{i}")).collect();
    let mut seen = Vec::new();
    batched.contains_batch(&probe, |p| seen.push(p));
    let want: Vec<bool> = probe
        .iter()
        .map(|i| single.contains(i.as_bytes()))
        .collect();
    assert_eq!(seen, want);
    let mut n = 0;
    batched.add_batch(&["n1", "n2", "n3"], None, |_| {
        n += 1;
        false
    });
    assert_eq!(n, 1);
}

/// Sub-filters with seeds of their own (only loaded data has them) are
/// probed with their own seed, also by the batches.
#[test]
fn mixed_seeds_hash_per_sub_filter() {
    let mut p = saved(&filled(object(2, 0.01, 2), "m", 5));
    let mut own = filter::SubFilter::create(2, 0.01, &[7; 32]).unwrap();
    own.insert(hash(&keys(&[7; 32]), b"zz"));
    p[4] = Primitive::Unsigned(1);
    p[6] = Primitive::Buffer(own.blob().to_vec());
    let o = load(&p, None).unwrap();
    assert!(!o.one_seed());
    let items = ["m2", "m3", "m4", "zz", "m0", "m1", "other"];
    let mut got = Vec::new();
    o.contains_batch(&items, |c| got.push(c));
    let want: Vec<bool> = items.iter().map(|i| o.contains(i.as_bytes())).collect();
    assert_eq!(got, want);
    assert_eq!(got[..4], [true; 4]);
}

#[test]
fn rdb_round_trip_keeps_list_capacity() {
    let o = filled(object(2, 0.01, 2), "r", 30);
    assert_eq!(o.num_filters(), 4);
    let back = load(&saved(&o), None).unwrap();
    assert_eq!(back, o);
    assert_eq!(back.size(), o.size());
    let mut d1 = Vec::new();
    let mut d2 = Vec::new();
    o.digest(&mut d1);
    back.digest(&mut d2);
    assert_eq!(d1, d2);
    assert_eq!(d1.len(), 4 + 3 * 4);
    assert_eq!(d1[1], Primitive::Buffer(0.01f64.to_le_bytes().to_vec()));
    assert_eq!(o.try_clone().unwrap(), o);
}

/// Each "instead" refusal of §8 for RDB values, and what stays accepted.
#[test]
fn rdb_refusals_of_8() {
    let good = saved(&filled(object(2, 0.01, 2), "q", 3));
    let with = |i: usize, v: Primitive| {
        let mut p = good.clone();
        p[i] = v;
        load(&p, None).err()
    };
    let blob_with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut p = good.clone();
        let Primitive::Buffer(b) = &mut p[6] else {
            panic!()
        };
        f(b);
        load(&p, None).err()
    };
    let bad = Some(LoadError::Invalid);
    assert_eq!(with(0, Primitive::Unsigned(0)), bad, "F = 0");
    assert_eq!(
        with(0, Primitive::Unsigned(3)),
        Some(LoadError::Read),
        "F too big"
    );
    assert_eq!(with(2, Primitive::Double(1.5)), bad, "fp ≥ 1");
    assert_eq!(with(2, Primitive::Double(0.0)), bad, "fp 0");
    assert_eq!(with(2, Primitive::Double(f64::NAN)), bad, "fp NaN");
    assert_eq!(with(3, Primitive::Double(300.0)), bad, "p_1 ≥ 1");
    assert_eq!(with(3, Primitive::Double(0.0)), bad, "p_1 = 0");
    assert_eq!(with(5, Primitive::Unsigned(0)), bad, "capacity 0");
    assert_eq!(with(5, Primitive::Unsigned(u64::MAX)), bad, "capacity < 0");
    assert_eq!(with(8, Primitive::Unsigned(u64::MAX)), bad, "num_items < 0");
    let max = Primitive::Unsigned(i64::MAX as u64);
    assert_eq!(with(5, max.clone()), bad, "Σ capacity overflows");
    assert_eq!(with(8, max), bad, "Σ num_items overflows");
    assert_eq!(with(4, Primitive::Unsigned(1)), None, "random-seed flag");
    let one = saved(&object(10, 0.01, 2));
    for t in [0.0, 1.0, -0.5, 1.5, f64::NAN] {
        let mut p = one.clone();
        p[3] = Primitive::Double(t);
        assert_eq!(
            load(&p, None).err(),
            bad,
            "tightening {t} (BF.LOAD refuses it)"
        );
    }
    assert_eq!(
        blob_with(&|b| b[9..13].copy_from_slice(&0u32.to_le_bytes())),
        bad
    );
    assert_eq!(
        blob_with(&|b| b[9..13].copy_from_slice(&2049u32.to_le_bytes())),
        bad
    );
    assert_eq!(
        blob_with(&|b| b[9..13].copy_from_slice(&2048u32.to_le_bytes())),
        None
    );
    assert_eq!(blob_with(&|b| b[0] = 2), bad, "blob version");
    assert_eq!(blob_with(&|b| b.truncate(b.len() - 1)), bad, "short blob");
    assert_eq!(blob_with(&|b| b[13] ^= 1), bad, "fixed mode, other seed");
    assert_eq!(blob_with(&|b| b.truncate(44)), bad);
    let empty_bitmap = |b: &mut Vec<u8>| {
        b.truncate(45);
        b[1..9].copy_from_slice(&0u64.to_le_bytes());
    };
    assert_eq!(blob_with(&empty_bitmap), bad);
    assert_eq!(
        Object::rdb_load(&mut PrimitiveSource::new(&good), 2, None).err(),
        Some(LoadError::UnsupportedVersion)
    );
    assert!(Object::rdb_load(&mut PrimitiveSource::new(&good), 0, None).is_ok());
    assert_eq!(
        load(&good[..good.len() - 1], None).err(),
        Some(LoadError::Read)
    );
}

#[test]
fn rdb_load_quirks_of_5_2() {
    let good = saved(&object(10, 0.01, 2));
    let with = |i: usize, v: Primitive| {
        let mut p = good.clone();
        p[i] = v;
        load(&p, None).unwrap()
    };
    assert_eq!(with(1, Primitive::Unsigned(1 << 32)).expansion(), 0);
    assert_eq!(with(1, Primitive::Unsigned((1 << 32) + 3)).expansion(), 3);
    assert!(!with(4, Primitive::Unsigned(7)).seed_random());
    assert_eq!(
        with(6, Primitive::Unsigned(11)).card(),
        11,
        "num_items > capacity"
    );
    // An object made with a subnormal rate reloads (§8).
    let sub = object(10, 1e-310, 2);
    assert_eq!(load(&saved(&sub), None).unwrap(), sub);
    assert_eq!(sub.max_scaled_capacity(134217728), Ok(0));
}

/// An item `o` does not hold.
fn absent(o: &Object) -> Vec<u8> {
    (0..)
        .map(|i| format!("absent{i}").into_bytes())
        .find(|i| !o.contains(i))
        .unwrap()
}

/// Issue 30: item counts above their capacities load (§8), but no add
/// carries CARD past i64::MAX: it answers `ERR bad capacity` and changes
/// nothing, through a scale-out (RDB) or into a sub-filter with room
/// (BF.LOAD, where every count is stored).
#[test]
fn card_never_wraps() {
    let mut p = saved(&object(10, 0.01, 2));
    p[6] = Primitive::Unsigned(i64::MAX as u64 - 1);
    let rdb = load(&p, None).unwrap();
    let mut blob = filled(object(2, 0.01, 2), "c", 3);
    blob.filters[0].num_items = i64::MAX - 2;
    let blob = Object::from_load_blob(&load_blob(&blob), None).unwrap();
    for mut o in [rdb, blob] {
        let last = absent(&o);
        assert_eq!(o.add(&last, None), Ok(true));
        assert_eq!((o.num_filters(), o.card()), (2, i64::MAX));
        let before = saved(&o);
        assert_eq!(o.add(&absent(&o), None), Err(VbError::BadCapacity));
        assert_eq!(saved(&o), before);
        assert_eq!(
            o.add(&last, None),
            Ok(false),
            "present items still answer 0"
        );
    }
}

fn load_blob(o: &Object) -> Vec<u8> {
    o.to_load_blob().unwrap()
}

#[test]
fn load_blob_round_trip_and_list_capacity_of_5_4() {
    let o = filled(object(2, 0.01, 2), "l", 10);
    assert_eq!(o.num_filters(), 3);
    let blob = load_blob(&o);
    let back = Object::from_load_blob(&blob, None).unwrap();
    assert_eq!(back.size(), o.size() - 8, "L = n = 3 instead of 4");
    assert_eq!(load_blob(&back), blob);
    assert_eq!(saved(&back), saved(&o));
    let mut trailing = blob.clone();
    trailing.extend_from_slice(b"junk");
    assert!(Object::from_load_blob(&trailing, None).is_ok());
    let one = load_blob(&object(100, 0.01, 2));
    assert!(Object::from_load_blob(&one, Some(384)).is_ok());
    assert_eq!(
        Object::from_load_blob(&one, Some(383)).err(),
        Some("ERR operation exceeds bloom object memory limit")
    );
}

/// §5.4's error texts in their order, then §8's refusals.
#[test]
fn load_blob_errors_of_5_4_and_8() {
    const FAILED: &str = "ERR bloom object decoding failed";
    const RANGE: &str = "ERR (0 < error rate range < 1)";
    let good = load_blob(&filled(object(2, 0.01, 2), "e", 3));
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        Object::from_load_blob(&b, None).err()
    };
    assert_eq!(Object::from_load_blob(&[], None).err(), Some(FAILED));
    assert_eq!(
        with(&|b| b[0] = 2),
        Some("ERR bloom object decoding failed. Unsupported version")
    );
    assert_eq!(with(&|b| b.truncate(100)), Some(FAILED), "truncated");
    assert_eq!(with(&|b| b[21] = 2), Some(FAILED), "bool 2");
    // Offsets: 30 = first blob length, 38 = first blob, 38 + 51 = num_items.
    assert_eq!(with(&|b| b[38 + 9] = 0), Some(FAILED), "k = 0");
    assert_eq!(with(&|b| b[38] = 2), Some(FAILED), "blob version");
    assert_eq!(
        with(&|b| b[30] = 50),
        Some(FAILED),
        "blob shorter than its header says"
    );
    assert_eq!(
        with(&|b| b[5..13].copy_from_slice(&1.0f64.to_le_bytes())),
        Some(RANGE)
    );
    assert_eq!(
        with(&|b| b[5..13].copy_from_slice(&f64::NAN.to_le_bytes())),
        Some(RANGE)
    );
    assert_eq!(
        with(&|b| b[13..21].copy_from_slice(&0f64.to_le_bytes())),
        Some(RANGE)
    );
    // The rate checks come after decoding, §8's refusals after the rate checks.
    let fp_and_k = |b: &mut Vec<u8>| {
        b[5..13].copy_from_slice(&2.0f64.to_le_bytes());
        b[38 + 9..38 + 13].copy_from_slice(&4000u32.to_le_bytes());
    };
    assert_eq!(with(&fp_and_k), Some(RANGE));
    let n0 = |b: &mut Vec<u8>| {
        b.truncate(30);
        b[22..30].copy_from_slice(&0u64.to_le_bytes());
    };
    assert_eq!(with(&n0), Some(FAILED), "n = 0");
    let num_items = 38 + 51;
    let capacity = num_items + 8;
    for (at, v, what) in [
        (capacity, 0i64, "capacity 0"),
        (capacity, -7, "capacity < 0"),
        (num_items, -1, "num_items < 0"),
        (capacity, i64::MAX, "Σ capacity overflows"),
        (
            num_items,
            i64::MAX - 30,
            "Σ num_items after an RDB reload overflows",
        ),
    ] {
        assert_eq!(
            with(&|b| b[at..at + 8].copy_from_slice(&v.to_le_bytes())),
            Some(FAILED),
            "{what}"
        );
    }
    assert_eq!(
        with(&|b| b[38 + 9..38 + 13].copy_from_slice(&2049u32.to_le_bytes())),
        Some(FAILED)
    );
    assert_eq!(
        with(&|b| b[38 + 13] ^= 1),
        Some(FAILED),
        "fixed flag, other seed"
    );
    // p_1 = 1e-300 × 1e-10: no RDB reload would accept it.
    let tiny = |b: &mut Vec<u8>| {
        b[5..13].copy_from_slice(&1e-300f64.to_le_bytes());
        b[13..21].copy_from_slice(&1e-10f64.to_le_bytes());
    };
    assert_eq!(with(&tiny), Some(FAILED), "p_1 ≤ MIN_POSITIVE");
    let mut random = good.clone();
    random[21] = 1;
    random[38 + 13] ^= 1;
    assert!(
        Object::from_load_blob(&random, None).is_ok(),
        "random flag, any seed"
    );
}
