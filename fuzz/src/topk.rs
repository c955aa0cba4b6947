//! Fuzz checks of the Top-K core (docs/topk.md): the RDB decoder, the
//! TOPK.* argument parsers, and random command sequences.

use std::collections::HashMap;

use rsbloom_core::args::ArgError;
use rsbloom_core::hash::murmur2;
use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};
use rsbloom_core::topk::args::{
    check_incrby_arity, check_reserve_arity, parse_increment, parse_topk_list, parse_topk_reserve,
    INCREMENT_ERROR,
};
use rsbloom_core::topk::{LoadError, TopK};

use super::{encode_primitives, ref_i64, Input, PROBE_ITEMS};

/// Structural invariants of any Top-K, also one loaded from crafted data.
fn check_topk(t: &TopK) {
    assert!(t.k() >= 1 && t.width() >= 1 && t.depth() >= 1);
    assert!(t.decay() > 0.0 && t.decay() <= 1.0, "decay {}", t.decay());
    let entries = t.heap().entries();
    assert_eq!(entries.len(), t.k() as usize);
    let expected = 2088 + 8 * u64::from(t.width()) * u64::from(t.depth()) + 24 * u64::from(t.k());
    assert_eq!(t.memory_usage(), expected);
    let listed = t.list().expect("list");
    let list: Vec<&rsbloom_core::topk::HeapEntry> = listed.iter().collect();
    assert_eq!(list.len(), listed.len());
    // Count descending, ties in heap order, no zero count.
    let position = |e: &rsbloom_core::topk::HeapEntry| {
        entries
            .iter()
            .position(|x| std::ptr::eq(x, e))
            .expect("listed entry is in the heap")
    };
    for w in list.windows(2) {
        let (a, b) = (w[0], w[1]);
        assert!(a.count() > b.count() || (a.count() == b.count() && position(a) < position(b)));
    }
    assert!(list.iter().all(|e| e.count() > 0));
    assert_eq!(list.len(), entries.iter().filter(|e| e.count() > 0).count());
    // Only an unused record lacks its item (the empty item survives loads).
    assert!(entries
        .iter()
        .all(|e| e.item().is_some() || (e.fp(), e.count()) == (0, 0)));
}

/// Save, load again, save again: the same bytes (compared as bytes, so a
/// NaN decay compares equal to itself).
fn round_trip(t: &TopK) -> Vec<Primitive> {
    let mut saved = Vec::new();
    t.rdb_save(&mut saved);
    let again = TopK::rdb_load(&mut PrimitiveSource::new(&saved), 0).expect("reload");
    let mut resaved = Vec::new();
    again.rdb_save(&mut resaved);
    assert!(
        encode_primitives(&saved) == encode_primitives(&resaved),
        "RDB save/load is not the identity"
    );
    saved
}

/// Commands on a value, with small increments (a crafted value may have
/// very many rows; its replies are not checked, only that nothing breaks).
fn exercise(t: &mut TopK, items: &[&[u8]]) {
    for (i, item) in items.iter().enumerate() {
        let _ = t.add(item, [1, 0, 3][i % 3]).expect("item copy");
        let _ = t.query(item);
        let _ = t.count(item);
    }
    check_topk(t);
}

/// Up to 64 commands cut from `input` on a (loaded) sketch: TOPK.ADD and
/// TOPK.INCRBY of any increment (bounded by the draws a deep crafted value
/// would take), QUERY, COUNT. Nothing summarises the contents (TOPK.INFO
/// shows the shape): after each, [`check_topk`] holds (LIST is the heap's
/// records of count > 0, by count) and QUERY is heap membership.
fn commands(t: &mut TopK, input: &[u8]) {
    let mut inp = Input::new(input);
    let draws = (1u32 << 17) / t.depth();
    for _ in 0..64 {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let item = inp.bytes(usize::from(op % 4)).to_vec();
        match op >> 6 {
            0 | 1 => {
                let inc = match inp.u8() % 4 {
                    0 => 1,
                    1 => u32::from(inp.u8()),
                    2 => u32::from(inp.u16()) % 2000,
                    _ => 100_000,
                };
                let inc = if t.decay() >= 1.0 {
                    inc
                } else {
                    inc.min(draws)
                };
                let _ = t.add(&item, inc).expect("item copy");
            }
            2 => {
                let fp = murmur2(&item, 1919);
                let in_heap = t
                    .heap()
                    .entries()
                    .iter()
                    .any(|e| e.fp() == fp && e.item().unwrap_or_default() == item.as_slice());
                assert_eq!(t.query(&item), in_heap, "QUERY {item:?}");
            }
            _ => {
                let _ = t.count(&item);
            }
        }
        check_topk(t);
    }
}

