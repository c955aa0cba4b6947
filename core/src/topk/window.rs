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
//! their part of every candidate's count is kept in a derived aggregate (a
//! function of the buckets alone, never saved; a load builds the same). A
//! shift updates it from the bucket that closes and those that expire; a
//! read touches it, the youngest bucket and the closed buckets its clock
//! has expired but no write has shifted out yet, and visits candidates by
//! their closed sum, heaviest first, until the rest cannot reach the list.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::{hash_item, split, ItemHash, TopK, BUCKET};
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

/// One item of the closed buckets' heaps: where its bytes are (its first
/// record in the youngest closed heap holding it: a closed bucket does not
/// change until the next shift), its hashes, and the sum of the closed
/// buckets' counts of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Closed {
    slot: u32,
    pos: u32,
    hash: ItemHash,
    sum: u64,
}

/// The closed buckets' aggregate: derived from them, never saved.
#[derive(Debug, Default, PartialEq, Eq)]
struct Aggregate {
    /// Each item of the closed heaps once, by (fingerprint, bytes).
    items: Vec<Closed>,
    /// Positions in `items` by sum descending, then position: a read
    /// visits the heaviest first and stops where the rest cannot reach
    /// the list.
    ranked: Vec<u32>,
}

impl Aggregate {
    fn new(items: Vec<Closed>) -> Result<Self, AllocError> {
        let mut keyed: Vec<(Reverse<u64>, u32)> = Vec::new();
        keyed
            .try_reserve_exact(items.len())
            .map_err(|_| AllocError)?;
        keyed.extend((items.iter().enumerate()).map(|(i, c)| (Reverse(c.sum), i as u32)));
        keyed.sort_unstable();
        let mut ranked = Vec::new();
        ranked
            .try_reserve_exact(keyed.len())
            .map_err(|_| AllocError)?;
        ranked.extend(keyed.iter().map(|&(_, i)| i));
        Ok(Aggregate { items, ranked })
    }

    fn try_clone(&self) -> Result<Self, AllocError> {
        let mut items = Vec::new();
        items
            .try_reserve_exact(self.items.len())
            .map_err(|_| AllocError)?;
        items.extend(self.items.iter().cloned());
        let mut ranked = Vec::new();
        ranked
            .try_reserve_exact(self.ranked.len())
            .map_err(|_| AllocError)?;
        ranked.extend_from_slice(&self.ranked);
        Ok(Aggregate { items, ranked })
    }
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
    /// `None` when building it ran out of memory (reads then combine the
    /// buckets themselves, to the same answers).
    closed: Option<Aggregate>,
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
            closed: Some(Aggregate::default()),
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
    /// clears the oldest bucket, which becomes the youngest) and updates
    /// the aggregate: the window's candidates and counts at `now_ms`,
    /// taken before the buckets clear (or rebuilt after, when most of
    /// them expire). Deterministic in the value and `now_ms`. Answers the
    /// shifts due.
    pub fn advance(&mut self, now_ms: u64) -> u64 {
        let next = match self.ring.due(now_ms) {
            0 => None,
            _ => self.view(now_ms).map(|v| v.and_then(View::shifted)),
        };
        let shifts = self.ring.advance(now_ms, TopK::clear);
        if shifts > 0 {
            self.closed = match next {
                Some(next) => next.ok(),
                None => build_closed(&self.ring).ok(),
            };
        }
        shifts
    }

    /// The bucket TOPK.ADD and TOPK.INCRBY write to (after
    /// [`Self::advance`]); the aggregate does not depend on it.
    pub fn youngest_mut(&mut self) -> &mut TopK {
        self.ring.youngest_mut()
    }

    /// The aggregate and the live closed buckets' ages (`1..live`) at
    /// `now_ms`, when reading through it pays: the shifts due then expire
    /// fewer buckets than stay (their part is subtracted from it).
    fn aggregate(&self, now_ms: u64) -> Option<(&Aggregate, u64)> {
        let (b, due) = (self.buckets(), self.ring.due(now_ms));
        let agg = self.closed.as_ref()?;
        (due.saturating_mul(2) < b).then_some((agg, b - due))
    }

    /// The window at `now_ms` through the aggregate (see [`Self::aggregate`]).
    fn view(&self, now_ms: u64) -> Option<Result<View<'_>, AllocError>> {
        let (agg, live) = self.aggregate(now_ms)?;
        Some(View::new(self, agg, live))
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

