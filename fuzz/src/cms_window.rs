//! Fuzz checks of the windowed Count-Min Sketch (docs/cms-window.md): its
//! RDB decoder, and operation sequences (increments, clock moves forwards
//! and backwards, reads at later times) against exact counts per bucket.

use std::collections::HashMap;

use rsbloom_core::cms::{CellSize, WindowedCms, WINDOW_ENCODING_VERSION};
use rsbloom_core::rdb::{ByteSource, Primitive, RdbSource};
use rsbloom_core::window::{WindowSpec, Windowed};

use super::window::{
    loaded_and_aged, model_ops_seed, move_clock, reloaded, saved, virtual_equals_applied, Checked,
    T0,
};
use super::{encode_primitives, Input, PROBE_ITEMS};

impl Checked for WindowedCms {
    /// The probes' estimates and the window's total.
    type Answers = (Vec<u64>, i64);
    const SAVES_AS_READ: bool = true;

    fn save(&self, out: &mut Vec<Primitive>) {
        self.rdb_save(out);
    }

    fn load<S: RdbSource>(src: &mut S) -> Option<Self> {
        WindowedCms::rdb_load(src, WINDOW_ENCODING_VERSION).ok()
    }

    fn copy(&self) -> Option<Self> {
        Some(self.try_clone().expect("small"))
    }

    fn answers(&self, now: u64) -> Self::Answers {
        let probes = PROBE_ITEMS.iter().map(|i| query(self, i, now)).collect();
        (probes, self.count(now))
    }
}

fn query(s: &WindowedCms, item: &[u8], now: u64) -> u64 {
    let mut out = 0;
    s.query_batch(&[item], now, |v| out = v);
    out
}

/// `WindowedCms::rdb_load` over raw bytes, both encodings: a loaded value
/// saves exactly what was read (encoding 1), reads age it as advancing
/// would, and increments, ticks and reloads keep it loadable.
pub fn cms_window_rdb(data: &[u8]) {
    // Encoding 0 (with the buckets' sum) loads into what encoding 1 saves.
    if let Ok(s) = WindowedCms::rdb_load(&mut ByteSource::new(data), 0) {
        reloaded(&s, s.ring().last_shift_ms());
    }
    let Some((mut s, now)) = loaded_and_aged::<WindowedCms>(data) else {
        return;
    };
    assert!(s.count(0) >= 0);
    let mut n = 0;
    s.increment_batch(&PROBE_ITEMS, |t| t, |_| 3, |_| n += 1);
    assert_eq!(n, PROBE_ITEMS.len());
    reloaded(&s, now);
}

/// Parameters from the first bytes (width, depth, cell size, window,
/// buckets), then operations: increments of both signs, clock moves
/// (sometimes backwards), reads at later times. Every estimate is at least
/// the exact count of its live buckets, totals are exact, reads equal
/// applied shifts, and the value reloads equal at the end.
pub fn cms_window_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let width = u64::from(inp.u8() % 32) + 1;
    let depth = u64::from(inp.u8() % 8) + 1;
    let cs = [
        CellSize::One,
        CellSize::Two,
        CellSize::Four,
        CellSize::Eight,
    ][usize::from(inp.u8() % 4)];
    let span_ms = u64::from(inp.u16()) + 1;
    let buckets = (u64::from(inp.u8() % 16) + 1).min(span_ms);
    let w = WindowSpec { span_ms, buckets };
    let mut s = WindowedCms::new(width, depth, cs, w).expect("valid and small");
    let mut ring: Vec<HashMap<u8, u64>> = vec![HashMap::new(); buckets as usize];
    let exact = |ring: &[HashMap<u8, u64>], item: u8, expired: usize| -> u64 {
        let live = ring.len().saturating_sub(expired);
        ring[..live]
            .iter()
            .map(|b| b.get(&item).copied().unwrap_or(0))
            .sum()
    };
    let mut now = T0;
    s.advance(now);
    while !inp.is_empty() {
        let op = inp.u8();
        let item = inp.u8() % 8;
        match op % 4 {
            0 | 1 => {
                let inc = i64::from(inp.u8() as i8);
                let have = ring[0].get(&item).copied().unwrap_or(0);
                // Decrements beyond the item's own count: collisions absorb
                // them (CMS's known weak spot), not modelled.
                if inc < 0 && have < inc.unsigned_abs() {
                    continue;
                }
                let mut r = None;
                s.increment_batch(&[[item]], |t| &t[..], |_| inc, |x| r = Some(x));
                match r.expect("one reply") {
                    Ok(est) => {
                        let v = ring[0].entry(item).or_insert(0);
                        *v = v.checked_add_signed(inc).expect("modelled");
                        assert!(est >= exact(&ring, item, 0));
                        assert_eq!(query(&s, &[item], now), est, "reply is the window's count");
                    }
                    // Only small cells fill up.
                    Err(_) => assert!(inc > 0 && cs.max() < 1 << 20),
                }
            }
            2 => move_clock(&mut inp, op, &mut now, &mut s, &mut ring, |_| {
                HashMap::new()
            }),
            _ => {
                let t = now + u64::from(inp.u16());
                let due = s.ring().due(t).min(buckets) as usize;
                assert!(query(&s, &[item], t) >= exact(&ring, item, due));
                let all: u64 = (0..8).map(|j| exact(&ring, j, due)).sum();
                assert_eq!(s.count(t), all as i64);
                virtual_equals_applied(&s, t);
            }
        }
    }
    reloaded(&s, now);
}

pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for (width, depth, span_ms, buckets) in [(1, 1, 1, 1), (8, 3, 1000, 4), (5, 2, 60, 60)] {
        for cs in [CellSize::One, CellSize::Eight] {
            let w = WindowSpec { span_ms, buckets };
            let mut s = WindowedCms::new(width, depth, cs, w).unwrap();
            s.advance(T0);
            s.increment_batch(&PROBE_ITEMS, |t| t, |_| 5, |_| {});
            s.advance(T0 + span_ms / 2 + 1);
            s.increment_batch(&PROBE_ITEMS[..3], |t| t, |_| 2, |_| {});
            out.push(("cms_window_rdb", encode_primitives(&saved(&s))));
        }
    }
    let ops = model_ops_seed();
    for params in [
        [7u8, 2, 1, 0xe8, 3, 5],
        [31, 7, 0, 10, 0, 15],
        [0, 0, 3, 0, 0, 0],
    ] {
        out.push(("cms_window_model", [&params[..], &ops].concat()));
    }
    out
}
