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
use crate::clock::Aging;
use crate::hash::murmur64a;
use crate::prefetch::{prefetch, BLOCK};
use probe::{run_of, Hashes, Modulus, Run};

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

/// Where an item's bit is in the filter: the slice's physical position,
/// the byte in it, the bit's mask.
type At = (usize, usize, u8);

/// An item of a batch: its hashes, its search, and the byte (with the
/// bit's mask) the search probes next, kept so a step reads it without
/// locating it again.
#[derive(Clone, Copy)]
struct Slot<'a> {
    h: Hashes,
    run: Run,
    byte: &'a u8,
    mask: u8,
}

impl Slot<'_> {
    const EMPTY: Slot<'static> = Slot {
        h: Hashes(0, 0),
        run: Run::EMPTY,
        byte: &0,
        mask: 0,
    };
}

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
    fn locate(&self, md: Modulus, h: Hashes, age: u64) -> At {
        let pos = self.position(age);
        let i = md.index(h, pos);
        (pos as usize, (i / 8) as usize, 1 << (i % 8))
    }

    #[inline(always)]
    fn byte(&self, (pos, byte, _): At) -> Option<&u8> {
        self.slices.get(pos).and_then(|s| s.get(byte))
    }

    /// Whether the item's bit is set in the slice of age `age`.
    #[inline(always)]
    fn test(&self, md: Modulus, h: Hashes, age: u64) -> bool {
        let (byte, mask) = self.probe(md, h, age);
        *byte & mask != 0
    }

    /// The byte holding the item's bit in the slice of age `age` (a zero
    /// past the end, which a valid filter never reaches, so that a batch's
    /// searches do not branch on what they read), and the bit's mask.
    #[inline(always)]
    fn probe(&self, md: Modulus, h: Hashes, age: u64) -> (&u8, u8) {
        let at = self.locate(md, h, age);
        (self.byte(at).unwrap_or(&0), at.2)
    }

    fn modulus(&self) -> Modulus {
        Modulus::of(self.h.slice_bits)
    }

    /// Points `s` at the byte of its next probe and starts loading its line.
    #[inline(always)]
    fn aim<'a>(&'a self, md: Modulus, s: &mut Slot<'a>) {
        (s.byte, s.mask) = self.probe(md, s.h, s.run.age);
        prefetch(s.byte);
    }

    /// The searches of `slots` (at most [`BLOCK`]) for `k` consecutive
    /// ages among `lo..live`, interleaved: each pass probes once for every
    /// search still going and prefetches its next probe, so a probe's cache
    /// miss is served while the other items are probed, instead of
    /// stalling its own search (docs/apbf.md §7.4).
    fn search_block<'a>(&'a self, md: Modulus, slots: &mut [Slot<'a>], lo: u64, live: u64) {
        let k = self.h.k;
        // Bit i set: the search of `slots[i]` goes on.
        let mut going = 0u32;
        for (i, s) in slots.iter_mut().take(BLOCK).enumerate() {
            s.run = Run::new(k, lo, live);
            self.aim(md, s);
            going |= u32::from(s.run.searching()) << i;
        }
        while going != 0 {
            let mut left = going;
            going = 0;
            while left != 0 {
                let i = left.trailing_zeros();
                left &= left - 1;
                let Some(s) = slots.get_mut(i as usize) else {
                    continue;
                };
                s.run.step(*s.byte & s.mask != 0, k, live);
                self.aim(md, s);
                going |= u32::from(s.run.searching()) << i;
            }
        }
    }

    /// Whether the item is present, as of `now_ms` (Unix ms) in time mode:
    /// shifts due since the last one are applied virtually (the slices they
    /// would clear are ignored), nothing changes.
    pub fn contains(&self, item: &[u8], now_ms: u64) -> bool {
        let live = self.live(now_ms);
        let (md, h) = (self.modulus(), Hashes::of(item));
        run_of(self.h.k, 0, live, |age| self.test(md, h, age))
    }

    /// [`Apbf::contains`] of each of `items`, in order, by blocks whose
    /// searches interleave ([`Apbf::search_block`]).
    pub fn contains_batch<I: AsRef<[u8]>>(
        &self,
        items: &[I],
        now_ms: u64,
        mut each: impl FnMut(bool),
    ) {
        if let [item] = items {
            // Nothing to interleave with (run_of).
            return each(self.contains(item.as_ref(), now_ms));
        }
        let (md, live) = (self.modulus(), self.live(now_ms));
        let mut slots = [Slot::EMPTY; BLOCK];
        for chunk in items.chunks(BLOCK) {
            for (s, item) in slots.iter_mut().zip(chunk) {
                s.h = Hashes::of(item.as_ref());
            }
            let block = slots.get_mut(..chunk.len()).unwrap_or_default();
            self.search_block(md, block, 0, live);
            block.iter().for_each(|s| each(s.run.present()));
        }
    }

    /// Slices not cleared by the shifts due at `now_ms`.
    fn live(&self, now_ms: u64) -> u64 {
        self.slice_count().saturating_sub(self.due_shifts(now_ms))
    }

    /// Inserts the item; answers whether it was present before. In count
    /// mode a full generation shifts first, so the last `l·g` insertions
    /// are always remembered.
    pub fn add(&mut self, item: &[u8]) -> Result<bool, CountFull> {
        let mut out = Err(CountFull);
        self.add_hashed(self.modulus(), &[Hashes::of(item)], &mut |o| out = o);
        out
    }

    /// [`Apbf::add`] of each of `items`, in order, by blocks.
    pub fn add_batch<I: AsRef<[u8]>>(
        &mut self,
        items: &[I],
        mut each: impl FnMut(Result<bool, CountFull>),
    ) {
        if let [item] = items {
            return each(self.add(item.as_ref()));
        }
        let md = self.modulus();
        let mut hashes = [Hashes::default(); BLOCK];
        for chunk in items.chunks(BLOCK) {
            for (h, item) in hashes.iter_mut().zip(chunk) {
                *h = Hashes::of(item.as_ref());
            }
            let block = hashes.get(..chunk.len()).unwrap_or_default();
            self.add_hashed(md, block, &mut each);
        }
    }

    /// Inserts the items of `block` (at most [`BLOCK`]) in order, by runs
    /// that no shift interrupts (a shift moves every slice's age).
    fn add_hashed(
        &mut self,
        md: Modulus,
        mut block: &[Hashes],
        each: &mut impl FnMut(Result<bool, CountFull>),
    ) {
        while !block.is_empty() {
            let len = self.run_len(block.len());
            if len == 0 {
                // A full count stays full: the rest is refused.
                return block.iter().for_each(|_| each(Err(CountFull)));
            }
            let (run, rest) = block.split_at(len);
            self.add_run(md, run, each);
            block = rest;
        }
    }

    /// How many of `want` insertions go before the next shift (the one
    /// due first excepted: a run starts with it) or a full inserts count.
    fn run_len(&self, want: usize) -> usize {
        // The counters' relations (checked on load) hold only while the
        // inserts count is exact: refused before anything changes.
        let mut room = MAX_COUNT.saturating_sub(self.h.inserts);
        if !self.h.is_time() {
            let g = self.h.gen_size.max(1);
            let gen_room = if self.h.gen_items >= g {
                g
            } else {
                g - self.h.gen_items
            };
            room = room.min(gen_room);
        }
        usize::try_from(room).map_or(want, |r| r.min(want))
    }

    /// Inserts the items of `run` ([`Apbf::run_len`]: no shift but a due
    /// one first, no full count), in order. Insertions write only the `k`
    /// youngest slices, so whether the older ones hold a run of `k` is
    /// searched first for all ([`Apbf::search_block`]). The young slices go
    /// one at a time, every item in turn: an item reads and sets its bit
    /// after the items before it, as item by item, and the loads of the
    /// items are independent, so their misses overlap without a prefetch.
    fn add_run(
        &mut self,
        md: Modulus,
        run: &[Hashes],
        each: &mut impl FnMut(Result<bool, CountFull>),
    ) {
        if !self.h.is_time() && self.h.gen_items >= self.h.gen_size {
            self.shift(1);
        }
        let (k, n) = (self.h.k.min(MAX_K), self.slice_count());
        let older = self.search_older(md, run);
        // Bit `k - 1 - age` of `young[i]`: the young slice of that age held
        // item i.
        let mut young = [0u64; BLOCK];
        for age in 0..k {
            let pos = self.position(age);
            let Some(slice) = self.slices.get_mut(pos as usize) else {
                continue;
            };
            for (y, h) in young.iter_mut().zip(run) {
                let i = md.index(*h, pos);
                if let Some(b) = slice.get_mut((i / 8) as usize) {
                    let mask = 1 << (i % 8);
                    *y |= u64::from(*b & mask != 0) << (k - 1 - age);
                    *b |= mask;
                }
            }
        }
        for (i, (h, y)) in run.iter().zip(young).enumerate() {
            // A run ending in the young slices: their oldest `tail` hold
            // the item, and the `k - tail` slices just older must too. The
            // first of those is read whatever the tail (a read, not a
            // branch on the young bits).
            let tail = u64::from(y.trailing_ones());
            let need = k - tail;
            let next = k < n && self.test(md, *h, k);
            let straddles = (tail > 0) & next & (k + need <= n);
            let present = (older >> i) & 1 != 0
                || tail == k
                || (straddles && (k + 1..k + need).all(|age| self.test(md, *h, age)));
            each(Ok(present));
        }
        // Below MAX_COUNT (gen_items ≤ inserts; run_len).
        let len = run.len() as u64;
        self.h.gen_items = self.h.gen_items.saturating_add(len);
        self.h.inserts = self.h.inserts.saturating_add(len);
    }

    /// Bit i set: the slices older than the `k` youngest hold `k`
    /// consecutive bits of item i (at most [`BLOCK`] items). A lone item
    /// searches with branches ([`run_of`]), a block interleaved.
    fn search_older(&self, md: Modulus, run: &[Hashes]) -> u32 {
        let (k, n) = (self.h.k, self.slice_count());
        if let [h] = run {
            return u32::from(run_of(k, k, n, |age| self.test(md, *h, age)));
        }
        let mut slots = [Slot::EMPTY; BLOCK];
        for (s, h) in slots.iter_mut().zip(run) {
            s.h = *h;
        }
        let block = slots.get_mut(..run.len()).unwrap_or_default();
        self.search_block(md, block, k, n);
        block
            .iter()
            .enumerate()
            .fold(0, |bits, (i, s)| bits | u32::from(s.run.present()) << i)
    }

    /// Time mode: shifts due at `now_ms` since the last shift (0 before
    /// the clock started, or in count mode).
    pub fn due_shifts(&self, now_ms: u64) -> u64 {
        if !self.h.is_time() {
            return 0;
        }
        self.h.clock().due(now_ms)
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

impl Aging for Apbf {
    /// Time mode: whether `advance(now_ms)` would change the filter (the
    /// clock is not started, or shifts are due).
    fn needs_advance(&self, now_ms: u64) -> bool {
        self.h.is_time() && self.h.clock().needs_advance(now_ms)
    }

    /// Time mode: starts the clock at `now_ms`, or applies the shifts due
    /// then. Deterministic in the filter and `now_ms`: replicas and AOF
    /// replays run it with the master's time. Answers the shifts applied.
    fn advance(&mut self, now_ms: u64) -> u64 {
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
}

impl std::fmt::Debug for Apbf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Apbf")
            .field("header", &self.h)
            .finish_non_exhaustive()
    }
}
