//! valkey-bloom's Bloom flavour (type `bloomfltr`), byte-compatible with
//! valkey-bloom 1.0.1 (COMPAT-VALKEY-BLOOM.md, cited as §N).
//!
//! An object is a list of sub-filters, oldest first; only the newest receives
//! items, every one answers checks. Each sub-filter hashes with the seed of
//! its own blob header; all share sub-filter 0's seed unless loaded data says
//! otherwise, so an item is normally hashed once per operation.

pub mod args;
mod blob;
mod filter;
mod merge;
mod rdb;
mod sizing;

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod vectors;

use filter::{Hash, SubFilter};
use sizing::{Scale, ScaleError, FILTER, MAX_FILTERS};

pub const ENCODING_VERSION: i32 = 1;

/// The data type (`TYPE` reply, RDB module id).
pub const TYPE: crate::ModuleType = crate::ModuleType {
    name: c"bloomfltr",
    encoding_version: ENCODING_VERSION,
    commands: "BF.",
    family: "valkey-bloom",
    // RedisBloom knows BF.ADD but not BF.LOAD (valkey-bloom's AOF form,
    // which rsbloom has in both flavours).
    probe: "BF.LOAD",
    // valkey-bloom 1.0.1's filters (§1.1, §5.1): no chunked form; values
    // are at most 128 MiB (its default bf.bloom-memory-usage-limit), so
    // DUMP/RESTORE carries them.
    chunked: None,
    volatile: None,
    added: None,
    flavour: Some(crate::module_type::Flavour {
        module: "valkey-bloom",
        shared: "BF.ADD",
        why: crate::module_type::BLOOM_FLAVOURS,
    }),
    config: &[
        ("bf.bloom-flavor", "valkey-bloom"),
        ("bf.bloom-use-random-seed", "no"),
    ],
    tour: &[
        &["BF.RESERVE", "K", "0.01", "100"],
        &["BF.ADD", "K", "a"],
        &["BF.MADD", "K", "b", "c"],
        &["BF.EXISTS", "K", "a"],
        &["BF.MEXISTS", "K", "a", "z"],
        &["BF.CARD", "K"],
        &["BF.INFO", "K"],
    ],
};
/// The seed of fixed-seed mode (§4.6).
pub const FIXED_SEED: [u8; 32] = [
    89, 15, 245, 34, 234, 120, 17, 218, 167, 20, 216, 9, 59, 62, 123, 217, 29, 137, 138, 115, 62,
    152, 136, 135, 48, 127, 151, 205, 40, 7, 51, 131,
];
/// Rates at or below this make no sub-filter (§4.4).
pub const MIN_POSITIVE: f64 = f64::MIN_POSITIVE;

/// What a new object is made of (the glue resolves defaults, configs and the seed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Create {
    pub capacity: i64,
    pub fp_rate: f64,
    pub tightening: f64,
    /// 0 = non-scaling.
    pub expansion: u32,
    pub seed: [u8; 32],
    pub seed_random: bool,
}

/// Errors of creation and add (§2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VbError {
    NonScalingFull,
    MaxFilters,
    FpDegrades,
    BadCapacity,
    /// Also the answer when an allocation fails.
    MemoryLimit,
}

impl VbError {
    /// The exact error reply.
    pub fn message(self) -> &'static str {
        match self {
            VbError::NonScalingFull => "ERR non scaling filter is full",
            VbError::MaxFilters => "ERR bloom object reached max number of filters",
            VbError::FpDegrades => "ERR false positive degrades to 0 on scale out",
            VbError::BadCapacity => "ERR bad capacity",
            VbError::MemoryLimit => "ERR operation exceeds bloom object memory limit",
        }
    }
}

/// A `bloomfltr` value (§4.1). Invariant: at least one sub-filter, every
/// capacity > 0, every num_items ≥ 0, and their sums fit an i64.
#[derive(Debug, PartialEq)]
pub struct Object {
    expansion: u32,
    fp_rate: f64,
    tightening: f64,
    seed_random: bool,
    filters: Vec<SubFilter>,
    /// The list capacity L, which only shows in Size (§5.6).
    list_cap: u64,
}

