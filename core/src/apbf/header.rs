//! Every field of a filter but its slices: what RDB saves first and what
//! SCANDUMP sends as its first chunk (docs/apbf.md §6). One validation
//! serves both, so every accepted value answers every command.

use super::sizing::{gen_size, slice_bits, MAX_K, MAX_L};
use crate::clock::Clock;

/// Largest window (count mode) or capacity per window (time mode).
pub const MAX_CAPACITY: u64 = 1 << 30;
pub use crate::clock::MAX_SPAN_MS;
/// Largest inserts count and clock (Unix ms): APBF.INFO answers them as
/// RESP integers, which are signed.
pub const MAX_COUNT: u64 = i64::MAX as u64;

const MAGIC: &[u8; 4] = b"APBF";
/// Header layout version inside SCANDUMP chunks.
const LAYOUT: u32 = 0;
pub(super) const FIELDS: usize = 13;
/// Bytes of an encoded header.
pub const HEADER_BYTES: usize = 8 + 8 * FIELDS;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Header {
    /// 0: count window; otherwise the time window in milliseconds.
    pub span_ms: u64,
    pub k: u64,
    pub l: u64,
    pub capacity: u64,
    /// The requested false-positive rate.
    pub error: f64,
    /// Insertions per generation (count mode: the shift point).
    pub gen_size: u64,
    pub slice_bits: u64,
    /// Physical index of the youngest slice.
    pub head: u64,
    /// Insertions into the current generation.
    pub gen_items: u64,
    pub inserts: u64,
    pub shifts: u64,
    /// Time mode: master's clock (Unix ms) at the last shift; 0 before the
    /// first insertion started the clock.
    pub last_shift_ms: u64,
}

impl Header {
    pub fn slices(&self) -> u64 {
        self.k + self.l
    }

    pub fn is_time(&self) -> bool {
        self.span_ms != 0
    }

    /// Time mode: milliseconds between shifts, `span / l` rounded up so
    /// that `l` periods cover the span (at least 1).
    pub fn period_ms(&self) -> u64 {
        crate::clock::period_ms(self.span_ms, self.l)
    }

    /// Time mode: the window's clock.
    pub fn clock(&self) -> Clock {
        Clock {
            last_shift_ms: self.last_shift_ms,
            period_ms: self.period_ms(),
        }
    }

    pub fn slice_bytes(&self) -> u64 {
        self.slice_bits / 8
    }

    /// Whether the fields make a sound filter (docs/apbf.md §6.2).
    pub fn is_valid(&self) -> bool {
        let span_ok = !self.is_time() || (1000..=MAX_SPAN_MS).contains(&self.span_ms);
        span_ok
            && (1..=MAX_K).contains(&self.k)
            && (1..=MAX_L).contains(&self.l)
            && (1..=MAX_CAPACITY).contains(&self.capacity)
            && self.error > 0.0
            && self.error < 1.0
            && self.gen_size == gen_size(self.capacity, self.l)
            && self.slice_bits == slice_bits(self.k, self.gen_size)
            && self.head < self.slices()
            && self.gen_items <= self.inserts
            && self.inserts <= MAX_COUNT
            && self.last_shift_ms <= MAX_COUNT
            && self.counters_agree()
    }

    /// Whether the counters are ones the filter's operations reach from
    /// an empty filter (docs/apbf.md §6.2); every operation on a filter
    /// whose counters agree keeps them agreeing.
    ///
    /// `is_valid` checks n ≥ 2, head < n and g ≥ 1 first; the checked
    /// forms only keep a misuse from panicking.
    fn counters_agree(&self) -> bool {
        let n = self.slices();
        // Slices the head moved back, modulo n.
        let moved = n.saturating_sub(self.head) % n.max(1);
        if self.is_time() {
            // `advance` adds `due` shifts and `due · period` ms to a clock
            // started at 1 ms or later, and moves the head min(due, n)
            // slices. So `moved` shifts end at the head exactly, and any
            // count from `moved + n` on (one advance of n or more) at any
            // head; nothing between.
            let clock_ok = self.shifts == 0
                || (self.shifts.checked_mul(self.period_ms()))
                    .is_some_and(|ms| ms < self.last_shift_ms);
            let head_ok = (self.shifts.checked_sub(moved)).is_some_and(|d| d == 0 || d >= n);
            // Before the first shift every insert is in the generation.
            clock_ok && head_ok && (self.shifts > 0 || self.gen_items == self.inserts)
        } else {
            // One shift before each insert past a full generation.
            let Some(shifts) = self.inserts.saturating_sub(1).checked_div(self.gen_size) else {
                return false;
            };
            self.last_shift_ms == 0
                && self.shifts == shifts
                && Some(self.gen_items) == self.inserts.checked_sub(shifts * self.gen_size)
                && shifts % n.max(1) == moved
        }
    }

    pub fn to_words(&self) -> [u64; FIELDS] {
        [
            self.span_ms,
            self.k,
            self.l,
            self.capacity,
            self.error.to_bits(),
            self.gen_size,
            self.slice_bits,
            self.head,
            self.gen_items,
            self.inserts,
            self.shifts,
            self.last_shift_ms,
            0,
        ]
    }

    /// The header of `w` if it is valid (the last word is reserved, 0).
    pub fn from_words(w: [u64; FIELDS]) -> Option<Header> {
        let [span_ms, k, l, capacity, error, gen_size, slice_bits, head, gen_items, inserts, shifts, last_shift_ms, reserved] =
            w;
        let h = Header {
            span_ms,
            k,
            l,
            capacity,
            error: f64::from_bits(error),
            gen_size,
            slice_bits,
            head,
            gen_items,
            inserts,
            shifts,
            last_shift_ms,
        };
        (reserved == 0 && h.is_valid()).then_some(h)
    }

    /// `APBF`, the layout version, then the words, little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&LAYOUT.to_le_bytes());
        for w in self.to_words() {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Header> {
        let (prefix, rest) = bytes.split_first_chunk::<8>()?;
        if prefix[..4] != *MAGIC || prefix[4..] != LAYOUT.to_le_bytes() {
            return None;
        }
        let (words, tail) = rest.as_chunks::<8>();
        if !tail.is_empty() || words.len() != FIELDS {
            return None;
        }
        let mut w = [0u64; FIELDS];
        for (dst, src) in w.iter_mut().zip(words) {
            *dst = u64::from_le_bytes(*src);
        }
        Header::from_words(w)
    }
}
