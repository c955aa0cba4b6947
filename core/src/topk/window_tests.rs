use super::*;
use crate::alloc::try_copy_nul;
use crate::rdb::{Primitive, PrimitiveSource};
use proptest::prelude::*;

fn spec(span_ms: u64, buckets: u64) -> WindowSpec {
    WindowSpec { span_ms, buckets }
}

fn window(k: u32, buckets: u64) -> WindowedTopK {
    WindowedTopK::new(k, 64, 4, 0.9, spec(1000 * buckets, buckets)).unwrap()
}

fn add(w: &mut WindowedTopK, item: &str, inc: u32) -> Option<Box<[u8]>> {
    let item = item.as_bytes();
    w.youngest_mut()
        .add_hashed(item, &hash_item(item), inc)
        .unwrap()
}

fn listed(w: &WindowedTopK, now: u64) -> Vec<(String, u64)> {
    w.list(now)
        .unwrap()
        .iter()
        .map(|s| (String::from_utf8_lossy(s.item).into_owned(), s.count))
        .collect()
}

/// The same window answering without its aggregate (the buckets combined
/// at each read).
fn without_aggregate(w: &WindowedTopK) -> WindowedTopK {
    let mut c = w.try_clone().unwrap();
    c.closed = None;
    c
}

fn saved(w: &WindowedTopK) -> Vec<Primitive> {
    let mut p = Vec::new();
    w.rdb_save(&mut p);
    p
}

fn reloaded(w: &WindowedTopK) -> WindowedTopK {
    WindowedTopK::rdb_load(
        &mut PrimitiveSource::new(&saved(w)),
        WINDOW_ENCODING_VERSION,
    )
    .unwrap()
}

#[test]
fn counts_and_lists_combine_the_live_buckets() {
    let mut w = window(2, 3);
    assert_eq!(w.advance(10_000), 0);
    assert_eq!(w.last_shift_ms(), 10_000);
    for _ in 0..5 {
        add(&mut w, "a", 1);
    }
    add(&mut w, "b", 3);
    assert_eq!(listed(&w, 10_500), [("a".into(), 5), ("b".into(), 3)]);
    // The next bucket: c leads it, a and b keep their counts.
    assert_eq!(w.advance(11_000), 1);
    add(&mut w, "c", 7);
    add(&mut w, "b", 1);
    assert_eq!(listed(&w, 11_000), [("c".into(), 7), ("a".into(), 5)]);
    assert_eq!(w.count(b"b", 11_000), 4);
    assert_eq!(w.count(b"zz", 11_000), 0);
    // Read at 13 000: the first bucket has left (virtually).
    assert_eq!(listed(&w, 13_000), [("c".into(), 7), ("b".into(), 1)]);
    assert_eq!(w.count(b"a", 13_000), 0);
    assert_eq!(listed(&w, 11_999), listed(&without_aggregate(&w), 11_999));
    // Applied, the same answers.
    assert_eq!(w.advance(13_000), 2);
    assert_eq!(listed(&w, 13_000), [("c".into(), 7), ("b".into(), 1)]);
    // All buckets gone.
    assert!(listed(&w, 16_000).is_empty());
    assert_eq!(w.count(b"c", 16_000), 0);
}

#[test]
fn ties_list_by_bytes_and_zero_counts_stay_out() {
    let mut w = window(3, 2);
    w.advance(1);
    add(&mut w, "b", 2);
    add(&mut w, "a", 2);
    add(&mut w, "z", 0);
    assert_eq!(listed(&w, 1), [("a".into(), 2), ("b".into(), 2)]);
}

/// Pseudo-random adds and shifts: the aggregate's answers are those of the
/// buckets combined, virtual reads those of applied shifts, and a reload
/// rebuilds the same aggregate.
#[test]
fn aggregate_agrees_with_the_buckets() {
    let mut w = window(4, 5);
    let mut now = 1_000u64;
    w.advance(now);
    let mut x = 12345u64;
    for step in 0..3000u32 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (x >> 33) as u32;
        if r.is_multiple_of(50) {
            now += u64::from(r % 2500);
            w.advance(now);
        }
        let item = format!("i{}", (r >> 8) % (1 + (r >> 4) % 23));
        add(&mut w, &item, 1 + (r >> 16) % 3);
        if step.is_multiple_of(97) {
            let plain = without_aggregate(&w);
            for t in [now, now + 700, now + 2100, now + 4999, now + 6000] {
                assert_eq!(listed(&w, t), listed(&plain, t), "step {step} at {t}");
                for i in 0..25 {
                    let item = format!("i{i}");
                    assert_eq!(w.count(item.as_bytes(), t), plain.count(item.as_bytes(), t));
                }
                let mut applied = w.try_clone().unwrap();
                applied.advance(t);
                assert_eq!(listed(&applied, t), listed(&w, t), "step {step} at {t}");
            }
            let back = reloaded(&w);
            assert_eq!(back.closed, w.closed);
            assert_eq!(saved(&back), saved(&w));
            assert_eq!(back.memory_usage(), w.memory_usage());
        }
    }
}