/// byte 0 = encoding (0 or 1), rest = `ByteSource` stream. Versions > 0
/// are refused; loaded values pass the invariants, save/reload is the
/// identity, and the save is the input with only the pointer fields of
/// heap records past the first and the padding zeroed, and the item
/// lengths recomputed. The bytes after the value are [`commands`], after
/// which the value still reloads.
pub fn topk_rdb(data: &[u8]) {
    let Some((&v, rest)) = data.split_first() else {
        return;
    };
    let encver = i32::from(v % 2);
    let mut t = match TopK::rdb_load(&mut ByteSource::new(rest), encver) {
        Ok(t) => t,
        Err(e) => {
            if encver > 0 {
                assert_eq!(e, LoadError::UnsupportedVersion);
            }
            return;
        }
    };
    assert_eq!(encver, 0);
    check_topk(&t);
    let saved = round_trip(&t);
    let bytes = encode_primitives(&saved);
    let (heap_at, record) = (
        8 * 3 + 8 + 4 + 8 * t.width() as usize * t.depth() as usize + 4,
        24,
    );
    for (i, (a, b)) in rest.iter().zip(&bytes).enumerate() {
        let in_record = i.checked_sub(heap_at).map(|o| (o / record, o % record));
        let normalised = match in_record {
            Some((r, 8..=15)) if r > 0 && r < t.k() as usize => true,
            Some((r, 4..=7 | 20..=23)) if r < t.k() as usize => true,
            _ => false,
        };
        assert!(normalised || a == b, "byte {i} not saved as read");
    }
    exercise(&mut t, &PROBE_ITEMS);
    round_trip_if_lossless(&t);
    commands(&mut t, rest.get(bytes.len()..).unwrap_or_default());
    round_trip_if_lossless(&t);
}

/// Every TOPK.* parser on argument vectors cut from the input (`\n`),
/// against the ranges and rules of docs/topk.md §4.
pub fn topk_args(data: &[u8]) {
    let argv: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let ranged = |a: &[u8], max: i64| ref_i64(a).filter(|v| (1..=max).contains(v));
    let u32_max = i64::from(u32::MAX);
    match parse_topk_reserve(&argv) {
        Ok(r) => {
            assert!(argv.len() == 3 || argv.len() == 6);
            assert_eq!(Some(i64::from(r.k)), ranged(argv[2], u32_max));
            if argv.len() == 6 {
                assert_eq!(Some(i64::from(r.width)), ranged(argv[3], u32_max));
                assert_eq!(Some(i64::from(r.depth)), ranged(argv[4], u32_max));
                assert!(r.decay > 0.0 && r.decay <= 1.0);
            } else {
                assert_eq!((r.width, r.depth, r.decay), (8, 7, 0.9));
            }
        }
        Err(ArgError::WrongArity) => assert!(check_reserve_arity(argv.len()).is_err()),
        Err(ArgError::Reply(e)) => {
            assert!(e.starts_with("TopK: invalid "), "{e}");
            if e == "TopK: invalid k" {
                assert_eq!(ranged(argv[2], u32_max), None);
            }
        }
    }
    for a in &argv {
        match parse_increment(a) {
            Ok(v) => assert_eq!(ref_i64(a), Some(i64::from(v)).filter(|&v| v <= 100_000)),
            Err(e) => {
                assert_eq!(e, ArgError::Reply(INCREMENT_ERROR));
                assert!(ref_i64(a).is_none_or(|v| !(0..=100_000).contains(&v)));
            }
        }
    }
    assert_eq!(
        check_incrby_arity(argv.len()).is_ok(),
        argv.len() >= 4 && argv.len().is_multiple_of(2)
    );
    match parse_topk_list(&argv) {
        Ok(with) => {
            assert!(argv.len() == 2 || argv.len() == 3);
            assert_eq!(with, argv.len() == 3);
            if let Some(opt) = argv.get(2) {
                assert!(b"WITHCOUNT"
                    .get(..opt.len())
                    .is_some_and(|p| p.eq_ignore_ascii_case(opt)));
            }
        }
        Err(ArgError::WrongArity) => assert!(argv.len() != 2 && argv.len() != 3),
        Err(e) => assert_eq!(e, ArgError::Reply("WITHCOUNT keyword expected")),
    }
}

/// Items of the model target: some share a prefix up to a NUL byte.
fn model_item(i: u8) -> Vec<u8> {
    match i % 24 {
        0 => Vec::new(),
        1 => b"nul\0a".to_vec(),
        2 => b"nul\0b".to_vec(),
        n => format!("item-{n}").into_bytes(),
    }
}

