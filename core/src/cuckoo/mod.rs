//! Cuckoo filter (`MBbloomCF`), byte-compatible with RedisBloom (docs/cuckoo.md).
//!
//! A filter is a list of sub-filters, oldest first. Sub-filter i has `N_i`
//! buckets (always a power of two: every constructor validates it, which the
//! kick-out rollback and the alternate-bucket symmetry rely on) of
//! `bucket_size` one-byte slots; 0 marks an empty slot.

pub mod args;
mod compact;
mod dump;
mod rdb;
mod subfilter;

#[cfg(test)]
mod tests;

pub use crate::rdb::LoadError;
pub use dump::{ChunkError, HeaderError, CHUNK_MAX, HEADER_LEN};
pub use rdb::{LegacyDefaults, ENCODING_VERSION};

/// The data type (`TYPE` reply, RDB module id).
pub const TYPE: crate::ModuleType = crate::ModuleType {
    name: c"MBbloomCF",
    encoding_version: ENCODING_VERSION,
    commands: "CF.",
    family: "cuckoo",
    probe: "CF.ADD",
    chunked: Some(crate::module_type::Chunked {
        scandump: "CF.SCANDUMP",
        loadchunk: "CF.LOADCHUNK",
        splits: true,
    }),
    volatile: None,
    added: None,
    flavour: None,
    config: &[],
    tour: &[
        &["CF.RESERVE", "K", "100"],
        &["CF.ADD", "K", "a"],
        &["CF.ADDNX", "K", "b"],
        &["CF.INSERT", "K", "ITEMS", "c"],
        &["CF.INSERTNX", "K", "ITEMS", "d"],
        &["CF.EXISTS", "K", "a"],
        &["CF.MEXISTS", "K", "a", "z"],
        &["CF.COUNT", "K", "a"],
        &["CF.DEL", "K", "a"],
        &["CF.COMPACT", "K"],
        &["CF.INFO", "K"],
    ],
};

use crate::alloc::{try_push_exact, AllocError};
use crate::hash::murmur64a;
use subfilter::SubFilter;

/// Multiplier of the alternate-bucket function (docs/cuckoo.md §2).
const ALT_MUL: u64 = 0x5bd1e995;
/// Bucket counts must stay at or below 2^56 - 1 (docs/cuckoo.md §3 growth, §14).
const MAX_BUCKETS: u64 = (1 << 56) - 1;
/// Largest bucket size a filter can be created with (docs/cuckoo.md §1).
const MAX_BUCKET_SIZE: u16 = 255;

/// The hashed form of an item; computed once and used for every sub-filter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CuckooHash {
    pub fp: u8,
    pub h1: u64,
    pub h2: u64,
}

/// Fingerprint and candidate hashes of an item (docs/cuckoo.md §2).
pub fn hash_item(item: &[u8]) -> CuckooHash {
    let h = murmur64a(item, 0);
    // h % 255 < 255, so the fingerprint is 1..=255 and never "empty".
    let fp = (h % 255) as u8 + 1;
    CuckooHash {
        fp,
        h1: h,
        h2: alt(fp, h),
    }
}

/// The other candidate bucket of fingerprint `fp` stored at (hash or bucket) `x`.
#[inline]
fn alt(fp: u8, x: u64) -> u64 {
    x ^ (u64::from(fp) * ALT_MUL)
}

/// `nextPow2` of docs/cuckoo.md §3: 0 stays 0, otherwise the smallest power of two ≥ x.
pub fn next_pow2(x: u64) -> Option<u64> {
    if x == 0 {
        Some(0)
    } else {
        x.checked_next_power_of_two()
    }
}

/// Bucket count of sub-filter `i`: `num_buckets × expansion^i` (docs/cuckoo.md §3 growth).
/// None when it would be 0 (expansion 0 past the first) or exceed 2^56 - 1.
fn sub_filter_buckets(num_buckets: u64, expansion: u16, i: u16) -> Option<u64> {
    u64::from(expansion)
        .checked_pow(u32::from(i))
        .and_then(|g| g.checked_mul(num_buckets))
        .filter(|&n| n != 0 && n <= MAX_BUCKETS)
}