#[test]
fn sizes_and_limits() {
    assert_eq!(
        WindowedTopK::new_size(10, 8, 7, spec(0, 1)),
        Err(WindowError::Window)
    );
    assert_eq!(
        WindowedTopK::new_size(10, 8, 7, spec(100, 101)),
        Err(WindowError::Window)
    );
    // 60 buckets of 4 MiB of buckets: under 256 MiB; 64 are over.
    assert!(WindowedTopK::new_size(1, 1 << 16, 8, spec(64_000, 64)).is_err());
    assert!(WindowedTopK::new_size(1, 1 << 16, 8, spec(60_000, 60)).is_ok());
    assert_eq!(
        WindowedTopK::new_size(u32::MAX, u32::MAX, u32::MAX, spec(60_000, 60)),
        Err(WindowError::TooLarge)
    );
    let w = window(3, 4);
    assert_eq!(
        w.memory_usage(),
        WindowedTopK::new_size(3, 64, 4, spec(4000, 4)).unwrap()
    );
}

#[test]
fn loads_refuse_buckets_of_other_parameters() {
    let mut w = window(3, 2);
    w.advance(5);
    add(&mut w, "a", 2);
    let mut p = saved(&w);
    let load = |p: &[Primitive], v| WindowedTopK::rdb_load(&mut PrimitiveSource::new(p), v);
    assert_eq!(load(&p, 0).unwrap(), w);
    assert_eq!(load(&p, 1).unwrap_err(), LoadError::UnsupportedVersion);
    // The second bucket's k (after the header and the first bucket).
    // A bucket: k, width, depth, decay, buckets, heap, k items.
    let bucket = 6 + 3;
    let second_k = p.len() - bucket;
    assert_eq!(p[second_k], Primitive::Unsigned(3));
    p[second_k] = Primitive::Unsigned(4);
    assert!(load(&p, 0).is_err());
}

/// The window by its definition (docs/topk-window.md §1), straight from
/// the live buckets: every item of their heaps, its summed counts.
fn reference_scores(w: &WindowedTopK, now: u64) -> Vec<(Vec<u8>, u64)> {
    let mut items: Vec<&[u8]> = (w.ring.live(now))
        .flat_map(|b| b.heap.entries().iter().filter_map(|e| e.item()))
        .collect();
    items.sort();
    items.dedup();
    items
        .into_iter()
        .map(|i| (i.to_vec(), reference_count(w, i, now)))
        .collect()
}

fn reference_count(w: &WindowedTopK, item: &[u8], now: u64) -> u64 {
    (w.ring.live(now))
        .map(|b| u64::from(b.count_hashed(item, &hash_item(item))))
        .sum()
}

/// The k largest above 0, by count, then bytes: a sort of them all.
fn reference_list(w: &WindowedTopK, now: u64) -> Vec<(Vec<u8>, u64)> {
    let mut all = reference_scores(w, now);
    all.retain(|s| s.1 > 0);
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.truncate(w.k() as usize);
    all
}

fn listed_bytes(w: &WindowedTopK, now: u64) -> Vec<(Vec<u8>, u64)> {
    (w.list(now).unwrap().iter())
        .map(|s| (s.item.to_vec(), s.count))
        .collect()
}

/// Reads at `now` (the aggregate's, or the buckets' when it is gone)
/// equal the reference's.
fn check_reads(w: &WindowedTopK, now: u64, pool: &[Vec<u8>]) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        listed_bytes(w, now),
        reference_list(w, now),
        "list at {}",
        now
    );
    for i in pool {
        prop_assert_eq!(
            w.count(i, now),
            reference_count(w, i, now),
            "count of {:?}",
            i
        );
    }
    Ok(())
}

#[derive(Debug, Clone)]
enum Op {
    Add(usize, u32),
    /// Moves the clock by this many ms (a write or a tick: shifts).
    Advance(u64),
    /// Reads this many ms past the clock (virtual aging).
    Read(u64),
    Reload,
    /// A restored value's oddity in a bucket (by age): a record's
    /// fingerprint not its item's, or a record repeating another's item.
    Foreign(u64, usize),
    Repeat(u64, usize),
}

fn op(period: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0usize..25, prop_oneof![Just(0u32), 1u32..4, 1u32..400, Just(100_000)])
            .prop_map(|(i, inc)| Op::Add(i, inc)),
        2 => prop_oneof![0..period, period..3 * period, 0..20 * period].prop_map(Op::Advance),
        2 => prop_oneof![0..period, 0..20 * period].prop_map(Op::Read),
        1 => Just(Op::Reload),
        1 => (0u64..12, 0usize..8).prop_map(|(a, r)| Op::Foreign(a, r)),
        1 => (0u64..12, 0usize..8).prop_map(|(a, r)| Op::Repeat(a, r)),
    ]
}

