//! Scalable Bloom filter chain, bit-compatible with RedisBloom (docs/bloom.md).
//!
//! A chain is a list of links (sub-filters); only the newest link receives new
//! items, every link answers membership queries. An item is hashed once per
//! chain operation and the same pair probes every link.

pub mod args;
mod debug;
mod dump;
mod link;
mod merge;
mod rdb;
mod sizing;
mod store;

#[cfg(test)]
mod tests;

pub use debug::format_g;
pub use dump::ChunkError;
pub use link::Link;
use link::LooseLink;
pub use sizing::{size_link, Sizing};
use std::ptr::NonNull;
pub use store::Links;
use store::{LinksMut, Store};

use crate::hash::{murmur2, murmur64a};
use std::sync::atomic::{AtomicU32, Ordering};

/// Outcomes of the last 16 items checked by batches, one bit each, kept
/// from one command to the next: a workload checking present items keeps
/// doing so, and its next batch prefetches for them from the first item.
/// Only steers prefetching, so sharing it between keys is harmless.
static RECENT_CHECKS: AtomicU32 = AtomicU32::new(0);
const RECENT_MASK: u32 = 0xffff;

/// Exact sizing, index modulus = `bits` (every modern filter).
pub const NOROUND: u32 = 1;
/// Legacy: the capacity argument is log2 of the bit count.
pub const ENTS_IS_BITS: u32 = 2;
/// 64-bit MurmurHash64A hashing instead of 32-bit MurmurHash2.
pub const FORCE64: u32 = 4;
/// The chain never grows; a full filter rejects new items.
pub const NO_SCALING: u32 = 8;
/// All option bits a dump header may carry.
pub const OPTIONS_MASK: u32 = NOROUND | ENTS_IS_BITS | FORCE64 | NO_SCALING;

/// Largest data chunk of BF.SCANDUMP and of the AOF rewrite (docs/bloom.md §10).
pub const CHUNK_MAX: u64 = 16 * 1024 * 1024;
/// RDB encoding version written by `rdb_save`.
pub const ENCODING_VERSION: i32 = 4;

/// The data type (`TYPE` reply, RDB module id).
pub const TYPE: crate::ModuleType = crate::ModuleType {
    name: c"MBbloom--",
    encoding_version: ENCODING_VERSION,
    commands: "BF.",
    family: "bloom",
    // valkey-bloom knows BF.ADD but has no MBbloom-- (and no BF.SCANDUMP);
    // rsbloom has BF.SCANDUMP in both its Bloom flavours.
    probe: "BF.SCANDUMP",
    chunked: Some(crate::module_type::Chunked {
        scandump: "BF.SCANDUMP",
        loadchunk: "BF.LOADCHUNK",
        splits: true,
    }),
    volatile: None,
    added: None,
    flavour: Some(crate::module_type::Flavour {
        module: "RedisBloom",
        shared: "BF.ADD",
        why: crate::module_type::BLOOM_FLAVOURS,
    }),
    config: &[],
    tour: &[
        &["BF.RESERVE", "K", "0.01", "100"],
        &["BF.ADD", "K", "a"],
        &["BF.MADD", "K", "b", "c"],
        &["BF.INSERT", "K", "ITEMS", "d"],
        &["BF.EXISTS", "K", "a"],
        &["BF.MEXISTS", "K", "a", "z"],
        &["BF.CARD", "K"],
        &["BF.INFO", "K"],
    ],
};

/// ln 2 and ln² 2 as RedisBloom spells them (not the exact doubles, docs/bloom.md §1).
#[allow(clippy::approx_constant)] // deliberately RedisBloom's truncated value
pub const LN2C: f64 = 0.693147180559945;
pub const LN2SQC: f64 = 0.480453013918201;

/// Each new link gets the previous link's error times this.
const ERROR_TIGHTENING: f64 = 0.5;

/// BF.INFO Size's C record sizes of a 64-bit build (docs/bloom.md §7).
const CHAIN_RECORD: u64 = 32;
const LINK_RECORD: u64 = 64;

/// What a key holding a module value costs the server beyond what MEMORY
/// USAGE adds itself (the key and its object): the `moduleValue` record
/// (16 bytes) and the key's slot in the keyspace table (8). Measured on
/// Redis 8.6 and Valkey 9.1 (bench/small_keys.py, docs/performance.md).
const SERVER_RECORDS: u64 = 24;