impl Object {
    /// A new object of one empty sub-filter (§4.1). `limit`: the memory limit
    /// when validating. Parameters the glue never passes (capacity ≤ 0, fp
    /// outside (0, 1)) are refused as BadCapacity / FpDegrades.
    pub fn new(c: &Create, limit: Option<u64>) -> Result<Object, VbError> {
        if c.capacity <= 0 {
            return Err(VbError::BadCapacity);
        }
        if !(c.fp_rate > 0.0 && c.fp_rate < 1.0) {
            return Err(VbError::FpDegrades);
        }
        let bytes = sizing::bytes_for(c.capacity, c.fp_rate);
        if crate::limit::exceeds(limit, sizing::object_size(1, std::iter::once(bytes))) {
            return Err(VbError::MemoryLimit);
        }
        let mut o = Object {
            expansion: c.expansion,
            fp_rate: c.fp_rate,
            tightening: c.tightening,
            seed_random: c.seed_random,
            filters: Vec::new(),
            list_cap: 1,
        };
        o.push(SubFilter::create(c.capacity, c.fp_rate, &c.seed)?)
            .map_err(|_| VbError::MemoryLimit)?;
        Ok(o)
    }

    /// Appends a sub-filter, growing L as valkey-bloom's list does (§4.4).
    /// The records take exactly their number: most objects hold one, and
    /// `Vec`'s first reserve of four would take 448 bytes for it.
    fn push(&mut self, f: SubFilter) -> Result<(), crate::alloc::AllocError> {
        self.filters
            .try_reserve_exact(1)
            .map_err(|_| crate::alloc::AllocError)?;
        self.list_cap = sizing::grown_list(self.list_cap, self.filters.len() as u64);
        self.filters.push(f);
        Ok(())
    }

    /// The keys of sub-filter 0's seed, which items are hashed with first.
    fn keys(&self) -> [u64; 4] {
        self.filters.first().map_or([0; 4], |f| *f.keys())
    }

    /// Whether every sub-filter hashes with sub-filter 0's seed (always, but
    /// for loaded data with mixed seeds).
    fn one_seed(&self) -> bool {
        let k = self.keys();
        self.filters.iter().all(|f| *f.keys() == k)
    }

    /// The hash of `item` for sub-filter `f`, given its hash `h` for sub-filter 0.
    fn hash_for(f: &SubFilter, k0: &[u64; 4], item: &[u8], h: Hash) -> Hash {
        if f.keys() == k0 {
            h
        } else {
            filter::hash(f.keys(), item)
        }
    }

    /// Check (§4.4): some sub-filter holds all probes; newest first.
    pub fn contains(&self, item: &[u8]) -> bool {
        let k = self.keys();
        self.contains_hashed(&k, item, filter::hash(&k, item))
    }

    fn contains_hashed(&self, k0: &[u64; 4], item: &[u8], h: Hash) -> bool {
        self.filters
            .iter()
            .rev()
            .any(|f| f.contains(Self::hash_for(f, k0, item, h)))
    }

    /// Add (§4.4): Ok(true) when added, Ok(false) when already present.
    /// `limit`: the memory limit when validating. An error changes nothing.
    pub fn add(&mut self, item: &[u8], limit: Option<u64>) -> Result<bool, VbError> {
        let k = self.keys();
        self.add_hashed(&k, item, filter::hash(&k, item), limit)
    }

