//! Windowed Top-K (type `TopKw-rsb`, docs/topk-window.md): the heavy
//! hitters of the last `span` milliseconds.
//!
//! A ring of `B` HeavyKeeper sketches (`crate::window::Ring`), each of the
//! key's k, width, depth and decay; adds go to the youngest. The window's
//! candidates are the items of the live buckets' heaps, an item's window
//! count the sum of the live buckets' counts of it (TOPK.COUNT's estimate,
//! per bucket), and its list the k candidates of largest window count.
//!
//! The closed (non-youngest) buckets change only when the ring shifts, so
//! their part of every candidate's count is kept in a derived aggregate,
//! rebuilt at each shift from the buckets alone (never saved; a load
//! rebuilds the same): a read touches it and the youngest bucket, and
//! combines the live buckets itself only when the reader's clock has
//! expired buckets no write has shifted out yet.

use std::cmp::Ordering;

use super::{hash_item, ItemHash, TopK};
use crate::alloc::{AllocError, Block};
use crate::rdb::{LoadError, RdbSink, RdbSource};
use crate::window::{Ring, WindowSpec, Windowed};

/// The encoding written and read.
pub const WINDOW_ENCODING_VERSION: i32 = 0;
/// Most bytes of buckets and heap records of a windowed Top-K (all its
/// sketches): its DUMP payload, which the AOF rewrite sends as one RESTORE
/// argument, then stays well below the 512 MB bulk limit.
pub const MAX_WINDOW_BYTES: u64 = 256 << 20;

/// The data type (`TYPE` reply, RDB module id). rsbloom's own: RedisBloom
/// cannot load it, and does not know `TOPK.TICK` (the probe).
pub const WINDOW_TYPE: crate::ModuleType = crate::ModuleType {
    name: c"TopKw-rsb",
    encoding_version: WINDOW_ENCODING_VERSION,
    commands: "TOPK.",
    family: "topkw",
    probe: "TOPK.TICK",
    chunked: None,
    // Each bucket's heap records, as the plain type's (docs/topk.md §5.2):
    // written 0 here, but a value restored from elsewhere may carry any.
    volatile: None,
    added: None,
    flavour: None,
    config: &[],
    // The tick starts the clock at a fixed time, so that the tour makes
    // the same value on every server whenever it runs (buckets of 5 years,
    // as the windowed CMS's tour).
    tour: &[
        &[
            "TOPK.RESERVE",
            "K",
            "3",
            "WINDOW",
            "315360000000",
            "BUCKETS",
            "2",
        ],
        &["TOPK.TICK", "K", "1700000000000"],
        &["TOPK.ADD", "K", "a", "b", "a"],
        &["TOPK.INCRBY", "K", "c", "2"],
        &["TOPK.QUERY", "K", "a", "z"],
        &["TOPK.COUNT", "K", "a", "z"],
        &["TOPK.LIST", "K", "WITHCOUNT"],
        &["TOPK.INFO", "K"],
    ],
};

/// Why a windowed Top-K was not created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowError {
    /// More than [`MAX_WINDOW_BYTES`] of buckets and heap records.
    TooLarge,
    /// Window or bucket count out of range (the parser checks them).
    Window,
    /// An allocation failed.
    OutOfMemory,
}

/// One item of the closed buckets' heaps: where its bytes are (a closed
/// bucket does not change until the next shift), its hashes, and the sum
/// of the closed buckets' counts of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Closed {
    slot: u32,
    pos: u32,
    hash: ItemHash,
    sum: u64,
}

/// A window's candidate: the item (its full bytes) and its window count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scored<'a> {
    pub item: &'a [u8],
    pub count: u64,
}

impl Scored<'_> {
    /// TOPK.LIST's order: count descending, then the bytes.
    fn rank(&self, other: &Self) -> Ordering {
        other
            .count
            .cmp(&self.count)
            .then_with(|| self.item.cmp(other.item))
    }
}

pub struct WindowedTopK {
    ring: Ring<TopK>,
    /// The closed buckets' candidates by (fingerprint, bytes), each once;
    /// `None` when building it ran out of memory (reads then combine the
    /// buckets themselves, to the same answers).
    closed: Option<Vec<Closed>>,
}

impl WindowedTopK {
    /// An empty window; its clock starts with the first write.
    pub fn new(
        k: u32,
        width: u32,
        depth: u32,
        decay: f64,
        w: WindowSpec,
    ) -> Result<Self, WindowError> {
        Self::new_size(k, width, depth, w)?;
        let ring = Ring::new(
            w,
            || TopK::new(k, width, depth, decay).map_err(|_| WindowError::OutOfMemory),
            WindowError::OutOfMemory,
        )?;
        Ok(WindowedTopK {
            ring,
            closed: Some(Vec::new()),
        })
    }

