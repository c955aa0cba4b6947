//! Fuzz checks of the Count-Min Sketch (docs/cms.md): its RDB decoder
//! (encodings 0 and 1), the CMS.* argument parsers, and operation sequences
//! against a plain model.

use rsbloom_core::args::parse_f64;
use rsbloom_core::cms::args::{
    incrby_arity, init_arity, parse_cell_size, parse_dims, parse_error_prob, parse_increment,
    parse_merge, parse_weight,
};
use rsbloom_core::cms::{
    dims_for_error, CellSize, CountMinSketch, CreateError, Incremented, LoadError, MergeError,
    Rejected, Source, ENCODING_VERSION, LEGACY_ENCODING_VERSION,
};
use rsbloom_core::hash::murmur2;
use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};

use super::{check_arg_error, encode_primitives, ref_i64, Input, ALLOC_IMPOSSIBLE, PROBE_ITEMS};

const SIZES: [CellSize; 4] = [
    CellSize::One,
    CellSize::Two,
    CellSize::Four,
    CellSize::Eight,
];

fn saved(s: &CountMinSketch, encver: i32) -> Vec<Primitive> {
    let mut out = Vec::new();
    s.rdb_save(&mut out, encver);
    out
}

fn load(prims: &[Primitive], encver: i32) -> Result<CountMinSketch, LoadError> {
    CountMinSketch::rdb_load(&mut PrimitiveSource::new(prims), encver)
}

/// The counters of a sketch, through its RDB value.
fn cells(s: &CountMinSketch) -> Vec<u64> {
    let n = s.cell_size().bytes();
    match saved(s, ENCODING_VERSION).last() {
        Some(Primitive::Buffer(b)) => b
            .chunks_exact(n)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..n].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect(),
        other => panic!("RDB value ends in {other:?}"),
    }
}

/// The total as saved (CMS.INFO's `count` clamps it to i64).
fn total(s: &CountMinSketch) -> u64 {
    match saved(s, ENCODING_VERSION).get(2) {
        Some(&Primitive::Unsigned(t)) => t,
        other => panic!("RDB value has {other:?} for the total"),
    }
}

/// `CountMinSketch::rdb_load` over raw bytes (byte 0: encoding 0..=2):
/// version 2 refused; a loaded value has `size · width · depth` counter
/// bytes, counters and total in range, saves exactly what was read, and
/// re-saves (in either encoding, for 4-byte cells) to a value that loads
/// back equal; commands on it keep every bound. The bytes after the value
/// drive up to 64 operations of `cms_model` on it, a copy and an empty
/// sketch of its shape: the total need not equal the counters (§6.2), yet
/// every reply follows the model and every key still reloads.
pub fn cms_rdb(data: &[u8]) {
    let Some((&v, rest)) = data.split_first() else {
        return;
    };
    let encver = i32::from(v % 3);
    let mut s = match CountMinSketch::rdb_load(&mut ByteSource::new(rest), encver) {
        Ok(s) => s,
        Err(e) => {
            if encver > ENCODING_VERSION {
                assert_eq!(e, LoadError::UnsupportedVersion);
            }
            return;
        }
    };
    assert!(encver <= ENCODING_VERSION);
    let cs = s.cell_size();
    if encver == LEGACY_ENCODING_VERSION {
        assert_eq!(cs, CellSize::Four);
    }
    let (w, d) = (s.width(), s.depth());
    assert!(w >= 1 && d >= 1);
    let all = cells(&s);
    assert_eq!(Some(all.len() as u64), w.checked_mul(d));
    assert!(all.iter().all(|&c| c <= cs.max()));
    assert!(s.count() >= 0);
    assert_eq!(s.size_bytes(), 40 + cs.bytes() as u64 * all.len() as u64);
    assert!(total(&s) <= i64::MAX as u64);
    let bytes = encode_primitives(&saved(&s, encver));
    assert_eq!(
        &rest[..bytes.len()],
        &bytes[..],
        "saved value differs from the input"
    );
    round_trips(&s);
    exercise(&mut s);
    round_trips(&s);
    let pair = |s: CountMinSketch| Pair {
        cells: cells(&s),
        total: total(&s),
        s,
    };
    let copy = pair(s.try_clone().unwrap());
    let empty = pair(CountMinSketch::new(w, d, cs).unwrap());
    let mut keys = [pair(s), copy, empty];
    let mut inp = Input::new(&rest[bytes.len()..]);
    for _ in 0..64 {
        if inp.is_empty() {
            break;
        }
        step(&mut keys, w, d, cs, &mut inp);
    }
    for p in &keys {
        assert_eq!((cells(&p.s), total(&p.s)), (p.cells.clone(), p.total));
        round_trips(&p.s);
    }
}

