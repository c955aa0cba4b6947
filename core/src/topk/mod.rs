//! Top-K (`TopK-TYPE`), byte-compatible with RedisBloom's HeavyKeeper
//! (docs/topk.md): a `depth` × `width` array of (fingerprint, count) buckets
//! and a heap of the `k` items with the largest counts.
//!
//! Decay draws come from a per-key generator whose state is saved with the
//! value, so the same commands give the same result on every server
//! (docs/topk.md §3.5).

pub mod args;
mod decay;
mod heap;
mod rdb;
mod window;

#[cfg(test)]
mod tests;

pub use crate::rdb::LoadError;
pub use heap::{cstr, Heap, HeapEntry};
pub use rdb::ENCODING_VERSION;
pub use window::{
    Scored, WindowError, WindowedTopK, MAX_WINDOW_BYTES, WINDOW_ENCODING_VERSION, WINDOW_TYPE,
};

/// The data type (`TYPE` reply, RDB module id).
pub const TYPE: crate::ModuleType = crate::ModuleType {
    name: c"TopK-TYPE",
    encoding_version: ENCODING_VERSION,
    commands: "TOPK.",
    family: "topk",
    probe: "TOPK.ADD",
    chunked: None,
    // The heap's 24-byte records: RedisBloom saves a memory address in
    // bytes 8..16 and never reads it back (docs/topk.md §5.2).
    volatile: Some(crate::module_type::Volatile {
        prim: 5,
        record: 24,
        bytes: 8..16,
    }),
    added: None,
    flavour: None,
    config: &[],
    tour: &[
        &["TOPK.RESERVE", "K", "3"],
        &["TOPK.ADD", "K", "a", "b", "a"],
        &["TOPK.INCRBY", "K", "c", "2"],
        &["TOPK.QUERY", "K", "a", "z"],
        &["TOPK.LIST", "K", "WITHCOUNT"],
        &["TOPK.INFO", "K"],
    ],
};

use crate::alloc::{try_copy, try_copy_nul, try_zeroed, AllocError, Block};
use crate::hash::{murmur2, murmur2_seeds};
use decay::{decay_foreign, DecayTable, Decayed};

/// Seed of the fingerprint hash.
const FP_SEED: u32 = 1919;
/// Bytes of one bucket: fingerprint and count, little-endian u32 each.
const BUCKET: usize = 8;
/// Rows hashed together with the fingerprint.
const FIRST_ROWS: usize = 7;
/// Bucket arrays from this size are prefetched in batches (a core's L2).
const PREFETCH_MIN: usize = 512 << 10;
/// Seeds of those rows, then the fingerprint's.
const FIRST_SEEDS: [u32; 8] = [0, 1, 2, 3, 4, 5, 6, FP_SEED];

/// Defaults of `TOPK.RESERVE key k` (docs/topk.md §4.1).
pub const DEFAULT_WIDTH: u32 = 8;
pub const DEFAULT_DEPTH: u32 = 7;
pub const DEFAULT_DECAY: f64 = 0.9;

/// A Top-K sketch. The record itself is in the allocator's size class of
/// RedisBloom's 2088-byte record (test `record_size_class_matches_redisbloom`).
#[derive(Debug, PartialEq)]
pub struct TopK {
    k: u32,
    width: u32,
    depth: u32,
    decay: f64,
    /// Generator state of the decay draws.
    rng: u64,
    /// `u64::MAX / width + 1`: `h mod width` without a division.
    width_magic: u64,
    /// `depth` rows of `width` buckets, `BUCKET` bytes each; exactly as saved.
    buckets: Box<[u8]>,
    heap: Heap,
    table: DecayTable,
}

/// The hashes of one item: fingerprint and the first rows together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemHash {
    fp: u32,
    first: [u32; 8],
}

/// Hashes an item for [`TopK::add_hashed`].
#[inline]
pub fn hash_item(item: &[u8]) -> ItemHash {
    let first = first_hashes(item);
    ItemHash {
        fp: first[FIRST_ROWS],
        first,
    }
}

impl ItemHash {
    /// The hash of `item` in row `row` (seed = row index).
    fn row(&self, item: &[u8], row: u32) -> u32 {
        match self.first.get(row as usize) {
            Some(&h) if (row as usize) < FIRST_ROWS => h,
            _ => murmur2(item, row),
        }
    }
}

/// The hashes of [`FIRST_SEEDS`], one pass over the item for all 8.
#[inline]
fn first_hashes(item: &[u8]) -> [u32; 8] {
    murmur2_seeds(item, FIRST_SEEDS)
}

impl TopK {
    /// TOPK.RESERVE (docs/topk.md §4.1): `k`, `width`, `depth` ≥ 1 and
    /// 0 < decay ≤ 1, as the parser guarantees.
    pub fn new(k: u32, width: u32, depth: u32, decay: f64) -> Result<Self, AllocError> {
        let buckets = bucket_bytes(width, depth).ok_or(AllocError)?;
        let buckets = try_zeroed(buckets)?;
        let heap = Heap::empty(k)?;
        Ok(Self::from_parts(k, width, depth, decay, buckets, heap, 0))
    }

