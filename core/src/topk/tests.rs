//! Test vectors of docs/topk.md (verified against RedisBloom), a model of
//! the algorithm as specified, and property tests of the heap and LIST.

use super::decay::{draw, DecayTable};
use super::*;
use crate::rdb::{Primitive, PrimitiveSource};
use proptest::prelude::*;

fn topk(k: u32, width: u32, depth: u32, decay: f64) -> TopK {
    TopK::new(k, width, depth, decay).unwrap()
}

/// Adds items one by one; the expelled items as replies show them.
fn add_all(t: &mut TopK, items: &[&str]) -> Vec<Option<String>> {
    items
        .iter()
        .map(|i| expelled(t.add(i.as_bytes(), 1).unwrap()))
        .collect()
}

fn expelled(e: Option<Box<[u8]>>) -> Option<String> {
    e.map(|b| String::from_utf8_lossy(heap::cstr(&b)).into_owned())
}

/// TOPK.LIST WITHCOUNT as (item, count) pairs; `None` = null item.
fn listed(t: &TopK) -> Vec<(Option<String>, u32)> {
    t.list()
        .unwrap()
        .iter()
        .map(|e| {
            let item = e
                .item_cstr()
                .map(|b| String::from_utf8_lossy(b).into_owned());
            (item, e.count())
        })
        .collect()
}

fn pairs(v: &[(&str, u32)]) -> Vec<(Option<String>, u32)> {
    v.iter().map(|&(i, c)| (Some(i.to_string()), c)).collect()
}

fn saved(t: &TopK) -> Vec<Primitive> {
    let mut out = Vec::new();
    t.rdb_save(&mut out);
    out
}