    /// MEMORY USAGE of the window [`WindowedTopK::new`] would create, or
    /// why it would refuse it; nothing is allocated.
    pub fn new_size(k: u32, width: u32, depth: u32, w: WindowSpec) -> Result<u64, WindowError> {
        if !w.is_valid() {
            return Err(WindowError::Window);
        }
        // The sketches' buckets and heap records.
        super::bucket_bytes(width, depth)
            .and_then(|b| b.checked_add(24 * u64::from(k)))
            .and_then(|b| b.checked_mul(w.buckets))
            .filter(|&b| b <= MAX_WINDOW_BYTES)
            .ok_or(WindowError::TooLarge)?;
        let one = TopK::new_size(k, width, depth).ok_or(WindowError::TooLarge)?;
        Ok(RING_RECORD_BYTES + one * w.buckets)
    }

    fn youngest(&self) -> &TopK {
        self.ring.youngest()
    }

    pub fn k(&self) -> u32 {
        self.youngest().k
    }

    pub fn width(&self) -> u32 {
        self.youngest().width
    }

    pub fn depth(&self) -> u32 {
        self.youngest().depth
    }

    pub fn decay(&self) -> f64 {
        self.youngest().decay
    }

    pub fn span_ms(&self) -> u64 {
        self.ring.span_ms()
    }

    pub fn buckets(&self) -> u64 {
        self.ring.buckets()
    }

    pub fn period_ms(&self) -> u64 {
        self.ring.period_ms()
    }

    pub fn last_shift_ms(&self) -> u64 {
        self.ring.last_shift_ms()
    }

    /// Starts the clock at `now_ms`, or applies the shifts due then (each
    /// clears the oldest bucket, which becomes the youngest) and rebuilds
    /// the aggregate. Deterministic in the value and `now_ms`. Answers the
    /// shifts due.
    pub fn advance(&mut self, now_ms: u64) -> u64 {
        let shifts = self.ring.advance(now_ms, TopK::clear);
        if shifts > 0 {
            self.closed = build_closed(&self.ring).ok();
        }
        shifts
    }

    /// The bucket TOPK.ADD and TOPK.INCRBY write to (after
    /// [`Self::advance`]); the aggregate does not depend on it.
    pub fn youngest_mut(&mut self) -> &mut TopK {
        self.ring.youngest_mut()
    }

    /// The aggregate, if it holds the window at `now_ms`: no shift is due.
    fn closed_at(&self, now_ms: u64) -> Option<&[Closed]> {
        match self.ring.due(now_ms) {
            0 => self.closed.as_deref(),
            _ => None,
        }
    }

    fn closed_item(&self, c: &Closed) -> &[u8] {
        heap_item(&self.ring, c.slot, c.pos)
    }

