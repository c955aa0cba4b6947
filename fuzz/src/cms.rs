//! Fuzz checks of the Count-Min Sketch (docs/cms.md): its RDB decoder, the
//! CMS.* argument parsers, and operation sequences against a plain model.

use rsbloom_core::args::cms::{
    incrby_arity, parse_dims, parse_error_prob, parse_increment, parse_merge, parse_weight,
};
use rsbloom_core::args::parse_f64;
use rsbloom_core::cms::{
    dims_for_error, CountMinSketch, CreateError, LoadError, MergeError, Source,
};
use rsbloom_core::hash::murmur2;
use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};

use super::{check_arg_error, encode_primitives, ref_i64, Input, ALLOC_IMPOSSIBLE, PROBE_ITEMS};

/// The counters of a sketch, through its RDB value.
fn cells(s: &CountMinSketch) -> Vec<u32> {
    let mut saved: Vec<Primitive> = Vec::new();
    s.rdb_save(&mut saved);
    match saved.last() {
        Some(Primitive::Buffer(b)) => b
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        other => panic!("RDB value ends in {other:?}"),
    }
}

fn saved(s: &CountMinSketch) -> Vec<Primitive> {
    let mut out = Vec::new();
    s.rdb_save(&mut out);
    out
}

/// `CountMinSketch::rdb_load` over raw bytes (byte 0: encoding 0..=2):
/// version ≠ 0 refused; a loaded value has `4 · width · depth` counter
/// bytes, saves exactly what was read, reloads identically and works.
pub fn cms_rdb(data: &[u8]) {
    let Some((&v, rest)) = data.split_first() else {
        return;
    };
    let encver = i32::from(v % 3);
    let mut s = match CountMinSketch::rdb_load(&mut ByteSource::new(rest), encver) {
        Ok(s) => s,
        Err(e) => {
            if encver != 0 {
                assert_eq!(e, LoadError::UnsupportedVersion);
            }
            return;
        }
    };
    assert_eq!(encver, 0);
    let (w, d) = (s.width(), s.depth());
    assert!(w >= 1 && d >= 1);
    let n = cells(&s).len() as u64;
    assert_eq!(Some(n), w.checked_mul(d));
    assert_eq!(s.size_bytes(), 32 + 4 * n);
    let bytes = encode_primitives(&saved(&s));
    assert_eq!(
        &rest[..bytes.len()],
        &bytes[..],
        "saved value differs from the input"
    );
    let back = CountMinSketch::rdb_load(&mut PrimitiveSource::new(&saved(&s)), 0).unwrap();
    assert_eq!(back, s);
    for item in PROBE_ITEMS {
        // Every row of the item gains one, so its minimum does.
        let before = s.query(item);
        let r = s.increment(item, 1);
        assert_eq!(r, before.saturating_add(1));
        assert_eq!(s.query(item), r);
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
            Ok(v) => assert_eq!(Some(v as i64), ref_i64(p).filter(|&x| x >= 0)),
            Err(e) => {
                assert!(ref_i64(p).is_none_or(|x| x < 0));
                check_arg_error(e);
            }
        }
        assert_eq!(parse_weight(p).ok(), ref_i64(p));
    }
    let mut impossible_tried = false;
    for pair in parts.windows(2) {
        match parse_dims(pair[0], pair[1]) {
            Ok((w, d)) => {
                assert_eq!(Some(w as i64), ref_i64(pair[0]));
                assert_eq!(Some(d as i64), ref_i64(pair[1]));
                assert!(w >= 1 && d >= 1);
                create(w, d, &mut impossible_tried);
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
                    create(w, d, &mut impossible_tried);
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
fn create(w: u64, d: u64, impossible_tried: &mut bool) {
    let invalid = w == 0 || d == 0 || w > i64::MAX as u64 / d;
    let bytes = u128::from(w) * u128::from(d) * 4;
    let impossible = bytes >= ALLOC_IMPOSSIBLE;
    if !invalid && bytes > ARGS_ALLOC_CAP && (!impossible || *impossible_tried) {
        return;
    }
    *impossible_tried |= !invalid && impossible;
    match CountMinSketch::new(w, d) {
        Ok(s) => assert_eq!((s.width(), s.depth(), s.count()), (w, d, 0)),
        Err(CreateError::Invalid) => assert!(invalid),
        Err(CreateError::OutOfMemory) => assert!(!invalid && impossible),
    }
}

/// Sketch, model and name of one of the model target's keys.
struct Pair {
    s: CountMinSketch,
    cells: Vec<u32>,
    total: u64,
}

/// Operation sequences on three sketches of one shape (width, depth from
/// the input): single and batched increments and queries, merges (with the
/// destination among the sources), RDB round trips and copies, against a
/// model with `%` columns and u64 arithmetic. Replies and totals are
/// compared at every step, the counters at the end (and by every query).
pub fn cms_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let w = u64::from(inp.u8() % 64) + 1;
    // Depths around 64 take both the prefetching and the direct path.
    let d = u64::from(inp.u8() % 70) + 1;
    let fresh = || Pair {
        s: CountMinSketch::new(w, d).unwrap(),
        cells: vec![0; (w * d) as usize],
        total: 0,
    };
    let mut keys = [fresh(), fresh(), fresh()];
    let item = |inp: &mut Input| -> Vec<u8> {
        let n = usize::from(inp.u8() % 6);
        inp.bytes(n).to_vec()
    };
    while !inp.is_empty() {
        let op = inp.u8();
        let k = usize::from(op >> 4) % 3;
        let batched = op.is_multiple_of(6);
        match op % 6 {
            0 | 1 => {
                let n = usize::from(inp.u8() % 40) + 1;
                let batch: Vec<(Vec<u8>, u64)> = (0..n)
                    .map(|_| {
                        let inc = match inp.u8() % 8 {
                            0 => u64::from(inp.u32()),
                            1 => inp.u64() >> 1,
                            x => u64::from(x),
                        };
                        (item(&mut inp), inc)
                    })
                    .collect();
                let p = &mut keys[k];
                let want: Vec<u32> = batch
                    .iter()
                    .map(|(i, v)| {
                        let mut min = u32::MAX;
                        for row in 0..d {
                            let c = &mut p.cells[model_cell(w, i, row)];
                            *c =
                                u32::try_from(u64::from(*c).saturating_add(*v)).unwrap_or(u32::MAX);
                            min = min.min(*c);
                        }
                        p.total = p.total.wrapping_add(*v);
                        min
                    })
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
                    .map(|_| item(&mut inp))
                    .collect();
                let p = &keys[k];
                let want: Vec<u32> = items
                    .iter()
                    .map(|i| (0..d).map(|r| p.cells[model_cell(w, i, r)]).min().unwrap())
                    .collect();
                let mut got = Vec::new();
                p.s.query_batch(&items, |r| got.push(r));
                assert_eq!(got, want);
            }
            3 => merge(&mut keys, k, &mut inp),
            4 => {
                let p = &mut keys[k];
                let back = CountMinSketch::rdb_load(&mut PrimitiveSource::new(&saved(&p.s)), 0);
                p.s = back.unwrap();
            }
            _ => {
                let copy = keys[k].s.try_clone().unwrap();
                assert_eq!(copy, keys[k].s);
                keys[(k + 1) % 3].s = copy;
                keys[(k + 1) % 3].cells = keys[k].cells.clone();
                keys[(k + 1) % 3].total = keys[k].total;
            }
        }
        for p in &keys {
            assert_eq!(p.s.count(), p.total as i64);
        }
    }
    for p in &keys {
        assert_eq!(cells(&p.s), p.cells);
    }
}

/// A merge into key `k` of up to three sources (the destination may be
/// one), weights from the input: all-or-nothing per docs/cms.md §4.3.
fn merge(keys: &mut [Pair; 3], k: usize, inp: &mut Input) {
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
    let cells: Option<Vec<u32>> = (0..keys[k].cells.len())
        .map(|x| {
            picks.iter().try_fold(0i64, |acc, &(s, w)| {
                acc.checked_add(i64::from(keys[s].cells[x]).checked_mul(w)?)
            })
        })
        .map(|acc| acc.and_then(|a| u32::try_from(a).ok()))
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

/// Seed inputs: genuine RDB values (and one of version 1), argument lines
/// of every parser, operation sequences on a few shapes.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for (w, d, n) in [(1u64, 1u64, 3u64), (4, 2, 2), (20, 5, 40), (3, 70, 10)] {
        let mut s = CountMinSketch::new(w, d).unwrap();
        for i in 0..n {
            s.increment(format!("i{i}").as_bytes(), i * 1000);
        }
        s.increment(b"sat", u64::from(u32::MAX));
        let bytes = encode_primitives(&saved(&s));
        out.push(("cms_rdb", [vec![0], bytes.clone()].concat()));
        if w == 4 {
            out.push(("cms_rdb", [vec![1], bytes].concat()));
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
    ] {
        out.push(("cms_args", line.to_vec()));
    }
    let ops: Vec<u8> = (0..=255u8)
        .flat_map(|b| [b, b.wrapping_mul(13), 3])
        .collect();
    for shape in [[20u8, 4], [0, 0], [63, 69], [6, 63]] {
        out.push(("cms_model", [shape.to_vec(), ops.clone()].concat()));
    }
    out
}
