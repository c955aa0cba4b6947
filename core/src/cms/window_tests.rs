//! Windowed sketch: a model of exact counts per bucket, virtual expiry
//! equal to applied shifts, the closed sum invariant, RDB round trips and
//! refusals (docs/cms-window.md).

use super::*;
use crate::cms::Rejected;
use crate::rdb::{Primitive, PrimitiveSource};
use proptest::prelude::*;
use std::collections::HashMap;

const T0: u64 = 1_700_000_000_000;

fn window(span_ms: u64, buckets: u64) -> WindowedCms {
    let w = WindowSpec { span_ms, buckets };
    WindowedCms::new(200, 4, CellSize::Four, w).unwrap()
}

fn incr(s: &mut WindowedCms, item: &str, inc: i64) -> Incremented {
    let mut out = None;
    s.increment_batch(&[item], |t| t.as_bytes(), |_| inc, |r| out = Some(r));
    out.unwrap()
}

fn query(s: &WindowedCms, items: &[&str], now: u64) -> Vec<u64> {
    let mut out = Vec::new();
    s.query_batch(items, now, |v| out.push(v));
    out
}

fn saved(s: &WindowedCms) -> Vec<Primitive> {
    let mut out = Vec::new();
    s.rdb_save(&mut out);
    out
}

fn load(p: &[Primitive]) -> Result<WindowedCms, LoadError> {
    WindowedCms::rdb_load(&mut PrimitiveSource::new(p), WINDOW_ENCODING_VERSION)
}

/// Whether the closed sum is that of all buckets but the youngest.
fn closed_is_sum(s: &WindowedCms) -> bool {
    let mut sum = CountMinSketch::new(s.width(), s.depth(), s.cell_size()).unwrap();
    (1..s.ring.buckets()).for_each(|a| sum.add(s.ring.at_age(a).unwrap()));
    sum == s.closed
}

/// The encoding-0 form of a value: the sum of every bucket after the
/// header (primitive 7 on).
fn encoding_0(s: &WindowedCms) -> Vec<Primitive> {
    let mut sum = s.closed.try_clone().unwrap();
    sum.add(s.ring.youngest());
    let mut p = saved(s);
    let at = 7;
    p.insert(at, Primitive::Buffer(sum.cells.to_vec()));
    p.insert(at, Primitive::Unsigned(sum.counter));
    p
}

#[test]
fn counts_expire_bucket_by_bucket() {
    // 1 s window, 4 buckets of 250 ms.
    let mut s = window(1000, 4);
    assert_eq!(s.advance(T0), 0);
    assert_eq!(incr(&mut s, "a", 3), Ok(3));
    s.advance(T0 + 260);
    assert_eq!(incr(&mut s, "a", 2), Ok(5));
    assert_eq!(query(&s, &["a", "z"], T0 + 999), [5, 0]);
    assert_eq!(s.count(T0 + 999), 5);
    // The first bucket leaves at 4 periods; reads see it before any write.
    assert_eq!(query(&s, &["a"], T0 + 1000), [2]);
    assert_eq!(s.count(T0 + 1000), 2);
    assert_eq!(query(&s, &["a"], T0 + 1250), [0]);
    assert_eq!(query(&s, &["a"], T0 + 10_000_000), [0]);
    // Applied, the same.
    assert_eq!(s.advance(T0 + 1000), 3);
    assert_eq!(query(&s, &["a"], T0 + 1000), [2]);
    assert_eq!(s.ring().last_shift_ms(), T0 + 1000);
}

#[test]
fn time_running_backwards_shifts_nothing() {
    let mut s = window(1000, 4);
    s.advance(T0);
    incr(&mut s, "a", 1).unwrap();
    s.advance(T0 + 500);
    let before = s.try_clone().unwrap();
    assert_eq!(s.advance(T0), 0);
    assert_eq!(s.advance(T0 + 499), 0);
    assert!(s == before);
    assert_eq!(query(&s, &["a"], T0 + 100), [1]);
}

#[test]
fn decrements_take_back_the_youngest_bucket_only() {
    let mut s = window(1000, 4);
    s.advance(T0);
    incr(&mut s, "a", 5).unwrap();
    s.advance(T0 + 300);
    assert_eq!(incr(&mut s, "a", -1), Err(Rejected::Underflow));
    incr(&mut s, "a", 2).unwrap();
    assert_eq!(incr(&mut s, "a", -2), Ok(5));
    assert_eq!(s.count(T0 + 300), 5);
}

