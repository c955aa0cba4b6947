//! Age-Partitioned Bloom Filter (`APBF.*`, type `APBF-rsbl`): a Bloom
//! filter over a sliding window, the last N insertions or the last T
//! seconds (docs/apbf.md; Almeida, Baquero, Shtul 2020).
//!
//! A ring of `k + l` slices of `m` bits. An insertion sets one bit in each
//! of the `k` youngest slices; a query succeeds when `k` consecutive slices
//! (in age order) have the item's bit. A shift clears the oldest slice and
//! makes it the youngest. Each slice hashes with its own function, bound to
//! its physical position, so it keeps it as it ages.

pub mod args;
mod chunk;
mod header;
mod probe;
mod rdb;
mod sizing;

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

pub use crate::rdb::LoadError;
pub use chunk::{ChunkError, CHUNK_BYTES};
pub use header::{Header, HEADER_BYTES, MAX_CAPACITY, MAX_COUNT, MAX_SPAN_MS};
pub use rdb::ENCODING_VERSION;
pub use sizing::{choose, fpr, gen_size, slice_bits, MAX_K, MAX_L};

/// The data type (`TYPE` reply, RDB module id).
pub const TYPE: crate::ModuleType = crate::ModuleType {
    name: c"APBF-rsbl",
    encoding_version: ENCODING_VERSION,
    commands: "APBF.",
    family: "apbf",
    probe: "APBF.ADD",
    chunked: Some(crate::module_type::Chunked {
        scandump: "APBF.SCANDUMP",
        loadchunk: "APBF.LOADCHUNK",
        splits: false,
    }),
    volatile: None,
    added: None,
    flavour: None,
    config: &[],
    tour: &[
        &["APBF.RESERVE", "K", "COUNT", "0.01", "100"],
        &["APBF.ADD", "K", "a", "b"],
        &["APBF.EXISTS", "K", "a", "z"],
        &["APBF.INFO", "K"],
    ],
};

use crate::alloc::{try_copy, try_zeroed, AllocError};
use crate::hash::murmur64a;
use crate::prefetch::{pipelined, prefetch};
use probe::{run_of, Hashes, Modulus};

/// Seeds of the two hashes whose combination indexes every slice.
const SEED_A: u64 = 0x41504246_5f726b31;
const SEED_B: u64 = 0x41504246_5f726b32;

/// Bytes of the filter's record and slice table (MEMORY USAGE).
const RECORD_BYTES: u64 = std::mem::size_of::<Apbf>() as u64;
const SLICE_REF_BYTES: u64 = std::mem::size_of::<Box<[u8]>>() as u64;

/// What the filter remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The last `capacity` insertions.
    Count,
    /// The last `span_ms` milliseconds (`capacity` insertions expected).
    Time { span_ms: u64 },
}

/// An insertion refused: the inserts count is at 2^63 − 1 and cannot grow
/// (only a restored value gets there). The filter is unchanged, and every
/// later insertion is refused too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountFull;

/// Why `Apbf::new` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateError {
    /// No `(k, l)` within the bounds reaches the error rate.
    ErrorRate,
    /// Capacity or span out of range.
    Invalid,
    OutOfMemory,
}

#[derive(PartialEq)]
pub struct Apbf {
    h: Header,
    /// `k + l` slices of `slice_bits / 8` bytes, by physical position.
    slices: Box<[Box<[u8]>]>,
}

impl Hashes {
    fn of(item: &[u8]) -> Hashes {
        Hashes(murmur64a(item, SEED_A), murmur64a(item, SEED_B) | 1)
    }
}

/// Bits set of an item's slices of ages `0..k` (k ≤ 32), read before an
/// insertion writes them: the search reuses them instead of probing again.
type YoungBits = u64;

impl Apbf {
    /// An empty filter for `window` at false-positive rate `error`,
    /// remembering `capacity` items (per window in time mode).
    pub fn new(window: Window, error: f64, capacity: u64) -> Result<Self, CreateError> {
        let h = Self::plan(window, error, capacity)?;
        Self::zeroed(h).map_err(|_| CreateError::OutOfMemory)
    }

    /// The header of the filter [`Apbf::new`] would create.
    pub fn plan(window: Window, error: f64, capacity: u64) -> Result<Header, CreateError> {
        let (k, l) = choose(error).ok_or(CreateError::ErrorRate)?;
        let span_ms = match window {
            Window::Count => 0,
            Window::Time { span_ms } => span_ms,
        };
        let g = gen_size(capacity, l);
        let h = Header {
            span_ms,
            k,
            l,
            capacity,
            error,
            gen_size: g,
            slice_bits: slice_bits(k, g),
            head: 0,
            gen_items: 0,
            inserts: 0,
            shifts: 0,
            last_shift_ms: 0,
        };
        if !h.is_valid() {
            return Err(CreateError::Invalid);
        }
        Ok(h)
    }

