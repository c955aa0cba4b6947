//! Worked examples of docs/cuckoo.md (hashing to formats) and
//! docs/differences.md, plus a randomised model test.

use super::*;
use crate::rdb::{Primitive, PrimitiveSource};
use proptest::prelude::*;
use InsertOutcome::*;

fn h(item: &str) -> CuckooHash {
    hash_item(item.as_bytes())
}

fn filter(capacity: u64, bs: u16, mi: u16, x: u16) -> CuckooFilter {
    CuckooFilter::new(capacity, bs, mi, x).unwrap()
}

/// All sub-filter bytes, oldest first.
fn bytes(cf: &CuckooFilter) -> Vec<u8> {
    cf.filters
        .iter()
        .flat_map(|f| f.slots().iter().copied())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn header(nb: u64, nf: u64, bs: u16, mi: u16, x: u16) -> Vec<u8> {
    let mut v = Vec::new();
    for w in [5u64, nb, 0, nf] {
        v.extend(w.to_le_bytes());
    }
    for w in [bs, mi, x] {
        v.extend(w.to_le_bytes());
    }
    v
}

fn saved(cf: &CuckooFilter) -> Vec<Primitive> {
    let mut out = Vec::new();
    cf.rdb_save(&mut out);
    out
}

const LEGACY: LegacyDefaults = LegacyDefaults {
    bucket_size: 2,
    max_iterations: 20,
    expansion: 1,
};

fn load(p: &[Primitive], encver: i32) -> Result<CuckooFilter, LoadError> {
    CuckooFilter::rdb_load(&mut PrimitiveSource::new(p), encver, LEGACY, 255)
}

/// RedisBloom's header record is 40 bytes: a 48-byte allocation with a
/// 16-byte quantum (Debian's jemalloc), exactly 40 with the 8-byte one of
/// the servers' own jemalloc builds; ours must be the same size (sub-filter
/// records: see subfilter.rs).
#[test]
fn header_record_size_matches_redisbloom() {
    assert_eq!(std::mem::size_of::<CuckooFilter>(), 40);
}

#[test]
fn hash_vectors() {
    let table: [(&str, u64, u8, u64, u64, u64); 5] = [
        ("", 0, 1, 0x5bd1e995, 0, 405),
        ("a", 0x071717d2d36b6b11, 196, 0x071717949fddbd05, 273, 261),
        ("foo", 0xcdde38358fd25b01, 217, 0xcdde38785b3ca44c, 257, 76),
        (
            "hello world",
            0xd3ba2368a832afce,
            116,
            0xd3ba2341332f784a,
            462,
            74,
        ),
        (
            "abcdefghijklmnopq",
            0x0f996a806d240427,
            81,
            0x0f996a9d604eec02,
            39,
            2,
        ),
    ];
    for (item, hh, fp, h2, b1, b2) in table {
        let c = h(item);
        assert_eq!((c.h1, c.fp, c.h2), (hh, fp, h2), "{item:?}");
        assert_eq!((c.h1 % 512, c.h2 % 512), (b1, b2), "{item:?}");
    }
}

#[test]
fn foo_lands_in_byte_514() {
    let mut cf = filter(1000, 2, 20, 1);
    assert_eq!(cf.insert(h("foo")), Inserted);
    let b = bytes(&cf);
    assert_eq!(b.len(), 1024);
    let nonzero: Vec<_> = b.iter().enumerate().filter(|(_, &v)| v != 0).collect();
    assert_eq!(nonzero, vec![(514, &217)]);
}

#[test]
fn kick_out_growth_and_auto_compaction() {
    let mut cf = filter(4, 1, 5, 1);
    for i in 0..10 {
        assert_eq!(cf.insert(h(&format!("k{i}"))), Inserted);
    }
    assert_eq!(hex(&bytes(&cf)), "2f92d04c00766b892200e832");
    assert!(cf.delete(h("k3")));
    assert_eq!(hex(&bytes(&cf)), "2f32d04c22766b890000e800");
    assert_eq!(
        (cf.num_items(), cf.num_deletes(), cf.num_filters()),
        (9, 0, 3)
    );
}

#[test]
fn non_scaling_filter_fills_up() {
    let mut cf = filter(4, 2, 20, 0);
    let outcomes: Vec<_> = (0..6).map(|i| cf.insert(h(&i.to_string()))).collect();
    assert_eq!(
        outcomes,
        [Inserted, Inserted, Inserted, Inserted, NoSpace, NoSpace]
    );
    assert_eq!(hex(&bytes(&cf)), "dde41365");
    assert_eq!(cf.num_items(), 4);
}

#[test]
fn count_doubles_when_buckets_coincide() {
    let mut cf = filter(4, 2, 20, 0);
    assert_eq!(h("v3").fp, 186);
    cf.insert(h("v3"));
    assert_eq!(cf.count(h("v3")), 2);
}

#[test]
fn insert_unique_and_delete() {
    let mut cf = filter(9, 2, 20, 0);
    assert_eq!(cf.insert(h("3")), Inserted);
    assert_eq!(cf.insert(h("4")), Inserted);
    assert_eq!(cf.insert_unique(h("4")), Exists);
    assert_eq!(cf.insert_unique(h("9")), Inserted);
    assert!(cf.delete(h("4")));
    assert!(!cf.delete(h("4")));
    assert!(!cf.contains(h("4")));
    assert!(cf.contains(h("3")) && cf.contains(h("9")));
    // A single sub-filter is never compacted automatically.
    assert_eq!((cf.num_items(), cf.num_deletes()), (2, 1));
}

#[test]
fn initialisation_rounding() {
    let pow: Vec<_> = [0, 1, 2, 3, 5, 7, 32768]
        .iter()
        .map(|&x| next_pow2(x).unwrap())
        .collect();
    assert_eq!(pow, [0, 1, 2, 4, 8, 8, 32768]);
    for (c, bs, n) in [
        (1000, 2, 512),
        (1024, 2, 512),
        (10, 2, 8),
        (9, 2, 4),
        (4, 2, 2),
        (100, 3, 64),
    ] {
        assert_eq!(filter(c, bs, 20, 1).num_buckets(), n, "{c}/{bs}");
    }
    // Too big to allocate in a unit test: check the rounding rule itself.
    assert_eq!(next_pow2(67108864 / 2), Some(33554432));
    assert_eq!(next_pow2(1073741824 / 255), Some(8388608));
    assert_eq!(filter(100, 2, 20, 3).expansion(), 4);
    assert_eq!(filter(100, 2, 20, 32768).expansion(), 32768);
}

#[test]
fn creation_rejects_bad_parameters() {
    for (c, bs, mi, x) in [
        (3, 2, 20, 1),
        (100, 0, 20, 1),
        (1000, 256, 20, 1),
        (100, 2, 0, 1),
        (100, 2, 20, 32769),
    ] {
        assert_eq!(
            CuckooFilter::new(c, bs, mi, x),
            Err(CreateError::Invalid),
            "{c} {bs} {mi} {x}"
        );
    }
    assert_eq!(
        CuckooFilter::new(u64::MAX, 1, 20, 1),
        Err(CreateError::Invalid)
    );
    assert_eq!(
        CuckooFilter::new(1 << 62, 1, 20, 1),
        Err(CreateError::Invalid)
    );
    // 2^55 buckets of 255 slots: valid parameters, impossible allocation.
    assert_eq!(
        CuckooFilter::new((1 << 55) * 255, 255, 20, 1),
        Err(CreateError::OutOfMemory)
    );
}

#[test]
fn info_size_and_debug() {
    assert_eq!(filter(1000, 2, 20, 1).size_bytes(), 1080);
    assert_eq!(filter(9, 2, 20, 0).size_bytes(), 64);
    let mut cf = filter(16384, 2, 20, 1);
    cf.insert(h("x"));
    assert_eq!(
        cf.debug_string(),
        "bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1"
    );
}

#[test]
fn growth_bounds() {
    assert_eq!(sub_filter_buckets(4, 0, 0), Some(4));
    assert_eq!(sub_filter_buckets(4, 0, 1), None);
    assert_eq!(sub_filter_buckets(1 << 55, 2, 1), None);
    assert_eq!(sub_filter_buckets(1 << 54, 2, 1), Some(1 << 55));
    assert_eq!(sub_filter_buckets(1, 32768, 5), None);
}

#[test]
fn header_example_and_round_trip() {
    let mut cf = filter(1000, 2, 20, 1);
    cf.insert(h("foo"));
    let hdr = cf.encode_header();
    assert_eq!(
        hdr.to_vec(),
        unhex("0100000000000000 0002000000000000 0000000000000000 0100000000000000 0200 1400 0100")
    );
    let mut copy = CuckooFilter::from_header(&hdr, 255).unwrap();
    assert_eq!(bytes(&copy), vec![0; 1024]);
    for (pos, chunk) in cf.aof_chunks() {
        copy.load_chunk(pos, chunk).unwrap();
    }
    assert_eq!(copy, cf);
}

#[test]
fn header_rejections() {
    let bad = |hdr: &[u8], max| CuckooFilter::from_header(hdr, max).err();
    assert_eq!(
        bad(&header(4, 1, 2, 20, 1)[..37], 255),
        Some(HeaderError::InvalidHeader)
    );
    assert_eq!(bad(&[0; 39], 255), Some(HeaderError::InvalidHeader));
    let cannot = Some(HeaderError::CannotCreate);
    // docs/differences.md §1 item 4: zero-bucket sub-filter; item 5: non-power-of-two growth.
    assert_eq!(bad(&header(4, 2, 2, 20, 0), 255), cannot);
    assert_eq!(bad(&header(4, 3, 2, 20, 3), 255), cannot);
    for hdr in [
        header(4, 0, 2, 20, 1),
        header(4, 65536, 2, 20, 1),
        header(4, 1, 0, 20, 1),
        header(4, 1, 3, 20, 1),
        header(4, 1, 2, 0, 1),
        header(4, 1, 2, 20, 65535),
        header(0, 1, 2, 20, 1),
        header(6, 1, 2, 20, 1),
        header(1 << 56, 1, 2, 20, 1),
        header(1 << 55, 2, 1, 20, 2),
        header(1 << 55, 1, 255, 20, 1),
        // Found by fuzzing (fuzz/regressions/cuckoo_header): sub-filter 54
        // overflows; the 2-16 GiB sub-filters before it must not be allocated
        // first (the whole header is validated before any allocation).
        header(4, 514, 2, 20, 2),
    ] {
        assert_eq!(bad(&hdr, 2), cannot, "{}", hex(&hdr));
    }
    // The count is taken modulo 2^16.
    let cf = CuckooFilter::from_header(&header(4, 65537, 2, 20, 1), 2).unwrap();
    assert_eq!(
        (cf.num_filters(), cf.num_items(), cf.size_bytes()),
        (1, 5, 64)
    );
    let cf = CuckooFilter::from_header(&header(4, 3, 2, 20, 2), 2).unwrap();
    assert_eq!(
        cf.filters
            .iter()
            .map(|f| f.num_buckets())
            .collect::<Vec<_>>(),
        [4, 8, 16]
    );
}

#[test]
fn rdb_example_structure() {
    let mut cf = filter(8, 2, 20, 2);
    for i in 0..20 {
        assert_eq!(cf.insert(h(&format!("item{i}"))), Inserted);
    }
    assert!(cf.delete(h("item7")));
    let p = saved(&cf);
    let u = Primitive::Unsigned;
    assert_eq!(p[..7], [u(2), u(4), u(19), u(1), u(2), u(20), u(2)]);
    assert!(
        matches!(&p[7..], [Primitive::Unsigned(4), Primitive::Buffer(a), Primitive::Unsigned(8), Primitive::Buffer(b)]
        if a.len() == 8 && b.len() == 16)
    );
    assert_eq!(load(&p, 4).unwrap(), cf);
}

#[test]
fn rdb_rejections() {
    let cf = filter(8, 2, 20, 2);
    let good = {
        let mut cf = cf.try_clone().unwrap();
        cf.grow().unwrap();
        saved(&cf)
    };
    assert!(load(&good, 4).is_ok());
    let with = |i: usize, v: Primitive| {
        let mut p = good.clone();
        p[i] = v;
        p
    };
    let u = Primitive::Unsigned;
    let invalid = Err(LoadError::Invalid);
    // docs/differences.md §1 item 2: buffer length ≠ N_i × bucketSize.
    assert_eq!(load(&with(8, Primitive::Buffer(vec![0; 7])), 4), invalid);
    // docs/differences.md §1 item 3: bucket size 0, non-power-of-two bucket count.
    assert_eq!(load(&with(4, u(0)), 4), invalid);
    assert_eq!(load(&with(1, u(6)), 4), invalid);
    // N_i not numBuckets × expansion^i; counts 0 / 65536; expansion 3.
    assert_eq!(load(&with(9, u(16)), 4), invalid);
    assert_eq!(load(&with(0, u(0)), 4), invalid);
    assert_eq!(load(&with(0, u(65536)), 4), invalid);
    assert_eq!(load(&with(6, u(3)), 4), invalid);
    assert_eq!(load(&with(5, u(0)), 4), invalid);
    assert_eq!(load(&good[..10], 4), Err(LoadError::Read));
    assert_eq!(
        load(&with(7, Primitive::Double(4.0)), 4),
        Err(LoadError::Read)
    );
    assert_eq!(load(&good, 5), Err(LoadError::UnsupportedVersion));
}

#[test]
fn rdb_legacy_encoding() {
    let b = |n| Primitive::Buffer(vec![7; n]);
    let u = Primitive::Unsigned;
    let cf = load(&[u(2), u(4), u(16), b(8), b(8)], 2).unwrap();
    assert_eq!(
        cf.debug_string(),
        "bktsize:2 buckets:4 items:16 deletes:0 filters:2 max_iterations:20 expansion:1"
    );
    assert_eq!(
        cf.filters
            .iter()
            .map(|f| f.num_buckets())
            .collect::<Vec<_>>(),
        [4, 4]
    );
    let odd = LegacyDefaults {
        expansion: 3,
        ..LEGACY
    };
    let cf = CuckooFilter::rdb_load(
        &mut PrimitiveSource::new(&[u(1), u(4), u(8), b(8)]),
        3,
        odd,
        255,
    )
    .unwrap();
    assert_eq!(cf.expansion(), 4);
    assert_eq!(load(&[u(1), u(4), u(0), b(6)], 2), Err(LoadError::Invalid));
}

/// Found by the cuckoo_rdb fuzz target: legacy sub-filters of equal size
/// with a configured expansion of 0 (or 2) were saved as a v4 value whose
/// expansion contradicts its sub-filter sizes, which no longer loads.
#[test]
fn rdb_legacy_multi_sub_filter_saves_a_loadable_value() {
    let b = |n| Primitive::Buffer(vec![7; n]);
    let u = Primitive::Unsigned;
    for expansion in [0, 2, 4] {
        let legacy = LegacyDefaults {
            expansion,
            ..LEGACY
        };
        let stream = [u(2), u(4), u(16), b(8), b(8)];
        let cf =
            CuckooFilter::rdb_load(&mut PrimitiveSource::new(&stream), 2, legacy, 255).unwrap();
        assert_eq!(cf.expansion(), 1);
        let mut saved = Vec::new();
        cf.rdb_save(&mut saved);
        let again = CuckooFilter::rdb_load(&mut PrimitiveSource::new(&saved), 4, legacy, 255);
        assert_eq!(again, Ok(cf));
    }
}

/// Three sub-filters of 8, 16 and 32 bytes.
fn three_sub_filters() -> CuckooFilter {
    let mut cf = filter(8, 2, 20, 2);
    cf.grow().unwrap();
    cf.grow().unwrap();
    cf
}

#[test]
fn scandump_small_sub_filters() {
    let cf = three_sub_filters();
    let at = |pos| cf.scandump_chunk(pos).map(|(next, c)| (next, c.len()));
    assert_eq!(at(1), Some((9, 8)));
    assert_eq!(at(2), Some((10, 8)));
    assert_eq!(at(9), Some((25, 16)));
    assert_eq!(at(25), Some((57, 32)));
    assert_eq!(at(57), None);
    assert_eq!(at(0), None);
    assert_eq!(at(-5), None);
    let aof: Vec<_> = cf.aof_chunks().map(|(p, c)| (p, c.len())).collect();
    assert_eq!(aof, [(9, 8), (25, 16), (57, 32)]);
}

#[test]
fn scandump_large_sub_filter() {
    let cf = filter(67108864, 2, 20, 1);
    let at = |pos| cf.scandump_chunk(pos).map(|(next, c)| (next, c.len()));
    assert_eq!(at(1), Some((16777217, 16 << 20)));
    assert_eq!(at(5), Some((16777221, 16 << 20)));
    assert_eq!(at(67108854), Some((67108865, 11)));
    assert_eq!(at(67108865), None);
    assert_eq!(cf.aof_chunks().count(), 4);
}

/// The one-pass AOF chunks are exactly what iterating SCANDUMP returns,
/// also across 16 MiB pieces of a big sub-filter and after growth.
#[test]
fn aof_chunks_equal_the_scandump_iteration() {
    let mut grown = filter(8, 2, 20, 2);
    for i in 0..200u32 {
        grown.insert(hash_item(&i.to_le_bytes()));
    }
    assert!(grown.num_filters() > 3);
    for cf in [three_sub_filters(), filter(67108864, 2, 20, 1), grown] {
        let mut iterated = Vec::new();
        let mut pos = 1;
        while let Some((next, chunk)) = cf.scandump_chunk(pos) {
            iterated.push((next, chunk));
            pos = next;
        }
        assert_eq!(cf.aof_chunks().collect::<Vec<_>>(), iterated);
    }
}

#[test]
fn load_chunk_bounds() {
    let mut cf = filter(100, 2, 20, 1);
    // Room for the chunks' fingerprints (a header would carry the count).
    cf.num_items = 4;
    assert_eq!(bytes(&cf).len(), 128);
    // docs/differences.md §1 item 7: past the end must not wrap into the last sub-filter.
    assert_eq!(cf.load_chunk(203, b"dd"), Err(ChunkError));
    assert_eq!(cf.load_chunk(130, b"dd"), Err(ChunkError));
    assert_eq!(cf.load_chunk(2, b"dd"), Err(ChunkError));
    assert_eq!(cf.load_chunk(-1, b"dd"), Err(ChunkError));
    assert_eq!(cf.load_chunk(5, b""), Err(ChunkError));
    assert_eq!(bytes(&cf), vec![0; 128]);
    cf.load_chunk(129, b"dd").unwrap();
    cf.load_chunk(3, b"ab").unwrap();
    let b = bytes(&cf);
    assert_eq!((&b[..2], &b[126..]), (&b"ab"[..], &b"dd"[..]));
    // A chunk may not straddle two sub-filters.
    let mut cf = three_sub_filters();
    cf.num_items = 4;
    assert_eq!(cf.load_chunk(11, &[1; 4]), Err(ChunkError));
    cf.load_chunk(13, &[1; 4]).unwrap();
    assert_eq!(bytes(&cf)[8..12], [1; 4]);
}

#[test]
fn compaction_frees_newest_only_when_empty() {
    let mut cf = filter(4, 1, 5, 1);
    for i in 0..10 {
        cf.insert(h(&format!("k{i}")));
    }
    let before = bytes(&cf);
    cf.compact(true);
    assert_eq!(cf.num_filters(), 3);
    assert_eq!(
        before.iter().filter(|&&b| b != 0).count(),
        bytes(&cf).iter().filter(|&&b| b != 0).count()
    );
    for i in 0..10 {
        assert!(cf.delete(h(&format!("k{i}"))), "k{i}");
    }
    cf.compact(true);
    assert_eq!(
        (cf.num_items(), cf.num_deletes(), cf.num_filters()),
        (0, 0, 1)
    );
}

#[derive(Debug, Clone)]
enum Op {
    Insert(usize),
    InsertUnique(usize),
    Delete(usize),
    Compact(bool),
}

const POOL: usize = 40;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..POOL).prop_map(Op::Insert),
        2 => (0..POOL).prop_map(Op::InsertUnique),
        3 => (0..POOL).prop_map(Op::Delete),
        1 => any::<bool>().prop_map(Op::Compact),
    ]
}

