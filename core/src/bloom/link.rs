//! One link of a chain: its parameters, its bit array and the bit probing of docs/bloom.md §5.

use super::sizing::{bits_per_entry, hash_count, size_link};
use super::{CreateError, HashPair, LoadError};
use crate::alloc::try_zeroed;
use std::hint::select_unpredictable;
use std::ptr::NonNull;

/// Upper bound on `hashes` of loaded links. A genuine link has at most 1075
/// (ceil(LN2c · bpe) for the smallest positive error, 5e-324); the bound keeps
/// crafted data from making every add/check arbitrarily slow (docs/differences.md §1 item 11).
const MAX_HASHES: u64 = 1100;

/// Highest legal power-of-two exponent; 2^n2 must fit in 64 bits.
const MAX_N2: u64 = 63;

/// What a link is but its storage: the parameters fixed at its creation
/// and its item count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fields {
    entries: u64,
    error: f64,
    bpe: f64,
    size: u64,
    /// 2^64 mod the index modulus: what a wrap of the 64-bit probe sum takes
    /// off the index, so probes advance without a division (see [`Probes`]).
    wrap: u64,
    hashes: u32,
    n2: u8,
}

/// A sub-filter (docs/bloom.md §1) as its chain holds it. Invariant: every
/// probed bit index is below `8 * len`, so probing never leaves the array.
///
/// The chain owns the bit array (`data`, `len` bytes): its own allocation,
/// or for the first link the start of the chain's block (super::store).
/// `bits` is `8 * len` (validated on load) and the index modulus is derived
/// from it.
///
/// 56 bytes: the length, `hashes` and `n2` share a word, so a chain's
/// records (16 bytes, then one per link) take a smaller size class than
/// RedisBloom's 64-byte link array from two links on (five: 320 bytes
/// where 16 + 5 × 64 would take 384).
pub struct Link {
    entries: u64,
    error: f64,
    bpe: f64,
    size: u64,
    /// As [`Fields`]'s.
    wrap: u64,
    data: NonNull<u8>,
    /// `len` (bits 0..44), `hashes` (44..55), `n2` (55..61).
    shape: u64,
}

/// Bits of [`Link::shape`] holding the bit array's length.
const LEN_BITS: u32 = 44;
/// Largest bit array a link can have: 16 TiB, far above any machine's memory.
pub(super) const MAX_LINK_BYTES: u64 = (1 << LEN_BITS) - 1;
const HASHES_AT: u32 = LEN_BITS;
/// 11 bits: `hashes` is at most [`MAX_HASHES`].
const HASHES_MASK: u64 = (1 << 11) - 1;
const N2_AT: u32 = HASHES_AT + HASHES_MASK.count_ones();
/// 6 bits: `n2` is at most [`MAX_N2`].
const N2_MASK: u64 = (1 << 6) - 1;
// What a loaded link may hold fits its bits of `shape`.
const _: () =
    assert!(MAX_HASHES <= HASHES_MASK && MAX_N2 <= N2_MASK && N2_AT + N2_MASK.count_ones() <= 64);

// SAFETY: a link is a record inside its chain's block, reachable only
// through the chain, which owns the bit array `data` points to as a Box would.
unsafe impl Send for Link {}
// SAFETY: as above; `&Link` only reads the bit array.
unsafe impl Sync for Link {}

impl PartialEq for Link {
    fn eq(&self, other: &Link) -> bool {
        self.fields() == other.fields() && self.data() == other.data()
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        out.debug_struct("Link")
            .field("fields", &self.fields())
            .field("bytes", &self.bytes())
            .finish()
    }
}

/// A link not yet in a chain: its fields and its own bit array.
#[derive(Debug, PartialEq)]
pub(crate) struct LooseLink {
    pub(super) f: Fields,
    pub(super) data: Box<[u8]>,
}

/// Link fields as read from a header or an RDB value, before validation.
/// `hashes` and `n2` stay 64-bit until range-checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LinkMeta {
    pub entries: u64,
    pub error: f64,
    pub bpe: f64,
    pub hashes: u64,
    pub bits: u64,
    pub n2: u64,
    pub size: u64,
}