/// Saved in every encoding that can hold it, the value loads back equal.
fn round_trips(s: &CountMinSketch) {
    assert_eq!(
        &load(&saved(s, ENCODING_VERSION), ENCODING_VERSION).unwrap(),
        s
    );
    if s.cell_size() == CellSize::Four {
        let legacy = saved(s, LEGACY_ENCODING_VERSION);
        assert_eq!(&load(&legacy, LEGACY_ENCODING_VERSION).unwrap(), s);
    }
}

/// Commands on a loaded sketch: ±1 on every probe item moves its estimate
/// by one or is refused without a change; merging it into itself works or
/// overflows without a change.
fn exercise(s: &mut CountMinSketch) {
    let max = s.cell_size().max();
    for item in PROBE_ITEMS {
        for inc in [1i64, -1] {
            let before = s.query(item);
            let count = s.count();
            match s.increment(item, inc) {
                Ok(v) => {
                    assert_eq!(v, before.wrapping_add_signed(inc));
                    assert_eq!(s.count(), count + inc);
                }
                Err(e) => {
                    let want = if inc > 0 {
                        Rejected::Overflow
                    } else {
                        Rejected::Underflow
                    };
                    assert_eq!(e, want);
                    assert_eq!((s.query(item), s.count()), (before, count));
                }
            }
            assert!(s.query(item) <= max && s.count() >= 0);
        }
    }
    let before = saved(s, ENCODING_VERSION);
    match s.merge(&[(Source::Destination, 1)]) {
        Ok(()) => assert_eq!(saved(s, ENCODING_VERSION), before),
        Err(e) => {
            assert_eq!(e, MergeError::Overflow);
            assert_eq!(saved(s, ENCODING_VERSION), before);
        }
    }
}

/// Counter index of `item` in `row`, written out with `%` (docs/cms.md §2).
fn model_cell(w: u64, item: &[u8], row: u64) -> usize {
    (row * w + u64::from(murmur2(item, row as u32)) % w) as usize
}

/// Every CMS.* parser on argument vectors cut from the input (`\n`),
/// against the rules of docs/cms.md §5 and reference number parsers.
pub fn cms_args(data: &[u8]) {
    let parts: Vec<&[u8]> = if data.is_empty() {
        Vec::new()
    } else {
        data.split(|&b| b == b'\n').collect()
    };
    for p in &parts {
        match parse_increment(p) {
            Ok(v) => assert_eq!(Some(v), ref_i64(p).filter(|&x| x != i64::MIN)),
            Err(e) => {
                assert!(ref_i64(p).is_none_or(|x| x == i64::MIN));
                check_arg_error(e);
            }
        }
        assert_eq!(parse_weight(p).ok(), ref_i64(p));
    }
    let cs = SIZES[parts.len() % 4];
    let mut impossible_tried = false;
    for pair in parts.windows(2) {
        match parse_cell_size(pair) {
            Ok(got) => {
                assert!(pair[0].eq_ignore_ascii_case(b"CELL_SIZE"));
                let want = ref_i64(pair[1]).and_then(|v| CellSize::from_bytes(v as u64));
                assert_eq!(Some(got), want);
            }
            Err(e) => check_arg_error(e),
        }
        match parse_dims(pair[0], pair[1]) {
            Ok((w, d)) => {
                assert_eq!(Some(w as i64), ref_i64(pair[0]));
                assert_eq!(Some(d as i64), ref_i64(pair[1]));
                assert!(w >= 1 && d >= 1);
                create(w, d, cs, &mut impossible_tried);
            }
            Err(e) => check_arg_error(e),
        }
        match parse_error_prob(pair[0], pair[1]) {
            Ok((e, p)) => {
                assert_eq!(Some(e), parse_f64(pair[0]));
                assert!(e > 0.0 && e < 1.0 && p > 0.0 && p < 1.0);
                if let Some((w, d)) = dims_for_error(e, p) {
                    assert!(w >= 1 && d >= 1 && w < 1 << 63 && d < 1 << 63);
                    assert_eq!(w as f64, (2.0 / e).ceil());
                    create(w, d, cs, &mut impossible_tried);
                }
            }
            Err(e) => check_arg_error(e),
        }
    }
    let argc = parts.len() + 1;
    assert_eq!(
        incrby_arity(argc).is_ok(),
        argc >= 4 && argc.is_multiple_of(2)
    );
    assert_eq!(init_arity(argc).is_ok(), argc == 4 || argc == 6);
    let argv: Vec<&[u8]> = std::iter::once(&b"CMS.MERGE"[..])
        .chain(parts.iter().copied())
        .collect();
    match parse_merge(&argv) {
        Ok(m) => {
            let rest = &argv[3..];
            let n = m.num_keys;
            assert!(n >= 1 && Some(n as i64) == ref_i64(argv[2]));
            let marker = rest.iter().position(|a| a.eq_ignore_ascii_case(b"WEIGHTS"));
            if m.weighted {
                assert_eq!(marker, Some(n));
                assert_eq!(rest.len(), 2 * n + 1);
                assert_eq!(m.weight_at(n - 1), Some(argv.len() - 1));
            } else {
                assert_eq!((marker, rest.len()), (None, n));
            }
            assert_eq!(m.source_at(n - 1), 2 + n);
        }
        Err(e) => check_arg_error(e),
    }
}

