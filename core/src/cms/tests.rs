//! The test vectors of docs/cms.md §9, an independent model of §4 checked
//! against the sketch, RDB validation (§6.2) and properties: no
//! under-count, batches equal single calls, merges equal the model.

use super::batch::Geometry;
use super::*;
use crate::hash::murmur2;
use crate::rdb::{ByteSource, Primitive, PrimitiveSource};
use proptest::prelude::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// §4 written out plainly: `%` for columns, u64 arithmetic for counters.
#[derive(Clone, Debug, PartialEq)]
struct Model {
    width: u64,
    depth: u64,
    cells: Vec<u32>,
    total: u64,
}

impl Model {
    fn new(width: u64, depth: u64) -> Model {
        Model {
            width,
            depth,
            cells: vec![0; (width * depth) as usize],
            total: 0,
        }
    }

    fn index(&self, item: &[u8], row: u64) -> usize {
        (row * self.width + u64::from(murmur2(item, row as u32)) % self.width) as usize
    }

    fn increment(&mut self, item: &[u8], inc: u64) -> u32 {
        let mut min = u32::MAX;
        for row in 0..self.depth {
            let i = self.index(item, row);
            let v = (u64::from(self.cells[i]) + inc).min(u64::from(u32::MAX)) as u32;
            self.cells[i] = v;
            min = min.min(v);
        }
        self.total = self.total.wrapping_add(inc);
        min
    }

    fn query(&self, item: &[u8]) -> u32 {
        (0..self.depth)
            .map(|row| self.cells[self.index(item, row)])
            .min()
            .unwrap()
    }

    fn cells_of(s: &CountMinSketch) -> Vec<u32> {
        s.cells
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .collect()
    }

    fn matches(&self, s: &CountMinSketch) -> bool {
        s.width() == self.width
            && s.depth() == self.depth
            && s.counter == self.total
            && Model::cells_of(s) == self.cells
    }
}

fn saved(s: &CountMinSketch) -> Vec<Primitive> {
    let mut out = Vec::new();
    s.rdb_save(&mut out);
    out
}

fn load(prims: &[Primitive]) -> Result<CountMinSketch, LoadError> {
    CountMinSketch::rdb_load(&mut PrimitiveSource::new(prims), 0)
}

#[test]
fn hash_vectors() {
    #[rustfmt::skip]
    let table: [(&[u8], [u32; 7]); 6] = [
        (b"", [0x00000000, 0x5bd15e36, 0xb7a2bc6d, 0x13759a54, 0x6f4778db, 0xcb1819da, 0x26eb34a8]),
        (b"a", [0x92685f5e, 0x2550b18c, 0x2cf62649, 0x86b7b9f4, 0xb9b6c23e, 0xf822f206, 0x5c22f2fa]),
        (b"foo", [0x8fea6375, 0x0bcc2e5a, 0x71b51c90, 0x03f30a09, 0x5fc1bbbb, 0x809592ac, 0xd3fd4a99]),
        (b"hello world", [0x44a81419, 0x83ea5dee, 0xd94a2afb, 0xc1b1edd0, 0x0c154bc6, 0x03aef1a7, 0x8596aa75]),
        (b"abcdefghijklmnopq", [0x7ad1dc7b, 0x38aee8a3, 0x08660dd1, 0xe018abf6, 0x3e9beff1, 0xed0f3e0a, 0xd4d7ac03]),
        (b"item-42", [0x02b2caf0, 0x4e41d8be, 0x5e6e5691, 0x50d0471f, 0xef408290, 0x71933753, 0x02139076]),
    ];
    for (input, hashes) in table {
        for (seed, want) in hashes.into_iter().enumerate() {
            assert_eq!(murmur2(input, seed as u32), want, "{input:?} seed {seed}");
        }
    }
    assert_eq!(murmur2(b"bar", 0), 0x27f6e557);
    assert_eq!(murmur2(b"bar", 1), 0xfc397da9);
}

