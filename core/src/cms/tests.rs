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

/// §4 written out plainly: `%` for columns, i128 arithmetic for counters.
#[derive(Clone, Debug, PartialEq)]
struct Model {
    width: u64,
    depth: u64,
    size: CellSize,
    cells: Vec<u64>,
    total: u64,
}

impl Model {
    fn new(width: u64, depth: u64, size: CellSize) -> Model {
        Model {
            width,
            depth,
            size,
            cells: vec![0; (width * depth) as usize],
            total: 0,
        }
    }

    fn index(&self, item: &[u8], row: u64) -> usize {
        (row * self.width + u64::from(murmur2(item, row as u32)) % self.width) as usize
    }

    fn increment(&mut self, item: &[u8], inc: i64) -> Incremented {
        let rejected = if inc > 0 {
            Rejected::Overflow
        } else {
            Rejected::Underflow
        };
        let total = i128::from(self.total) + i128::from(inc);
        if !(0..=i128::from(i64::MAX)).contains(&total) {
            return Err(rejected);
        }
        let rows: Vec<usize> = (0..self.depth).map(|r| self.index(item, r)).collect();
        let new: Vec<i128> = rows
            .iter()
            .map(|&i| i128::from(self.cells[i]) + i128::from(inc))
            .collect();
        if new
            .iter()
            .any(|&v| !(0..=i128::from(self.size.max())).contains(&v))
        {
            return Err(rejected);
        }
        for (&i, &v) in rows.iter().zip(&new) {
            self.cells[i] = v as u64;
        }
        self.total = total as u64;
        Ok(self.query(item))
    }

    fn query(&self, item: &[u8]) -> u64 {
        (0..self.depth)
            .map(|row| self.cells[self.index(item, row)])
            .min()
            .unwrap()
    }

    fn cells_of(s: &CountMinSketch) -> Vec<u64> {
        (0..s.cells.len() / s.cell_size.bytes())
            .map(|i| s.load(i))
            .collect()
    }

    fn matches(&self, s: &CountMinSketch) -> bool {
        s.width() == self.width
            && s.depth() == self.depth
            && s.cell_size() == self.size
            && s.counter == self.total
            && Model::cells_of(s) == self.cells
    }
}

const SIZES: [CellSize; 4] = [
    CellSize::One,
    CellSize::Two,
    CellSize::Four,
    CellSize::Eight,
];

fn sizes() -> impl Strategy<Value = CellSize> {
    prop::sample::select(SIZES.to_vec())
}

fn new(width: u64, depth: u64) -> CountMinSketch {
    CountMinSketch::new(width, depth, CellSize::Four).unwrap()
}

fn saved(s: &CountMinSketch) -> Vec<Primitive> {
    saved_as(s, ENCODING_VERSION)
}

fn saved_as(s: &CountMinSketch, encver: i32) -> Vec<Primitive> {
    let mut out = Vec::new();
    s.rdb_save(&mut out, encver);
    out
}

fn load(prims: &[Primitive]) -> Result<CountMinSketch, LoadError> {
    load_as(prims, ENCODING_VERSION)
}

fn load_as(prims: &[Primitive], encver: i32) -> Result<CountMinSketch, LoadError> {
    CountMinSketch::rdb_load(&mut PrimitiveSource::new(prims), encver)
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
    let (w, d) = dims_for_error(3e-19, 0.9).unwrap();
    assert_eq!(check_dims(w, d), Ok(()));
    assert_eq!(
        CountMinSketch::new(w, d, CellSize::One).unwrap_err(),
        CreateError::OutOfMemory
    );
}