#[test]
fn overflow_refused_in_the_aggregate() {
    let w = WindowSpec {
        span_ms: 100,
        buckets: 2,
    };
    let mut s = WindowedCms::new(10, 2, CellSize::One, w).unwrap();
    s.advance(T0);
    assert_eq!(incr(&mut s, "a", 200), Ok(200));
    s.advance(T0 + 50);
    assert_eq!(incr(&mut s, "a", 56), Err(Rejected::Overflow));
    assert_eq!(incr(&mut s, "a", 55), Ok(255));
    // The first bucket leaves: room again.
    s.advance(T0 + 100);
    assert_eq!(incr(&mut s, "a", 200), Ok(255));
    assert!(closed_is_sum(&s));
}

#[test]
fn creation_limits() {
    let w = |span_ms, buckets| WindowSpec { span_ms, buckets };
    let new = |width, w| WindowedCms::new(width, 4, CellSize::Four, w).map(|_| ());
    assert_eq!(new(10, w(0, 1)), Err(WindowError::Window));
    assert_eq!(new(10, w(10, 11)), Err(WindowError::Window));
    assert_eq!(new(10, w(100_000, 1025)), Err(WindowError::Window));
    assert_eq!(
        new(10, w(crate::clock::MAX_SPAN_MS + 1, 10)),
        Err(WindowError::Window)
    );
    assert_eq!(
        new(0, w(100, 10)),
        Err(WindowError::Sketch(CreateError::Invalid))
    );
    // 8 Mi columns of 4 bytes, 4 rows, 2 buckets + aggregate: 384 MiB.
    assert_eq!(new(1 << 23, w(100, 2)), Err(WindowError::TooLarge));
    let s = window(1000, 10);
    assert_eq!(
        Ok(s.size_bytes()),
        WindowedCms::new_size(200, 4, CellSize::Four, w(1000, 10))
    );
}

#[test]
fn rdb_round_trip_and_refusals() {
    let mut s = window(1000, 4);
    s.advance(T0);
    incr(&mut s, "a", 3).unwrap();
    s.advance(T0 + 300);
    incr(&mut s, "b", 4).unwrap();
    let p = saved(&s);
    assert!(load(&p).unwrap() == s);
    assert_eq!(
        WindowedCms::rdb_load(&mut PrimitiveSource::new(&p), 2),
        Err(LoadError::UnsupportedVersion)
    );
    let with = |i: usize, v: Primitive| {
        let mut q = p.clone();
        q[i] = v;
        load(&q)
    };
    let u = Primitive::Unsigned;
    for (i, v) in [
        (0, u(0)),
        (2, u(3)),
        (3, u(0)),
        (4, u(0)),
        (4, u(2000)),
        (5, u(4)),
        (6, u(u64::MAX)),
        // A bucket's total other than each row's sum (an empty one's too).
        (7, u(6)),
        (9, u(1)),
    ] {
        assert_eq!(with(i, v.clone()), Err(LoadError::Invalid), "{i} {v:?}");
    }
    // A counter of a bucket changed.
    let Primitive::Buffer(mut cells) = p[8].clone() else {
        panic!()
    };
    cells[0] ^= 1;
    assert_eq!(
        with(8, Primitive::Buffer(cells.clone())),
        Err(LoadError::Invalid)
    );
    cells.pop();
    assert_eq!(with(8, Primitive::Buffer(cells)), Err(LoadError::Invalid));
    assert_eq!(load(&p[..p.len() - 1]), Err(LoadError::Read));
}

#[test]
fn encoding_0_with_its_saved_sum_still_loads() {
    let mut s = window(1000, 4);
    s.advance(T0);
    incr(&mut s, "a", 3).unwrap();
    s.advance(T0 + 300);
    incr(&mut s, "b", 4).unwrap();
    let p = encoding_0(&s);
    let load0 = |p: &[Primitive]| WindowedCms::rdb_load(&mut PrimitiveSource::new(p), 0);
    assert!(load0(&p).unwrap() == s);
    // A saved sum other than the buckets'.
    let mut q = p.clone();
    q[7] = Primitive::Unsigned(6);
    assert_eq!(load0(&q), Err(LoadError::Invalid));
    let Primitive::Buffer(mut cells) = p[8].clone() else {
        panic!()
    };
    cells[0] ^= 1;
    q = p.clone();
    q[8] = Primitive::Buffer(cells);
    assert_eq!(load0(&q), Err(LoadError::Invalid));
}