/// Whether a link of capacity `entries` can hold `size` items. Adds go to
/// a link below its capacity only, and a new link takes the add that made
/// it: a legacy ENTS_IS_BITS chain can scale out to a link of capacity 0
/// (2^n2 bits below one entry's bpe), which then holds 1 (docs/bloom.md §9).
/// The bit arrays' total length of `links` (wrapping, like RedisBloom's C
/// sum in BF.INFO Size).
pub(super) fn total_bytes(links: &[Link]) -> u64 {
    links
        .iter()
        .fold(0u64, |acc, l| acc.wrapping_add(l.bytes()))
}

pub(super) fn count_fits(size: u64, entries: u64) -> bool {
    size <= entries.max(1)
}

impl LinkMeta {
    /// Checks of docs/bloom.md §9 (and docs/differences.md §1 items 10–11)
    /// that do not need the bit array, so they can run before it is read or
    /// allocated.
    pub(crate) fn check(&self) -> Result<(), LoadError> {
        if !(self.error > 0.0 && self.error < 1.0) {
            return Err(LoadError::Invalid("error rate outside (0, 1)"));
        }
        if self.n2 > MAX_N2 {
            return Err(LoadError::Invalid("n2 above 63"));
        }
        if self.bits == 0 || (self.n2 != 0 && self.bits < 1u64 << self.n2) {
            return Err(LoadError::Invalid("bits zero or below 2^n2"));
        }
        if !(1..=MAX_HASHES).contains(&self.hashes) || self.hashes != hash_count(self.bpe) {
            return Err(LoadError::Invalid("hashes do not match bpe"));
        }
        if !count_fits(self.size, self.entries) {
            return Err(LoadError::Invalid("link count above its capacity"));
        }
        Ok(())
    }

    /// Dump headers must carry the bpe that creation derives from the error
    /// (true for every genuine dump); this pins `hashes` to the error
    /// (docs/differences.md §1 item 11).
    pub(crate) fn check_exact_bpe(&self) -> Result<(), LoadError> {
        if self.bpe == bits_per_entry(self.error) {
            Ok(())
        } else {
            Err(LoadError::Invalid("bpe does not match error rate"))
        }
    }

    /// Checks that `bytes` bytes of storage hold exactly `bits` bits, and
    /// that a link record can hold their length ([`MAX_LINK_BYTES`]; what no
    /// machine's memory holds counts as an allocation that fails).
    pub(crate) fn check_bytes(&self, bytes: u64) -> Result<(), LoadError> {
        if bytes.checked_mul(8) != Some(self.bits) {
            return Err(LoadError::Invalid("bits differ from 8 * bytes"));
        }
        if bytes > MAX_LINK_BYTES {
            return Err(LoadError::OutOfMemory);
        }
        Ok(())
    }
}

impl LooseLink {
    /// A new, empty link (docs/bloom.md §3).
    pub(crate) fn create(entries: u64, error: f64, options: u32) -> Result<LooseLink, CreateError> {
        let s = size_link(entries, error, options)?;
        let data = try_zeroed(s.bytes).map_err(|_| CreateError::OutOfMemory)?;
        let meta = LinkMeta {
            entries: s.entries,
            error: s.error,
            bpe: s.bpe,
            hashes: u64::from(s.hashes),
            bits: s.bits,
            n2: u64::from(s.n2),
            size: 0,
        };
        // Sizing always yields valid links; the check keeps a single entry point.
        LooseLink::from_meta(&meta, data).map_err(|_| CreateError::Invalid)
    }