#[test]
fn creation_checks() {
    for (w, d) in [(1 << 62, 2), (0, 2), (2, 0), (1 << 63, 1)] {
        assert_eq!(check_dims(w, d), Err(CreateError::Invalid), "{w}x{d}");
        for cs in SIZES {
            assert_eq!(
                CountMinSketch::new(w, d, cs).unwrap_err(),
                CreateError::Invalid
            );
        }
    }
    for (w, d) in [(i64::MAX as u64, 1), (1 << 31, 1 << 31), (1 << 40, 1 << 10)] {
        assert_eq!(check_dims(w, d), Ok(()));
        assert_eq!(
            CountMinSketch::new(w, d, CellSize::One).unwrap_err(),
            CreateError::OutOfMemory,
            "{w}x{d}"
        );
    }
    // 8-byte cells overflow the byte count where 4-byte ones did not.
    assert_eq!(byte_len(1 << 61, 1, CellSize::Four), Some(1 << 63));
    assert_eq!(byte_len(1 << 61, 1, CellSize::Eight), None);
    for cs in SIZES {
        let s = CountMinSketch::new(20, 5, cs).unwrap();
        assert_eq!(
            (s.width(), s.depth(), s.count(), s.cell_size()),
            (20, 5, 0, cs)
        );
        // §4.4 of the 8.12 spec: 40 + cs · w · d.
        assert_eq!(s.size_bytes(), 40 + 100 * cs.bytes() as u64);
    }
    assert_eq!(std::mem::size_of::<CountMinSketch>(), 40);
    let maxima: Vec<u64> = SIZES.iter().map(|c| c.max()).collect();
    assert_eq!(maxima, [255, 65535, 4294967295, 9223372036854775807]);
    let back: Vec<Option<CellSize>> = [1, 2, 4, 8].map(CellSize::from_bytes).to_vec();
    assert_eq!(back, SIZES.map(Some));
    for bad in [0, 3, 5, 6, 7, 9, 16, (1 << 32) + 4, u64::MAX] {
        assert_eq!(CellSize::from_bytes(bad), None, "{bad}");
    }
}

#[test]
fn vector_creation_increment_query() {
    let (w, d) = dims_for_error(0.001, 0.01).unwrap();
    let mut s = new(w, d);
    assert_eq!((s.width(), s.depth(), s.count()), (2000, 7, 0));
    let incs: [(&[u8], i64); 3] = [(b"foo", 10), (b"bar", 3), (b"foo", 1)];
    let mut got = Vec::new();
    s.increment_batch(&incs, |p| p.0, |p| p.1, |v| got.push(v));
    assert_eq!(got, [Ok(10), Ok(3), Ok(11)]);
    let mut q = Vec::new();
    s.query_batch(&["foo", "bar", "baz"], |v| q.push(v));
    assert_eq!(q, [11, 3, 0]);
    assert_eq!(s.count(), 14);
}

#[test]
fn vector_fixed_stream() {
    let mut s = new(50, 4);
    let mut m = Model::new(50, 4, CellSize::Four);
    for i in 0..1000i64 {
        let item = format!("item-{}", i % 97);
        let inc = i % 5 + 1;
        assert_eq!(
            s.increment(item.as_bytes(), inc),
            m.increment(item.as_bytes(), inc)
        );
    }
    let q: Vec<u64> = ["item-0", "item-1", "item-42", "item-96", "absent"]
        .iter()
        .map(|i| s.query(i.as_bytes()))
        .collect();
    assert_eq!(q, [31, 62, 60, 30, 60]);
    assert_eq!((s.width(), s.depth(), s.count()), (50, 4, 3000));
    assert!(m.matches(&s));
}

fn incr(s: &mut CountMinSketch, pairs: &[(&str, i64)]) -> Vec<Incremented> {
    let mut got = Vec::new();
    s.increment_batch(pairs, |p| p.0.as_bytes(), |p| p.1, |v| got.push(v));
    got
}

const OVER: Incremented = Err(Rejected::Overflow);
const UNDER: Incremented = Err(Rejected::Underflow);