#[test]
fn columns_of_foo_in_2000_by_7() {
    let g = Geometry::new(2000, 7);
    let cols: Vec<usize> = g
        .cells(b"foo")
        .enumerate()
        .map(|(r, c)| c - r * 2000)
        .collect();
    assert_eq!(cols, [773, 586, 736, 1465, 27, 60, 281]);
}

#[test]
fn rows_past_2_pow_32_reuse_seeds() {
    let g = Geometry::new(3, (1 << 32) + 2);
    let row = 1usize << 32;
    assert_eq!(g.cell(b"foo", row) - row * 3, g.cell(b"foo", 0));
    assert_eq!(g.cell(b"foo", row + 1) - row * 3, g.cell(b"foo", 1));
}

#[test]
fn wide_rows_take_the_hash_as_column() {
    // Beyond 2^32 columns only the first 2^32 are reachable (§2).
    let w = (1u64 << 32) + 7;
    let g = Geometry::new(w, 2);
    assert_eq!(g.cell(b"a", 0), 0x92685f5e);
    assert_eq!(g.cell(b"a", 1), w as usize + 0x2550b18c);
}

#[test]
#[allow(clippy::excessive_precision)] // the probabilities as they were sent
fn initbyprob_dimensions() {
    assert_eq!(0.5f32.log10().to_bits(), 0xbe9a209b);
    let table: &[(f64, f64, u64, u64)] = &[
        (0.001, 0.01, 2000, 7),
        (0.01, 0.01, 200, 7),
        (0.01, 0.5, 200, 1),
        (0.1, 0.25, 20, 2),
        (0.1, 0.125, 20, 3),
        (0.1, 0.1, 20, 4),
        (0.1, 0.001, 20, 10),
        (0.3, 0.000001, 7, 20),
        (0.0001, 0.9, 20000, 1),
        (0.7, 0.5, 3, 1),
        (3e-7, 0.5, 6666667, 1),
        (0.1, 0.4999999, 20, 2),
        (0.1, 0.5000001, 20, 1),
        (0.1, 0.2499999, 20, 3),
        (0.1, 0.2500001, 20, 2),
        // Single precision: f64 logarithms would give 3, 8 and 11.
        (0.1, 0.24999997019767761, 20, 2),
        (0.1, 0.0078124990686774254, 20, 7),
        (0.1, 0.00097656238358467817, 20, 10),
        (0.1, 9.5367431640625e-07, 20, 20),
        (0.1, 1e-40, 20, 133),
        (0.1, 1e-45, 20, 149),
    ];
    for &(e, p, w, d) in table {
        assert_eq!(dims_for_error(e, p), Some((w, d)), "{e} {p}");
    }
    // Probability rounding to f32 0 (infinite depth), 2/e ≥ 2^63.
    assert_eq!(dims_for_error(0.1, 1e-46), None);
    assert_eq!(dims_for_error(1e-19, 0.9), None);
    assert_eq!(dims_for_error(1.5e-19, 0.9), None);
    assert_eq!(dims_for_error(5e-324, 0.9), None);
    // Probability rounding to f32 1: depth 0.
    assert_eq!(dims_for_error(0.1, 0.99999999), None);
    assert_eq!(
        CountMinSketch::for_error(3e-19, 0.9).unwrap_err(),
        CreateError::OutOfMemory
    );
    assert_eq!(
        CountMinSketch::for_error(0.1, 1e-46).unwrap_err(),
        CreateError::Invalid
    );
}

#[test]
fn creation_checks() {
    assert_eq!(
        CountMinSketch::new(1 << 62, 2).unwrap_err(),
        CreateError::Invalid
    );
    assert_eq!(CountMinSketch::new(0, 2).unwrap_err(), CreateError::Invalid);
    assert_eq!(CountMinSketch::new(2, 0).unwrap_err(), CreateError::Invalid);
    assert_eq!(
        CountMinSketch::new(1 << 63, 1).unwrap_err(),
        CreateError::Invalid
    );
    for (w, d) in [(i64::MAX as u64, 1), (1 << 31, 1 << 31), (1 << 40, 1 << 10)] {
        assert_eq!(
            CountMinSketch::new(w, d).unwrap_err(),
            CreateError::OutOfMemory,
            "{w}x{d}"
        );
    }
    let s = CountMinSketch::new(20, 5).unwrap();
    assert_eq!((s.width(), s.depth(), s.count()), (20, 5, 0));
    assert_eq!(s.size_bytes(), 32 + 400);
    assert_eq!(std::mem::size_of::<CountMinSketch>(), 32);
}