/// Seeds of the first hash of the pair (docs/bloom.md §2).
const SEED64: u64 = 0xc6a4a7935bd1e995;
const SEED32: u32 = 0x9747b28c;

/// The two hashes an item is reduced to; link `i`-th probe is `a + i*b`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashPair {
    pub a: u64,
    pub b: u64,
}

/// Why a chain or link could not be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateError {
    /// Parameters out of range ("could not create filter").
    Invalid,
    /// The bit array could not be allocated.
    OutOfMemory,
}

/// Result of adding one item (docs/bloom.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    /// Newly added (reply 1).
    Added,
    /// Already (or falsely) present, nothing changed (reply 0).
    Present,
    /// Non-scaling filter at capacity ("full", -2).
    Full,
    /// A new link could not be created; chain unchanged ("error", -1).
    Error,
    /// A new link would take the chain above the key memory limit; chain
    /// unchanged.
    OverLimit,
}

/// A dump header or RDB value was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadError {
    /// The RDB stream ended early or held a primitive of the wrong kind.
    Read,
    /// RDB encoding version this module cannot read.
    Version,
    /// A field failed validation; the text names it (for logs and tests).
    Invalid(&'static str),
    /// A bit array could not be allocated.
    OutOfMemory,
}

/// A scalable Bloom filter: chain fields of docs/bloom.md §1 plus its links,
/// oldest first (see [`store`]). The chain's `size` is the sum of its
/// links' (every loader checks it, every add keeps it). Unsized: it is its
/// block, which the keyspace points to, and lives in a `Box<Chain>`.
#[repr(transparent)]
pub struct Chain {
    store: Store,
}

impl PartialEq for Chain {
    fn eq(&self, other: &Chain) -> bool {
        (self.options(), self.growth()) == (other.options(), other.growth())
            && *self.links() == *other.links()
    }
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        out.debug_struct("Chain")
            .field("options", &self.options())
            .field("growth", &self.growth())
            .field("links", &&*self.links())
            .finish()
    }
}

impl Chain {
    /// A new chain of one link (docs/bloom.md §4) with options FORCE64|NOROUND, plus
    /// NO_SCALING when `nonscaling`. The caller has applied the 0.25 error cap.
    pub fn new(
        capacity: u64,
        error_rate: f64,
        growth: u32,
        nonscaling: bool,
    ) -> Result<Box<Chain>, CreateError> {
        let (options, first_error) = Self::first_link(capacity, error_rate, nonscaling)?;
        let link = LooseLink::create(capacity, first_error, options)?;
        let mut links = Vec::new();
        links
            .try_reserve_exact(1)
            .map_err(|_| CreateError::OutOfMemory)?;
        links.push(link);
        Chain::from_parts(options, growth, links).map_err(|_| CreateError::OutOfMemory)
    }

    /// BF.INFO Size of the chain [`Chain::new`] would create, computed
    /// without allocating it.
    pub fn new_size(capacity: u64, error_rate: f64, nonscaling: bool) -> Result<u64, CreateError> {
        let (options, first_error) = Self::first_link(capacity, error_rate, nonscaling)?;
        let bytes = size_link(capacity, first_error, options)?.bytes;
        Ok((CHAIN_RECORD + LINK_RECORD).saturating_add(bytes))
    }

    /// The options and error rate of a new chain's first link.
    fn first_link(
        capacity: u64,
        error_rate: f64,
        nonscaling: bool,
    ) -> Result<(u32, f64), CreateError> {
        if capacity == 0 || !(error_rate > 0.0 && error_rate < 1.0) {
            return Err(CreateError::Invalid);
        }
        Ok(if nonscaling {
            (FORCE64 | NOROUND | NO_SCALING, error_rate)
        } else {
            (FORCE64 | NOROUND, error_rate * ERROR_TIGHTENING)
        })
    }

    /// Assembles a chain of `links` (at least one); callers have validated
    /// every part, the counts with [`loose_items`].
    fn from_parts(
        options: u32,
        growth: u32,
        links: Vec<LooseLink>,
    ) -> Result<Box<Chain>, crate::alloc::AllocError> {
        Ok(Chain::of(Store::new(options, growth, links)?))
    }

    fn of(store: Box<Store>) -> Box<Chain> {
        // SAFETY: Chain is a transparent wrapper of Store.
        unsafe { Box::from_raw(Box::into_raw(store) as *mut Chain) }
    }

