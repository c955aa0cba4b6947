//! Fuzz checks of the windowed Top-K (docs/topk-window.md): its RDB
//! decoder, and operation sequences (adds, clock moves forwards and
//! backwards, reads at later times) against a model ring of plain Top-Ks
//! whose live buckets are combined by brute force.

use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};
use rsbloom_core::topk::{TopK, WindowedTopK, WINDOW_ENCODING_VERSION};
use rsbloom_core::window::WindowSpec;

use super::{encode_primitives, Input, PROBE_ITEMS};

const T0: u64 = 1_700_000_000_000;

fn saved(w: &WindowedTopK) -> Vec<Primitive> {
    let mut out = Vec::new();
    w.rdb_save(&mut out);
    out
}

/// The window's list at `now` as (item, count).
fn listed(w: &WindowedTopK, now: u64) -> Vec<(Vec<u8>, u64)> {
    w.list(now)
        .expect("small")
        .iter()
        .map(|s| (s.item.to_vec(), s.count))
        .collect()
}

/// What the window answers at `now`: its list and the probes' counts.
fn answers(w: &WindowedTopK, now: u64) -> (Vec<(Vec<u8>, u64)>, Vec<u64>) {
    let counts = PROBE_ITEMS.iter().map(|i| w.count(i, now)).collect();
    (listed(w, now), counts)
}

/// A reloaded window saves the same bytes and answers the same.
fn reloaded(w: &WindowedTopK, now: u64) -> WindowedTopK {
    let p = saved(w);
    let back = WindowedTopK::rdb_load(&mut PrimitiveSource::new(&p), WINDOW_ENCODING_VERSION)
        .expect("a saved window loads");
    assert!(
        encode_primitives(&saved(&back)) == encode_primitives(&p),
        "RDB round trip changed the window"
    );
    assert_eq!(answers(&back, now), answers(w, now));
    assert_eq!(back.memory_usage(), w.memory_usage());
    back
}

/// Reads at `now` equal the reads after applying the shifts due then.
fn virtual_equals_applied(w: &WindowedTopK, now: u64) {
    let mut applied = w.try_clone().expect("small");
    applied.advance(now);
    assert_eq!(answers(&applied, now), answers(w, now), "at {now}");
}

/// `WindowedTopK::rdb_load` over raw bytes: a loaded value saves what was
/// read, reads age it as advancing would, adds, ticks and reloads keep it
/// loadable.
pub fn topk_window_rdb(data: &[u8]) {
    let Ok(mut w) = WindowedTopK::rdb_load(&mut ByteSource::new(data), WINDOW_ENCODING_VERSION)
    else {
        return;
    };
    let base = w.last_shift_ms();
    for d in [0, 1, w.period_ms(), w.span_ms(), u64::MAX] {
        virtual_equals_applied(&w, base.saturating_add(d));
    }
    w.advance(base.saturating_add(w.period_ms()));
    // An item with a NUL byte saves as its C string (docs/topk.md §5.2):
    // the plain type's known loss, not the window's.
    for item in PROBE_ITEMS.iter().filter(|i| !i.contains(&0)) {
        let _ = w.youngest_mut().add(item, 3);
    }
    reloaded(&w, base.saturating_add(w.period_ms()));
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
            2 => {
                let d = u64::from(inp.u16());
                let t = if op & 0x80 != 0 {
                    now.saturating_sub(d)
                } else {
                    now + d
                };
                let shifts = w.advance(t);
                for _ in 0..shifts.min(buckets) {
                    let mut oldest = ring.pop().expect("buckets ≥ 1");
                    oldest.clear();
                    ring.insert(0, oldest);
                }
                now = now.max(t);
            }
            _ => {
                let t = now + u64::from(inp.u16());
                let mut applied = w.try_clone().expect("small");
                let due = applied.advance(t).min(buckets) as usize;
                assert_eq!(listed(&w, t), model_list(&ring, due, k as usize));
                let live = ring.len() - due;
                let c: u64 = ring[..live].iter().map(|b| u64::from(b.count(&item))).sum();
                assert_eq!(w.count(&item, t), c);
                virtual_equals_applied(&w, t);
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
    let ops: Vec<u8> = (0..=255u8)
        .flat_map(|b| [b, b.wrapping_mul(7), b ^ 0x5a])
        .collect();
    for params in [
        [3u8, 7, 2, 0, 0xe8, 3, 5],
        [5, 15, 4, 1, 10, 0, 11],
        [0, 0, 0, 2, 0, 0, 0],
    ] {
        out.push(("topk_window_model", [&params[..], &ops].concat()));
    }
    out
}