    /// MEMORY USAGE of the sketch [`TopK::new`] would create, computed
    /// without allocating it.
    pub fn new_size(k: u32, width: u32, depth: u32) -> Option<u64> {
        Some(usage(bucket_bytes(width, depth)?, k))
    }

    fn from_parts(
        k: u32,
        width: u32,
        depth: u32,
        decay: f64,
        buckets: Box<[u8]>,
        heap: Heap,
        rng: u64,
    ) -> Self {
        TopK {
            k,
            width,
            depth,
            decay,
            rng,
            width_magic: (u64::MAX / u64::from(width.max(1))).wrapping_add(1),
            buckets,
            heap,
            table: DecayTable::new(decay),
        }
    }

    /// Index of the bucket of `item` in row `row` (docs/topk.md §3.2).
    #[inline]
    fn bucket_index(&self, item: &[u8], hash: &ItemHash, row: u32) -> usize {
        bucket_index(self.width, self.width_magic, row, hash.row(item, row))
    }

    fn bucket(&self, index: usize) -> (u32, u32) {
        self.buckets
            .as_chunks::<BUCKET>()
            .0
            .get(index)
            .map_or((0, 0), |b| split(u64::from_le_bytes(*b)))
    }

    /// Adds `item` with increment `inc` (TOPK.ADD: 1; TOPK.INCRBY); returns
    /// the item expelled from the heap, if any (docs/topk.md §3.4). Fails
    /// only when the copy of a new heap item cannot be allocated, after the
    /// buckets were updated (the heap is then unchanged).
    pub fn add(&mut self, item: &[u8], inc: u32) -> Result<Option<Box<[u8]>>, AllocError> {
        self.add_hashed(item, &hash_item(item), inc)
    }

    /// Whether the buckets outgrow a core's cache, so that adds of a batch
    /// gain from prefetching them (on smaller sketches the prefetches and
    /// the second pass cost more than they save: measured 6 % of TOPK.ADD).
    pub fn buckets_exceed_cache(&self) -> bool {
        self.buckets.len() >= PREFETCH_MIN
    }

    /// Starts loading the item's buckets of the first rows (a hint).
    pub fn prefetch(&self, hash: &ItemHash) {
        for row in 0..self.depth.min(FIRST_ROWS as u32) {
            let at = self.bucket_index(&[], hash, row) * BUCKET;
            if let Some(byte) = self.buckets.get(at) {
                crate::prefetch::prefetch(byte);
            }
        }
    }

    /// Step 2 of docs/topk.md §3.4 in every row: the largest count the
    /// item's fingerprint holds afterwards.
    fn update_buckets(&mut self, item: &[u8], hash: &ItemHash, inc: u32) -> u32 {
        let certain = self.decay >= 1.0;
        let (fp, width, magic) = (hash.fp, self.width, self.width_magic);
        let TopK {
            buckets,
            table,
            rng,
            depth,
            ..
        } = self;
        let words = buckets.as_chunks_mut::<BUCKET>().0;
        let mut max_count = 0;
        for row in 0..*depth {
            let index = bucket_index(width, magic, row, hash.row(item, row));
            let Some(b) = words.get_mut(index) else {
                continue;
            };
            let (bfp, count) = split(u64::from_le_bytes(*b));
            let (new_fp, new_count) = if count == 0 {
                (fp, inc)
            } else if bfp == fp {
                (fp, count.wrapping_add(inc))
            } else {
                match decay_foreign(table, certain, rng, count, inc) {
                    Decayed::Kept(c) => (bfp, c),
                    Decayed::Claimed(r) => (fp, r),
                }
            };
            if new_fp == fp {
                max_count = max_count.max(new_count);
            }
            *b = (u64::from(new_fp) | u64::from(new_count) << 32).to_le_bytes();
        }
        max_count
    }

    /// [`TopK::add`] of an item hashed by [`hash_item`].
    pub fn add_hashed(
        &mut self,
        item: &[u8],
        hash: &ItemHash,
        inc: u32,
    ) -> Result<Option<Box<[u8]>>, AllocError> {
        let fp = hash.fp;
        let heap_min = self.heap.min();
        let max_count = self.update_buckets(item, hash, inc);
        if max_count < heap_min {
            return Ok(None);
        }
        if let Some(i) = self.heap.find(fp, item) {
            if let Some(e) = self.heap.entries_mut().get_mut(i) {
                e.count = max_count;
            }
            self.heap.sift_down(i);
            return Ok(None);
        }
        let entry = HeapEntry {
            fp,
            count: max_count,
            item: Some(try_copy_nul(item)?),
        };
        Ok(self.heap.replace_root(entry))
    }

