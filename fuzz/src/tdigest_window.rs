//! Fuzz checks of the windowed T-Digest (docs/tdigest-window.md): its RDB
//! decoder, and operation sequences (adds, clock moves forwards and
//! backwards, reads at later times) against exact counts and extrema per
//! bucket.

use rsbloom_core::rdb::{Primitive, RdbSource};
use rsbloom_core::tdigest::window::WINDOW_ENCODING_VERSION;
use rsbloom_core::tdigest::{Compressions, WindowedTDigest};
use rsbloom_core::window::{WindowSpec, Windowed};

use super::window::{
    loaded_and_aged, model_ops_seed, move_clock, reloaded, saved, virtual_equals_applied, Checked,
    T0,
};
use super::{encode_primitives, Input};

impl Checked for WindowedTDigest {
    type Answers = Vec<u64>;
    const SAVES_AS_READ: bool = true;

    fn save(&self, out: &mut Vec<Primitive>) {
        self.rdb_save(out);
    }

    fn load<S: RdbSource>(src: &mut S) -> Option<Self> {
        WindowedTDigest::rdb_load(src, WINDOW_ENCODING_VERSION).ok()
    }

    fn copy(&self) -> Option<Self> {
        self.try_clone().ok()
    }

    /// A read's answers, as bits (NaN included).
    fn answers(&self, now: u64) -> Vec<u64> {
        let Ok(mut v) = self.view(now) else {
            return Vec::new();
        };
        let c = &mut Compressions::default();
        let mut out = vec![
            v.size() as u64,
            v.min_reply().to_bits(),
            v.max_reply().to_bits(),
        ];
        let mut q = Vec::new();
        v.quantiles(&[0.0, 0.25, 0.5, 0.99, 1.0], &mut q, c);
        out.extend(q.iter().map(|x| x.to_bits()));
        out.push(v.cdf(100.0, c).to_bits());
        let mut r = Vec::new();
        v.ranks(&[-1.0, 0.0, 100.0, 1e9], true, &mut r, c);
        out.extend(r.iter().map(|&x| x as u64));
        out.push(v.trimmed_mean(0.1, 0.9, c).to_bits());
        out
    }
}

/// `WindowedTDigest::rdb_load` over raw bytes: a loaded value saves
/// exactly what was read, reads age it as advancing would, and adds,
/// ticks and reloads keep it loadable.
pub fn tdigest_window_rdb(data: &[u8]) {
    let Some((mut w, now)) = loaded_and_aged::<WindowedTDigest>(data) else {
        return;
    };
    // Refused whole only at the observation limit.
    let _ = w.add_values(&[1.0, -5.0, 1e300, 7.0]);
    reloaded(&w, now);
}

/// Parameters from the first bytes (compression, window, buckets), then
/// operations: adds, clock moves (sometimes backwards), reads at later
/// times. Counts and extrema over the live buckets are exact, reads equal
/// applied shifts, and the value reloads equal at the end.
pub fn tdigest_window_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let compression = i64::from(inp.u8() % 40) + 1;
    let span_ms = u64::from(inp.u16()) + 1;
    let buckets = (u64::from(inp.u8() % 16) + 1).min(span_ms);
    let spec = WindowSpec { span_ms, buckets };
    let mut w = WindowedTDigest::new(compression, spec).expect("valid and small");
    // Per bucket, youngest first: count, min, max.
    let mut ring: Vec<(i64, f64, f64)> = vec![(0, f64::MAX, -f64::MAX); buckets as usize];
    let live = |ring: &[(i64, f64, f64)], expired: usize| {
        let n = ring.len().saturating_sub(expired);
        ring[..n]
            .iter()
            .fold((0, f64::MAX, -f64::MAX), |(c, lo, hi), b| {
                (c + b.0, f64::min(lo, b.1), f64::max(hi, b.2))
            })
    };
    let mut now = T0;
    w.advance(now);
    while !inp.is_empty() {
        let op = inp.u8();
        match op % 4 {
            0 | 1 => {
                let n = usize::from(inp.u8() % 64);
                let values: Vec<f64> = (0..n).map(|_| f64::from(inp.u16() as i16)).collect();
                w.add_values(&values).expect("far below the limit");
                for &v in &values {
                    let b = &mut ring[0];
                    *b = (b.0 + 1, b.1.min(v), b.2.max(v));
                }
            }
            2 => move_clock(&mut inp, op, &mut now, &mut w, &mut ring, |_| {
                (0, f64::MAX, -f64::MAX)
            }),
            _ => {
                let t = now + u64::from(inp.u16());
                let due = w.ring().due(t).min(buckets);
                let v = w.view(t).expect("small");
                let (count, min, max) = live(&ring, due as usize);
                assert_eq!(v.size(), count);
                if count > 0 {
                    assert_eq!((v.min(), v.max()), (min, max));
                }
                virtual_equals_applied(&w, t);
            }
        }
    }
    reloaded(&w, now);
}

pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for (compression, span_ms, buckets) in [(1, 1, 1), (5, 1000, 4), (20, 60, 60)] {
        let w = WindowSpec { span_ms, buckets };
        let mut td = WindowedTDigest::new(compression, w).unwrap();
        td.advance(T0);
        let values: Vec<f64> = (0..150).map(|i| f64::from(i * 7 % 31)).collect();
        td.add_values(&values).unwrap();
        td.advance(T0 + span_ms / 2 + 1);
        td.add_values(&values[..5]).unwrap();
        out.push(("tdigest_window_rdb", encode_primitives(&saved(&td))));
    }
    let ops = model_ops_seed();
    for params in [[7u8, 0xe8, 3, 5], [39, 10, 0, 15], [0, 0, 0, 0]] {
        out.push(("tdigest_window_model", [&params[..], &ops].concat()));
    }
    out
}
