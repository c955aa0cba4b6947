use super::*;
use crate::rdb::{Primitive, PrimitiveSource};

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