fn occupied(cf: &CuckooFilter) -> u64 {
    bytes(cf).iter().filter(|&&b| b != 0).count() as u64
}

fn assert_round_trips(cf: &CuckooFilter) {
    let mut copy = CuckooFilter::from_header(&cf.encode_header(), 255).unwrap();
    for (pos, chunk) in cf.aof_chunks() {
        copy.load_chunk(pos, chunk).unwrap();
    }
    assert_eq!(&copy, cf);
    assert_eq!(&load(&saved(cf), 4).unwrap(), cf);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn model(
        capacity in 2u64..24,
        bs in 1u16..4,
        mi in 1u16..12,
        x in prop_oneof![Just(0u16), Just(1), Just(2), Just(3)],
        ops in proptest::collection::vec(op(), 1..160),
    ) {
        let Ok(mut cf) = CuckooFilter::new(capacity, bs, mi, x) else {
            prop_assert!(capacity < 2 * u64::from(bs));
            return Ok(());
        };
        let hashes: Vec<_> = (0..POOL).map(|i| h(&format!("item-{i}"))).collect();
        // Only items with a fingerprint of their own can be tracked exactly:
        // a delete of a colliding item may remove another's copy.
        let unique = |i: usize| hashes.iter().filter(|c| c.fp == hashes[i].fp).count() == 1;
        let mut copies = [0u64; POOL];
        let mut items = 0u64;
        for op in ops {
            match op {
                Op::Insert(i) | Op::InsertUnique(i) => {
                    let nx = matches!(op, Op::InsertUnique(_));
                    let present = cf.contains(hashes[i]);
                    let out = if nx { cf.insert_unique(hashes[i]) } else { cf.insert(hashes[i]) };
                    match out {
                        Inserted => { items += 1; copies[i] += 1; }
                        Exists => prop_assert!(nx && present),
                        NoSpace => prop_assert_eq!(x, 0),
                        AllocFailed | OverLimit => prop_assert!(false, "growth failed"),
                    }
                }
                Op::Delete(i) => {
                    let deleted = cf.delete(hashes[i]);
                    if unique(i) {
                        prop_assert_eq!(deleted, copies[i] > 0);
                    }
                    if deleted {
                        items -= 1;
                        copies[i] = copies[i].saturating_sub(1);
                    }
                }
                Op::Compact(cont) => {
                    cf.compact(cont);
                    prop_assert_eq!(cf.num_deletes(), 0);
                }
            }
            prop_assert_eq!(cf.num_items(), items);
            prop_assert_eq!(occupied(&cf), items);
            prop_assert_eq!(cf.occupied(), items);
            for (i, &n) in copies.iter().enumerate().filter(|&(i, _)| unique(i)) {
                prop_assert_eq!(cf.contains(hashes[i]), n > 0, "item {}", i);
                prop_assert!(cf.count(hashes[i]) >= n);
            }
        }
        assert_round_trips(&cf);
    }
}