    /// The buckets of ages `ages` (0 the youngest).
    fn at_ages(&self, ages: std::ops::Range<u64>) -> impl Iterator<Item = &TopK> {
        ages.filter_map(|a| self.ring.at_age(a))
    }

    /// TOPK.COUNT on a window at `now_ms`: the sum of the live buckets'
    /// counts of the item.
    pub fn count(&self, item: &[u8], now_ms: u64) -> u64 {
        let hash = hash_item(item);
        let Some((agg, live)) = self.aggregate(now_ms) else {
            return (self.ring.live(now_ms))
                .map(|b| u64::from(b.count_hashed(item, &hash)))
                .sum();
        };
        let closed = match self.find_closed(&agg.items, item, hash.fp) {
            Some(c) => c.sum.saturating_sub(
                (self.at_ages(live..self.buckets()))
                    .map(|b| u64::from(b.count_hashed(item, &hash)))
                    .sum(),
            ),
            // No closed heap holds it.
            None => (self.at_ages(1..live))
                .map(|b| u64::from(b.count_in(item, &hash, false)))
                .sum(),
        };
        closed + u64::from(self.youngest().count_hashed(item, &hash))
    }

    /// TOPK.LIST on a window at `now_ms`: the k candidates of largest
    /// window count (above 0), by count descending, then bytes.
    pub fn list(&self, now_ms: u64) -> Result<Vec<Scored<'_>>, AllocError> {
        let Some(view) = self.view(now_ms) else {
            let live = self.buckets().saturating_sub(self.ring.due(now_ms));
            let sums = sum_heaps(&self.ring, ages(&self.ring, 0..live))?;
            let mut top = Top::new(self.k(), sums.len())?;
            for c in &sums {
                top.offer(Scored {
                    item: self.closed_item(c),
                    count: c.sum,
                });
            }
            return Ok(top.into_sorted());
        };
        let view = view?;
        let mut top = Top::new(self.k(), view.held.len() + view.agg.items.len())?;
        for h in &view.held {
            top.offer(Scored {
                item: h.item,
                count: view.held_count(h),
            });
        }
        // The closed candidates the youngest heap does not hold: their
        // youngest part is at most its largest bucket.
        let mut young_max = None;
        for &i in &view.agg.ranked {
            let Some(c) = view.agg.items.get(i as usize) else {
                continue;
            };
            if let Some(least) = top.least() {
                let most = *young_max.get_or_insert_with(|| max_count(self.youngest()));
                if c.sum + u64::from(most) < least {
                    break;
                }
            }
            let item = self.closed_item(c);
            if view.is_live(c) && !view.holds(c.hash.fp, item) {
                top.offer(Scored {
                    item,
                    count: view.closed_count(c),
                });
            }
        }
        Ok(top.into_sorted())
    }

    /// MEMORY USAGE: the ring record, its sketches (all of one shape, so
    /// O(1): INFO's accounting asks after every write) and the aggregate.
    pub fn memory_usage(&self) -> u64 {
        let closed = self.closed.as_ref().map_or(0, |c| c.items.len() as u64) * CLOSED_BYTES;
        (self.youngest().memory_usage())
            .saturating_mul(self.buckets())
            .saturating_add(RING_RECORD_BYTES + closed)
    }

    /// A deep copy (COPY); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        let ring = self.ring.try_clone_with(TopK::try_clone)?;
        let closed = match &self.closed {
            Some(c) => Some(c.try_clone()?),
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
/// One aggregate entry and its rank.
const CLOSED_BYTES: u64 = (std::mem::size_of::<Closed>() + std::mem::size_of::<u32>()) as u64;

/// An item of a heap, once: its first record, and whether a record holds
/// it under its own fingerprint (as the heap's search finds it; a
/// restored value may say otherwise).
struct Held<'a> {
    item: &'a [u8],
    hash: ItemHash,
    pos: u32,
    own: bool,
}