/// Filter parameters every constructor (create, header, RDB) must satisfy.
fn valid_params(
    num_buckets: u64,
    bucket_size: u16,
    max_iterations: u16,
    expansion: u16,
    max_bucket_size: u16,
) -> bool {
    num_buckets.is_power_of_two()
        && num_buckets <= MAX_BUCKETS
        && (1..=max_bucket_size).contains(&bucket_size)
        && max_iterations != 0
        // Only power-of-two growth keeps every N_i a power of two (docs/differences.md §1 item 5).
        && (expansion == 0 || expansion.is_power_of_two())
}

/// The fields both a SCANDUMP header and an RDB value store.
struct Header {
    num_items: u64,
    num_buckets: u64,
    num_deletes: u64,
    num_filters: u16,
    bucket_size: u16,
    max_iterations: u16,
    expansion: u16,
}

impl Header {
    /// The filter without sub-filters (nothing allocated yet), or None when
    /// the fields make no sound filter.
    fn empty_filter(&self, max_bucket_size: u16) -> Option<CuckooFilter> {
        if self.num_filters == 0
            || !valid_params(
                self.num_buckets,
                self.bucket_size,
                self.max_iterations,
                self.expansion,
                max_bucket_size,
            )
        {
            return None;
        }
        let mut cf = CuckooFilter::empty(
            self.num_buckets,
            self.bucket_size,
            self.max_iterations,
            self.expansion,
        );
        cf.num_items = self.num_items;
        cf.num_deletes = self.num_deletes;
        Some(cf)
    }
}

/// Why `CuckooFilter::new` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateError {
    /// Parameters out of range (capacity < 2 × bucket size, bucket size not in
    /// 1..=255, max iterations 0, expansion > 32768).
    Invalid,
    /// The first sub-filter could not be allocated.
    OutOfMemory,
}

/// Result of an insert (docs/cuckoo.md §5, §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertOutcome {
    Inserted,
    /// Insert-unique only: the fingerprint was already present.
    Exists,
    /// Full and non-scaling (expansion 0).
    NoSpace,
    /// Growth failed (65535 sub-filters, bucket bound, or allocation).
    AllocFailed,
    /// Growth would take the filter above the key memory limit.
    OverLimit,
}

/// CF.INFO Size's record sizes (docs/cuckoo.md §11).
const FILTER_RECORD: u64 = 40;
const SUB_FILTER_RECORD: u64 = 16;

/// A scalable cuckoo filter; field semantics as in docs/cuckoo.md §1.
#[derive(Debug, PartialEq, Eq)]
pub struct CuckooFilter {
    num_items: u64,
    num_deletes: u64,
    bucket_size: u16,
    max_iterations: u16,
    expansion: u16,
    /// log2 of numBuckets (always a power of two): with it the record is
    /// RedisBloom's 40 bytes, which jemalloc builds with an 8-byte quantum
    /// (Redis' and Valkey's own) allocate exactly; 48 bytes cost 8 more.
    bucket_bits: u8,
    /// Oldest first; never empty once constructed.
    /// Exactly as long as the filter (see [`try_push_exact`]).
    filters: Box<[SubFilter]>,
}

impl CuckooFilter {
    /// CF.RESERVE / auto-creation (docs/cuckoo.md §3). `expansion` is rounded up to a power
    /// of two; `capacity` must be at least `2 × bucket_size`.
    pub fn new(
        capacity: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
    ) -> Result<Self, CreateError> {
        let expansion = next_pow2(u64::from(expansion)).and_then(|x| u16::try_from(x).ok());
        let num_buckets = capacity
            .checked_div(u64::from(bucket_size))
            .and_then(next_pow2);
        let (Some(expansion), Some(num_buckets)) = (expansion, num_buckets) else {
            return Err(CreateError::Invalid);
        };
        let big_enough = capacity >= 2 * u64::from(bucket_size);
        if !big_enough
            || !valid_params(
                num_buckets,
                bucket_size,
                max_iterations,
                expansion,
                MAX_BUCKET_SIZE,
            )
        {
            return Err(CreateError::Invalid);
        }
        let mut cf = Self::empty(num_buckets, bucket_size, max_iterations, expansion);
        cf.grow().map_err(|_| CreateError::OutOfMemory)?;
        Ok(cf)
    }