    /// A filter with header `h` (valid) and all slices empty.
    fn zeroed(h: Header) -> Result<Self, AllocError> {
        let n = usize::try_from(h.slices()).map_err(|_| AllocError)?;
        let mut slices = Vec::new();
        slices.try_reserve_exact(n).map_err(|_| AllocError)?;
        for _ in 0..n {
            slices.push(try_zeroed(h.slice_bytes())?);
        }
        Ok(Apbf {
            h,
            slices: slices.into_boxed_slice(),
        })
    }

    pub fn header(&self) -> &Header {
        &self.h
    }

    /// The false-positive rate of this filter's `k` and `l` (docs/apbf.md
    /// §3), for a generation filled to its size.
    pub fn computed_error(&self) -> f64 {
        fpr(self.h.k, self.h.l)
    }

    /// Items always remembered (count mode): `l` full generations.
    pub fn window_items(&self) -> u64 {
        self.h.l.saturating_mul(self.h.gen_size)
    }

    /// MEMORY USAGE: the record, the slice table and the slices.
    pub fn size_bytes(&self) -> u64 {
        Self::size_for(&self.h)
    }

    /// MEMORY USAGE of a filter with header `h`, computed without
    /// allocating it (APBF.RESERVE and LOADCHUNK check it first).
    pub fn size_for(h: &Header) -> u64 {
        let n = h.slices();
        RECORD_BYTES
            .saturating_add(n.saturating_mul(SLICE_REF_BYTES))
            .saturating_add(n.saturating_mul(h.slice_bytes()))
    }

    fn slice_count(&self) -> u64 {
        self.slices.len() as u64
    }

    /// Physical position of the slice of age `age` (0 = youngest, below
    /// `k + l`).
    #[inline(always)]
    fn position(&self, age: u64) -> u64 {
        let p = self.h.head.wrapping_add(age);
        if p >= self.slice_count() {
            p.wrapping_sub(self.slice_count())
        } else {
            p
        }
    }

    /// The byte holding the item's bit in the slice of age `age`, and the
    /// bit's mask.
    #[inline(always)]
    fn locate(&self, md: Modulus, h: Hashes, age: u64) -> (usize, usize, u8) {
        let pos = self.position(age);
        let i = md.index(h, pos);
        (pos as usize, (i / 8) as usize, 1 << (i % 8))
    }

    #[inline(always)]
    fn byte(&self, (pos, byte, _): (usize, usize, u8)) -> Option<&u8> {
        self.slices.get(pos).and_then(|s| s.get(byte))
    }

    #[inline(always)]
    fn test(&self, md: Modulus, h: Hashes, age: u64) -> bool {
        let at = self.locate(md, h, age);
        self.byte(at).is_some_and(|b| b & at.2 != 0)
    }

    fn modulus(&self) -> Modulus {
        Modulus::of(self.h.slice_bits)
    }

    /// Starts loading the lines a search for the item is likely to probe
    /// among the `live` youngest slices: the oldest age of each window of
    /// `k` it would try if every window's first probe missed; with
    /// `young`, also every slice of age below `k` (an insertion writes
    /// them).
    fn prefetch_item(&self, md: Modulus, h: Hashes, live: u64, young: bool) {
        let k = self.h.k.max(1);
        let first = if young { 0 } else { k - 1 };
        let mut age = first;
        while age < live {
            if let Some(b) = self.byte(self.locate(md, h, age)) {
                prefetch(b);
            }
            age += if young && age + 1 < k { 1 } else { k };
        }
    }

    /// Whether the item is present, as of `now_ms` (Unix ms) in time mode:
    /// shifts due since the last one are applied virtually (the slices they
    /// would clear are ignored), nothing changes.
    pub fn contains(&self, item: &[u8], now_ms: u64) -> bool {
        let live = self.live(now_ms);
        self.contains_hashed(self.modulus(), Hashes::of(item), live)
    }

    /// [`Apbf::contains`] of each of `items`, in order, hashed and
    /// prefetched by blocks (docs/performance.md, "Batches").
    pub fn contains_batch<I: AsRef<[u8]>>(
        &self,
        items: &[I],
        now_ms: u64,
        mut each: impl FnMut(bool),
    ) {
        let (md, live) = (self.modulus(), self.live(now_ms));
        pipelined(
            self,
            items,
            |_, item| Hashes::of(item.as_ref()),
            |f, h| f.prefetch_item(md, h, live, false),
            |f, h| {
                each(f.contains_hashed(md, h, live));
                true
            },
        );
    }

    /// Slices not cleared by the shifts due at `now_ms`.
    fn live(&self, now_ms: u64) -> u64 {
        self.slice_count().saturating_sub(self.due_shifts(now_ms))
    }

    fn contains_hashed(&self, md: Modulus, h: Hashes, live: u64) -> bool {
        run_of(self.h.k, live, |age| self.test(md, h, age))
    }