/// The 8.12 spec's §3.2 examples, in its table's order.
#[test]
fn vector_812_increments() {
    // 5×2: the third round overflows a and leaves it; the others apply.
    let mut s = new(5, 2);
    let round = [("a", 2147483647), ("b", 10), ("c", 7), ("d", 5)];
    incr(&mut s, &round);
    incr(&mut s, &round);
    assert_eq!(s.query(b"a"), 4294967294);
    let before = s.count();
    assert_eq!(incr(&mut s, &round), [OVER, Ok(44), Ok(51), Ok(15)]);
    assert_eq!((s.query(b"a"), s.count() - before), (4294967294, 22));
    // 1×1 of each size: the maximum is reachable, one more is not.
    for cs in SIZES {
        let mut s = CountMinSketch::new(1, 1, cs).unwrap();
        let max = cs.max() as i64;
        assert_eq!(s.increment(b"a", max), Ok(cs.max()), "{cs:?}");
        assert_eq!(s.increment(b"a", 1), OVER, "{cs:?}");
        assert_eq!((s.count(), s.query(b"a")), (max, cs.max()));
    }
    let mut s = CountMinSketch::new(20, 5, CellSize::One).unwrap();
    assert_eq!(s.increment(b"a", 256), OVER);
    assert_eq!((s.query(b"a"), s.count()), (0, 0));
    let mut s = new(1000, 5);
    assert_eq!(incr(&mut s, &[("a", 100)]), [Ok(100)]);
    assert_eq!(incr(&mut s, &[("a", -40)]), [Ok(60)]);
    assert_eq!(incr(&mut s, &[("a", -60)]), [Ok(0)]);
    assert_eq!(s.count(), 0);
    let mut s = new(1000, 5);
    s.increment(b"a", 10).unwrap();
    let before = saved(&s);
    assert_eq!(incr(&mut s, &[("a", -11)]), [UNDER]);
    assert_eq!(incr(&mut s, &[("never_added", -1)]), [UNDER]);
    assert_eq!(saved(&s), before);
    // Zero never fails and answers the estimate.
    assert_eq!(incr(&mut s, &[("a", 0), ("zz", 0)]), [Ok(10), Ok(0)]);
    assert_eq!(
        incr(&mut s, &[("a", -100), ("b", 3), ("a", -4)]),
        [UNDER, Ok(3), Ok(6)]
    );
    assert_eq!((s.query(b"a"), s.query(b"b"), s.count()), (6, 3, 9));
    // The total's headroom: a full 8-byte cell leaves none for anyone.
    let mut s = CountMinSketch::new(100, 1, CellSize::Eight).unwrap();
    s.increment(b"a", i64::MAX).unwrap();
    let other = (0..)
        .map(|i| format!("o{i}"))
        .find(|o| s.query(o.as_bytes()) == 0)
        .unwrap();
    assert_eq!(s.increment(other.as_bytes(), 1), OVER);
    assert_eq!((s.query(other.as_bytes()), s.count()), (0, i64::MAX));
    // 4×2, 1-byte cells (computed vectors).
    let mut c = CountMinSketch::new(4, 2, CellSize::One).unwrap();
    assert_eq!(incr(&mut c, &[("foo", 250), ("foo", 10)]), [Ok(250), OVER]);
    assert_eq!((c.query(b"foo"), c.count()), (250, 250));
    assert_eq!(incr(&mut c, &[("bar", 5), ("foo", -251)]), [Ok(5), UNDER]);
    assert_eq!(c.count(), 255);
}

/// A value whose total is below its cells (the loader does not compare
/// them): the total's floor refuses the decrement.
#[test]
fn vector_812_corrupt_counter() {
    let mut prims = saved(&{
        let mut s = new(20, 5);
        s.increment(b"a", 7).unwrap();
        s
    });
    prims[2] = Primitive::Unsigned(0);
    let mut s = load(&prims).unwrap();
    assert_eq!((s.count(), s.query(b"a")), (0, 7));
    assert_eq!(s.increment(b"a", -7), UNDER);
    assert_eq!(saved(&s), prims);
}

