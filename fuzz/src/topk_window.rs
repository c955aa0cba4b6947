//! Fuzz checks of the windowed Top-K (docs/topk-window.md): its RDB
//! decoder, and operation sequences (adds, clock moves forwards and
//! backwards, reads at later times) against a model ring of plain Top-Ks
//! whose live buckets are combined by brute force.

use rsbloom_core::rdb::{Primitive, RdbSource};
use rsbloom_core::topk::{TopK, WindowedTopK, WINDOW_ENCODING_VERSION};
use rsbloom_core::window::WindowSpec;

use super::window::{self, loaded_and_aged, model_ops_seed, move_clock, saved, Checked, T0};
use super::{encode_primitives, Input, PROBE_ITEMS};

impl Checked for WindowedTopK {
    /// The window's list as (item, count) and the probes' counts.
    type Answers = (Vec<(Vec<u8>, u64)>, Vec<u64>);
    /// A bucket saves its heap records' item lengths and pointer fields
    /// anew (docs/topk.md §5.2, §5.3).
    const SAVES_AS_READ: bool = false;

    fn save(&self, out: &mut Vec<Primitive>) {
        self.rdb_save(out);
    }

    fn load<S: RdbSource>(src: &mut S) -> Option<Self> {
        WindowedTopK::rdb_load(src, WINDOW_ENCODING_VERSION).ok()
    }

    fn copy(&self) -> Option<Self> {
        Some(self.try_clone().expect("small"))
    }

    fn answers(&self, now: u64) -> Self::Answers {
        let counts = PROBE_ITEMS.iter().map(|i| self.count(i, now)).collect();
        (listed(self, now), counts)
    }
}

/// The window's list at `now` as (item, count).
fn listed(w: &WindowedTopK, now: u64) -> Vec<(Vec<u8>, u64)> {
    w.list(now)
        .expect("small")
        .iter()
        .map(|s| (s.item.to_vec(), s.count))
        .collect()
}

/// A reloaded window saves the same bytes, answers the same and takes the
/// same memory.
fn reloaded(w: &WindowedTopK, now: u64) {
    let back = window::reloaded(w, now);
    assert_eq!(back.memory_usage(), w.memory_usage());
}

/// `WindowedTopK::rdb_load` over raw bytes: reads age a loaded value as
/// advancing would, adds, ticks and reloads keep it loadable.
pub fn topk_window_rdb(data: &[u8]) {
    let Some((mut w, now)) = loaded_and_aged::<WindowedTopK>(data) else {
        return;
    };
    // An item with a NUL byte saves as its C string (docs/topk.md §5.2):
    // the plain type's known loss, not the window's.
    for item in PROBE_ITEMS.iter().filter(|i| !i.contains(&0)) {
        let _ = w.youngest_mut().add(item, 3);
    }
    reloaded(&w, now);
}

/// The brute-force window: the model ring (youngest first) less the
/// `expired` oldest buckets, every heap item's summed count, the k largest
/// above 0 by count, then bytes.
fn model_list(ring: &[TopK], expired: usize, k: usize) -> Vec<(Vec<u8>, u64)> {
    let live = &ring[..ring.len().saturating_sub(expired)];
    let mut items: Vec<Vec<u8>> = live
        .iter()
        .flat_map(|b| b.heap().entries().iter().filter_map(|e| e.item()))
        .map(<[u8]>::to_vec)
        .collect();
    items.sort();
    items.dedup();
    let mut scored: Vec<(Vec<u8>, u64)> = items
        .into_iter()
        .map(|i| {
            let c = live.iter().map(|b| u64::from(b.count(&i))).sum();
            (i, c)
        })
        .filter(|(_, c)| *c > 0)
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    scored.truncate(k);
    scored
}

/// Parameters from the first bytes (k, width, depth, decay, window,
/// buckets), then operations: adds and increments, clock moves (sometimes
/// backwards), reads at later times, checked against the model ring;
/// reads equal applied shifts, and reloads answer the same.
pub fn topk_window_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let k = u32::from(inp.u8() % 6) + 1;
    let width = u32::from(inp.u8() % 16) + 1;
    let depth = u32::from(inp.u8() % 5) + 1;
    let decay = [0.9, 1.0, 0.5, 0.99][usize::from(inp.u8() % 4)];
    let span_ms = u64::from(inp.u16()) + 1;
    let buckets = (u64::from(inp.u8() % 12) + 1).min(span_ms);
    let spec = WindowSpec { span_ms, buckets };
    let mut w = WindowedTopK::new(k, width, depth, decay, spec).expect("valid and small");
    let mut ring: Vec<TopK> = (0..buckets)
        .map(|_| TopK::new(k, width, depth, decay).expect("small"))
        .collect();
    let mut now = T0;
    w.advance(now);
    while !inp.is_empty() {
        let op = inp.u8();
        let item = [b'a' + inp.u8() % 12];
        match op % 4 {
            0 | 1 => {
                let inc = u32::from(inp.u8() % 4);
                let got = w.youngest_mut().add(&item, inc).expect("small");
                let want = ring[0].add(&item, inc).expect("small");
                assert_eq!(got, want);
            }
            2 => move_clock(&mut inp, op, &mut now, &mut w, &mut ring, |mut b| {
                b.clear();
                b
            }),
            _ => {
                let t = now + u64::from(inp.u16());
                let mut applied = w.try_clone().expect("small");
                let due = applied.advance(t).min(buckets) as usize;
                assert_eq!(listed(&w, t), model_list(&ring, due, k as usize));
                let live = ring.len() - due;
                let c: u64 = ring[..live].iter().map(|b| u64::from(b.count(&item))).sum();
                assert_eq!(w.count(&item, t), c);
                window::virtual_equals_applied(&w, t);
            }
        }
    }
    reloaded(&w, now);
}

pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for (k, width, depth, span_ms, buckets) in
        [(1, 1, 1, 1, 1), (3, 8, 3, 1000, 4), (2, 5, 2, 60, 60)]
    {
        let spec = WindowSpec { span_ms, buckets };
        let mut w = WindowedTopK::new(k, width, depth, 0.9, spec).unwrap();
        w.advance(T0);
        for item in PROBE_ITEMS {
            w.youngest_mut().add(item, 5).unwrap();
        }
        w.advance(T0 + span_ms / 2 + 1);
        for item in &PROBE_ITEMS[..3] {
            w.youngest_mut().add(item, 2).unwrap();
        }
        out.push(("topk_window_rdb", encode_primitives(&saved(&w))));
    }
    let ops = model_ops_seed();
    for params in [
        [3u8, 7, 2, 0, 0xe8, 3, 5],
        [5, 15, 4, 1, 10, 0, 11],
        [0, 0, 0, 2, 0, 0, 0],
    ] {
        out.push(("topk_window_model", [&params[..], &ops].concat()));
    }
    out
}
