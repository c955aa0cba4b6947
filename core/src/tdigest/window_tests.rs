//! Windowed digest: virtual expiry equal to applied shifts, the derived
//! merge of closed buckets rebuilt identically by a load, exact counts
//! and extrema against a model, RDB round trips and refusals, and the
//! fork handler's count untouched (docs/tdigest-window.md).

use super::*;
use crate::rdb::{Primitive, PrimitiveSource};
use crate::tdigest::{pending_merges, Compressions};
use proptest::prelude::*;

const T0: u64 = 1_700_000_000_000;

fn window(compression: i64, span_ms: u64, buckets: u64) -> WindowedTDigest {
    WindowedTDigest::new(compression, WindowSpec { span_ms, buckets }).unwrap()
}

fn saved(w: &WindowedTDigest) -> Vec<Primitive> {
    let mut out = Vec::new();
    w.rdb_save(&mut out);
    out
}

fn load(p: &[Primitive]) -> Result<WindowedTDigest, LoadError> {
    WindowedTDigest::rdb_load(&mut PrimitiveSource::new(p), WINDOW_ENCODING_VERSION)
}

/// Every answer a read gives, as bits.
fn answers(w: &WindowedTDigest, now: u64) -> Vec<u64> {
    let mut v = w.view(now).unwrap();
    let mut out = Vec::new();
    v.state_words(|x| out.push(x));
    let c = &mut Compressions::default();
    let mut q = Vec::new();
    v.quantiles(&[0.0, 0.01, 0.5, 0.99, 1.0], &mut q, c);
    out.extend(q.iter().map(|x| x.to_bits()));
    out.push(v.cdf(42.0, c).to_bits());
    let mut r = Vec::new();
    v.ranks(&[0.0, 42.0, 500.0], false, &mut r, c);
    out.extend(r.iter().map(|&x| x as u64));
    out.push(v.min_reply().to_bits());
    out.push(v.max_reply().to_bits());
    out
}

#[test]
fn observations_leave_bucket_by_bucket() {
    let mut w = window(100, 40_000, 4);
    w.advance(T0);
    let values: Vec<f64> = (1..=100).map(f64::from).collect();
    w.add_values(&values).unwrap();
    assert_eq!(w.advance(T0 + 10_000), 1);
    w.add_values(&[1000.0, 2000.0]).unwrap();
    let v = w.view(T0 + 10_000).unwrap();
    assert_eq!((v.size(), v.min(), v.max()), (102, 1.0, 2000.0));
    // By the reader's clock, the first bucket is gone at +40 s.
    let v = w.view(T0 + 40_000).unwrap();
    assert_eq!((v.size(), v.min(), v.max()), (2, 1000.0, 2000.0));
    assert_eq!(w.view(T0 + 50_000).unwrap().size(), 0);
    // Time running backwards: nothing leaves.
    assert_eq!(w.view(T0).unwrap().size(), 102);
    w.reset();
    assert_eq!(w.view(T0 + 10_000).unwrap().size(), 0);
    assert_eq!(w.ring().last_shift_ms(), T0 + 10_000);
}

#[test]
fn one_live_bucket_answers_as_a_plain_digest() {
    let mut w = window(50, 1000, 2);
    let mut plain = TDigest::new(50.0).unwrap();
    w.advance(T0);
    let values: Vec<f64> = (0..200).map(|i| f64::from(i * 37 % 101)).collect();
    w.add_values(&values).unwrap();
    plain.add_values(&values).unwrap();
    plain.compress();
    let mut a = Vec::new();
    plain.state_words(|x| a.push(x));
    let mut b = Vec::new();
    w.view(T0).unwrap().state_words(|x| b.push(x));
    assert_eq!(a, b);
}

#[test]
fn buckets_do_not_count_as_pending_merges() {
    let before = pending_merges();
    let mut w = window(100, 1000, 10);
    w.advance(T0);
    w.add_values(&[1.0, 2.0, 3.0]).unwrap();
    let copy = w.try_clone().unwrap();
    let loaded = load(&saved(&w)).unwrap();
    assert_eq!(pending_merges(), before);
    drop((w, copy, loaded));
    assert_eq!(pending_merges(), before);
}

#[test]
fn a_window_at_the_observation_limit_refuses_adds_whole() {
    let mut w = window(100, 1000, 1);
    w.advance(T0);
    w.add_values(&[1.0]).unwrap();
    // The bucket made one centroid of 2^53 - 2 observations.
    let mut p = saved(&w);
    let at = p
        .iter()
        .position(|x| matches!(x, Primitive::Double(_)))
        .unwrap();
    let big = (MAX_OBSERVATIONS - 1) as u64;
    p.truncate(at + 2);
    p.extend([1, 1, big].map(Primitive::Unsigned));
    p.extend([
        Primitive::Double(1.0),
        Primitive::Unsigned(big),
        Primitive::Unsigned(0),
    ]);
    let mut w = load(&p).unwrap();
    assert_eq!(w.add_values(&[2.0, 3.0]).map_err(|e| e.added), Err(0));
    w.add_values(&[2.0]).unwrap();
    assert_eq!(w.view(T0).unwrap().size(), MAX_OBSERVATIONS);
    // One more in a bucket of its own does not load.
    p[at + 4] = Primitive::Unsigned(big + 2);
    p[at + 6] = Primitive::Unsigned(big + 2);
    assert!(load(&p).is_err());
}