/// One row with no room rejects the change in every row (RedisBloom's
/// `test_incrby_rejection_undoes_partial_writes`, deep sketches too).
#[test]
fn rejection_undoes_every_row() {
    for depth in [2, 63, 64, 65, 130] {
        for cs in SIZES {
            let mut s = CountMinSketch::new(1, depth, cs).unwrap();
            s.increment(b"a", 1).unwrap();
            // Raise the last row alone to the maximum.
            let last = (depth - 1) as usize;
            s.store(last, cs.max());
            let before = saved(&s);
            assert_eq!(s.increment(b"b", 1), OVER, "{depth} {cs:?}");
            assert_eq!(saved(&s), before, "{depth} {cs:?}");
            s.store(last, 0);
            assert_eq!(s.increment(b"b", -1), UNDER, "{depth} {cs:?}");
            s.store(last, 1);
            assert_eq!(s.increment(b"b", -1), Ok(0), "{depth} {cs:?}");
        }
    }
}

/// What 8.4 did to the same input (docs/cms.md §9, 2.8.2-verified), as
/// 8.12 answers it: no saturation, no wrapped total.
#[test]
fn vector_old_overflow_inputs() {
    let mut s = new(20, 5);
    assert_eq!(
        incr(&mut s, &[("x", 5), ("y", 0), ("x", 2)]),
        [Ok(5), Ok(0), Ok(7)]
    );
    assert_eq!(s.increment(b"big", 4294967295), Ok(4294967295));
    assert_eq!(s.increment(b"big2", 4294967294), Ok(4294967294));
    assert_eq!(s.increment(b"big3", 4294967296), OVER);
    assert_eq!(s.increment(b"big4", i64::MAX), OVER);
    let q: Vec<u64> = ["big", "big2", "big3", "big4"]
        .iter()
        .map(|i| s.query(i.as_bytes()))
        .collect();
    assert_eq!(q, [4294967295, 4294967294, 0, 0]);
    assert_eq!(s.count(), 7 + 4294967295 + 4294967294);
}

#[test]
fn vector_rdb_layout() {
    let mut s = new(4, 2);
    s.increment(b"foo", 3).unwrap();
    s.increment(b"bar", 1).unwrap();
    let array = hex("0000000003000000000000000100000000000000010000000300000000000000");
    let legacy = [
        Primitive::Unsigned(4),
        Primitive::Unsigned(2),
        Primitive::Unsigned(4),
        Primitive::Buffer(array),
    ];
    assert_eq!(saved_as(&s, LEGACY_ENCODING_VERSION), legacy);
    assert_eq!(load_as(&legacy, LEGACY_ENCODING_VERSION).unwrap(), s);
    let mut current = legacy.to_vec();
    current.insert(3, Primitive::Unsigned(4));
    assert_eq!(saved(&s), current);
    assert_eq!(load(&current).unwrap(), s);
}

/// §4.2 of the 8.12 spec: `CMS.INITBYDIM c 4 2 CELL_SIZE cs`,
/// `CMS.INCRBY c foo 3 bar 1`, encoding 1.
#[test]
fn vector_812_rdb_layouts() {
    let eight: String = [0u64, 3, 0, 1, 0, 1, 3, 0]
        .iter()
        .flat_map(|c| c.to_le_bytes())
        .map(|b| format!("{b:02x}"))
        .collect();
    let arrays = [
        "0003000100010300",
        "00000300000001000000010003000000",
        "0000000003000000000000000100000000000000010000000300000000000000",
        &eight,
    ];
    for (cs, array) in SIZES.into_iter().zip(arrays) {
        let mut s = CountMinSketch::new(4, 2, cs).unwrap();
        assert_eq!(incr(&mut s, &[("foo", 3), ("bar", 1)]), [Ok(3), Ok(1)]);
        let want = [
            Primitive::Unsigned(4),
            Primitive::Unsigned(2),
            Primitive::Unsigned(4),
            Primitive::Unsigned(cs.bytes() as u64),
            Primitive::Buffer(hex(array)),
        ];
        assert_eq!(saved(&s), want, "{cs:?}");
        assert_eq!(load(&want).unwrap(), s);
    }
}