    /// The chain whose block starts at `start` (a `Box<Chain>`'s address:
    /// what the keyspace holds).
    ///
    /// # Safety
    /// `start` must be the address of a live `Box<Chain>`.
    pub unsafe fn at(start: NonNull<u8>) -> NonNull<Chain> {
        // SAFETY: per the contract; Chain is a transparent Store.
        let store = unsafe { Store::at(start) };
        // SAFETY: derived from a non-null pointer.
        unsafe { NonNull::new_unchecked(store.as_ptr() as *mut Chain) }
    }

    /// The hash pair of `item` (docs/bloom.md §2); the function depends only on FORCE64.
    #[inline]
    pub fn hash(&self, item: &[u8]) -> HashPair {
        hash(self.options(), item)
    }

    /// Adds `item` (docs/bloom.md §6), without a memory limit.
    pub fn add(&mut self, item: &[u8]) -> AddOutcome {
        let h = self.hash(item);
        self.add_hashed(h, None)
    }

    /// Adds an item by its precomputed pair (docs/bloom.md §6). Present means present in
    /// any link; the newest, when it has room, is checked and written in one
    /// pass. A scale-out that would take the chain above `limit` bytes
    /// (crate::limit) is refused.
    pub fn add_hashed(&mut self, h: HashPair, limit: Option<u64>) -> AddOutcome {
        add(&mut self.store.links_mut(), h, limit)
    }