fn reload(t: &TopK) -> TopK {
    TopK::rdb_load(&mut PrimitiveSource::new(&saved(t)), 0).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The stream of docs/topk.md §8.2: w<x mod 13> or w<x mod 5>.
fn stream_item(i: u64) -> String {
    let x = (7 * i * i + 3 * i) % 101;
    if !x.is_multiple_of(3) {
        format!("w{}", x % 13)
    } else {
        format!("w{}", x % 5)
    }
}

/// RedisBloom's record is 2088 bytes, a 2560-byte allocation; the heap
/// record is 24 bytes. Ours must land in the same size classes.
#[test]
fn record_size_class_matches_redisbloom() {
    assert!((2049..=2560).contains(&std::mem::size_of::<TopK>()));
    assert_eq!(std::mem::size_of::<HeapEntry>(), 24);
}

/// One pass for 8 seeds is murmur2 under each.
#[test]
fn first_hashes_are_murmur2() {
    for item in [
        &b""[..],
        b"a",
        b"foo",
        b"hello world",
        b"abcdefghijklmnopq",
        &[0xff; 37],
    ] {
        let want = FIRST_SEEDS.map(|seed| murmur2(item, seed));
        assert_eq!(first_hashes(item), want);
        assert_eq!(murmur2_seeds(item, FIRST_SEEDS), want);
    }
}

#[test]
fn fastmod_column_is_exact() {
    for width in [1u32, 2, 3, 7, 8, 10, 1000, 65537, u32::MAX - 1, u32::MAX] {
        let t = TopK::from_parts(1, width, 1, 1.0, Box::default(), Heap::empty(1).unwrap(), 0);
        for h in [
            0u32,
            1,
            2,
            width - 1,
            width,
            12345678,
            u32::MAX - 1,
            u32::MAX,
        ] {
            let index = bucket_index(t.width, t.width_magic, 3, h);
            let want = 3 * width as usize + (h % width) as usize;
            assert_eq!(index, want, "{h} mod {width}");
        }
    }
}

/// docs/topk.md §5.2: `TOPK.RESERVE t 2 3 2 1`, `TOPK.ADD t foo bar foo`.
#[test]
fn rdb_layout_example() {
    let mut t = topk(2, 3, 2, 1.0);
    assert_eq!(add_all(&mut t, &["foo", "bar", "foo"]), [None, None, None]);
    let p = saved(&t);
    let u = Primitive::Unsigned;
    assert_eq!(p[..4], [u(2), u(3), u(2), Primitive::Double(1.0)]);
    let buckets = unhex(
        "0000000000000000 8ef2602f01000000 00c4644002000000
         00c4644001000000 0000000000000000 0000000000000000",
    );
    assert_eq!(p[4], Primitive::Buffer(buckets));
    let heap = unhex(
        "8ef2602f03000000 0000000000000000 0100000000000000
         00c4644003000000 0000000000000000 0200000000000000",
    );
    assert_eq!(p[5], Primitive::Buffer(heap));
    assert_eq!(
        p[6..],
        [
            Primitive::Buffer(b"bar\0".to_vec()),
            Primitive::Buffer(b"foo\0".to_vec())
        ]
    );
    assert_eq!(reload(&t), t);
}

#[test]
fn rdb_layout_of_an_empty_topk() {
    let t = topk(1, 1, 1, 0.5);
    let u = Primitive::Unsigned;
    let b = |v: &[u8]| Primitive::Buffer(v.to_vec());
    assert_eq!(
        saved(&t),
        [
            u(1),
            u(1),
            u(1),
            Primitive::Double(0.5),
            b(&[0; 8]),
            b(&[0; 24]),
            b(&[0])
        ]
    );
}

/// docs/topk.md §8.2: the deterministic stream with decay 1.
#[test]
fn deterministic_stream_vector() {
    let mut t = topk(5, 8, 7, 1.0);
    let mut expelled_items = Vec::new();
    for call in 0..100 {
        for i in call * 10..call * 10 + 10 {
            if let Some(e) = expelled(t.add(stream_item(i).as_bytes(), 1).unwrap()) {
                expelled_items.push(e);
            }
        }
    }
    assert_eq!(expelled_items.len(), 172);
    assert_eq!(
        expelled_items[..10],
        ["w8", "w11", "w9", "w0", "w11", "w8", "w0", "w4", "w3", "w6"]
    );
    assert_eq!(
        listed(&t),
        pairs(&[
            ("w1", 140),
            ("w4", 138),
            ("w3", 100),
            ("w0", 81),
            ("w2", 80)
        ])
    );
    let counts: Vec<u32> = ["w0", "w1", "w2", "w5"]
        .iter()
        .map(|i| t.count(i.as_bytes()))
        .collect();
    assert_eq!(counts, [81, 140, 80, 0]);
    let found: Vec<bool> = ["w0", "w1", "w2", "w5"]
        .iter()
        .map(|i| t.query(i.as_bytes()))
        .collect();
    assert_eq!(found, [true, true, true, false]);
}

/// docs/topk.md §8.3: the same stream with the default decay 0.9 gave
/// this list in every run of RedisBloom (few collisions decide anything).
#[test]
fn default_decay_stream_vector() {
    let mut t = topk(5, DEFAULT_WIDTH, DEFAULT_DEPTH, DEFAULT_DECAY);
    for i in 0..1000 {
        t.add(stream_item(i).as_bytes(), 1).unwrap();
    }
    assert_eq!(
        listed(&t),
        pairs(&[
            ("w1", 140),
            ("w4", 138),
            ("w3", 100),
            ("w0", 99),
            ("w2", 80)
        ])
    );
}

/// docs/topk.md §3.7 worked example (decay 0.9, no collision).
#[test]
fn ties_sink_and_list_is_stable() {
    let mut t = topk(3, 8, 7, 0.9);
    assert_eq!(
        add_all(&mut t, &["a", "b", "c", "d"]),
        [None, None, None, Some("a".into())]
    );
    assert_eq!(listed(&t), pairs(&[("c", 1), ("d", 1), ("b", 1)]));
}

/// docs/topk.md §3.4: INCRBY 0 inserts a phantom entry with count 0.
#[test]
fn increment_zero_makes_a_phantom_entry() {
    let mut t = topk(2, 8, 7, 0.925);
    assert_eq!(t.add(b"x", 0).unwrap(), None);
    assert!(t.query(b"x"));
    assert_eq!(listed(&t), []);
    assert_eq!(
        add_all(&mut t, &["y", "z", "w"]),
        [None, Some("x".into()), Some("y".into())]
    );
}

/// The RedisBloom flow-test vector of TOPK.INCRBY and TOPK.COUNT.
#[test]
fn incrby_and_count_vector() {
    let mut t = topk(3, 10, 3, 1.0);
    for (item, inc) in [("bar", 3), ("baz", 6), ("42", 2)] {
        assert_eq!(t.add(item.as_bytes(), inc).unwrap(), None);
    }
    assert_eq!(expelled(t.add(b"42", 8).unwrap()), None);
    assert_eq!(expelled(t.add(b"xyzzy", 4).unwrap()), Some("bar".into()));
    let counts: Vec<u32> = ["bar", "baz", "42", "xyzzy", "4"]
        .iter()
        .map(|i| t.count(i.as_bytes()))
        .collect();
    assert_eq!(counts, [3, 6, 10, 4, 0]);
}

/// docs/topk.md §5.2: the empty item saves like "no item" (one 0 byte) and
/// loads as the empty item in a record in use, so reloads keep it.
#[test]
fn empty_item_round_trip() {
    let mut t = topk(3, 8, 7, 1.0);
    assert_eq!(
        add_all(&mut t, &["", "a", "", ""]),
        [None, None, None, None]
    );
    assert_eq!(listed(&t), pairs(&[("", 3), ("a", 1)]));
    let r = reload(&t);
    assert_eq!(listed(&r), pairs(&[("", 3), ("a", 1)]));
    assert!(r == t);
    assert!(r.query(b""));
    assert_eq!(r.count(b""), 3);
    // Added with increment 0 (count 0, not listed), then expelled as "".
    let mut u = topk(1, 8, 7, 1.0);
    assert_eq!(u.add(b"", 0).unwrap(), None);
    assert_ne!(hash_item(b"").fp, 0, "the empty item's record is in use");
    let mut u = reload(&u);
    assert_eq!(add_all(&mut u, &["z", "z"]), [Some(String::new()), None]);
}

/// A record whose item starts with NUL is saved as one 0 byte too: it
/// loads as the empty item, as LIST showed it; only the item's bytes after
/// the NUL are lost (QUERY finds neither the item nor "" any more).
#[test]
fn nul_led_item_reloads_as_shown() {
    let mut t = topk(2, 8, 7, 1.0);
    t.add(b"\0x", 2).unwrap();
    assert_eq!(listed(&t), pairs(&[("", 2)]));
    let r = reload(&t);
    assert_eq!(listed(&r), pairs(&[("", 2)]));
    assert!(t.query(b"\0x") && !r.query(b"\0x") && !r.query(b""));
    // Unused records stay without item.
    assert_eq!(
        r.heap()
            .entries()
            .iter()
            .filter(|e| e.item().is_none())
            .count(),
        1
    );
}

#[test]
fn items_are_c_strings_in_replies_and_saves() {
    let mut t = topk(3, 8, 7, 1.0);
    t.add(b"bin\0ary", 1).unwrap();
    assert_eq!(listed(&t), pairs(&[("bin", 1)]));
    assert!(t.query(b"bin\0ary"));
    assert!(!t.query(b"bin"));
    assert!(saved(&t)[6..].contains(&Primitive::Buffer(b"bin\0".to_vec())));
    let r = reload(&t);
    assert!(!r.query(b"bin\0ary"));
    assert!(!r.query(b"bin"));
    assert_eq!(listed(&r), pairs(&[("bin", 1)]));
}

/// docs/topk.md §9 (RedisBloom defect fixed in 8.x): the decay table is
/// rebuilt on load, so a reloaded Top-K still decays.
#[test]
fn reloaded_topk_still_decays() {
    let mut t = topk(1, 1, 1, 0.99999);
    t.add(b"0", 1).unwrap();
    let mut r = reload(&t);
    r.add(b"1", 1).unwrap();
    assert_eq!(listed(&r), pairs(&[("1", 1)]));
}

/// The generator state travels with the value: a reload between two
/// commands changes nothing about what follows.
#[test]
fn reload_keeps_the_draws() {
    let mut a = topk(3, 4, 2, 0.8);
    for i in 0..500 {
        a.add(format!("x{}", i % 17).as_bytes(), 1 + i % 3).unwrap();
    }
    assert_ne!(a.rng, 0);
    let mut b = reload(&a);
    assert_eq!(b, a);
    for i in 0..500 {
        let item = format!("y{}", i % 23);
        assert_eq!(
            a.add(item.as_bytes(), 2).unwrap(),
            b.add(item.as_bytes(), 2).unwrap()
        );
    }
    assert_eq!(b, a);
    assert_eq!(a.try_clone().unwrap(), a);
}

#[test]
fn draws_are_uniform_and_decay_follows_the_table() {
    let mut s = 0;
    let n = 100_000;
    let mean = (0..n).map(|_| draw(&mut s)).sum::<f64>() / n as f64;
    assert!((mean - 0.5).abs() < 0.005, "{mean}");
    let table = DecayTable::new(0.9);
    assert_eq!(table.probability(1), 0.9);
    assert!((table.probability(300) - 0.9f64.powi(300)).abs() < 1e-25);
    // Success frequency of one attempt at count 3: 0.729.
    let hits = (0..n)
        .filter(|_| {
            matches!(
                decay::decay_foreign(&table, false, &mut s, 3, 1),
                decay::Decayed::Kept(2)
            )
        })
        .count();
    assert!((hits as f64 / n as f64 - 0.729).abs() < 0.01, "{hits}");
}

#[test]
fn certain_decay_in_closed_form() {
    use decay::{decay_foreign, Decayed::*};
    let t = DecayTable::new(1.0);
    let mut s = 0;
    assert_eq!(decay_foreign(&t, true, &mut s, 2, 5), Claimed(4));
    assert_eq!(decay_foreign(&t, true, &mut s, 5, 5), Claimed(1));
    assert_eq!(decay_foreign(&t, true, &mut s, 6, 5), Kept(1));
    assert_eq!(decay_foreign(&t, true, &mut s, 6, 0), Kept(6));
    // The drawn loop gives the same with probability 1.
    assert_eq!(decay_foreign(&t, false, &mut s, 2, 5), Claimed(4));
    assert_eq!(decay_foreign(&t, false, &mut s, 6, 5), Kept(1));
    assert_eq!(s, 7u64.wrapping_mul(0xa076_1d64_78bd_642f));
    // Probability 0 or NaN: nothing happens, no draw.
    for decay in [0.0, f64::NAN] {
        let mut s = 0;
        assert_eq!(
            decay_foreign(&DecayTable::new(decay), false, &mut s, 3, 9),
            Kept(3)
        );
        assert_eq!(s, 0);
    }
}

#[test]
fn rdb_rejections() {
    let mut t = topk(2, 3, 2, 1.0);
    add_all(&mut t, &["foo", "bar", "foo"]);
    let good = saved(&t);
    let load = |p: &[Primitive]| TopK::rdb_load(&mut PrimitiveSource::new(p), 0);
    let with = |i: usize, v: Primitive| {
        let mut p = good.clone();
        p[i] = v;
        p
    };
    let u = Primitive::Unsigned;
    let b = |v: &[u8]| Primitive::Buffer(v.to_vec());
    let invalid = Err(LoadError::Invalid);
    assert!(load(&good).is_ok());
    assert_eq!(
        TopK::rdb_load(&mut PrimitiveSource::new(&good), 1),
        Err(LoadError::UnsupportedVersion)
    );
    // Zero or > 32-bit dimensions (truncated by RedisBloom, docs/topk.md §9).
    for i in 0..3 {
        assert_eq!(load(&with(i, u(0))), invalid, "field {i}");
        assert_eq!(load(&with(i, u((1 << 32) + 2))), invalid, "field {i}");
    }
    // Bucket and heap buffers of the wrong length.
    assert_eq!(load(&with(4, b(&[0; 47]))), invalid);
    assert_eq!(load(&with(4, b(&[0; 49]))), invalid);
    assert_eq!(load(&with(5, b(&[0; 47]))), invalid);
    // Item strings: empty, unterminated, with an inner NUL, a lone non-NUL.
    for item in [&b""[..], b"bar", b"b\0r\0", b"x"] {
        assert_eq!(load(&with(6, b(item))), invalid, "{item:?}");
    }
    assert_eq!(load(&good[..6]), Err(LoadError::Read));
    assert_eq!(load(&with(3, u(1))), Err(LoadError::Read));
    // A decay TOPK.RESERVE refuses (RedisBloom loads any double, and
    // TOPK.INFO then shows it).
    for d in [
        2.0,
        0.0,
        -0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        1.0000000000000002,
    ] {
        assert_eq!(load(&with(3, Primitive::Double(d))), invalid, "{d}");
    }
    assert!(load(&with(3, Primitive::Double(5e-324))).is_ok());
}

/// A huge but consistent size fails as an allocation, not a crash.
#[test]
fn impossible_sizes_fail_cleanly() {
    assert_eq!(
        TopK::new(u32::MAX, u32::MAX, u32::MAX, 0.9),
        Err(AllocError)
    );
    assert_eq!(TopK::new(1 << 31, 1 << 30, 2, 0.9), Err(AllocError));
}

// ---------------------------------------------------------------------------
// The algorithm as docs/topk.md §3 writes it, record by record.

#[derive(Clone, Debug, PartialEq)]
struct ModelEntry {
    fp: u32,
    item: Option<Vec<u8>>,
    count: u32,
}

struct Model {
    width: u32,
    depth: u32,
    decay: f64,
    buckets: Vec<(u32, u32)>,
    heap: Vec<ModelEntry>,
    table: DecayTable,
    rng: u64,
}

impl Model {
    fn new(k: u32, width: u32, depth: u32, decay: f64) -> Model {
        let empty = ModelEntry {
            fp: 0,
            item: None,
            count: 0,
        };
        Model {
            width,
            depth,
            decay,
            buckets: vec![(0, 0); (width * depth) as usize],
            heap: vec![empty; k as usize],
            table: DecayTable::new(decay),
            rng: 0,
        }
    }

    fn sift_down(&mut self, mut s: usize) {
        let h = &mut self.heap;
        let n = h.len();
        if n < 2 || s > (n - 2) / 2 {
            return;
        }
        let mut c = 2 * s + 1;
        if c + 1 < n && h[c].count > h[c + 1].count {
            c += 1;
        }
        if h[c].count > h[s].count {
            return;
        }
        let saved = h[s].clone();
        loop {
            h[s] = h[c].clone();
            s = c;
            if c > (n - 2) / 2 {
                break;
            }
            c = 2 * c + 1;
            if c + 1 < n && h[c].count > h[c + 1].count {
                c += 1;
            }
            if h[c].count >= saved.count {
                break;
            }
        }
        h[s] = saved;
    }

    fn find(&self, fp: u32, item: &[u8]) -> Option<usize> {
        (0..self.heap.len()).rev().find(|&i| {
            let e = &self.heap[i];
            e.fp == fp && e.item.as_deref().unwrap_or(b"") == item
        })
    }

    fn add(&mut self, item: &[u8], inc: u32) -> Option<Vec<u8>> {
        let fp = murmur2(item, FP_SEED);
        let heap_min = self.heap[0].count;
        let mut max_count = 0;
        for i in 0..self.depth {
            let at = (i * self.width + murmur2(item, i) % self.width) as usize;
            let b = &mut self.buckets[at];
            if b.1 == 0 {
                *b = (fp, inc);
                max_count = max_count.max(inc);
            } else if b.0 == fp {
                b.1 = b.1.wrapping_add(inc);
                max_count = max_count.max(b.1);
            } else {
                let mut r = inc;
                while r > 0 {
                    let p = self.table.probability(b.1);
                    // rsbloom's documented shortcuts: no draw where the
                    // outcome is certain (docs/topk.md §3.5).
                    let u = if self.decay >= 1.0 || p.is_nan() || p <= 0.0 {
                        0.0
                    } else {
                        draw(&mut self.rng)
                    };
                    if u < p {
                        b.1 -= 1;
                        if b.1 == 0 {
                            *b = (fp, r);
                            max_count = max_count.max(r);
                            break;
                        }
                    }
                    r -= 1;
                }
            }
        }
        if max_count < heap_min {
            return None;
        }
        if let Some(i) = self.find(fp, item) {
            self.heap[i].count = max_count;
            self.sift_down(i);
            return None;
        }
        let new = ModelEntry {
            fp,
            item: Some(item.to_vec()),
            count: max_count,
        };
        let old = std::mem::replace(&mut self.heap[0], new);
        self.sift_down(0);
        old.item
    }

    /// What a save and load does: items become C strings; a record not in
    /// use (fp and count 0) has no item.
    fn reloaded(&mut self) {
        for e in &mut self.heap {
            let item = e.item.take().unwrap_or_default();
            let in_use = e.fp != 0 || e.count != 0;
            e.item = in_use.then(|| heap::cstr(&item).to_vec());
        }
    }

    fn list(&self) -> Vec<ModelEntry> {
        let mut v = self.heap.clone();
        v.sort_by_key(|e| std::cmp::Reverse(e.count));
        v.into_iter().take_while(|e| e.count > 0).collect()
    }
}

fn as_model(t: &TopK) -> (Vec<(u32, u32)>, Vec<ModelEntry>) {
    let buckets = (0..t.buckets.len() / BUCKET).map(|i| t.bucket(i)).collect();
    let heap = t
        .heap
        .entries()
        .iter()
        .map(|e| ModelEntry {
            fp: e.fp,
            item: e.item.as_ref().map(|_| e.bytes().to_vec()),
            count: e.count,
        })
        .collect();
    (buckets, heap)
}

const POOL: usize = 24;

fn pool_item(i: usize) -> Vec<u8> {
    match i {
        0 => Vec::new(),
        1 => b"nul\0inside".to_vec(),
        _ => format!("item-{i}").into_bytes(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every reply and every byte of state equals the model's, and a save
    /// and reload in between changes nothing.
    #[test]
    fn matches_the_specified_algorithm(
        k in 1u32..8,
        width in 1u32..10,
        depth in 1u32..10,
        decay in prop_oneof![Just(1.0), Just(0.9), Just(0.5), 0.01f64..1.0],
        ops in proptest::collection::vec((0..POOL, prop_oneof![Just(0u32), Just(1), Just(3), 0u32..300]), 1..200),
        reload_at in any::<prop::sample::Index>(),
    ) {
        let mut t = topk(k, width, depth, decay);
        let mut m = Model::new(k, width, depth, decay);
        let reload_at = reload_at.index(ops.len());
        for (n, &(i, inc)) in ops.iter().enumerate() {
            let item = pool_item(i);
            let got = t.add(&item, inc).unwrap().map(|b| b[..b.len() - 1].to_vec());
            prop_assert_eq!(got, m.add(&item, inc));
            prop_assert_eq!(t.rng, m.rng);
            prop_assert_eq!(as_model(&t), (m.buckets.clone(), m.heap.clone()));
            if n == reload_at {
                t = reload(&t);
                m.reloaded();
            }
        }
        let list: Vec<ModelEntry> = t.list().unwrap().iter().map(|e| ModelEntry {
            fp: e.fp, item: e.item.as_ref().map(|_| e.bytes().to_vec()), count: e.count,
        }).collect();
        prop_assert_eq!(list, m.list());
        for i in 0..POOL {
            let item = pool_item(i);
            prop_assert_eq!(t.query(&item), m.find(murmur2(&item, FP_SEED), &item).is_some());
        }
    }

    /// Without collisions nothing decays: counts are exact, the heap is a
    /// min-heap of distinct items, and LIST is the true top by frequency.
    #[test]
    fn collision_free_sketch_is_exact(
        k in 1u32..6,
        ops in proptest::collection::vec(0..12usize, 1..300),
    ) {
        // Every item in its own column of every row (checked below).
        let mut t = topk(k, 4096, 3, 0.9);
        let items: Vec<Vec<u8>> = (0..12).map(|i| format!("distinct-{i}").into_bytes()).collect();
        for row in 0..3 {
            let mut cols: Vec<usize> = items.iter().map(|i| t.bucket_index(i, &hash_item(i), row)).collect();
            cols.sort();
            cols.dedup();
            prop_assume!(cols.len() == items.len());
        }
        let mut freq = [0u32; 12];
        for &i in &ops {
            t.add(&items[i], 1).unwrap();
            freq[i] += 1;
            let h = t.heap.entries();
            for c in 1..h.len() {
                prop_assert!(h[(c - 1) / 2].count <= h[c].count, "heap order at {}", c);
            }
            let mut named: Vec<&[u8]> = h.iter().filter_map(|e| e.item.as_deref()).collect();
            let n = named.len();
            named.sort();
            named.dedup();
            prop_assert_eq!(named.len(), n, "duplicate heap items");
        }
        for (i, item) in items.iter().enumerate() {
            prop_assert_eq!(t.count(item), freq[i]);
        }
        let list = t.list().unwrap();
        let counts: Vec<u32> = list.iter().map(|e| e.count).collect();
        prop_assert!(counts.windows(2).all(|w| w[0] >= w[1]));
        let mut top = freq.to_vec();
        top.sort_by(|a, b| b.cmp(a));
        top.truncate(k as usize);
        top.retain(|&c| c > 0);
        prop_assert_eq!(counts, top);
    }

    /// Sift-down is a permutation that follows the specified procedure.
    #[test]
    fn sift_down_as_specified(counts in proptest::collection::vec(0u32..5, 1..40), s in any::<prop::sample::Index>()) {
        let k = counts.len() as u32;
        let mut t = topk(k, 1, 1, 1.0);
        let mut m = Model::new(k, 1, 1, 1.0);
        for (i, &c) in counts.iter().enumerate() {
            t.heap.entries_mut()[i] = HeapEntry { fp: i as u32, count: c, item: None };
            m.heap[i] = ModelEntry { fp: i as u32, item: None, count: c };
        }
        let s = s.index(counts.len());
        t.heap.sift_down(s);
        m.sift_down(s);
        prop_assert_eq!(as_model(&t).1, m.heap);
    }
}