    fn add_hashed(
        &mut self,
        k0: &[u64; 4],
        item: &[u8],
        h: Hash,
        limit: Option<u64>,
    ) -> Result<bool, VbError> {
        if self.contains_hashed(k0, item, h) {
            return Ok(false);
        }
        // Loaded counts may exceed their capacities (§8), so CARD can sit
        // at i64::MAX: it takes no further item rather than wrap.
        if self.card_checked().and_then(|c| c.checked_add(1)).is_none() {
            return Err(VbError::BadCapacity);
        }
        let full = self
            .filters
            .last()
            .is_none_or(|f| f.num_items >= f.capacity);
        if full {
            self.scale_out(limit)?;
        }
        let f = self.filters.last_mut().ok_or(VbError::BadCapacity)?;
        let hf = Self::hash_for(f, k0, item, h);
        f.insert(hf);
        f.num_items = f.num_items.saturating_add(1);
        Ok(true)
    }

    /// Appends the next sub-filter (§4.4 step 3, checks in that order).
    fn scale_out(&mut self, limit: Option<u64>) -> Result<(), VbError> {
        if self.expansion == 0 {
            return Err(VbError::NonScalingFull);
        }
        let count = i32::try_from(self.filters.len())
            .ok()
            .filter(|&n| n < MAX_FILTERS)
            .ok_or(VbError::MaxFilters)?;
        let p = sizing::rate(self.fp_rate, self.tightening, count);
        // p ≥ 1 (a loaded tightening above 1) would size an empty bitmap.
        if !(p > MIN_POSITIVE && p < 1.0) {
            return Err(VbError::FpDegrades);
        }
        let (last, seed) = match (self.filters.last(), self.filters.first()) {
            (Some(l), Some(f)) => (l.capacity, *f.seed()),
            _ => return Err(VbError::BadCapacity),
        };
        let cap = last
            .checked_mul(i64::from(self.expansion))
            .filter(|c| c.checked_add(self.capacity()).is_some())
            .ok_or(VbError::BadCapacity)?;
        let projected = self
            .size()
            .saturating_add(FILTER)
            .saturating_add(sizing::bytes_for(cap, p));
        if crate::limit::exceeds(limit, projected) {
            return Err(VbError::MemoryLimit);
        }
        let f = SubFilter::create(cap, p, &seed)?;
        self.push(f).map_err(|_| VbError::MemoryLimit)
    }

    /// Checks `items` in order (the answers of repeated [`Object::contains`]),
    /// hashing a block ahead and prefetching the first probe of each
    /// sub-filter so the cache misses of a batch overlap.
    pub fn contains_batch<I: AsRef<[u8]>>(&self, items: &[I], mut each: impl FnMut(bool)) {
        if !self.one_seed() {
            items.iter().for_each(|i| each(self.contains(i.as_ref())));
            return;
        }
        // One seed: the hash for sub-filter 0 serves all, no item is rehashed.
        let k = self.keys();
        crate::prefetch::pipelined(
            self,
            items,
            |o, item| filter::hash(&o.keys(), item.as_ref()),
            |o, h| o.filters.iter().for_each(|f| f.prefetch(h, 1)),
            |o, h| {
                each(o.contains_hashed(&k, &[], h));
                true
            },
        );
    }

    /// Adds `items` in order, as repeated [`Object::add`] would, calling
    /// `each` with every answer; stops after the first error or when `each`
    /// returns false. Prefetches all probes of the newest sub-filter.
    pub fn add_batch<I: AsRef<[u8]>>(
        &mut self,
        items: &[I],
        limit: Option<u64>,
        mut each: impl FnMut(Result<bool, VbError>) -> bool,
    ) {
        if !self.one_seed() {
            for i in items {
                let r = self.add(i.as_ref(), limit);
                if !each(r) || r.is_err() {
                    return;
                }
            }
            return;
        }
        // One seed (new sub-filters take sub-filter 0's): no item is rehashed.
        let k = self.keys();
        crate::prefetch::pipelined(
            self,
            items,
            |o, item| filter::hash(&o.keys(), item.as_ref()),
            |o, h| o.prefetch_add(h),
            |o, h| {
                let r = o.add_hashed(&k, &[], h, limit);
                each(r) && r.is_ok()
            },
        );
    }