/// Sketches up to this size are built by the argument target (larger
/// ones add no coverage, only time).
const ARGS_ALLOC_CAP: u128 = 64 << 10;

/// `CountMinSketch::new` for small sizes, and once per input for an
/// impossible one (a failed allocation is slow under the sanitizer); the
/// outcome follows docs/cms.md §3.3.
fn create(w: u64, d: u64, cs: CellSize, impossible_tried: &mut bool) {
    let invalid = w == 0 || d == 0 || w > i64::MAX as u64 / d;
    let bytes = u128::from(w) * u128::from(d) * cs.bytes() as u128;
    let impossible = bytes >= ALLOC_IMPOSSIBLE;
    if !invalid && bytes > ARGS_ALLOC_CAP && (!impossible || *impossible_tried) {
        return;
    }
    *impossible_tried |= !invalid && impossible;
    match CountMinSketch::new(w, d, cs) {
        Ok(s) => assert_eq!(
            (s.width(), s.depth(), s.count(), s.cell_size()),
            (w, d, 0, cs)
        ),
        Err(CreateError::Invalid) => assert!(invalid),
        Err(CreateError::OutOfMemory) => assert!(!invalid && impossible),
    }
}

/// Sketch and model of one of the model target's keys.
struct Pair {
    s: CountMinSketch,
    cells: Vec<u64>,
    total: u64,
}

impl Pair {
    /// docs/cms.md §4.1 written out: all rows and the total in range, or
    /// nothing changes.
    fn increment(&mut self, w: u64, d: u64, cs: CellSize, item: &[u8], inc: i64) -> Incremented {
        let rejected = if inc > 0 {
            Rejected::Overflow
        } else {
            Rejected::Underflow
        };
        let in_range = |v: i128, max: u64| (0..=i128::from(max)).contains(&v);
        let total = i128::from(self.total) + i128::from(inc);
        let rows: Vec<usize> = (0..d).map(|r| model_cell(w, item, r)).collect();
        let new: Vec<i128> = rows
            .iter()
            .map(|&i| i128::from(self.cells[i]) + i128::from(inc))
            .collect();
        if !in_range(total, i64::MAX as u64) || !new.iter().all(|&v| in_range(v, cs.max())) {
            return Err(rejected);
        }
        for (&i, &v) in rows.iter().zip(&new) {
            self.cells[i] = v as u64;
        }
        self.total = total as u64;
        Ok(rows.iter().map(|&i| self.cells[i]).min().unwrap())
    }
}

/// An increment near the limits of every cell size, of either sign.
fn increment(inp: &mut Input) -> i64 {
    let v = match inp.u8() % 8 {
        0 => i64::from(inp.u32()),
        1 => (inp.u64() >> 1) as i64,
        2 => [255, 65535, 4294967295, i64::MAX][usize::from(inp.u8() % 4)],
        x => i64::from(x),
    };
    if inp.u8().is_multiple_of(3) {
        -v
    } else {
        v
    }
}