#[test]
fn vector_creation_increment_query() {
    let mut s = CountMinSketch::for_error(0.001, 0.01).unwrap();
    assert_eq!((s.width(), s.depth(), s.count()), (2000, 7, 0));
    let incs: [(&[u8], u64); 3] = [(b"foo", 10), (b"bar", 3), (b"foo", 1)];
    let mut got = Vec::new();
    s.increment_batch(&incs, |p| p.0, |p| p.1, |v| got.push(v));
    assert_eq!(got, [10, 3, 11]);
    let mut q = Vec::new();
    s.query_batch(&["foo", "bar", "baz"], |v| q.push(v));
    assert_eq!(q, [11, 3, 0]);
    assert_eq!(s.count(), 14);
}

#[test]
fn vector_fixed_stream() {
    let mut s = CountMinSketch::new(50, 4).unwrap();
    let mut m = Model::new(50, 4);
    for i in 0..1000u64 {
        let item = format!("item-{}", i % 97);
        let inc = i % 5 + 1;
        assert_eq!(
            s.increment(item.as_bytes(), inc),
            m.increment(item.as_bytes(), inc)
        );
    }
    let q: Vec<u32> = ["item-0", "item-1", "item-42", "item-96", "absent"]
        .iter()
        .map(|i| s.query(i.as_bytes()))
        .collect();
    assert_eq!(q, [31, 62, 60, 30, 60]);
    assert_eq!((s.width(), s.depth(), s.count()), (50, 4, 3000));
    assert!(m.matches(&s));
}

#[test]
fn vector_overflow_and_signed_count() {
    let mut s = CountMinSketch::new(20, 5).unwrap();
    let r: Vec<u32> = [(b"x", 5), (b"y", 0), (b"x", 2)]
        .iter()
        .map(|&(i, v)| s.increment(i, v))
        .collect();
    assert_eq!(r, [5, 0, 7]);
    // Exactly 2^32 - 1 is reported as an overflow, like a saturated one.
    assert_eq!(s.increment(b"big", 4294967295), SATURATED);
    assert_eq!(s.increment(b"big2", 4294967294), 4294967294);
    assert_eq!(s.increment(b"big3", 4294967296), SATURATED);
    assert_eq!(s.increment(b"big4", i64::MAX as u64), SATURATED);
    let q: Vec<u32> = ["big", "big2", "big3", "big4"]
        .iter()
        .map(|i| s.query(i.as_bytes()))
        .collect();
    assert_eq!(q, [4294967295, 4294967294, 4294967295, 4294967295]);
    assert_eq!(s.count(), -9223372023969873917);
    s.increment(b"big4", i64::MAX as u64);
    assert_eq!(s.count(), 12884901890);
    // Flow-test vector: 5×2, 2^31 - 1 three times.
    let mut t = CountMinSketch::new(5, 2).unwrap();
    assert_eq!(t.increment(b"a", 2147483647), 2147483647);
    assert_eq!(t.increment(b"a", 2147483647), 4294967294);
    assert_eq!(t.increment(b"a", 2147483647), SATURATED);
    assert_eq!(t.query(b"a"), 4294967295);
}

#[test]
fn vector_rdb_layout() {
    let mut s = CountMinSketch::new(4, 2).unwrap();
    s.increment(b"foo", 3);
    s.increment(b"bar", 1);
    let array = hex("0000000003000000000000000100000000000000010000000300000000000000");
    assert_eq!(
        saved(&s),
        [
            Primitive::Unsigned(4),
            Primitive::Unsigned(2),
            Primitive::Unsigned(4),
            Primitive::Buffer(array)
        ]
    );
    assert_eq!(load(&saved(&s)).unwrap(), s);
}