#[test]
fn a_window_sum_out_of_range_is_refused() {
    // The youngest bucket made a copy of the older one (200 of "a"): each
    // in range in 1-byte counters, their sum (the window's) not.
    let w = WindowSpec {
        span_ms: 100,
        buckets: 2,
    };
    let mut s = WindowedCms::new(10, 2, CellSize::One, w).unwrap();
    s.advance(T0);
    incr(&mut s, "a", 200).unwrap();
    s.advance(T0 + 50);
    incr(&mut s, "a", 50).unwrap();
    let mut p = saved(&s);
    assert!(load(&p).is_ok());
    let (young, old) = (
        8 + 2 * s.ring.head() as usize,
        8 + 2 * (1 - s.ring.head() as usize),
    );
    p[young] = p[old].clone();
    p[young - 1] = p[old - 1].clone();
    assert_eq!(load(&p), Err(LoadError::Invalid));
}

#[derive(Debug, Clone)]
enum Op {
    Incr(u8, i64),
    Advance(u64),
    Query(u8, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..12, -3i64..20).prop_map(|(i, n)| Op::Incr(i, n)),
        (0u64..700).prop_map(Op::Advance),
        (0u8..12, 0u64..1500).prop_map(|(i, d)| Op::Query(i, d)),
    ]
}

/// Exact counts per bucket, shifted as the sketch shifts.
struct Model {
    ring: Vec<HashMap<u8, u64>>,
}

impl Model {
    fn total(&self, item: u8, expired: usize) -> u64 {
        let live = self.ring.len().saturating_sub(expired);
        self.ring[..live]
            .iter()
            .map(|b| b.get(&item).copied().unwrap_or(0))
            .sum()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Against exact counts: never below them, exact totals, reads equal
    /// to the applied shifts, the aggregate always the buckets' sum.
    #[test]
    fn windowed_counts_match_the_model(
        buckets in 1u64..6,
        span in 1u64..1000,
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let buckets = buckets.min(span);
        let w = WindowSpec { span_ms: span, buckets };
        let mut s = WindowedCms::new(64, 3, CellSize::Two, w).unwrap();
        // Youngest first.
        let mut m = Model { ring: vec![HashMap::new(); buckets as usize] };
        let mut now = T0;
        s.advance(now);
        for op in ops {
            match op {
                // Decrements beyond the item's own count are CMS's known
                    // weak spot (collisions absorb them): not modelled.
                Op::Incr(i, n) if n < 0 && m.ring[0].get(&i).copied().unwrap_or(0) < n.unsigned_abs() => {}
                Op::Incr(i, n) => {
                    let item = [b'a' + i];
                    let mut r = None;
                    s.increment_batch(&[&item[..]], |t| t, |_| n, |x| r = Some(x));
                    let cur = m.ring[0].entry(i).or_insert(0);
                    match r.unwrap() {
                        Ok(est) => {
                            *cur = cur.checked_add_signed(n).unwrap();
                            prop_assert!(est >= m.total(i, 0));
                            // The reply is the window's count, as a read sees it.
                            let mut read = 0;
                            s.query_batch(&[&item[..]], now, |v| read = v);
                            prop_assert_eq!(read, est);
                        }
                        Err(e) => prop_assert!(false, "{e:?}"),
                    }
                }
                Op::Advance(d) => {
                    // Sometimes backwards.
                    let t = if d % 7 == 0 { now.saturating_sub(d) } else { now + d };
                    let shifts = s.advance(t);
                    for _ in 0..shifts.min(buckets) {
                        m.ring.pop();
                        m.ring.insert(0, HashMap::new());
                    }
                    now = now.max(t);
                    prop_assert!(closed_is_sum(&s));
                }
                Op::Query(i, d) => {
                    let t = now + d;
                    let item = [b'a' + i];
                    let due = s.ring().due(t).min(buckets) as usize;
                    let mut read = 0;
                    s.query_batch(&[&item[..]], t, |v| read = v);
                    prop_assert!(read >= m.total(i, due));
                    let all: u64 = (0..12).map(|j| m.total(j, due)).sum();
                    prop_assert_eq!(s.count(t), all as i64);
                    let mut applied = s.try_clone().unwrap();
                    applied.advance(t);
                    let mut after = 0;
                    applied.query_batch(&[&item[..]], t, |v| after = v);
                    prop_assert_eq!(read, after);
                    prop_assert_eq!(applied.count(t), s.count(t));
                }
            }
        }
        prop_assert!(load(&saved(&s)).unwrap() == s);
        let legacy = WindowedCms::rdb_load(&mut PrimitiveSource::new(&encoding_0(&s)), 0);
        prop_assert!(legacy.unwrap() == s);
    }
}