    /// A link over `data` (adopted, not copied) after full validation.
    pub(crate) fn from_meta(meta: &LinkMeta, data: Box<[u8]>) -> Result<LooseLink, LoadError> {
        meta.check()?;
        meta.check_bytes(data.len() as u64)?;
        let invalid = LoadError::Invalid("link fields out of range");
        let n2 = u8::try_from(meta.n2).map_err(|_| invalid)?;
        let modulus = modulus(n2, meta.bits);
        if modulus == 0 {
            return Err(invalid);
        }
        let f = Fields {
            entries: meta.entries,
            error: meta.error,
            bpe: meta.bpe,
            size: meta.size,
            wrap: 0u64.wrapping_sub(modulus) % modulus,
            hashes: u32::try_from(meta.hashes).map_err(|_| invalid)?,
            n2,
        };
        Ok(LooseLink { f, data })
    }

    /// A copy of `link` with its own bit array, allocated fallibly.
    pub(crate) fn copy_of(link: &Link) -> Result<LooseLink, crate::alloc::AllocError> {
        Ok(LooseLink {
            f: link.fields(),
            data: crate::alloc::try_copy(link.data())?,
        })
    }

    /// Items added to this link.
    pub(crate) fn size(&self) -> u64 {
        self.f.size
    }

    pub(crate) fn entries(&self) -> u64 {
        self.f.entries
    }
}

impl Fields {
    /// The fields of a modern link (index modulus = bits, no n2) that follow
    /// from its capacity, error rate, count and `len` bytes of bits: what a
    /// compact chain stores is these four (super::store).
    pub(super) fn derived(entries: u64, error: f64, size: u64, len: usize) -> Fields {
        let bpe = bits_per_entry(error);
        let bits = (len as u64).wrapping_mul(8).max(1);
        Fields {
            entries,
            error,
            bpe,
            size,
            wrap: 0u64.wrapping_sub(bits) % bits,
            hashes: hash_count(bpe) as u32,
            n2: 0,
        }
    }

    /// Whether every field but those four follows from them.
    pub(super) fn is_derived(&self, len: usize) -> bool {
        *self == Fields::derived(self.entries, self.error, self.size, len)
    }

    pub(super) fn entries(&self) -> u64 {
        self.entries
    }
    pub(super) fn error(&self) -> f64 {
        self.error
    }
    pub(super) fn size(&self) -> u64 {
        self.size
    }
}

impl Link {
    /// The record of a link whose `len`-byte bit array is at `data`.
    ///
    /// # Safety
    /// `data` must stay valid for `len` bytes, owned by the chain holding
    /// the record, for as long as the record is used; `len` is at most
    /// [`MAX_LINK_BYTES`] (checked with the bits on load, `check_bytes`).
    pub(super) unsafe fn placed(f: Fields, data: NonNull<u8>, len: usize) -> Link {
        debug_assert!(len as u64 <= MAX_LINK_BYTES && u64::from(f.hashes) <= MAX_HASHES);
        debug_assert!(u64::from(f.n2) <= MAX_N2);
        Link {
            entries: f.entries,
            error: f.error,
            bpe: f.bpe,
            size: f.size,
            wrap: f.wrap,
            data,
            shape: len as u64 | u64::from(f.hashes) << HASHES_AT | u64::from(f.n2) << N2_AT,
        }
    }

    /// The link's fields, without its storage.
    pub(super) fn fields(&self) -> Fields {
        Fields {
            entries: self.entries,
            error: self.error,
            bpe: self.bpe,
            size: self.size,
            wrap: self.wrap,
            hashes: self.hashes(),
            n2: self.n2(),
        }
    }

    /// Where the bit array is (the chain frees it, or moves it on defrag).
    pub(super) fn data_ptr(&self) -> NonNull<u8> {
        self.data
    }

    /// Makes `data` this link's bit array (same length, moved there).
    ///
    /// # Safety
    /// As for [`Link::placed`].
    pub(super) unsafe fn set_data_ptr(&mut self, data: NonNull<u8>) {
        self.data = data;
    }

    /// `v` modulo the index modulus (docs/bloom.md §5): a mask for the
    /// power-of-two moduli of legacy links.
    #[inline]
    fn reduce(&self, v: u64) -> u64 {
        let d = modulus(self.n2(), self.bits());
        if self.n2() > 0 {
            v & (d - 1)
        } else {
            v.checked_rem(d).unwrap_or(0)
        }
    }