fn sketch_with(width: u64, depth: u64, incs: &[(&str, i64)]) -> CountMinSketch {
    sized_with(width, depth, CellSize::Four, incs)
}

fn sized_with(width: u64, depth: u64, cs: CellSize, incs: &[(&str, i64)]) -> CountMinSketch {
    let mut s = CountMinSketch::new(width, depth, cs).unwrap();
    for &(i, v) in incs {
        s.increment(i.as_bytes(), v).unwrap();
    }
    s
}

#[test]
fn vector_merges() {
    let s1 = sketch_with(10, 2, &[("a", 3), ("b", 4)]);
    let s2 = sketch_with(10, 2, &[("a", 10)]);
    let mut d = new(10, 2);
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
    let other = new(10, 3);
    assert_eq!(
        d.merge(&[(Source::Other(&other), 1)]),
        Err(MergeError::Shape)
    );
}

/// §3.4 of the 8.12 spec: 2-byte sketches merge within 65535; other cell
/// sizes are refused after the dimensions.
#[test]
fn vector_812_merges() {
    let a = sized_with(20, 5, CellSize::Two, &[("x", 10)]);
    let b = sized_with(20, 5, CellSize::Two, &[("x", 7)]);
    let mut d = CountMinSketch::new(20, 5, CellSize::Two).unwrap();
    d.merge(&[(Source::Other(&a), 1), (Source::Other(&b), 1)])
        .unwrap();
    assert_eq!((d.query(b"x"), d.count()), (17, 17));
    d.merge(&[(Source::Other(&a), 1000), (Source::Other(&b), 1)])
        .unwrap();
    assert_eq!(d.query(b"x"), 10007);
    let before = saved(&d);
    assert_eq!(
        d.merge(&[(Source::Other(&a), 10000), (Source::Other(&b), 1)]),
        Err(MergeError::Overflow)
    );
    assert_eq!(saved(&d), before);
    let four = sized_with(20, 5, CellSize::Four, &[("x", 1)]);
    assert_eq!(d.mergeable(&four), Err(MergeError::CellSize));
    assert_eq!(
        d.merge(&[(Source::Other(&four), 1)]),
        Err(MergeError::CellSize)
    );
    let narrow = CountMinSketch::new(10, 5, CellSize::Four).unwrap();
    assert_eq!(
        d.mergeable(&narrow),
        Err(MergeError::Shape),
        "dimensions first"
    );
    // 8-byte cells: the sum must stay within 2^63 − 1.
    let big = sized_with(1, 1, CellSize::Eight, &[("x", i64::MAX - 1)]);
    let one = sized_with(1, 1, CellSize::Eight, &[("x", 1)]);
    let mut d = CountMinSketch::new(1, 1, CellSize::Eight).unwrap();
    d.merge(&[(Source::Other(&big), 1), (Source::Other(&one), 1)])
        .unwrap();
    assert_eq!((d.query(b"x"), d.count()), (i64::MAX as u64, i64::MAX));
    assert_eq!(
        d.merge(&[(Source::Destination, 1), (Source::Other(&one), 1)]),
        Err(MergeError::Overflow)
    );
    // Existing 4-byte vectors keep their results.
    let mut x = sketch_with(2, 1, &[("x", 4_000_000_000)]);
    assert_eq!(
        x.merge(&[(Source::Destination, 1), (Source::Destination, 1)]),
        Err(MergeError::Overflow)
    );
}