/// Random TOPK.ADD / TOPK.INCRBY / reads on a small sketch, a twin that
/// gets the same commands (same generator: same results), and a copy
/// reloaded from RDB now and then. For items whose fingerprint no other
/// item of the run shares, no count exceeds the true one (HeavyKeeper only
/// underestimates); QUERY is membership of the heap; LIST follows §3.7.
pub fn topk_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let k = 1 + u32::from(inp.u8() % 16);
    let width = 1 + u32::from(inp.u8() % 64);
    let depth = 1 + u32::from(inp.u8() % 9);
    let decay = match inp.u8() % 4 {
        0 => 1.0,
        1 => 0.9,
        _ => (1 + u32::from(inp.u8())) as f64 / 256.0,
    };
    let mut t = TopK::new(k, width, depth, decay).expect("small sketch");
    let mut twin = t.try_clone().expect("clone");
    let items: Vec<Vec<u8>> = (0..24).map(model_item).collect();
    let fps: Vec<u32> = items.iter().map(|i| murmur2(i, 1919)).collect();
    let unique = |i: usize| fps.iter().filter(|&&f| f == fps[i]).count() == 1;
    let mut truth: HashMap<usize, u64> = HashMap::new();
    let mut reloaded = false;
    while !inp.is_empty() {
        let op = inp.u8();
        let i = usize::from(inp.u8() % 24);
        let item = &items[i];
        match op % 8 {
            0..=3 => {
                // The largest increment only where it takes no draws.
                let inc = match op >> 3 {
                    0..=20 => 1,
                    21..=27 => u32::from(inp.u8()),
                    28..=30 => u32::from(inp.u16()) % 2000,
                    _ if decay >= 1.0 => 100_000,
                    _ => 2000,
                };
                let got = t.add(item, inc).expect("item copy");
                assert_eq!(twin.add(item, inc).expect("item copy"), got, "twin differs");
                if let Some(e) = &got {
                    assert_eq!(e.last(), Some(&0), "expelled item without its NUL");
                }
                *truth.entry(i).or_default() += u64::from(inc);
            }
            4 => {
                let in_heap =
                    t.heap().entries().iter().any(|e| {
                        e.fp() == fps[i] && e.item().unwrap_or_default() == item.as_slice()
                    });
                assert_eq!(t.query(item), in_heap, "QUERY {item:?}");
            }
            5 => {
                let n = t.count(item);
                if unique(i) && !reloaded {
                    assert!(
                        u64::from(n) <= truth.get(&i).copied().unwrap_or(0),
                        "COUNT over truth"
                    );
                }
            }
            6 => {
                // A reload truncates NUL items (docs/topk.md §5.2): the
                // twin reloads too, and truths no longer hold exactly.
                let saved = {
                    let mut s = Vec::new();
                    t.rdb_save(&mut s);
                    s
                };
                t = TopK::rdb_load(&mut PrimitiveSource::new(&saved), 0).expect("reload");
                twin = TopK::rdb_load(&mut PrimitiveSource::new(&saved), 0).expect("reload");
                reloaded = true;
            }
            _ => {
                let copy = t.try_clone().expect("clone");
                assert!(copy == t);
            }
        }
        assert!(t == twin, "twin state differs");
        check_topk(&t);
        if !reloaded {
            for e in t.heap().entries() {
                let Some(pos) = items.iter().position(|it| Some(it.as_slice()) == e.item()) else {
                    continue;
                };
                if unique(pos) && e.fp() == fps[pos] {
                    assert!(u64::from(e.count()) <= truth.get(&pos).copied().unwrap_or(0));
                }
            }
        }
    }
    round_trip_if_lossless(&t);
}

/// Save/load is the identity unless an item holds a NUL (then truncated),
/// docs/topk.md §5.2.
fn round_trip_if_lossless(t: &TopK) {
    let lossy = |b: &[u8]| b.contains(&0);
    if !t
        .heap()
        .entries()
        .iter()
        .any(|e| e.item().is_some_and(lossy))
    {
        round_trip(t);
    }
}

/// Seed inputs, derived from genuine encodings.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    for (k, w, d, decay, n) in [
        (1u32, 1u32, 1u32, 0.5, 0u32),
        (3, 8, 7, 1.0, 20),
        (5, 4, 3, 0.9, 300),
        (50, 32, 2, 0.925, 500),
    ] {
        let mut t = TopK::new(k, w, d, decay).unwrap();
        for i in 0..n {
            t.add(format!("i{}", i % (1 + i % 13)).as_bytes(), 1 + i % 3)
                .unwrap();
        }
        t.add(b"", 2).unwrap();
        let mut saved = Vec::new();
        t.rdb_save(&mut saved);
        out.push(("topk_rdb", [vec![0u8], encode_primitives(&saved)].concat()));
    }
    // The last value, followed by commands.
    let commands: Vec<u8> = (0..=255u8).flat_map(|b| [b, b.wrapping_mul(7)]).collect();
    let last = out.last().map(|(_, v)| v.clone()).unwrap_or_default();
    out.push(("topk_rdb", [last, commands].concat()));
    for line in [
        &b"TOPK.RESERVE\nk\n5\n8\n7\n0.9"[..],
        b"TOPK.RESERVE\nk\n4294967296",
        b"TOPK.INCRBY\nk\na\n100000\nb\n-1",
        b"TOPK.LIST\nk\nwith",
        b"TOPK.LIST\nk\n",
        b"TOPK.RESERVE\nk\n1\n0\n1\n1e-400",
    ] {
        out.push(("topk_args", line.to_vec()));
    }
    let ops: Vec<u8> = (0..=255u8).flat_map(|b| [b, b.wrapping_mul(13)]).collect();
    for params in [
        vec![4u8, 16, 3, 0],
        vec![0, 0, 0, 1],
        vec![15, 63, 8, 2, 200],
        vec![2, 3, 2, 3, 10],
    ] {
        out.push(("topk_model", [params, ops.clone()].concat()));
    }
    out
}