fn sketch_with(width: u64, depth: u64, incs: &[(&str, u64)]) -> CountMinSketch {
    let mut s = CountMinSketch::new(width, depth).unwrap();
    for &(i, v) in incs {
        s.increment(i.as_bytes(), v);
    }
    s
}

#[test]
fn vector_merges() {
    let s1 = sketch_with(10, 2, &[("a", 3), ("b", 4)]);
    let s2 = sketch_with(10, 2, &[("a", 10)]);
    let mut d = CountMinSketch::new(10, 2).unwrap();
    d.merge(&[(Source::Other(&s1), 2), (Source::Other(&s2), 3)])
        .unwrap();
    assert_eq!((d.query(b"a"), d.query(b"b"), d.count()), (36, 8, 44));
    // Subtracting through the destination itself, then too far.
    d.merge(&[(Source::Destination, 1), (Source::Other(&s1), -1)])
        .unwrap();
    assert_eq!((d.query(b"a"), d.query(b"b"), d.count()), (33, 4, 37));
    let before = saved(&d);
    let mut e = sketch_with(10, 2, &[("a", 1)]);
    e.merge(&[(Source::Destination, 1), (Source::Other(&s1), -1)])
        .unwrap_err();
    d.merge(&[(Source::Destination, 1), (Source::Other(&s1), -9)])
        .unwrap_err();
    assert_eq!(saved(&d), before, "a failed merge changes nothing");
    d.merge(&[(Source::Other(&s1), 0), (Source::Other(&s2), 0)])
        .unwrap();
    assert_eq!((d.query(b"a"), d.count()), (0, 0));
    d.merge(&[(Source::Other(&s1), 1_000_000_000)]).unwrap();
    assert_eq!(
        (d.query(b"a"), d.query(b"b"), d.count()),
        (3_000_000_000, 4_000_000_000, 7_000_000_000)
    );
    // 4e9 · 2 > 2^32 - 1 (§7.1 item 3: no silent wrap).
    let before = saved(&d);
    assert_eq!(
        d.merge(&[(Source::Destination, 2)]),
        Err(MergeError::Overflow)
    );
    assert_eq!(saved(&d), before);
    let other = CountMinSketch::new(10, 3).unwrap();
    assert_eq!(
        d.merge(&[(Source::Other(&other), 1)]),
        Err(MergeError::Shape)
    );
}

#[test]
fn merge_total_rules() {
    let mut big = CountMinSketch::new(2, 1).unwrap();
    big.increment(b"x", i64::MAX as u64);
    big.increment(b"x", 1);
    assert_eq!(big.count(), i64::MIN, "total 2^63");
    let mut d = CountMinSketch::new(2, 1).unwrap();
    // A total ≥ 2^63 fails with any non-zero weight (the sum is negative
    // or the product leaves i64), and merges with weight 0.
    for w in [1, -1, 2, i64::MIN] {
        assert_eq!(
            d.merge(&[(Source::Other(&big), w)]),
            Err(MergeError::Overflow),
            "{w}"
        );
    }
    let zero = CountMinSketch::new(2, 1).unwrap();
    d.merge(&[(Source::Other(&big), 0), (Source::Other(&zero), 5)])
        .unwrap();
    // Cell products beyond i64 fail even if the sum would come back.
    let mut one = CountMinSketch::new(2, 1).unwrap();
    one.increment(b"x", 3);
    assert_eq!(
        d.merge(&[
            (Source::Other(&one), i64::MAX),
            (Source::Other(&one), -i64::MAX)
        ]),
        Err(MergeError::Overflow)
    );
}