    /// CF.INFO Size of the filter [`CuckooFilter::new`] would create with
    /// these parameters, computed without allocating it; `None` when `new`
    /// refuses them.
    pub fn new_size(capacity: u64, bucket_size: u16) -> Option<u64> {
        let bs = u64::from(bucket_size);
        let buckets = capacity.checked_div(bs).and_then(next_pow2)?;
        Some((FILTER_RECORD + SUB_FILTER_RECORD).saturating_add(buckets.saturating_mul(bs)))
    }

    /// A filter without sub-filters; parameters must already be validated.
    fn empty(num_buckets: u64, bucket_size: u16, max_iterations: u16, expansion: u16) -> Self {
        CuckooFilter {
            // Validated: a power of two of at most 2^56.
            bucket_bits: num_buckets.trailing_zeros() as u8,
            num_items: 0,
            num_deletes: 0,
            bucket_size,
            max_iterations,
            expansion,
            filters: Box::default(),
        }
    }

    /// Appends the next sub-filter (docs/cuckoo.md §3 growth).
    fn grow(&mut self) -> Result<(), AllocError> {
        let next = self.new_sub_filter(self.filters.len())?;
        try_push_exact(&mut self.filters, next)?;
        crate::reshape::reshaped();
        Ok(())
    }

    /// [`CuckooFilter::grow`] unless it would take the filter above `limit`.
    /// Out of line, as [`CuckooFilter::kick_out`]; cold: once per sub-filter.
    #[cold]
    #[inline(never)]
    fn grow_within(&mut self, limit: Option<u64>) -> Result<(), InsertOutcome> {
        let (_, bytes) = self
            .sub_filter_shape(self.filters.len())
            .map_err(|_| InsertOutcome::AllocFailed)?;
        let grown = self
            .size_bytes()
            .saturating_add(SUB_FILTER_RECORD)
            .saturating_add(bytes);
        if crate::limit::exceeds(limit, grown) {
            return Err(InsertOutcome::OverLimit);
        }
        self.grow().map_err(|_| InsertOutcome::AllocFailed)
    }

    /// Sub-filter number `i`, zeroed; fails as growth does (docs/cuckoo.md §3).
    fn new_sub_filter(&self, i: usize) -> Result<SubFilter, AllocError> {
        let (n, _) = self.sub_filter_shape(i)?;
        SubFilter::zeroed(n, self.bucket_size)
    }

    /// Buckets and bytes of sub-filter number `i` (docs/cuckoo.md §3).
    fn sub_filter_shape(&self, i: usize) -> Result<(u64, u64), AllocError> {
        let i = u16::try_from(i).map_err(|_| AllocError)?;
        if i == u16::MAX {
            return Err(AllocError);
        }
        let n = sub_filter_buckets(self.num_buckets(), self.expansion, i).ok_or(AllocError)?;
        let bytes = n
            .checked_mul(u64::from(self.bucket_size))
            .ok_or(AllocError)?;
        Ok((n, bytes))
    }

    /// Bucket size as an index type. It is ≥ 1 by construction; `max(1)`
    /// keeps `% bs` and `chunks_exact` panic-free regardless.
    fn bs(&self) -> usize {
        usize::from(self.bucket_size).max(1)
    }

    /// Multiset insert (docs/cuckoo.md §5), without a memory limit.
    pub fn insert(&mut self, h: CuckooHash) -> InsertOutcome {
        self.insert_within(h, false, None)
    }

    /// Insert unless the fingerprint is already present (docs/cuckoo.md §7),
    /// without a memory limit.
    pub fn insert_unique(&mut self, h: CuckooHash) -> InsertOutcome {
        self.insert_within(h, true, None)
    }