/// The items of `b`'s heap by (fingerprint, bytes), each once.
fn held_items(b: &TopK) -> Result<Vec<Held<'_>>, AllocError> {
    let mut out = Vec::new();
    out.try_reserve_exact(b.heap.entries().len())
        .map_err(|_| AllocError)?;
    for (pos, e) in b.heap.entries().iter().enumerate() {
        if let Some(item) = e.item() {
            let hash = hash_item(item);
            let own = e.fp == hash.fp;
            let pos = pos as u32;
            out.push(Held {
                item,
                hash,
                pos,
                own,
            });
        }
    }
    out.sort_unstable_by(|a, b| (a.hash.fp, a.item, a.pos).cmp(&(b.hash.fp, b.item, b.pos)));
    out.dedup_by(|later, first| {
        let same = (later.hash.fp, later.item) == (first.hash.fp, first.item);
        first.own |= same && later.own;
        same
    });
    Ok(out)
}

/// The records of `b`'s heap as (fingerprint, bytes), sorted: whether
/// it holds an item under the item's own fingerprint is a search.
fn own_records(b: &TopK) -> Result<Vec<(u32, &[u8])>, AllocError> {
    let mut out = Vec::new();
    out.try_reserve_exact(b.heap.entries().len())
        .map_err(|_| AllocError)?;
    out.extend((b.heap.entries().iter()).filter_map(|e| Some((e.fp, e.item()?))));
    out.sort_unstable();
    Ok(out)
}

/// The window at a read's time through the aggregate: the closed
/// An expired closed bucket and its heap's records (fingerprint, item).
type Gone<'a> = (&'a TopK, Vec<(u32, &'a [u8])>);

/// buckets of ages `live..B` have expired (virtually, or by the shift
/// being applied), and their part of each sum is subtracted.
struct View<'a> {
    w: &'a WindowedTopK,
    agg: &'a Aggregate,
    young: &'a TopK,
    /// The youngest heap's items.
    held: Vec<Held<'a>>,
    /// The expired closed buckets and their heaps' records.
    gone: Vec<Gone<'a>>,
    /// The live closed buckets are those of ages `1..live`.
    live: u64,
}

impl<'a> View<'a> {
    fn new(w: &'a WindowedTopK, agg: &'a Aggregate, live: u64) -> Result<Self, AllocError> {
        let young = w.youngest();
        let mut gone = Vec::new();
        for b in w.at_ages(live..w.buckets()) {
            gone.try_reserve(1).map_err(|_| AllocError)?;
            gone.push((b, own_records(b)?));
        }
        Ok(View {
            w,
            agg,
            young,
            held: held_items(young)?,
            gone,
            live,
        })
    }

    /// Whether an aggregate entry is still a candidate through the closed
    /// buckets: it points at the youngest closed heap holding it.
    fn is_live(&self, c: &Closed) -> bool {
        let n = self.w.buckets().max(1);
        (u64::from(c.slot) + n - self.w.ring.head() % n) % n < self.live
    }

    /// Whether the youngest heap holds an item (under any fingerprint).
    fn holds(&self, fp: u32, item: &[u8]) -> bool {
        (self.held)
            .binary_search_by(|h| (h.hash.fp, h.item).cmp(&(fp, item)))
            .is_ok()
    }

    /// An entry's sum over the live closed buckets.
    fn closed_part(&self, c: &Closed) -> u64 {
        if self.gone.is_empty() {
            return c.sum;
        }
        let item = self.w.closed_item(c);
        let gone: u64 = (self.gone.iter())
            .map(|(b, records)| {
                let own = records.binary_search(&(c.hash.fp, item)).is_ok();
                u64::from(b.count_in(item, &c.hash, own))
            })
            .sum();
        c.sum.saturating_sub(gone)
    }

    /// The window count of an entry the youngest heap does not hold.
    fn closed_count(&self, c: &Closed) -> u64 {
        let item = self.w.closed_item(c);
        self.closed_part(c) + u64::from(self.young.count_in(item, &c.hash, false))
    }

    /// The window count of an item of the youngest heap.
    fn held_count(&self, h: &Held) -> u64 {
        let closed = match self.w.find_closed(&self.agg.items, h.item, h.hash.fp) {
            Some(c) => self.closed_part(c),
            // No closed heap holds it.
            None => (self.w.at_ages(1..self.live))
                .map(|b| u64::from(b.count_in(h.item, &h.hash, false)))
                .sum(),
        };
        closed + u64::from(self.young.count_in(h.item, &h.hash, h.own))
    }