    /// The aggregate's entry of an item, if it has one.
    fn find_closed<'a>(&self, closed: &'a [Closed], item: &[u8], fp: u32) -> Option<&'a Closed> {
        let from = closed.partition_point(|c| c.hash.fp < fp);
        closed
            .get(from..)?
            .iter()
            .take_while(|c| c.hash.fp == fp)
            .find(|c| self.closed_item(c) == item)
    }

    /// TOPK.COUNT on a window at `now_ms`: the sum of the live buckets'
    /// counts of the item.
    pub fn count(&self, item: &[u8], now_ms: u64) -> u64 {
        let hash = hash_item(item);
        if let Some(closed) = self.closed_at(now_ms) {
            let young = u64::from(self.youngest().count_hashed(item, &hash));
            if let Some(c) = self.find_closed(closed, item, hash.fp) {
                return c.sum + young;
            }
        }
        self.ring
            .live(now_ms)
            .map(|b| u64::from(b.count_hashed(item, &hash)))
            .sum()
    }

    /// Every candidate of the window at `now_ms` (each item once, in no
    /// particular order) with its window count.
    pub fn candidates(&self, now_ms: u64) -> Result<Vec<Scored<'_>>, AllocError> {
        let Some(closed) = self.closed_at(now_ms) else {
            let live = self.buckets().saturating_sub(self.ring.due(now_ms));
            let sums = sum_heaps(&self.ring, ages(&self.ring, 0..live))?;
            let mut out = Vec::new();
            out.try_reserve_exact(sums.len()).map_err(|_| AllocError)?;
            out.extend(sums.iter().map(|c| Scored {
                item: self.closed_item(c),
                count: c.sum,
            }));
            return Ok(out);
        };
        let young = self.youngest();
        // The youngest heap's items, sorted: whether it holds an item is a
        // search here, not a scan of the heap per candidate.
        // A record holds its item only under the item's own fingerprint
        // (a restored value may say otherwise): those first among repeats.
        let mut held: Vec<(u32, &[u8], bool, ItemHash)> = Vec::new();
        held.try_reserve_exact(young.heap.entries().len())
            .map_err(|_| AllocError)?;
        held.extend(young.heap.entries().iter().filter_map(|e| {
            let i = e.item()?;
            let h = hash_item(i);
            Some((h.fp, i, e.fp != h.fp, h))
        }));
        held.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        held.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        let in_young = |fp: u32, item: &[u8]| {
            held.binary_search_by(|h| (h.0, h.1).cmp(&(fp, item)))
                .ok()
                .and_then(|i| held.get(i))
                .is_some_and(|h| !h.2)
        };
        let mut out = Vec::new();
        out.try_reserve_exact(closed.len() + held.len())
            .map_err(|_| AllocError)?;
        for c in closed {
            let item = self.closed_item(c);
            let y = young.count_in(item, &c.hash, in_young(c.hash.fp, item));
            out.push(Scored {
                item,
                count: c.sum + u64::from(y),
            });
        }
        // Items of the youngest heap alone: in no closed heap.
        for &(fp, item, foreign, ref hash) in &held {
            if self.find_closed(closed, item, fp).is_none() {
                let closed_sum: u64 = ages(&self.ring, 1..self.buckets())
                    .filter_map(|s| self.ring.slots().get(s))
                    .map(|b| u64::from(b.count_in(item, hash, false)))
                    .sum();
                out.push(Scored {
                    item,
                    count: closed_sum + u64::from(young.count_in(item, hash, !foreign)),
                });
            }
        }
        Ok(out)
    }

    /// TOPK.LIST on a window at `now_ms`: the k candidates of largest
    /// window count (above 0), by count descending, then bytes.
    pub fn list(&self, now_ms: u64) -> Result<Vec<Scored<'_>>, AllocError> {
        let mut all = self.candidates(now_ms)?;
        all.retain(|s| s.count > 0);
        let k = self.k() as usize;
        if all.len() > k {
            all.select_nth_unstable_by(k, Scored::rank);
            all.truncate(k);
        }
        all.sort_unstable_by(Scored::rank);
        Ok(all)
    }

    /// MEMORY USAGE: the ring record, its sketches (all of one shape, so
    /// O(1): INFO's accounting asks after every write) and the aggregate.
    pub fn memory_usage(&self) -> u64 {
        let closed = self.closed.as_ref().map_or(0, |c| c.len() as u64) * CLOSED_BYTES;
        (self.youngest().memory_usage())
            .saturating_mul(self.buckets())
            .saturating_add(RING_RECORD_BYTES + closed)
    }

    /// A deep copy (COPY); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        let ring = self.ring.try_clone_with(TopK::try_clone)?;
        let closed = match &self.closed {
            Some(c) => {
                let mut v = Vec::new();
                v.try_reserve_exact(c.len()).map_err(|_| AllocError)?;
                v.extend(c.iter().cloned());
                Some(v)
            }
            None => None,
        };
        Ok(WindowedTopK { ring, closed })
    }

    /// The buckets' plain blocks (bucket arrays, items) for active
    /// defragmentation and lazy free.
    pub fn blocks_mut(&mut self) -> impl Iterator<Item = &mut dyn Block> {
        self.ring.slots_mut().iter_mut().flat_map(TopK::blocks_mut)
    }

    /// The heap arrays, which hold the items' pointers.
    pub fn heap_blocks_mut(&mut self) -> impl Iterator<Item = &mut dyn Block> {
        self.ring.slots_mut().iter_mut().map(TopK::heap_block_mut)
    }

    /// The RDB value (docs/topk-window.md §6): the ring's header, then
    /// every bucket by physical position as a plain Top-K value.
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        self.ring.save_header(sink);
        for b in self.ring.slots() {
            b.rdb_save(sink);
        }
    }

    /// Reads a value, refusing any the commands could not have made: a
    /// header out of range, a bucket the plain loader refuses, buckets of
    /// different parameters, more than [`MAX_WINDOW_BYTES`].
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Self, LoadError> {
        if encver != WINDOW_ENCODING_VERSION {
            return Err(LoadError::UnsupportedVersion);
        }
        let header = Ring::<TopK>::load_header(src)?;
        let n = header.spec.buckets;
        let mut slots: Vec<TopK> = Vec::new();
        slots
            .try_reserve_exact(usize::try_from(n).map_err(|_| LoadError::Invalid)?)
            .map_err(|_| LoadError::Invalid)?;
        for _ in 0..n {
            let b = TopK::rdb_load(src, super::ENCODING_VERSION)?;
            if let Some(first) = slots.first() {
                let same = (b.k, b.width, b.depth, b.decay.to_bits())
                    == (first.k, first.width, first.depth, first.decay.to_bits());
                if !same {
                    return Err(LoadError::Invalid);
                }
            } else {
                Self::new_size(b.k, b.width, b.depth, header.spec)
                    .map_err(|_| LoadError::Invalid)?;
            }
            slots.push(b);
        }
        let ring = Ring::from_parts(header, slots)?;
        let closed = build_closed(&ring).ok();
        Ok(WindowedTopK { ring, closed })
    }
}