    /// Insert (`unique`: unless present), refusing a growth that would take
    /// the filter above `limit` bytes (crate::limit).
    pub fn insert_within(
        &mut self,
        h: CuckooHash,
        unique: bool,
        limit: Option<u64>,
    ) -> InsertOutcome {
        if unique && self.contains(h) {
            return InsertOutcome::Exists;
        }
        loop {
            // A key between LOADCHUNKs counts items whose chunks are still to
            // come: once its count claims every slot it is full (docs/cuckoo.md §14).
            if self.num_items < self.slot_count() && (self.first_fit(h) || self.kick_out(h)) {
                self.num_items = self.num_items.saturating_add(1);
                return InsertOutcome::Inserted;
            }
            if self.expansion == 0 {
                return InsertOutcome::NoSpace;
            }
            // Bounded: growth fails at the latest at 65535 sub-filters.
            if let Err(refused) = self.grow_within(limit) {
                return refused;
            }
        }
    }

    /// Puts `fp` into the first empty candidate slot, newest sub-filter first.
    fn first_fit(&mut self, h: CuckooHash) -> bool {
        for f in self.filters.iter_mut().rev() {
            if let Some(off) = f.find_available(h.h1, h.h2) {
                f.set(off, h.fp);
                return true;
            }
        }
        false
    }

    /// The eviction procedure of docs/cuckoo.md §6 on the newest sub-filter. Deterministic:
    /// the victim slot `v` advances across iterations, and a failed attempt is
    /// undone by walking exactly the same path backwards. Out of line: an
    /// insert that finds a free slot (most) keeps to fewer cache lines.
    #[inline(never)]
    fn kick_out(&mut self, h: CuckooHash) -> bool {
        let bs = self.bs();
        let max_iterations = self.max_iterations;
        let Some(f) = self.filters.last_mut() else {
            return false;
        };
        let mut cur = h.fp;
        let mut v = 0;
        let mut j = h.h1 & f.mask();
        for _ in 0..max_iterations {
            swap_slot(f, j, v, &mut cur);
            j = alt(cur, j) & f.mask();
            if let Some(off) = f.find(j, 0) {
                f.set(off, cur);
                return true;
            }
            v = (v + 1) % bs;
        }
        for _ in 0..max_iterations {
            v = (v + bs - 1) % bs;
            j = alt(cur, j) & f.mask();
            swap_slot(f, j, v, &mut cur);
        }
        false
    }

    /// Prefetches the candidate buckets of `h` in every sub-filter: both for
    /// a check, the first for an insert (which usually finds room there; on a
    /// large filter each needless prefetch costs a page walk). A hint only.
    #[inline]
    pub fn prefetch(&self, h: CuckooHash, both: bool) {
        let candidates = if both { &[h.h1, h.h2][..] } else { &[h.h1][..] };
        for f in &self.filters {
            for &x in candidates {
                if let Some(byte) = f.bucket(x).and_then(<[u8]>::first) {
                    crate::prefetch::prefetch(byte);
                }
            }
        }
    }

    /// Membership, oldest sub-filter first (docs/cuckoo.md §8).
    pub fn contains(&self, h: CuckooHash) -> bool {
        let has = |f: &SubFilter, x: u64| f.bucket(x).is_some_and(|b| b.contains(&h.fp));
        self.filters.iter().any(|f| has(f, h.h1) || has(f, h.h2))
    }

    /// Copies of the fingerprint in both candidate buckets of every sub-filter;
    /// a bucket that is both candidates counts twice (docs/cuckoo.md §8, docs/differences.md §2).
    pub fn count(&self, h: CuckooHash) -> u64 {
        self.filters.iter().fold(0u64, |acc, f| {
            acc.wrapping_add(f.count_in(h.h1, h.fp))
                .wrapping_add(f.count_in(h.h2, h.fp))
        })
    }

    /// Removes one copy, newest sub-filter first, then maybe compacts (docs/cuckoo.md §9).
    pub fn delete(&mut self, h: CuckooHash) -> bool {
        if !self.filters.iter_mut().rev().any(|f| f.delete(h)) {
            return false;
        }
        // Never below the fingerprints (counts_agree), so this cannot meet 0;
        // it saturates anyway where RedisBloom wraps.
        self.num_items = self.num_items.saturating_sub(1);
        self.num_deletes = self.num_deletes.saturating_add(1);
        if self.filters.len() > 1 && self.num_deletes as f64 > self.num_items as f64 * 0.10 {
            self.compact(false);
        }
        true
    }