    /// TOPK.QUERY: whether the heap holds `item`.
    pub fn query(&self, item: &[u8]) -> bool {
        self.heap.find(hash_item(item).fp, item).is_some()
    }

    /// TOPK.COUNT (docs/topk.md §3.6): the largest bucket carrying the
    /// item's fingerprint; for a heap item only buckets at or above the
    /// heap minimum count.
    pub fn count(&self, item: &[u8]) -> u32 {
        self.count_hashed(item, &hash_item(item))
    }

    /// [`TopK::count`] of an item hashed by [`hash_item`].
    pub fn count_hashed(&self, item: &[u8], hash: &ItemHash) -> u32 {
        self.count_in(item, hash, self.heap.find(hash.fp, item).is_some())
    }

    /// [`TopK::count_hashed`] where the caller knows whether the heap
    /// holds the item.
    fn count_in(&self, item: &[u8], hash: &ItemHash, in_heap: bool) -> u32 {
        let heap_min = self.heap.min();
        (0..self.depth)
            .map(|row| self.bucket(self.bucket_index(item, hash, row)))
            .filter(|&(fp, c)| fp == hash.fp && (!in_heap || c >= heap_min))
            .fold(0, |acc, (_, c)| acc.max(c))
    }

    /// TOPK.LIST order (docs/topk.md §3.7): heap records by count
    /// descending, ties in heap order, up to the first count 0.
    pub fn list(&self) -> Result<Listed<'_>, AllocError> {
        let entries = self.heap.entries();
        let mut keys = Vec::new();
        keys.try_reserve_exact(entries.len())
            .map_err(|_| AllocError)?;
        // Count descending, then position: the order a stable sort gives.
        keys.extend(
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.count > 0)
                .map(|(i, e)| (u64::from(!e.count) << 32) | i as u64),
        );
        keys.sort_unstable();
        Ok(Listed { keys, entries })
    }

    /// Empties the sketch (a window's bucket leaving it): buckets and heap
    /// records zero, the generator state kept.
    pub fn clear(&mut self) {
        self.buckets.fill(0);
        self.heap.entries_mut().fill_with(HeapEntry::default);
    }

    /// A deep copy (COPY); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        Ok(TopK {
            buckets: try_copy(&self.buckets)?,
            heap: self.heap.try_clone()?,
            table: self.table.clone(),
            ..*self
        })
    }

    /// Storage blocks holding plain bytes (buckets, items): active
    /// defragmentation may move them, and freeing may discard them first.
    pub fn blocks_mut(&mut self) -> impl Iterator<Item = &mut dyn Block> {
        std::iter::once(&mut self.buckets as &mut dyn Block)
            .chain(self.heap.items_mut().map(|b| b as &mut dyn Block))
    }

    /// The heap array: it may be moved, but it holds the item pointers, so
    /// it must not be discarded before the items are freed.
    pub fn heap_block_mut(&mut self) -> &mut dyn Block {
        &mut self.heap
    }

    /// MEMORY USAGE (docs/topk.md §3.8): RedisBloom's formula, 2088 bytes of
    /// record, the buckets and 24 bytes per heap record (items not counted).
    pub fn memory_usage(&self) -> u64 {
        usage(self.buckets.len() as u64, self.k)
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    pub fn decay(&self) -> f64 {
        self.decay
    }

    pub fn heap(&self) -> &Heap {
        &self.heap
    }
}

/// The records of TOPK.LIST, in order.
pub struct Listed<'a> {
    /// (!count << 32 | position), sorted.
    keys: Vec<u64>,
    entries: &'a [HeapEntry],
}

impl<'a> Listed<'a> {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a HeapEntry> + '_ {
        let entries = self.entries;
        self.keys
            .iter()
            .filter_map(move |&key| entries.get((key & u64::from(u32::MAX)) as usize))
    }
}

/// Bucket number `row·width + (h mod width)`, the modulo by Lemire's
/// multiply-shift with `magic = u64::MAX / width + 1` (exact for every u32).
#[inline]
fn bucket_index(width: u32, magic: u64, row: u32, h: u32) -> usize {
    let low = magic.wrapping_mul(u64::from(h));
    let column = ((u128::from(low) * u128::from(width)) >> 64) as usize;
    row as usize * width as usize + column
}

/// A bucket word's (fingerprint, count).
fn split(word: u64) -> (u32, u32) {
    (word as u32, (word >> 32) as u32)
}

/// MEMORY USAGE of a sketch of `buckets` bytes of buckets and `k` heap
/// records (docs/topk.md §3.8).
fn usage(buckets: u64, k: u32) -> u64 {
    2088u64
        .saturating_add(buckets)
        .saturating_add(24 * u64::from(k))
}

/// Size of the bucket array, if representable.
fn bucket_bytes(width: u32, depth: u32) -> Option<u64> {
    u64::from(width)
        .checked_mul(u64::from(depth))?
        .checked_mul(BUCKET as u64)
}