#[test]
fn slot_offsets_use_64_bits() {
    // docs/differences.md §1 item 6: an 8 GiB sub-filter (lazily zeroed pages, touched once).
    let Ok(mut cf) = CuckooFilter::from_header(&header(1 << 33, 1, 1, 20, 1), 255) else {
        eprintln!("skipped: cannot reserve 8 GiB here");
        return;
    };
    let t2 = h("t2");
    assert_eq!(cf.insert(t2), Inserted);
    assert_eq!(cf.filters[0].slots()[4874832503], 208);
    assert!(cf.contains(t2) && cf.delete(t2));
    assert_eq!(cf.filters[0].slots()[4874832503], 0);
}

#[test]
fn new_size_is_the_size_of_the_new_filter() {
    for (cap, bs) in [(1024, 2), (1000, 4), (7, 1), (100_000, 255)] {
        let cf = CuckooFilter::new(cap, bs, 20, 1).unwrap();
        assert_eq!(CuckooFilter::new_size(cap, bs), Some(cf.size_bytes()));
    }
    assert_eq!(CuckooFilter::new_size(10, 0), None);
}

#[test]
fn a_growth_above_the_limit_is_refused_and_changes_nothing() {
    let mut cf = CuckooFilter::new(64, 2, 20, 1).unwrap();
    let limit = Some(cf.size_bytes() + 16);
    let mut outcomes = Vec::new();
    for i in 0..500u32 {
        outcomes.push(cf.insert_within(hash_item(&i.to_le_bytes()), false, limit));
    }
    assert_eq!(cf.num_filters(), 1);
    let inserted = outcomes
        .iter()
        .filter(|o| **o == InsertOutcome::Inserted)
        .count();
    assert_eq!(cf.num_items(), inserted as u64);
    assert!(outcomes.contains(&InsertOutcome::OverLimit));
    let mut free = CuckooFilter::new(64, 2, 20, 1).unwrap();
    for i in 0..500u32 {
        free.insert(hash_item(&i.to_le_bytes()));
    }
    assert!(free.num_filters() > 1);
}