#[test]
fn merge_total_rules() {
    // Cell products beyond i64 fail even if the sum would come back.
    let mut d = new(2, 1);
    let one = sketch_with(2, 1, &[("x", 3)]);
    assert_eq!(
        d.merge(&[
            (Source::Other(&one), i64::MAX),
            (Source::Other(&one), -i64::MAX)
        ]),
        Err(MergeError::Overflow)
    );
    // The RedisBloom test vector: huge opposite weights that cancel out.
    let mut e = new(2, 1);
    e.merge(&[
        (Source::Other(&one), -922337203685477500),
        (Source::Other(&one), 922337203685477502),
    ])
    .unwrap();
    assert_eq!((e.query(b"x"), e.count()), (6, 6));
    // A negative total fails.
    let mut f = new(2, 1);
    assert_eq!(
        f.merge(&[(Source::Other(&one), -1)]),
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
    for encver in [-1, 2, 3] {
        assert_eq!(
            load_as(&good, encver).unwrap_err(),
            LoadError::UnsupportedVersion
        );
    }
    for bad in [
        with(0, Primitive::Unsigned(0)),
        with(1, Primitive::Unsigned(0)),
        with(4, Primitive::Buffer(vec![0; 31])),
        with(4, Primitive::Buffer(vec![0; 33])),
        with(1, Primitive::Unsigned(3)),
        // The cell size, checked on all 64 bits.
        with(3, Primitive::Unsigned(0)),
        with(3, Primitive::Unsigned(3)),
        with(3, Primitive::Unsigned(16)),
        with(3, Primitive::Unsigned((1 << 32) + 4)),
        // Another valid size no longer matches the string.
        with(3, Primitive::Unsigned(2)),
        // A total beyond 2^63 − 1.
        with(2, Primitive::Unsigned(1 << 63)),
        with(2, Primitive::Unsigned(u64::MAX)),
        // §7.2 item 2: 4 · 2^62 wraps to 0 in RedisBloom's check.
        vec![
            Primitive::Unsigned(1 << 62),
            Primitive::Unsigned(1),
            Primitive::Unsigned(0),
            Primitive::Unsigned(4),
            Primitive::Buffer(vec![]),
        ],
        vec![
            Primitive::Unsigned(1 << 60),
            Primitive::Unsigned(2),
            Primitive::Unsigned(0),
            Primitive::Unsigned(8),
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
    // The total is not compared with the cells.
    assert!(load(&with(2, Primitive::Unsigned(i64::MAX as u64))).is_ok());
    assert!(load(&with(2, Primitive::Unsigned(0))).is_ok());
    // 8-byte cells above 2^63 − 1.
    let cells8 = |v: u64| {
        vec![
            Primitive::Unsigned(2),
            Primitive::Unsigned(1),
            Primitive::Unsigned(0),
            Primitive::Unsigned(8),
            Primitive::Buffer([0, v].iter().flat_map(|c: &u64| c.to_le_bytes()).collect()),
        ]
    };
    assert!(load(&cells8(i64::MAX as u64)).is_ok());
    assert_eq!(load(&cells8(1 << 63)).unwrap_err(), LoadError::Invalid);
    assert_eq!(load(&cells8(u64::MAX)).unwrap_err(), LoadError::Invalid);
}

/// Encoding 0 (RedisBloom before 8.12, and the 2.8.2 reference) loads as
/// 4-byte cells; RedisBloom's `test_rdb_load_encver_0` vector.
#[test]
fn encver_0_loads_as_four_byte_cells() {
    let mut old = sketch_with(20, 5, &[("a", 7), ("b", 3)]);
    let prims = saved_as(&old, LEGACY_ENCODING_VERSION);
    assert_eq!(prims.len(), 4);
    let mut s = load_as(&prims, LEGACY_ENCODING_VERSION).unwrap();
    assert_eq!(
        (s.cell_size(), s.count(), s.query(b"a"), s.query(b"b")),
        (CellSize::Four, 10, 7, 3)
    );
    assert_eq!(s.increment(b"a", -2), Ok(5));
    old.increment(b"a", -2).unwrap();
    assert_eq!(s, old);
    // Encoding 0 refuses a total beyond 2^63 − 1 (8.4 could write one).
    let mut wrapped = prims.clone();
    wrapped[2] = Primitive::Unsigned(1 << 63);
    assert_eq!(
        load_as(&wrapped, LEGACY_ENCODING_VERSION).unwrap_err(),
        LoadError::Invalid
    );
    // An encoding-1 value read as encoding 0 misreads the cell size as the
    // string: a read error, never a value.
    assert_eq!(
        load_as(&saved(&s), LEGACY_ENCODING_VERSION).unwrap_err(),
        LoadError::Read
    );
}

#[test]
fn clone_is_deep() {
    let s = sized_with(30, 3, CellSize::Two, &[("a", 4)]);
    let mut c = s.try_clone().unwrap();
    assert_eq!(c, s);
    c.increment(b"a", 1).unwrap();
    assert_eq!((s.query(b"a"), c.query(b"a")), (4, 5));
    assert_eq!(c.cell_size(), CellSize::Two);
}

/// Items drawn from a small universe, so that batches repeat items.
fn item_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0u8..40).prop_map(|i| format!("i{i}").into_bytes()),
        prop::collection::vec(any::<u8>(), 0..12),
    ]
}