    /// The first bit index probed for `h`; every link has one (`hashes` is
    /// at least 1: [`hash_count`] of a positive bpe, and checked on load).
    #[inline]
    pub(super) fn first_probe(&self, h: HashPair) -> u64 {
        self.reduce(h.a)
    }

    /// The bit indices probed for `h` after the first, at `first`.
    #[inline]
    fn probes_after(&self, h: HashPair, first: u64) -> Probes {
        Probes::new(
            h,
            first,
            self.reduce(h.b),
            modulus(self.n2(), self.bits()),
            self.wrap,
            self.hashes(),
        )
    }

    /// Prefetches the bytes of the first `limit` probes of `h`.
    #[inline]
    pub(crate) fn prefetch(&self, h: HashPair, limit: u32) {
        let first = self.first_probe(h);
        self.prefetch_bit(first);
        if limit > 1 {
            for x in self.probes_after(h, first).take(limit as usize - 1) {
                self.prefetch_bit(x);
            }
        }
    }

    #[inline]
    fn prefetch_bit(&self, x: u64) {
        if let Some(byte) = self.data().get((x >> 3) as usize) {
            crate::prefetch::prefetch(byte);
        }
    }

    /// Whether every probed bit is set (stops at the first unset one).
    #[inline]
    pub(crate) fn contains(&self, h: HashPair) -> bool {
        let first = self.first_probe(h);
        self.bit(first) && self.contains_after(h, first)
    }

    /// Whether the probed bits of `h` after the first, at `first`, are set.
    #[inline]
    pub(super) fn contains_after(&self, h: HashPair, first: u64) -> bool {
        self.probes_after(h, first).all(|x| self.bit(x))
    }

    /// Whether bit `x` is set.
    #[inline]
    pub(super) fn bit(&self, x: u64) -> bool {
        self.data()
            .get((x >> 3) as usize)
            .is_some_and(|byte| byte & (1 << (x & 7)) != 0)
    }

    /// Sets the probed bits of `h` that are unset, in the same pass that
    /// checks them; counts the item and returns true when any was unset.
    /// A present item writes nothing (no copy-on-write after a fork).
    pub(crate) fn add(&mut self, h: HashPair) -> bool {
        let first = self.first_probe(h);
        let probes = std::iter::once(first).chain(self.probes_after(h, first));
        let data = self.data_mut();
        let mut added = false;
        probes.for_each(|x| {
            if let Some(byte) = data.get_mut((x >> 3) as usize) {
                let mask = 1 << (x & 7);
                if *byte & mask == 0 {
                    *byte |= mask;
                    added = true;
                }
            }
        });
        if added {
            // Below `entries` here (the chain grows at it): never saturates.
            self.size = self.size.saturating_add(1);
        }
        added
    }

    /// The bit array, for LOADCHUNK and BF.MERGE.
    pub(crate) fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: the chain keeps `data` valid for `len` bytes (see
        // `placed`), and `&mut self` comes from `&mut` of that chain.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.len()) }
    }

    /// Sets the item count of a merged link (BF.MERGE); the caller keeps
    /// it within [`count_fits`].
    pub(crate) fn set_size(&mut self, size: u64) {
        self.size = size;
    }

    /// Capacity of the link.
    pub fn entries(&self) -> u64 {
        self.entries
    }
    pub fn error(&self) -> f64 {
        self.error
    }
    /// Bits per entry.
    pub fn bpe(&self) -> f64 {
        self.bpe
    }
    pub fn hashes(&self) -> u32 {
        ((self.shape >> HASHES_AT) & HASHES_MASK) as u32
    }
    /// Stored bit count (8 × bytes).
    pub fn bits(&self) -> u64 {
        self.bytes() << 3
    }
    /// log2 of the index modulus of legacy power-of-two links, else 0.
    pub fn n2(&self) -> u8 {
        ((self.shape >> N2_AT) & N2_MASK) as u8
    }
    /// Items added to this link.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// Length of the bit array in bytes.
    pub fn bytes(&self) -> u64 {
        self.shape & MAX_LINK_BYTES
    }
    fn len(&self) -> usize {
        self.bytes() as usize
    }
    /// The bit array (bit x is byte x >> 3, mask 1 << (x & 7)).
    pub fn data(&self) -> &[u8] {
        // SAFETY: the chain keeps `data` valid for `len` bytes (see `placed`).
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len()) }
    }
}