/// Issue 30: no counter wraps. A count below the fingerprints cannot be
/// loaded (counts_agree); should one arise, CF.DEL stops at 0 where
/// RedisBloom wraps.
#[test]
fn counters_never_wrap() {
    let mut cf = filter(64, 2, 20, 1);
    assert_eq!(cf.insert(h("x")), Inserted);
    cf.num_items = 0;
    assert!(cf.delete(h("x")));
    assert_eq!((cf.num_items(), cf.num_deletes()), (0, 1));
    cf.num_deletes = u64::MAX;
    assert_eq!(cf.insert(h("x")), Inserted);
    assert!(cf.delete(h("x")));
    assert_eq!(cf.num_deletes(), u64::MAX);
}

/// `saved(cf)` with the item count `n` (primitive 2).
fn saved_with_items(cf: &CuckooFilter, n: u64) -> Vec<Primitive> {
    let mut p = saved(cf);
    p[2] = Primitive::Unsigned(n);
    p
}

/// Issue 30: the RDB loader takes an item count between the fingerprints
/// held and the slots, and nothing outside.
#[test]
fn rdb_counts_between_the_fingerprints_and_the_slots() {
    let mut cf = filter(4, 1, 5, 1);
    for i in 0..10 {
        assert_eq!(cf.insert(h(&format!("k{i}"))), Inserted);
    }
    assert_eq!(
        (cf.num_filters(), cf.occupied(), cf.slot_count()),
        (3, 10, 12)
    );
    assert!(cf.counts_agree());
    for n in 10..=12 {
        let loaded = load(&saved_with_items(&cf, n), 4).unwrap();
        assert_eq!((loaded.num_items(), loaded.occupied()), (n, 10));
    }
    for n in [0, 9, 13, u64::MAX] {
        assert_eq!(
            load(&saved_with_items(&cf, n), 4),
            Err(LoadError::Invalid),
            "{n}"
        );
    }
    // numDeletes (primitive 3) counts deletes since the last compaction: no bound.
    let mut p = saved(&cf);
    p[3] = Primitive::Unsigned(u64::MAX);
    assert_eq!(load(&p, 4).unwrap().num_deletes(), u64::MAX);
}