/// The record of a windowed Top-K beside its sketches' (MEMORY USAGE).
const RING_RECORD_BYTES: u64 = std::mem::size_of::<WindowedTopK>() as u64;
/// One aggregate entry.
const CLOSED_BYTES: u64 = std::mem::size_of::<Closed>() as u64;

/// The items of a heap (full bytes), records without item left out.
fn heap_items(b: &TopK) -> impl Iterator<Item = &[u8]> {
    b.heap.entries().iter().filter_map(|e| e.item())
}

/// The item of heap record `pos` of the bucket at physical `slot`.
fn heap_item(ring: &Ring<TopK>, slot: u32, pos: u32) -> &[u8] {
    ring.slots()
        .get(slot as usize)
        .and_then(|b| b.heap.entries().get(pos as usize))
        .and_then(|e| e.item())
        .unwrap_or_default()
}

/// Physical positions of the buckets of ages `ages` (0 the youngest).
fn ages(ring: &Ring<TopK>, ages: std::ops::Range<u64>) -> impl Iterator<Item = usize> + Clone {
    let (head, n) = (ring.head(), ring.buckets().max(1));
    ages.map(move |a| ((head + a) % n) as usize)
}

/// The aggregate of the closed (non-youngest) buckets: a function of the
/// buckets alone.
fn build_closed(ring: &Ring<TopK>) -> Result<Vec<Closed>, AllocError> {
    sum_heaps(ring, ages(ring, 1..ring.buckets()))
}

/// Each item of the heaps of the buckets at physical positions `slots`
/// once, by (fingerprint, bytes), with the sum of those buckets' counts of
/// it. Grouping the heaps' records by item tells which heaps hold it, so
/// each count is `depth` bucket reads, not a search of a heap.
fn sum_heaps(
    ring: &Ring<TopK>,
    slots: impl Iterator<Item = usize> + Clone,
) -> Result<Vec<Closed>, AllocError> {
    let bucket = |s: usize| ring.slots().get(s);
    let n: usize = (slots.clone())
        .filter_map(bucket)
        .map(|b| heap_items(b).count())
        .sum();
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| AllocError)?;
    for s in slots.clone() {
        let Some(b) = bucket(s) else { continue };
        for (p, e) in b.heap.entries().iter().enumerate() {
            if let Some(item) = e.item() {
                out.push(Closed {
                    slot: s as u32,
                    pos: p as u32,
                    hash: hash_item(item),
                    sum: 0,
                });
            }
        }
    }
    let item = |c: &Closed| heap_item(ring, c.slot, c.pos);
    out.sort_by(|a, b| (a.hash.fp, item(a), a.slot).cmp(&(b.hash.fp, item(b), b.slot)));
    let same = |a: &Closed, b: &Closed| a.hash.fp == b.hash.fp && item(a) == item(b);
    // A record holds its item only under the item's own fingerprint (as
    // the heap's search finds it; a restored value may say otherwise).
    let own_fp = |c: &Closed| {
        bucket(c.slot as usize)
            .and_then(|b| b.heap.entries().get(c.pos as usize))
            .is_some_and(|e| e.fp == c.hash.fp)
    };
    for group in out.chunk_by_mut(|a, b| same(a, b)) {
        let Some(first) = group.first() else { continue };
        let (bytes, hash) = (item(first), first.hash);
        let sum = (slots.clone())
            .map(|s| {
                let from = group.partition_point(|c| c.slot < s as u32);
                let held = (group.get(from..).unwrap_or_default().iter())
                    .take_while(|c| c.slot == s as u32)
                    .any(own_fp);
                bucket(s).map_or(0, |b| u64::from(b.count_in(bytes, &hash, held)))
            })
            .sum();
        if let Some(first) = group.first_mut() {
            first.sum = sum;
        }
    }
    out.dedup_by(|a, b| same(a, b));
    Ok(out)
}

impl Windowed for WindowedTopK {
    type Bucket = TopK;

    fn ring(&self) -> &Ring<TopK> {
        &self.ring
    }

    fn advance(&mut self, now_ms: u64) -> u64 {
        WindowedTopK::advance(self, now_ms)
    }
}

impl PartialEq for WindowedTopK {
    fn eq(&self, other: &Self) -> bool {
        self.ring == other.ring
    }
}

impl std::fmt::Debug for WindowedTopK {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowedTopK")
            .field("k", &self.k())
            .field("buckets", &self.buckets())
            .field("span_ms", &self.span_ms())
            .field("last_shift_ms", &self.last_shift_ms())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