/// A window of random shape and a run of operations on it.
fn scenario() -> impl Strategy<Value = ((u32, u32, u32, f64, u64), Vec<Op>)> {
    (
        1u32..7,
        1u32..12,
        1u32..10,
        prop_oneof![Just(0.9), Just(1.0), Just(0.5)],
        1u64..12,
    )
        .prop_flat_map(|shape| (Just(shape), proptest::collection::vec(op(100), 1..150)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The aggregate kept across shifts (updated from the closing and the
    /// expiring buckets), the reads through it (pruned by closed sum, with
    /// virtually expired buckets subtracted) and the rebuilt aggregate
    /// answer exactly what the buckets combined by definition answer:
    /// random shapes (rows past the 7 hashed together), increments up to
    /// TOPK.INCRBY's 100,000, clocks a bucket or many buckets late, reloads, and heaps
    /// a restored value may hold (foreign fingerprints, repeated items).
    #[test]
    fn reads_and_shifts_equal_the_definition(((k, width, depth, decay, buckets), ops) in scenario()) {
        let mut w = WindowedTopK::new(k, width, depth, decay, spec(100 * buckets, buckets)).unwrap();
        let pool: Vec<Vec<u8>> = (0..24).map(|i| format!("i{i}").into_bytes())
            .chain([Vec::new()]).collect();
        let mut now = 1_000_000u64;
        w.advance(now);
        for op in ops {
            match op {
                Op::Add(i, inc) => {
                    let item = &pool[i % pool.len()];
                    w.youngest_mut().add(item, inc).unwrap();
                }
                Op::Advance(dt) => {
                    now += dt;
                    w.advance(now);
                    prop_assert_eq!(&w.closed, &build_closed(&w.ring).ok(), "after a shift");
                }
                Op::Read(dt) => check_reads(&w, now + dt, &pool)?,
                Op::Reload => {
                    let back = reloaded(&w);
                    prop_assert_eq!(saved(&back), saved(&w));
                    prop_assert_eq!(&back.closed, &w.closed);
                    w = back;
                }
                Op::Foreign(age, r) | Op::Repeat(age, r) => {
                    let n = w.buckets();
                    let slot = ((w.ring.head() + age % n) % n) as usize;
                    let entries = w.ring.slots_mut()[slot].heap.entries_mut();
                    let len = entries.len();
                    let e = &mut entries[r % len];
                    if matches!(op, Op::Foreign(..)) {
                        if e.item().is_some_and(|i| !i.is_empty()) {
                            e.fp ^= 1;
                        }
                    } else if let Some(i) = entries[(r + 1) % len].item() {
                        let fp = hash_item(i).fp;
                        let item = try_copy_nul(i).unwrap();
                        let e = &mut entries[r % len];
                        (e.fp, e.item) = (fp, Some(item));
                    }
                    // As a load of such a value would.
                    w.closed = build_closed(&w.ring).ok();
                }
            }
            check_reads(&w, now, &pool)?;
        }
        for dt in [0, 50, 100, 250, 100 * buckets / 2, 100 * buckets] {
            check_reads(&w, now + dt, &pool)?;
            let mut applied = w.try_clone().unwrap();
            applied.advance(now + dt);
            prop_assert_eq!(listed_bytes(&applied, now + dt), listed_bytes(&w, now + dt));
            prop_assert_eq!(&applied.closed, &build_closed(&applied.ring).ok());
        }
    }
}

/// Many more candidates than k, in many buckets: the read stops early
/// and still lists what sorting all of them lists; shifts one at a time
/// keep the aggregate equal to the rebuilt one.
#[test]
fn pruned_reads_of_a_large_window_equal_the_definition() {
    let mut w = WindowedTopK::new(20, 200, 5, 0.9, spec(40 * 1000, 40)).unwrap();
    let mut now = 1_000_000u64;
    w.advance(now);
    let mut x = 7u64;
    let pool: Vec<Vec<u8>> = (0..400).map(|i| format!("x{i}").into_bytes()).collect();
    for b in 0..60 {
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Roughly Zipf: small numbers far more often.
            let r = ((x >> 33) % 400) * ((x >> 20) % 400) / 400;
            w.youngest_mut().add(&pool[r as usize], 1).unwrap();
        }
        if b % 7 == 0 {
            for t in [now, now + 500, now + 1000, now + 5000, now + 25_000] {
                assert_eq!(
                    listed_bytes(&w, t),
                    reference_list(&w, t),
                    "bucket {b} at {t}"
                );
                let counts: Vec<u64> = pool.iter().map(|i| w.count(i, t)).collect();
                let want: Vec<u64> = pool.iter().map(|i| reference_count(&w, i, t)).collect();
                assert_eq!(counts, want);
            }
        }
        now += 1000;
        w.advance(now);
        assert_eq!(w.closed, build_closed(&w.ring).ok());
    }
    assert!(w.closed.as_ref().unwrap().items.len() > 3 * 20);
}

#[test]
fn the_empty_item_has_a_fingerprint() {
    // A record without item has fingerprint 0: the heap's search would
    // take it for the empty item's if that were 0.
    assert_ne!(hash_item(b"").fp, 0);
}