    /// The aggregate once the youngest bucket closes and the expired ones
    /// clear: every candidate of this view with its window count, the
    /// youngest heap's items pointing into it, by (fingerprint, bytes).
    fn shifted(self) -> Result<Aggregate, AllocError> {
        let slot = self.w.ring.head() as u32;
        let mut items = Vec::new();
        items
            .try_reserve_exact(self.agg.items.len() + self.held.len())
            .map_err(|_| AllocError)?;
        let (mut old, mut young) = (
            self.agg.items.iter().peekable(),
            self.held.iter().peekable(),
        );
        loop {
            let order = match (old.peek(), young.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(c), Some(h)) => (c.hash.fp, self.w.closed_item(c)).cmp(&(h.hash.fp, h.item)),
            };
            if order != Ordering::Greater {
                let c = old.next();
                if let Some(c) = c.filter(|c| order == Ordering::Less && self.is_live(c)) {
                    let sum = self.closed_count(c);
                    items.push(Closed { sum, ..c.clone() });
                }
            }
            if order != Ordering::Less {
                if let Some(h) = young.next() {
                    items.push(Closed {
                        slot,
                        pos: h.pos,
                        hash: h.hash,
                        sum: self.held_count(h),
                    });
                }
            }
        }
        Aggregate::new(items)
    }
}

/// The `k` best candidates offered (count above 0), by TOPK.LIST's order.
struct Top<'a> {
    k: usize,
    /// The worst of them on top.
    heap: BinaryHeap<Ranked<'a>>,
}

/// A candidate ordered by [`Scored::rank`] (the better the lesser).
struct Ranked<'a>(Scored<'a>);

impl PartialEq for Ranked<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked<'_> {}

impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.rank(&other.0)
    }
}

impl<'a> Top<'a> {
    /// Room for the `k` best of at most `offers` candidates.
    fn new(k: u32, offers: usize) -> Result<Self, AllocError> {
        let k = k as usize;
        let mut v = Vec::new();
        v.try_reserve_exact(k.min(offers)).map_err(|_| AllocError)?;
        Ok(Top {
            k,
            heap: BinaryHeap::from(v),
        })
    }

    fn offer(&mut self, s: Scored<'a>) {
        if s.count == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Ranked(s));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if s.rank(&worst.0) == Ordering::Less {
                *worst = Ranked(s);
            }
        }
    }

    /// The least count of the `k`, once there are `k`: a candidate must
    /// reach it to enter.
    fn least(&self) -> Option<u64> {
        (self.heap.len() >= self.k)
            .then(|| self.heap.peek().map(|w| w.0.count))
            .flatten()
    }

    fn into_sorted(self) -> Vec<Scored<'a>> {
        (self.heap.into_sorted_vec().into_iter())
            .map(|r| r.0)
            .collect()
    }
}

/// The largest count of a sketch's buckets: no item's count exceeds it.
fn max_count(b: &TopK) -> u32 {
    (b.buckets.as_chunks::<BUCKET>().0.iter())
        .map(|w| split(u64::from_le_bytes(*w)).1)
        .max()
        .unwrap_or(0)
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

/// The aggregate of the closed (non-youngest) buckets, from them alone.
fn build_closed(ring: &Ring<TopK>) -> Result<Aggregate, AllocError> {
    Aggregate::new(sum_heaps(ring, ages(ring, 1..ring.buckets()))?)
}

/// Each item of the heaps of the buckets at physical positions `slots`
/// (youngest first) once, by (fingerprint, bytes), at its first record
/// in the first of them holding it, with the sum of those buckets' counts
/// of it. Grouping the heaps' records by item tells which heaps hold it,
/// so each count is `depth` bucket reads, not a search of a heap.
fn sum_heaps(
    ring: &Ring<TopK>,
    slots: impl Iterator<Item = usize> + Clone,
) -> Result<Vec<Closed>, AllocError> {
    let bucket = |s: usize| ring.slots().get(s);
    let n: usize = (slots.clone())
        .filter_map(bucket)
        .map(|b| {
            b.heap
                .entries()
                .iter()
                .filter(|e| e.item().is_some())
                .count()
        })
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
    // Stable: each item's records stay in the buckets' order.
    out.sort_by(|a, b| (a.hash.fp, item(a)).cmp(&(b.hash.fp, item(b))));
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
        let mut records = group.iter().peekable();
        let sum = (slots.clone())
            .map(|s| {
                let mut held = false;
                while let Some(c) = records.next_if(|c| c.slot == s as u32) {
                    held |= own_fp(c);
                }
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