/// Issue 30: a LOADCHUNK header may not count more items than its slots.
#[test]
fn header_counts_at_most_the_slots() {
    let with_items = |n: u64| {
        let mut hdr = header(4, 2, 2, 20, 2);
        hdr[..8].copy_from_slice(&n.to_le_bytes());
        CuckooFilter::from_header(&hdr, 255).map(|cf| cf.slot_count())
    };
    assert_eq!(with_items(24), Ok(24));
    assert_eq!(with_items(0), Ok(24));
    assert_eq!(with_items(25), Err(HeaderError::CannotCreate));
    assert_eq!(with_items(u64::MAX), Err(HeaderError::CannotCreate));
}

/// A genuine filter of three sub-filters (56 slots, 39 items).
fn genuine() -> CuckooFilter {
    let mut cf = filter(8, 2, 20, 2);
    for i in 0..40 {
        assert_eq!(cf.insert(h(&format!("g{i}"))), Inserted);
    }
    assert!(cf.delete(h("g3")));
    assert_eq!(
        (cf.num_filters(), cf.slot_count(), cf.num_items()),
        (3, 56, 39)
    );
    cf
}

/// Issue 30: a genuine dump loads in any chunk order, with chunks repeated,
/// and a key saved between its chunks reloads and is then completed.
#[test]
fn genuine_chunks_load_in_any_order_and_between_reloads() {
    let orig = genuine();
    let (hdr, chunks): (_, Vec<_>) = (orig.encode_header(), orig.aof_chunks().collect());
    let orders: [&[usize]; 4] = [&[0, 1, 2], &[2, 1, 0], &[1, 1, 2, 0, 2, 0], &[2, 0, 2, 1]];
    for order in orders {
        let mut cf = CuckooFilter::from_header(&hdr, 255).unwrap();
        for &k in order {
            let (pos, chunk) = chunks[k];
            cf.load_chunk(pos, chunk).unwrap();
            assert!(cf.counts_agree());
            // Saved here and reloaded (a restart, a migration's snapshot).
            cf = load(&saved(&cf), 4).unwrap();
        }
        assert_eq!(cf, orig, "{order:?}");
    }
}