    /// Base bucket count (sub-filter 0).
    /// A deep copy (COPY command); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, crate::alloc::AllocError> {
        let mut filters = Vec::new();
        filters
            .try_reserve_exact(self.filters.len())
            .map_err(|_| crate::alloc::AllocError)?;
        for f in self.filters.iter() {
            filters.push(f.try_clone()?);
        }
        Ok(CuckooFilter {
            filters: filters.into_boxed_slice(),
            ..*self
        })
    }

    /// Every slot array, for active defragmentation.
    pub fn blocks_mut(&mut self) -> impl Iterator<Item = &mut dyn crate::alloc::Block> {
        self.filters
            .iter_mut()
            .map(|f| f as &mut dyn crate::alloc::Block)
    }

    pub fn num_buckets(&self) -> u64 {
        1 << self.bucket_bits
    }

    pub fn num_items(&self) -> u64 {
        self.num_items
    }

    /// Slots holding a fingerprint.
    pub fn occupied(&self) -> u64 {
        self.filters
            .iter()
            .fold(0u64, |acc, f| acc.saturating_add(f.occupied()))
    }

    /// Slots of all sub-filters.
    fn slot_count(&self) -> u64 {
        slot_count(&self.filters)
    }

    /// The item count agrees with the slots, as every loader requires and
    /// every command keeps: at least the fingerprints held (more while
    /// LOADCHUNK data is still to come), at most the slots (docs/cuckoo.md §13).
    pub fn counts_agree(&self) -> bool {
        self.occupied() <= self.num_items && self.num_items <= self.slot_count()
    }

    pub fn num_deletes(&self) -> u64 {
        self.num_deletes
    }

    /// At most 65535 by construction.
    pub fn num_filters(&self) -> u16 {
        u16::try_from(self.filters.len()).unwrap_or(u16::MAX)
    }

    pub fn bucket_size(&self) -> u16 {
        self.bucket_size
    }

    pub fn max_iterations(&self) -> u16 {
        self.max_iterations
    }

    /// The rounded expansion (power of two or 0).
    pub fn expansion(&self) -> u16 {
        self.expansion
    }

    /// CF.INFO `Size` (docs/cuckoo.md §11).
    pub fn size_bytes(&self) -> u64 {
        (FILTER_RECORD + SUB_FILTER_RECORD * u64::from(self.num_filters()))
            .saturating_add(self.slot_count())
    }

    /// CF.INFO `Size` with `filters` sub-filters: each has the size growth
    /// gives it (every loader checks it), so the size follows from their
    /// number, including sub-filters compaction has since removed.
    pub fn size_bytes_at(&self, filters: u16) -> u64 {
        (0..usize::from(filters)).fold(
            FILTER_RECORD + SUB_FILTER_RECORD * u64::from(filters),
            |acc, i| acc.saturating_add(self.sub_filter_shape(i).map_or(0, |(_, bytes)| bytes)),
        )
    }

    /// CF.DEBUG reply (docs/cuckoo.md §11).
    pub fn debug_string(&self) -> String {
        format!(
            "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
            self.bucket_size,
            self.num_buckets(),
            self.num_items,
            self.num_deletes,
            self.num_filters(),
            self.max_iterations,
            self.expansion
        )
    }
}

/// Slots of `filters`.
fn slot_count(filters: &[SubFilter]) -> u64 {
    filters
        .iter()
        .fold(0u64, |acc, f| acc.saturating_add(f.len() as u64))
}

/// Exchanges `cur` with slot `v` of bucket `j` (kick-out step).
#[inline]
fn swap_slot(f: &mut SubFilter, j: u64, v: usize, cur: &mut u8) {
    if let Some(offset) = f.bucket_range(j).and_then(|r| r.start.checked_add(v)) {
        f.swap(offset, cur);
    }
}