#[test]
fn rdb_validation() {
    let good = saved(&sketch_with(4, 2, &[("foo", 3)]));
    let with = |i: usize, p: Primitive| {
        let mut v = good.clone();
        v[i] = p;
        v
    };
    assert!(load(&good).is_ok());
    assert_eq!(
        CountMinSketch::rdb_load(&mut PrimitiveSource::new(&good), 1).unwrap_err(),
        LoadError::UnsupportedVersion
    );
    for bad in [
        with(0, Primitive::Unsigned(0)),
        with(1, Primitive::Unsigned(0)),
        with(3, Primitive::Buffer(vec![0; 31])),
        with(3, Primitive::Buffer(vec![0; 33])),
        with(1, Primitive::Unsigned(3)),
        // §7.2 item 2: 4 · 2^62 wraps to 0 in RedisBloom's check.
        vec![
            Primitive::Unsigned(1 << 62),
            Primitive::Unsigned(1),
            Primitive::Unsigned(0),
            Primitive::Buffer(vec![]),
        ],
        vec![
            Primitive::Unsigned(1 << 61),
            Primitive::Unsigned(4),
            Primitive::Unsigned(0),
            Primitive::Buffer(vec![]),
        ],
    ] {
        assert_eq!(load(&bad).unwrap_err(), LoadError::Invalid, "{bad:?}");
    }
    for n in 0..good.len() {
        assert_eq!(
            load(&good[..n]).unwrap_err(),
            LoadError::Read,
            "{n} primitives"
        );
    }
    // The counters are free: a total unrelated to the cells loads.
    assert!(load(&with(2, Primitive::Unsigned(u64::MAX))).is_ok());
}

#[test]
fn clone_is_deep() {
    let s = sketch_with(30, 3, &[("a", 4)]);
    let mut c = s.try_clone().unwrap();
    assert_eq!(c, s);
    c.increment(b"a", 1);
    assert_eq!((s.query(b"a"), c.query(b"a")), (4, 5));
}

/// Items drawn from a small universe, so that batches repeat items.
fn item_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0u8..40).prop_map(|i| format!("i{i}").into_bytes()),
        prop::collection::vec(any::<u8>(), 0..12),
    ]
}