#[test]
fn sizes_and_limits() {
    let w = WindowSpec {
        span_ms: 60_000,
        buckets: 60,
    };
    let one = TDigest::new_size(100.0).unwrap();
    assert_eq!(
        WindowedTDigest::new_size(100, w),
        Ok(WINDOW_RECORD_BYTES + 61 * one)
    );
    assert_eq!(
        window(100, 60_000, 60).size_bytes(),
        WINDOW_RECORD_BYTES + 61 * one
    );
    assert_eq!(
        WindowedTDigest::new_size(
            1_000_000,
            WindowSpec {
                span_ms: 10,
                buckets: 10
            }
        ),
        Err(WindowError::TooLarge)
    );
    assert_eq!(
        WindowedTDigest::new_size(
            100,
            WindowSpec {
                span_ms: 0,
                buckets: 1
            }
        ),
        Err(WindowError::Window)
    );
}

#[test]
fn refuses_what_adds_cannot_build() {
    let mut w = window(5, 3000, 3);
    w.advance(T0);
    let values: Vec<f64> = (1..=40).map(f64::from).collect();
    w.add_values(&values).unwrap();
    w.add_values(&[3.0, 5.0]).unwrap();
    let good = saved(&w);
    assert!(load(&good).is_ok());
    let mut refused = 0;
    for i in 0..good.len() {
        for bad in [
            Primitive::Unsigned(0),
            Primitive::Unsigned(1 << 53),
            Primitive::Unsigned(u64::MAX),
            Primitive::Double(f64::NAN),
            Primitive::Double(f64::INFINITY),
        ] {
            let mut p = good.clone();
            if std::mem::discriminant(&p[i]) != std::mem::discriminant(&bad) || p[i] == bad {
                continue;
            }
            p[i] = bad;
            match load(&p) {
                // Free fields only (a NaN mean among them): saved as read.
                Ok(v) => assert_eq!(format!("{:?}", saved(&v)), format!("{p:?}")),
                Err(_) => refused += 1,
            }
        }
    }
    assert!(refused > good.len() / 2, "{refused}");
    assert!(load(&good[..good.len() - 1]).is_err());
    let longer = [good.clone(), vec![Primitive::Unsigned(0)]].concat();
    assert_eq!(load(&longer).map(|v| saved(&v)).ok(), Some(good));
}

proptest! {
    /// Reads by a clock ahead of the last shift answer exactly what they
    /// answer once a write (or a tick) has applied those shifts, and a
    /// saved value loads back to the same bytes and the same answers.
    #[test]
    fn virtual_expiry_is_the_shift_and_loads_are_exact(
        buckets in 1u64..8,
        steps in proptest::collection::vec((0u64..3000, 0usize..300), 1..25),
    ) {
        let mut w = window(20, 4000, buckets);
        let mut now = T0;
        w.advance(now);
        for (i, (dt, n)) in steps.into_iter().enumerate() {
            now += dt;
            let virtual_answers = answers(&w, now);
            w.advance(now);
            prop_assert_eq!(answers(&w, now), virtual_answers);
            let values: Vec<f64> = (0..n).map(|j| ((i * 131 + j * 17) % 977) as f64).collect();
            w.add_values(&values).unwrap();
            let p = saved(&w);
            let back = load(&p).unwrap();
            prop_assert_eq!(saved(&back), p);
            prop_assert_eq!(answers(&back, now), answers(&w, now));
            prop_assert_eq!(answers(&w.try_clone().unwrap(), now), answers(&w, now));
        }
    }
}

/// docs/tdigest-window.md §3: 60 buckets of 1 000 pseudo-random values
/// (uniform, then a skewed square), δ = 100; the largest rank error over
/// nine values, as a fraction of the window's count, of the window and of
/// a plain digest fed the same values, against the exact ranks.
#[test]
fn rank_error_of_a_full_window() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    for skew in [false, true] {
        let mut w = window(100, 60_000, 60);
        let mut plain = TDigest::new(100.0).unwrap();
        let mut all = Vec::new();
        for b in 0..60u64 {
            w.advance(T0 + b * 1000);
            let values: Vec<f64> = (0..1000)
                .map(|_| {
                    let u = next();
                    1000.0 * if skew { u * u } else { u }
                })
                .collect();
            w.add_values(&values).unwrap();
            plain.add_values(&values).unwrap();
            all.extend(values);
        }
        all.sort_by(f64::total_cmp);
        let n = all.len() as f64;
        let mut v = w.view(T0 + 59_000).unwrap();
        assert_eq!(v.size(), 60_000);
        let c = &mut Compressions::default();
        let (mut worst_window, mut worst_plain) = (0f64, 0f64);
        for q in [0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999] {
            let x = all[(q * n) as usize];
            let exact = all.partition_point(|&y| y < x) as f64 + 0.5;
            worst_window = worst_window.max((v.cdf(x, c) * n - exact).abs() / n);
            worst_plain = worst_plain.max((plain.cdf(x, c) * n - exact).abs() / n);
        }
        eprintln!("skew {skew}: rank error window {worst_window:.5}, plain {worst_plain:.5}");
        // The plain digest's error, about; under 1 % of the count.
        assert!(worst_window < 0.01 && worst_window < 1.5 * worst_plain + 0.001);
    }
}