/// Index modulus (docs/bloom.md §5): 2^n2 for legacy power-of-two links, else `bits`.
#[inline]
fn modulus(n2: u8, bits: u64) -> u64 {
    if n2 > 0 {
        1u64 << n2
    } else {
        bits
    }
}

/// Iterator over the bit indices probed after the first: `(a + i*b) mod d`
/// for i in 1..count, with the sum in wrapping 64-bit arithmetic
/// (docs/bloom.md §5).
///
/// No division per probe: with `s_i` the 64-bit sum and `r_i = s_i mod d`,
/// `s_{i+1} = s_i + b - w·2^64` (w = 1 when the sum wraps), so
/// `r_{i+1} = (r_i + step) mod d` with `step` = `b mod d`, or when the sum
/// wraps `(b - 2^64) mod d`. Kept as `d - step` (in 1..=d), the step is
/// subtracted, and d added back on a borrow: nothing can overflow.
struct Probes {
    sum: u64,
    b: u64,
    index: u64,
    back: u64,
    wrapped_back: u64,
    modulus: u64,
    left: u32,
}

impl Probes {
    /// The probes after `first` (`a mod d`), from `step` = `b mod d` and
    /// `wrap` = `2^64 mod d`.
    #[inline]
    fn new(h: HashPair, first: u64, step: u64, modulus: u64, wrap: u64, count: u32) -> Probes {
        // d - (step - wrap) mod d.
        let (less, borrow) = wrap.overflowing_sub(step);
        Probes {
            sum: h.a,
            b: h.b,
            index: first,
            back: modulus - step,
            wrapped_back: select_unpredictable(borrow, less.wrapping_add(modulus), less),
            modulus,
            left: count.saturating_sub(1),
        }
    }
}

impl Iterator for Probes {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        self.left = self.left.checked_sub(1)?;
        let (sum, wrapped) = self.sum.overflowing_add(self.b);
        self.sum = sum;
        // Selects, not branches: each condition is a coin flip per probe.
        let back = select_unpredictable(wrapped, self.wrapped_back, self.back);
        let (r, borrow) = self.index.overflowing_sub(back);
        self.index = select_unpredictable(borrow, r.wrapping_add(self.modulus), r);
        Some(self.index)
    }
}

#[cfg(test)]
mod probe_tests {
    use super::*;

    /// The incremental reduction equals `(a + i*b) mod d` computed directly.
    fn check(a: u64, b: u64, d: u64, k: u32) {
        let wrap = 0u64.wrapping_sub(d) % d;
        let p = Probes::new(HashPair { a, b }, a % d, b % d, d, wrap, k);
        let got: Vec<u64> = std::iter::once(a % d).chain(p).collect();
        let want: Vec<u64> = (0..u64::from(k))
            .map(|i| a.wrapping_add(i.wrapping_mul(b)) % d)
            .collect();
        assert_eq!(got, want, "a={a} b={b} d={d}");
    }

    #[test]
    fn incremental_modulo_matches_division() {
        let mut x = 0x9e3779b97f4a7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let moduli = [
            1,
            2,
            3,
            7,
            8,
            1 << 20,
            9585059,
            (1 << 32) + 1,
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &d in &moduli {
            for &(a, b) in &[
                (0, 0),
                (u64::MAX, u64::MAX),
                (u64::MAX, 1),
                (d, d),
                (d - 1, d - 1),
            ] {
                check(a, b, d, 40);
            }
            for _ in 0..2000 {
                check(next(), next(), d, 25);
            }
        }
        for _ in 0..20000 {
            let d = next() >> (next() % 64);
            if d > 0 {
                check(next(), next(), d, 12);
            }
        }
    }
}