    /// Prefetches what an add of `h` reads: every probe of the newest
    /// sub-filter, the first of the others.
    fn prefetch_add(&self, h: Hash) {
        if let Some((newest, older)) = self.filters.split_last() {
            newest.prefetch(h, u32::MAX);
            older.iter().for_each(|f| f.prefetch(h, 1));
        }
    }

    /// Σ num_items (BF.CARD): it fits an i64 on load and every add keeps it so.
    pub fn card(&self) -> i64 {
        self.card_checked().unwrap_or(i64::MAX)
    }

    fn card_checked(&self) -> Option<i64> {
        self.filters
            .iter()
            .try_fold(0i64, |a, f| a.checked_add(f.num_items))
    }

    /// Σ capacities (BF.INFO Capacity).
    pub fn capacity(&self) -> i64 {
        self.filters
            .iter()
            .fold(0i64, |a, f| a.wrapping_add(f.capacity))
    }

    /// BF.INFO Size (§5.6).
    pub fn size(&self) -> u64 {
        sizing::object_size(self.list_cap, self.filters.iter().map(SubFilter::bytes))
    }

    pub fn num_filters(&self) -> usize {
        self.filters.len()
    }

    /// 0 = non-scaling.
    pub fn expansion(&self) -> u32 {
        self.expansion
    }

    /// The rate the object was created with (not a sub-filter's).
    pub fn fp_rate(&self) -> f64 {
        self.fp_rate
    }

    pub fn tightening(&self) -> f64 {
        self.tightening
    }

    /// Sub-filter 0's seed.
    pub fn seed(&self) -> &[u8; 32] {
        self.filters.first().map_or(&FIXED_SEED, |f| f.seed())
    }

    pub fn seed_random(&self) -> bool {
        self.seed_random
    }

    /// Sub-filter 0's capacity.
    pub fn first_capacity(&self) -> i64 {
        self.filters.first().map_or(0, |f| f.capacity)
    }

    /// BF.INFO `Max scaled capacity` under `limit` (§4.7, report mode).
    pub fn max_scaled_capacity(&self, limit: u64) -> Result<i64, VbError> {
        let s = Scale {
            capacity: self.first_capacity(),
            fp: self.fp_rate,
            tightening: self.tightening,
            expansion: self.expansion,
            limit,
        };
        s.walk(None).map_err(|_| VbError::BadCapacity)
    }

    /// A deep copy (COPY): same fields, same list capacity.
    pub fn try_clone(&self) -> Result<Object, crate::alloc::AllocError> {
        let mut filters = Vec::new();
        filters
            .try_reserve_exact(self.filters.len())
            .map_err(|_| crate::alloc::AllocError)?;
        for f in &self.filters {
            filters.push(f.try_clone()?);
        }
        Ok(Object { filters, ..*self })
    }

    /// The blocks (header and bitmap) of the sub-filters, for defragmentation.
    pub fn blocks_mut(&mut self) -> impl Iterator<Item = &mut dyn crate::alloc::Block> {
        self.filters
            .iter_mut()
            .map(|f| f.blob_mut() as &mut dyn crate::alloc::Block)
    }
}

/// §4.7 with a target (BF.INSERT VALIDATESCALETO): the exact error text when
/// an object of these parameters cannot reach `target` items under `limit`.
pub fn validate_scale_to(
    capacity: i64,
    fp: f64,
    tightening: f64,
    expansion: u32,
    target: i64,
    limit: u64,
) -> Result<(), &'static str> {
    let s = Scale {
        capacity,
        fp,
        tightening,
        expansion,
        limit,
    };
    match s.walk(Some(target)) {
        Ok(_) => Ok(()),
        Err(ScaleError::Degrades) => {
            Err("ERR provided VALIDATESCALETO causes false positive to degrade to 0")
        }
        Err(ScaleError::Limit) => {
            Err("ERR provided VALIDATESCALETO causes bloom object to exceed memory limit")
        }
        Err(ScaleError::BadCapacity) => Err(VbError::BadCapacity.message()),
    }
}