    /// Whether `item` is (possibly falsely) present.
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hashed(self.hash(item))
    }

    /// Membership by pair (see [`contains`]).
    pub fn contains_hashed(&self, h: HashPair) -> bool {
        contains(&self.links(), h)
    }

    /// Prefetches what adding or checking `h` will read (see [`prefetch`]).
    #[inline]
    pub fn prefetch(&self, h: HashPair, all: bool) {
        prefetch(&self.links(), h, all)
    }

    /// Adds `items` in order, as repeated [`Chain::add_hashed`] under
    /// `limit` would (each item sees the bits of the ones before it),
    /// calling `each` with every outcome until it returns `false`; the cache
    /// misses of a batch overlap (see [`crate::prefetch::pipelined`]).
    #[inline]
    pub fn add_batch<I: AsRef<[u8]>>(
        &mut self,
        items: &[I],
        limit: Option<u64>,
        mut each: impl FnMut(AddOutcome) -> bool,
    ) {
        let options = self.options();
        crate::prefetch::pipelined(
            &mut self.store.links_mut(),
            items,
            |_, item| hash(options, item.as_ref()),
            |links, h| prefetch(links, h, true),
            |links, h| each(add(links, h, limit)),
        );
    }

    /// Membership of each of `items`, in order, with the prefetching of
    /// [`Chain::add_batch`]. Only the first probe of an item is prefetched
    /// while most recent items were absent (an absent item usually stops
    /// there, and on a large filter each needless prefetch costs a page
    /// walk); all of them once most were present (a present item reads
    /// them all, and one by one their misses would queue).
    #[inline]
    pub fn contains_batch<I: AsRef<[u8]>>(&self, items: &[I], mut each: impl FnMut(bool)) {
        let mut recent = RECENT_CHECKS.load(Ordering::Relaxed);
        let options = self.options();
        crate::prefetch::pipelined(
            (&*self.links(), &mut recent),
            items,
            |_, item| hash(options, item.as_ref()),
            |(links, recent), h| {
                prefetch(links, h, recent.count_ones() > RECENT_MASK.count_ones() / 2)
            },
            |(links, recent), h| {
                let present = contains(links, h);
                **recent = (**recent << 1 | u32::from(present)) & RECENT_MASK;
                each(present);
                true
            },
        );
        RECENT_CHECKS.store(recent, Ordering::Relaxed);
    }

    /// A deep copy (COPY command); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Box<Chain>, crate::alloc::AllocError> {
        Ok(Chain::of(self.store.try_clone()?))
    }

    /// The bit arrays allocated apart from the chain's block, for active
    /// defragmentation and lazy freeing.
    pub fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn crate::alloc::Block)) {
        self.store.for_each_block_mut(f)
    }

    /// The link records of a chain that has them apart (they point to the
    /// bit arrays), for active defragmentation.
    pub fn for_each_linked_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn crate::alloc::Block)) {
        self.store.for_each_linked_block_mut(f)
    }

    /// Re-derives what points into the chain's block after the block moved
    /// (active defragmentation copied it).
    pub fn moved(&mut self) {
        self.store.moved()
    }

    /// What the chain costs the server (MEMORY USAGE): its allocations,
    /// each in its size class, and the server's records of a module value
    /// that MEMORY USAGE leaves out ([`SERVER_RECORDS`]). Not BF.INFO Size,
    /// which is RedisBloom's formula.
    pub fn memory_usage(&self) -> u64 {
        SERVER_RECORDS.saturating_add(self.store.allocated())
    }

    /// BF.INFO Capacity: sum of link capacities (wrapping like the C sum).
    pub fn capacity(&self) -> u64 {
        self.links()
            .iter()
            .fold(0u64, |acc, l| acc.wrapping_add(l.entries()))
    }

    /// BF.INFO Size (docs/bloom.md §7): C record sizes of a 64-bit build plus bit arrays.
    pub fn size_bytes(&self) -> u64 {
        let (links, bytes) = self.store.arrays();
        info_size(links, bytes)
    }

    /// BF.INFO Size the chain had with its first `links` links: links are
    /// only ever appended, and never change size.
    pub fn size_bytes_at(&self, links: usize) -> u64 {
        let (links, bytes) = self.store.first_arrays(links);
        info_size(links, bytes)
    }

    pub fn num_links(&self) -> usize {
        self.store.num_links()
    }

    /// Total items added to the chain (BF.CARD): the sum of the links'
    /// counts, which loaders check fits (and adds stop at u64::MAX).
    pub fn items(&self) -> u64 {
        self.links()
            .iter()
            .fold(0u64, |acc, l| acc.saturating_add(l.size()))
    }

    /// The counters agree as every loader requires and every add keeps:
    /// each link count within its capacity, their sum within 64 bits.
    pub fn counts_agree(&self) -> bool {
        let sum = self.links().iter().try_fold(0u64, |acc, l| {
            acc.checked_add(l.size())
                .filter(|_| link::count_fits(l.size(), l.entries()))
        });
        sum.is_some()
    }

    /// The growth factor, or `None` for a non-scaling chain.
    pub fn expansion(&self) -> Option<u32> {
        (self.options() & NO_SCALING == 0).then_some(self.growth())
    }

    pub fn links(&self) -> Links<'_> {
        self.store.links()
    }

    /// The links, to change their bits and counts (BF.LOADCHUNK, BF.MERGE).
    fn links_mut(&mut self) -> LinksMut<'_> {
        self.store.links_mut()
    }

    /// Link `i`'s bit array.
    pub fn link_data(&self, i: usize) -> Option<&[u8]> {
        self.store.link_data(i)
    }

    pub fn options(&self) -> u32 {
        self.store.options()
    }

    /// The raw growth field (also for non-scaling chains).
    pub fn growth(&self) -> u32 {
        self.store.growth()
    }
}

/// The chain count of loaded `links` when it is `size` and each link's
/// count fits its capacity (as [`Chain::counts_agree`] requires).
fn loose_items(links: &[LooseLink], size: u64) -> Result<(), LoadError> {
    let sum = links.iter().try_fold(0u64, |acc, l| {
        acc.checked_add(l.size())
            .filter(|_| link::count_fits(l.size(), l.entries()))
    });
    if sum == Some(size) {
        Ok(())
    } else {
        Err(LoadError::Invalid("link sizes differ from chain size"))
    }
}

/// The hash pair of `item` (docs/bloom.md §2) under chain `options`: the
/// function depends only on FORCE64.
fn hash(options: u32, item: &[u8]) -> HashPair {
    if options & FORCE64 == 0 {
        return hash32(item);
    }
    let a = murmur64a(item, SEED64);
    HashPair {
        a,
        b: murmur64a(item, a),
    }
}

/// [`hash`] of a legacy chain (no FORCE64); out of line, away from the
/// path of every chain made since RedisBloom 2.0.
#[cold]
#[inline(never)]
fn hash32(item: &[u8]) -> HashPair {
    let a = murmur2(item, SEED32);
    HashPair {
        a: u64::from(a),
        b: u64::from(murmur2(item, a)),
    }
}

/// Links whose first probes [`contains`] reads side by side.
const GROUP: usize = 16;