    /// Inserts the item; answers whether it was present before. In count
    /// mode a full generation shifts first, so the last `l·g` insertions
    /// are always remembered.
    pub fn add(&mut self, item: &[u8]) -> Result<bool, CountFull> {
        self.add_hashed(self.modulus(), Hashes::of(item))
    }

    /// [`Apbf::add`] of each of `items`, in order, hashed and prefetched by
    /// blocks (docs/performance.md, "Batches").
    pub fn add_batch<I: AsRef<[u8]>>(
        &mut self,
        items: &[I],
        mut each: impl FnMut(Result<bool, CountFull>),
    ) {
        let md = self.modulus();
        pipelined(
            self,
            items,
            |_, item| Hashes::of(item.as_ref()),
            |f, h| f.prefetch_item(md, h, f.slice_count(), true),
            |f, h| {
                each(f.add_hashed(md, h));
                true
            },
        );
    }

    /// The insertion: the bits of the `k` youngest slices are read first
    /// (their lines are written anyway), the search reuses them, then they
    /// are set.
    fn add_hashed(&mut self, md: Modulus, h: Hashes) -> Result<bool, CountFull> {
        // The counters' relations (checked on load) hold only while the
        // inserts count is exact: refused before anything changes.
        if self.h.inserts >= MAX_COUNT {
            return Err(CountFull);
        }
        if !self.h.is_time() && self.h.gen_items >= self.h.gen_size {
            self.shift(1);
        }
        let k = self.h.k.min(MAX_K);
        let mut at = [(0, 0, 0); MAX_K as usize];
        let mut young: YoungBits = 0;
        for (age, slot) in (0..k).zip(at.iter_mut()) {
            *slot = self.locate(md, h, age);
            let set = self.byte(*slot).is_some_and(|b| b & slot.2 != 0);
            young |= YoungBits::from(set) << age;
        }
        let present = run_of(k, self.slice_count(), |age| {
            if age < k {
                young >> age & 1 != 0
            } else {
                self.test(md, h, age)
            }
        });
        for &(pos, byte, mask) in at.iter().take(k as usize) {
            if let Some(b) = self.slices.get_mut(pos).and_then(|s| s.get_mut(byte)) {
                *b |= mask;
            }
        }
        // Below MAX_COUNT (gen_items ≤ inserts, checked above).
        self.h.gen_items = self.h.gen_items.saturating_add(1);
        self.h.inserts = self.h.inserts.saturating_add(1);
        Ok(present)
    }

    /// Time mode: shifts due at `now_ms` since the last shift (0 before
    /// the clock started, or in count mode).
    pub fn due_shifts(&self, now_ms: u64) -> u64 {
        if !self.h.is_time() {
            return 0;
        }
        self.h.clock().due(now_ms)
    }

    /// Time mode: whether `advance(now_ms)` would change the filter (the
    /// clock is not started, or shifts are due).
    pub fn needs_advance(&self, now_ms: u64) -> bool {
        self.h.is_time() && self.h.clock().needs_advance(now_ms)
    }

    /// Time mode: starts the clock at `now_ms`, or applies the shifts due
    /// then. Deterministic in the filter and `now_ms`: replicas and AOF
    /// replays run it with the master's time. Answers the shifts applied.
    pub fn advance(&mut self, now_ms: u64) -> u64 {
        if !self.h.is_time() {
            return 0;
        }
        let a = self.h.clock().advance(now_ms);
        if a.shifts > 0 {
            self.shift(a.shifts);
        }
        self.h.last_shift_ms = a.last_shift_ms;
        a.shifts
    }

    /// `times` shifts: the oldest slice is cleared and becomes the
    /// youngest, `times` times (at most every slice once).
    fn shift(&mut self, times: u64) {
        let n = self.slice_count();
        for _ in 0..times.min(n) {
            self.h.head = (self.h.head + n - 1) % n.max(1);
            if let Some(s) = self.slices.get_mut(self.h.head as usize) {
                s.fill(0);
            }
        }
        self.h.shifts = self.h.shifts.saturating_add(times);
        self.h.gen_items = 0;
    }

    /// A deep copy (COPY); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        let mut slices = Vec::new();
        slices
            .try_reserve_exact(self.slices.len())
            .map_err(|_| AllocError)?;
        for s in &self.slices {
            slices.push(try_copy(s)?);
        }
        Ok(Apbf {
            h: self.h,
            slices: slices.into_boxed_slice(),
        })
    }

    /// The slices, for active defragmentation and lazy free.
    pub fn blocks_mut(&mut self) -> impl Iterator<Item = &mut dyn crate::alloc::Block> {
        self.slices
            .iter_mut()
            .map(|s| s as &mut dyn crate::alloc::Block)
    }
}

impl std::fmt::Debug for Apbf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Apbf")
            .field("header", &self.h)
            .finish_non_exhaustive()
    }
}