/// Operation sequences on three sketches of one shape and cell size (from
/// the input): single and batched increments of both signs and queries,
/// merges (with the destination among the sources), RDB round trips in
/// both encodings, and copies, against a model with `%` columns and i128
/// arithmetic. Replies and totals are compared at every step, the counters
/// at the end (and by every query).
pub fn cms_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let w = u64::from(inp.u8() % 64) + 1;
    // Depths around 64 take both the prefetching and the direct path.
    let d = u64::from(inp.u8() % 70) + 1;
    let cs = SIZES[usize::from(inp.u8() % 4)];
    let fresh = || Pair {
        s: CountMinSketch::new(w, d, cs).unwrap(),
        cells: vec![0; (w * d) as usize],
        total: 0,
    };
    let mut keys = [fresh(), fresh(), fresh()];
    while !inp.is_empty() {
        step(&mut keys, w, d, cs, &mut inp);
    }
    for p in &keys {
        assert_eq!(cells(&p.s), p.cells);
    }
}

/// One operation of the input on `keys` (sketches of `w`×`d`, cell size
/// `cs`), its replies compared with the model's; afterwards every CMS.INFO
/// count equals the model's total, within 0 ..= 2^63 − 1.
fn step(keys: &mut [Pair; 3], w: u64, d: u64, cs: CellSize, inp: &mut Input) {
    let item = |inp: &mut Input| -> Vec<u8> {
        let n = usize::from(inp.u8() % 6);
        inp.bytes(n).to_vec()
    };
    let op = inp.u8();
    let k = usize::from(op >> 4) % 3;
    let batched = op.is_multiple_of(6);
    match op % 6 {
        0 | 1 => {
            let n = usize::from(inp.u8() % 40) + 1;
            let batch: Vec<(Vec<u8>, i64)> = (0..n)
                .map(|_| {
                    let inc = increment(inp);
                    (item(inp), inc)
                })
                .collect();
            let p = &mut keys[k];
            let want: Vec<Incremented> = batch
                .iter()
                .map(|(i, v)| p.increment(w, d, cs, i, *v))
                .collect();
            let mut got = Vec::new();
            if batched {
                p.s.increment_batch(&batch, |t| &t.0, |t| t.1, |r| got.push(r));
            } else {
                got = batch.iter().map(|(i, v)| p.s.increment(i, *v)).collect();
            }
            assert_eq!(got, want);
        }
        2 => {
            let items: Vec<Vec<u8>> = (0..usize::from(inp.u8() % 40) + 1)
                .map(|_| item(inp))
                .collect();
            let p = &keys[k];
            let want: Vec<u64> = items
                .iter()
                .map(|i| (0..d).map(|r| p.cells[model_cell(w, i, r)]).min().unwrap())
                .collect();
            let mut got = Vec::new();
            p.s.query_batch(&items, |r| got.push(r));
            assert_eq!(got, want);
        }
        3 => merge(keys, k, cs, inp),
        4 => {
            let p = &mut keys[k];
            let encver = if cs == CellSize::Four && op & 0x40 != 0 {
                LEGACY_ENCODING_VERSION
            } else {
                ENCODING_VERSION
            };
            p.s = load(&saved(&p.s, encver), encver).unwrap();
        }
        _ => {
            let copy = keys[k].s.try_clone().unwrap();
            assert_eq!(copy, keys[k].s);
            keys[(k + 1) % 3].s = copy;
            keys[(k + 1) % 3].cells = keys[k].cells.clone();
            keys[(k + 1) % 3].total = keys[k].total;
        }
    }
    for p in keys.iter() {
        assert!(p.total <= i64::MAX as u64);
        assert_eq!(p.s.count(), p.total as i64);
    }
}