/// Membership by pair in `links`: whether some link has every probed bit
/// set. The first probes of a group of links are read side by side, their
/// loads waiting on no branch, so that their cache misses overlap; the links
/// whose first bit is set (half of them for an absent item) go on one by
/// one, newest first, as recent items are likelier.
fn contains(links: &[Link], h: HashPair) -> bool {
    if let [link] = links {
        return link.contains(h);
    }
    links.rchunks(GROUP).any(|group| {
        let mut first = [0u64; GROUP];
        let mut set = 0u32;
        for ((link, x), j) in group.iter().zip(&mut first).zip(0..) {
            *x = link.first_probe(h);
            set |= u32::from(link.bit(*x)) << j;
        }
        while set != 0 {
            let j = 31 - set.leading_zeros();
            set ^= 1 << j;
            let (Some(link), Some(&x)) = (group.get(j as usize), first.get(j as usize)) else {
                break;
            };
            if link.contains_after(h, x) {
                return true;
            }
        }
        false
    })
}

/// Prefetches what adding or checking `h` will read: every probe of the
/// newest link (`all`: an add, or a check of a likely present item) or
/// only its first, and the first probe of older links. A hint only.
#[inline]
fn prefetch(links: &[Link], h: HashPair, all: bool) {
    let Some((newest, older)) = links.split_last() else {
        return;
    };
    newest.prefetch(h, if all { newest.hashes() } else { 1 });
    for link in older {
        link.prefetch(h, 1);
    }
}

/// Adds an item by its pair (docs/bloom.md §6), as [`Chain::add_hashed`].
fn add(links: &mut LinksMut<'_>, h: HashPair, limit: Option<u64>) -> AddOutcome {
    let Some((newest, older)) = links.split_last() else {
        return AddOutcome::Error;
    };
    if contains(older, h) {
        return AddOutcome::Present;
    }
    // The chain count is the sum of the links' (checked on load): one
    // that cannot grow refuses the add before any bit is set.
    let items = links
        .iter()
        .fold(0u64, |acc, l| acc.saturating_add(l.size()));
    if items == u64::MAX {
        return AddOutcome::Error;
    }
    if newest.size() >= newest.entries() {
        if newest.contains(h) {
            return AddOutcome::Present;
        }
        if links.options() & NO_SCALING != 0 {
            return AddOutcome::Full;
        }
        if let Err(refused) = grow(links, limit) {
            return refused;
        }
    }
    match links.last_mut().map(|target| target.add(h)) {
        Some(true) => AddOutcome::Added,
        Some(false) => AddOutcome::Present,
        None => AddOutcome::Error,
    }
}

/// Appends a link of `entries * growth` capacity and half the error of the
/// newest one, unless that would take the chain's BF.INFO Size above
/// `limit`; on failure the chain is unchanged. Out of line: it runs once
/// per link, and inlined it would spread [`add`] over more cache lines.
#[cold]
#[inline(never)]
fn grow(links: &mut LinksMut<'_>, limit: Option<u64>) -> Result<(), AddOutcome> {
    let cur = links.last().ok_or(AddOutcome::Error)?;
    let entries = cur.entries().wrapping_mul(u64::from(links.growth()));
    let error = cur.error() * ERROR_TIGHTENING;
    let options = links.options();
    let bytes = size_link(entries, error, options)
        .map_err(|_| AddOutcome::Error)?
        .bytes;
    let grown = size_bytes(links)
        .saturating_add(LINK_RECORD)
        .saturating_add(bytes);
    if crate::limit::exceeds(limit, grown) {
        return Err(AddOutcome::OverLimit);
    }
    let link = LooseLink::create(entries, error, options).map_err(|_| AddOutcome::Error)?;
    links.push(link).map_err(|_| AddOutcome::Error)
}

/// BF.INFO Size of a chain of `links` (docs/bloom.md §7): C record sizes of
/// a 64-bit build plus bit arrays.
fn size_bytes(links: &[Link]) -> u64 {
    info_size(links.len(), link::total_bytes(links))
}

/// BF.INFO Size of `links` links of `bytes` bits in all (wrapping like
/// RedisBloom's C sum).
fn info_size(links: usize, bytes: u64) -> u64 {
    CHAIN_RECORD
        .wrapping_add((links as u64).wrapping_mul(LINK_RECORD))
        .wrapping_add(bytes)
}