/// Issue 30: a chunk that would leave more fingerprints than the header
/// counts is refused and writes nothing — such as chunks read from a filter
/// that took an item after its header was read.
#[test]
fn a_chunk_beyond_the_count_is_refused_unchanged() {
    let mut source = genuine();
    let mut cf = CuckooFilter::from_header(&source.encode_header(), 255).unwrap();
    assert_eq!(source.insert(h("late")), Inserted);
    let mut refused = 0;
    for (pos, chunk) in source.aof_chunks() {
        let before = bytes(&cf);
        match cf.load_chunk(pos, chunk) {
            Ok(()) => {}
            Err(ChunkError) => {
                refused += 1;
                assert_eq!(bytes(&cf), before);
            }
        }
        assert!(cf.counts_agree());
    }
    assert_eq!(refused, 1);
    // One byte more than the count, alone.
    let mut cf = filter(8, 2, 20, 1);
    assert_eq!(cf.load_chunk(2, &[9]), Err(ChunkError));
    assert_eq!(bytes(&cf), vec![0; 8]);
}

/// Issue 30: commands on a key between LOADCHUNKs, whose count is ahead of
/// its fingerprints, keep the count within the slots: a filter whose count
/// claims every slot is full, and compaction keeps the slots it claims.
#[test]
fn commands_between_chunks_keep_the_count_within_the_slots() {
    // Non-scaling, 8 slots, all claimed by the header, no chunk yet.
    let mut hdr = header(4, 1, 2, 20, 0);
    hdr[..8].copy_from_slice(&8u64.to_le_bytes());
    let mut cf = CuckooFilter::from_header(&hdr, 255).unwrap();
    assert_eq!(cf.insert(h("a")), NoSpace);
    assert_eq!((cf.num_items(), cf.occupied()), (8, 0));
    // Scaling: it grows first.
    hdr[36] = 1;
    let mut cf = CuckooFilter::from_header(&hdr, 255).unwrap();
    assert_eq!(cf.insert(h("a")), Inserted);
    assert_eq!((cf.num_filters(), cf.num_items(), cf.occupied()), (2, 9, 1));
    assert!(cf.counts_agree());
    // Compaction moves "a" into sub-filter 0 but keeps sub-filter 1: the
    // count claims its slots.
    cf.compact(true);
    assert_eq!((cf.num_filters(), cf.filters[0].occupied()), (2, 1));
    assert!(cf.counts_agree());
    assert_eq!(load(&saved(&cf), 4).unwrap(), cf);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Issue 30's crucial rule: whatever chunks (genuine, repeated, crafted)
    /// and commands reach a key after its header, memory holds only values
    /// the RDB loader takes, and the count stays within the slots.
    #[test]
    fn half_loaded_keys_always_reload(
        steps in proptest::collection::vec((0u8..6, 0usize..64, proptest::collection::vec(0u8..4, 1..6)), 1..40),
        // The genuine count is 39 of 56 slots.
        count in 34u64..=56,
    ) {
        let orig = genuine();
        let (mut hdr, chunks): (_, Vec<_>) = (orig.encode_header(), orig.aof_chunks().collect());
        hdr[..8].copy_from_slice(&count.to_le_bytes());
        let mut cf = CuckooFilter::from_header(&hdr, 255).unwrap();
        for (kind, at, junk) in steps {
            match kind {
                0 | 1 => {
                    let (pos, chunk) = chunks[at % chunks.len()];
                    let _ = cf.load_chunk(pos, chunk);
                }
                2 => {
                    let total = cf.slot_count() as usize;
                    let pos = (at % total + junk.len() + 1) as i64;
                    let _ = cf.load_chunk(pos, &junk);
                }
                3 => {
                    for k in 0..junk.len() * 4 {
                        cf.insert(h(&format!("c{at}.{k}")));
                    }
                }
                4 => { cf.delete(h(&format!("g{at}"))); }
                _ => cf.compact(at % 2 == 0),
            }
            prop_assert_eq!(cf.occupied(), occupied(&cf));
            prop_assert!(cf.counts_agree(), "{}", cf.debug_string());
            prop_assert_eq!(&load(&saved(&cf), 4).unwrap(), &cf);
        }
    }
}