/// A merge into key `k` of up to three sources (the destination may be
/// one), weights from the input: all-or-nothing per docs/cms.md §4.3.
fn merge(keys: &mut [Pair; 3], k: usize, cs: CellSize, inp: &mut Input) {
    let n = usize::from(inp.u8() % 3) + 1;
    let picks: Vec<(usize, i64)> = (0..n)
        .map(|_| {
            let src = usize::from(inp.u8() % 3);
            let weight = match inp.u8() % 4 {
                0 => inp.u64() as i64,
                _ => i64::from(inp.u8() as i8 % 4),
            };
            (src, weight)
        })
        .collect();
    let cells: Option<Vec<u64>> = (0..keys[k].cells.len())
        .map(|x| {
            picks.iter().try_fold(0i64, |acc, &(s, w)| {
                acc.checked_add(i64::try_from(keys[s].cells[x]).ok()?.checked_mul(w)?)
            })
        })
        .map(|acc| {
            acc.and_then(|a| u64::try_from(a).ok())
                .filter(|&a| a <= cs.max())
        })
        .collect();
    let total = picks
        .iter()
        .try_fold(0i64, |acc, &(s, w)| {
            let p = i64::try_from(i128::from(keys[s].total) * i128::from(w)).ok()?;
            acc.checked_add(p)
        })
        .and_then(|t| u64::try_from(t).ok());
    let (before, after) = keys.split_at_mut(k);
    let (dest, after) = after.split_first_mut().unwrap();
    let others: Vec<&CountMinSketch> = before.iter().chain(after.iter()).map(|p| &p.s).collect();
    let index = |s: usize| if s < k { s } else { s - 1 };
    let sources: Vec<(Source<'_>, i64)> = picks
        .iter()
        .map(|&(s, w)| {
            let src = if s == k {
                Source::Destination
            } else {
                Source::Other(others[index(s)])
            };
            (src, w)
        })
        .collect();
    let result = dest.s.merge(&sources);
    match (cells, total) {
        (Some(cells), Some(total)) => {
            assert_eq!(result, Ok(()));
            dest.cells = cells;
            dest.total = total;
        }
        _ => assert_eq!(result, Err(MergeError::Overflow)),
    }
}

/// Seed inputs: genuine RDB values of both encodings and every cell size,
/// argument lines of every parser, operation sequences on a few shapes.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for (w, d, n) in [(1u64, 1u64, 3i64), (4, 2, 2), (20, 5, 40), (3, 70, 10)] {
        for cs in SIZES {
            let mut s = CountMinSketch::new(w, d, cs).unwrap();
            for i in 0..n {
                let _ = s.increment(format!("i{i}").as_bytes(), i * 1000);
            }
            let _ = s.increment(b"max", cs.max() as i64);
            let bytes = encode_primitives(&saved(&s, ENCODING_VERSION));
            out.push(("cms_rdb", [vec![1], bytes.clone()].concat()));
            if cs == CellSize::Four {
                let legacy = encode_primitives(&saved(&s, LEGACY_ENCODING_VERSION));
                out.push(("cms_rdb", [vec![0], legacy].concat()));
                out.push(("cms_rdb", [vec![2], bytes].concat()));
            }
        }
    }
    for line in [
        &b"2000\n7\n0.001\n0.01"[..],
        b"0.1\n0.24999997019767761\n1e-45\n1e-46",
        b"4611686018427387904\n2\n9223372036854775807\n1\n-1\n0",
        b"d\n2\ns1\ns2\nWEIGHTS\n1\n-9223372036854775808",
        b"d\n1\nWEIGHTS\nWEIGHTS\n1",
        b"d\n-1\nd",
        b"3e-19\n0.9\n1e-19\n5e-324\n+1\n-0\n01\n1.5",
        b"20\n5\nCELL_SIZE\n8\ncell_size\n3\nCELL_SIZE\x00\n1",
        b"-9223372036854775808\n-9223372036854775807\n-1",
    ] {
        out.push(("cms_args", line.to_vec()));
    }
    let ops: Vec<u8> = (0..=255u8)
        .flat_map(|b| [b, b.wrapping_mul(13), 3])
        .collect();
    // A total below the counters (RedisBloom's test_incrby_underflow_corrupt_counter),
    // then operations on it.
    let mut s = CountMinSketch::new(4, 2, CellSize::Four).unwrap();
    s.increment(b"a", 7).unwrap();
    let mut prims = saved(&s, ENCODING_VERSION);
    prims[2] = Primitive::Unsigned(0);
    out.push((
        "cms_rdb",
        [vec![1], encode_primitives(&prims), ops[..200].to_vec()].concat(),
    ));
    for shape in [[20u8, 4, 2], [0, 0, 0], [63, 69, 1], [6, 63, 3]] {
        out.push(("cms_model", [shape.to_vec(), ops.clone()].concat()));
    }
    out
}