proptest! {
    #[test]
    fn column_is_the_remainder(h in any::<u32>(), w in prop_oneof![
        1u64..5, Just(u64::from(u32::MAX)), Just(1 << 31), any::<u32>().prop_map(u64::from),
        (1u64 << 32)..u64::MAX,
    ]) {
        let g = Geometry::new(w, 1);
        prop_assert_eq!(g.cell(&h.to_le_bytes(), 0) as u64, u64::from(murmur2(&h.to_le_bytes(), 0)) % w);
    }

    #[test]
    fn never_under_counts(
        width in 1u64..40,
        depth in 1u64..6,
        incs in prop::collection::vec((item_strategy(), 0u64..1000), 1..300),
    ) {
        let mut s = CountMinSketch::new(width, depth).unwrap();
        let mut truth = std::collections::HashMap::<Vec<u8>, u64>::new();
        for (item, inc) in &incs {
            let r = s.increment(item, *inc);
            let t = truth.entry(item.clone()).or_default();
            *t += inc;
            prop_assert!(u64::from(r) >= *t);
        }
        for (item, t) in &truth {
            prop_assert!(u64::from(s.query(item)) >= *t);
        }
        let mut m = Model::new(width, depth);
        incs.iter().for_each(|(i, v)| { m.increment(i, *v); });
        prop_assert!(m.matches(&s));
        prop_assert!(truth.keys().all(|i| s.query(i) == m.query(i)));
        prop_assert_eq!(s.count() as u64, incs.iter().map(|p| p.1).sum::<u64>());
    }

    #[test]
    fn saturates_never_wraps(incs in prop::collection::vec((0u8..3, any::<u64>().prop_map(|v| v >> 1)), 1..40)) {
        let mut s = CountMinSketch::new(3, 2).unwrap();
        let mut m = Model::new(3, 2);
        for (i, inc) in &incs {
            let item = [*i];
            prop_assert_eq!(s.increment(&item, *inc), m.increment(&item, *inc));
        }
        prop_assert!(m.matches(&s));
    }

    /// Batches (blocks, prefetches, deep sketches one item at a time) answer
    /// and write exactly as single calls do.
    #[test]
    fn batches_equal_single_calls(
        width in 1u64..64,
        depth in prop_oneof![1u64..10, 30u64..40, 60u64..70],
        incs in prop::collection::vec((item_strategy(), 0u64..5), 0..120),
    ) {
        let mut batched = CountMinSketch::new(width, depth).unwrap();
        let mut single = CountMinSketch::new(width, depth).unwrap();
        let mut got = Vec::new();
        batched.increment_batch(&incs, |p| &p.0, |p| p.1, |v| got.push(v));
        let want: Vec<u32> = incs.iter().map(|(i, v)| single.increment(i, *v)).collect();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(&batched, &single);
        let items: Vec<&Vec<u8>> = incs.iter().map(|p| &p.0).collect();
        let mut q = Vec::new();
        batched.query_batch(&items, |v| q.push(v));
        let want: Vec<u32> = items.iter().map(|i| single.query(i)).collect();
        prop_assert_eq!(q, want);
    }

    #[test]
    fn merges_equal_the_model(
        width in 1u64..8,
        depth in 1u64..4,
        fills in prop::collection::vec(prop::collection::vec((item_strategy(), 0u64..5000), 0..20), 1..4),
        weights in prop::collection::vec(-3i64..4, 4),
        with_destination in any::<bool>(),
    ) {
        let sources: Vec<(CountMinSketch, Model)> = fills.iter().map(|f| {
            let mut s = CountMinSketch::new(width, depth).unwrap();
            let mut m = Model::new(width, depth);
            for (i, v) in f {
                s.increment(i, *v);
                m.increment(i, *v);
            }
            (s, m)
        }).collect();
        let mut d = CountMinSketch::new(width, depth).unwrap();
        d.increment(b"i1", 7);
        let mut dm = Model::new(width, depth);
        dm.increment(b"i1", 7);
        let mut list: Vec<(Source<'_>, i64)> = sources.iter().zip(&weights)
            .map(|((s, _), &w)| (Source::Other(s), w)).collect();
        let mut models: Vec<(&Model, i64)> = sources.iter().zip(&weights).map(|((_, m), &w)| (m, w)).collect();
        let before = dm.clone();
        if with_destination {
            list.push((Source::Destination, weights[3]));
            models.push((&before, weights[3]));
        }
        let cells: Option<Vec<u32>> = (0..dm.cells.len()).map(|x| {
            let sum: i64 = models.iter().map(|(m, w)| i64::from(m.cells[x]) * w).sum();
            u32::try_from(sum).ok()
        }).collect();
        let total: i64 = models.iter().map(|(m, w)| m.total as i64 * w).sum();
        match (cells, u64::try_from(total)) {
            (Some(cells), Ok(total)) => {
                prop_assert_eq!(d.merge(&list), Ok(()));
                dm.cells = cells;
                dm.total = total;
            }
            _ => prop_assert_eq!(d.merge(&list), Err(MergeError::Overflow)),
        }
        prop_assert!(dm.matches(&d));
    }

    #[test]
    fn rdb_round_trip(width in 1u64..30, depth in 1u64..5, incs in prop::collection::vec((item_strategy(), any::<u32>()), 0..30)) {
        let mut s = CountMinSketch::new(width, depth).unwrap();
        for (i, v) in &incs {
            s.increment(i, u64::from(*v));
        }
        let back = load(&saved(&s)).unwrap();
        prop_assert_eq!(&back, &s);
        prop_assert_eq!(back.size_bytes(), 32 + 4 * width * depth);
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200), encver in -1i32..2) {
        if let Ok(mut s) = CountMinSketch::rdb_load(&mut ByteSource::new(&bytes), encver) {
            s.increment(b"x", 1);
            prop_assert!(s.query(b"x") >= 1);
        }
    }
}