/// What a write accounts from (the Redis layer's INFO totals): the size a
/// filter had at each number of sub-filters, also once compaction has
/// removed some, and the reshape count moves with every one added or
/// removed.
#[test]
fn size_bytes_at_each_sub_filter_count() {
    for x in [1, 2, 4] {
        let mut cf = filter(4, 1, 5, x);
        let mut sizes = vec![cf.size_bytes()];
        for i in 0..40 {
            let (filters, reshapes) = (cf.num_filters(), crate::reshape::reshapes());
            cf.insert(h(&format!("k{i}")));
            if cf.num_filters() > filters {
                assert!(crate::reshape::reshapes() > reshapes);
                sizes.push(cf.size_bytes());
            }
        }
        assert!(sizes.len() > 2, "{x}");
        for (filters, &size) in sizes.iter().enumerate() {
            assert_eq!(cf.size_bytes_at(filters as u16 + 1), size, "{x}: {filters}");
        }
        let reshapes = crate::reshape::reshapes();
        for i in 0..40 {
            cf.delete(h(&format!("k{i}")));
        }
        cf.compact(true);
        assert!(cf.num_filters() < sizes.len() as u16);
        assert!(crate::reshape::reshapes() > reshapes);
        assert_eq!(cf.size_bytes_at(cf.num_filters()), cf.size_bytes());
        assert_eq!(cf.size_bytes_at(sizes.len() as u16), sizes[sizes.len() - 1]);
    }
}