/// Increments near every cell size's limits, both signs.
fn increment_strategy() -> impl Strategy<Value = i64> {
    prop_oneof![
        -300i64..300,
        (0u32..70000).prop_map(i64::from),
        any::<i64>().prop_filter("not -2^63", |&v| v != i64::MIN),
        prop::sample::select(vec![
            255,
            -255,
            65535,
            4294967295,
            -4294967295,
            i64::MAX,
            -i64::MAX
        ]),
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
        incs in prop::collection::vec((item_strategy(), 0i64..1000), 1..300),
    ) {
        let mut s = new(width, depth);
        let mut truth = std::collections::HashMap::<Vec<u8>, u64>::new();
        for (item, inc) in &incs {
            let r = s.increment(item, *inc).unwrap();
            let t = truth.entry(item.clone()).or_default();
            *t += *inc as u64;
            prop_assert!(r >= *t);
        }
        for (item, t) in &truth {
            prop_assert!(s.query(item) >= *t);
        }
        prop_assert_eq!(s.count(), incs.iter().map(|p| p.1).sum::<i64>());
    }

    /// Every cell size, both signs: each increment answers and changes
    /// exactly what the model does, and a rejected one changes nothing.
    #[test]
    fn increments_equal_the_model(
        cs in sizes(),
        width in 1u64..6,
        depth in 1u64..5,
        incs in prop::collection::vec((0u8..4, increment_strategy()), 1..60),
    ) {
        let mut s = CountMinSketch::new(width, depth, cs).unwrap();
        let mut m = Model::new(width, depth, cs);
        for (i, inc) in &incs {
            let item = [*i];
            let before = saved(&s);
            let r = s.increment(&item, *inc);
            prop_assert_eq!(r, m.increment(&item, *inc));
            if r.is_err() {
                prop_assert_eq!(saved(&s), before);
            }
            prop_assert!((0..=i64::MAX).contains(&s.count()));
        }
        prop_assert!(m.matches(&s));
    }

    /// Batches (by blocks with prefetches when `large`; small and deep
    /// sketches one item at a time) answer and write exactly as single
    /// calls do.
    #[test]
    fn batches_equal_single_calls(
        cs in sizes(),
        width in 1u64..64,
        depth in prop_oneof![1u64..10, 30u64..40, 60u64..70],
        large in any::<bool>(),
        incs in prop::collection::vec((item_strategy(), -3i64..5), 0..120),
    ) {
        // Just past the prefetching threshold, whatever the shape.
        let row_bytes = depth * cs.bytes() as u64;
        let width = if large {
            (super::PREFETCH_MIN as u64).div_ceil(row_bytes) + width
        } else {
            width
        };
        let mut batched = CountMinSketch::new(width, depth, cs).unwrap();
        let mut single = CountMinSketch::new(width, depth, cs).unwrap();
        let mut got = Vec::new();
        batched.increment_batch(&incs, |p| &p.0, |p| p.1, |v| got.push(v));
        let want: Vec<Incremented> = incs.iter().map(|(i, v)| single.increment(i, *v)).collect();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(&batched, &single);
        let items: Vec<&Vec<u8>> = incs.iter().map(|p| &p.0).collect();
        let mut q = Vec::new();
        batched.query_batch(&items, |v| q.push(v));
        let want: Vec<u64> = items.iter().map(|i| single.query(i)).collect();
        prop_assert_eq!(q, want);
    }

    #[test]
    fn merges_equal_the_model(
        cs in sizes(),
        width in 1u64..8,
        depth in 1u64..4,
        fills in prop::collection::vec(prop::collection::vec((item_strategy(), 0i64..5000), 0..20), 1..4),
        weights in prop::collection::vec(-3i64..4, 4),
        with_destination in any::<bool>(),
    ) {
        let sources: Vec<(CountMinSketch, Model)> = fills.iter().map(|f| {
            let mut s = CountMinSketch::new(width, depth, cs).unwrap();
            let mut m = Model::new(width, depth, cs);
            for (i, v) in f {
                prop_assert_eq!(s.increment(i, *v), m.increment(i, *v));
            }
            Ok((s, m))
        }).collect::<Result<_, TestCaseError>>()?;
        let mut d = CountMinSketch::new(width, depth, cs).unwrap();
        let mut dm = Model::new(width, depth, cs);
        prop_assert_eq!(d.increment(b"i1", 7), dm.increment(b"i1", 7));
        let mut list: Vec<(Source<'_>, i64)> = sources.iter().zip(&weights)
            .map(|((s, _), &w)| (Source::Other(s), w)).collect();
        let mut models: Vec<(&Model, i64)> = sources.iter().zip(&weights).map(|((_, m), &w)| (m, w)).collect();
        let before = dm.clone();
        if with_destination {
            list.push((Source::Destination, weights[3]));
            models.push((&before, weights[3]));
        }
        let cells: Option<Vec<u64>> = (0..dm.cells.len()).map(|x| {
            let sum: i128 = models.iter().map(|(m, w)| i128::from(m.cells[x]) * i128::from(*w)).sum();
            u64::try_from(sum).ok().filter(|&v| v <= cs.max())
        }).collect();
        let total: i128 = models.iter().map(|(m, w)| i128::from(m.total) * i128::from(*w)).sum();
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
    fn rdb_round_trip(
        cs in sizes(),
        width in 1u64..30,
        depth in 1u64..5,
        incs in prop::collection::vec((item_strategy(), increment_strategy()), 0..30),
    ) {
        let mut s = CountMinSketch::new(width, depth, cs).unwrap();
        for (i, v) in &incs {
            let _ = s.increment(i, *v);
        }
        let back = load(&saved(&s)).unwrap();
        prop_assert_eq!(&back, &s);
        prop_assert_eq!(back.size_bytes(), 40 + cs.bytes() as u64 * width * depth);
        if cs == CellSize::Four {
            let legacy = saved_as(&s, LEGACY_ENCODING_VERSION);
            prop_assert_eq!(&load_as(&legacy, LEGACY_ENCODING_VERSION).unwrap(), &s);
        }
    }

    /// Any accepted input re-saves to a value that loads back equal, and
    /// commands on it keep every counter and the total in range.
    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200), encver in -1i32..3) {
        if let Ok(mut s) = CountMinSketch::rdb_load(&mut ByteSource::new(&bytes), encver) {
            prop_assert_eq!(&load(&saved(&s)).unwrap(), &s);
            let before = s.query(b"x");
            match s.increment(b"x", 1) {
                Ok(v) => prop_assert!(v > before),
                Err(e) => prop_assert_eq!(e, Rejected::Overflow),
            }
            prop_assert!((0..=i64::MAX).contains(&s.count()));
            prop_assert!(s.query(b"x") <= s.cell_size().max());
        }
    }
}
