//! One sub-filter: `N` buckets of `bs` one-byte slots, laid out consecutively.
//!
//! The record is 16 bytes, like RedisBloom's (bucket count and bucket size in
//! one word, then a thin pointer to the slots): a filter's record array is
//! allocated per filter, and identical filters must take identical memory.
//! The word also counts the occupied (non-zero) slots, so that a LOADCHUNK
//! chunk is checked against the item count without a scan of the filter
//! (docs/cuckoo.md §14); every write goes through this file and keeps it.

use std::ptr::NonNull;

use crate::alloc::{try_copy, try_zeroed, AllocError, Block};

/// `shape`: log2 N in the low bits, then the bucket size, then the occupied count.
const LOG2_BITS: u32 = 6;
const BS_SHIFT: u32 = LOG2_BITS;
const COUNT_SHIFT: u32 = BS_SHIFT + 8;
/// Slots a sub-filter may have: its occupied count must fit the 50 bits
/// left (1 PiB, beyond any allocation a server makes).
const MAX_SLOTS: u64 = (1 << (64 - COUNT_SHIFT)) - 1;
/// Bucket counts stay below 2^56 (docs/cuckoo.md §4): log2 N at most 55.
const MAX_LOG2: u32 = 55;

/// Invariants (checked by [`SubFilter::new`] and [`SubFilter::zeroed`], the
/// only constructors): `N` is a power of two below 2^56, `bs` is in 1..=255,
/// `N × bs ≤ MAX_SLOTS`, `slots` owns exactly `N × bs` bytes from the global
/// allocator (a `Box<[u8]>` in thin form), and the occupied count is the
/// number of non-zero slots.
pub(super) struct SubFilter {
    shape: u64,
    slots: NonNull<u8>,
}

// SAFETY: a SubFilter owns its slots exclusively, like the Box<[u8]> it was
// made from.
unsafe impl Send for SubFilter {}
unsafe impl Sync for SubFilter {}

/// Non-zero bytes of `b`: the fingerprints it holds (fingerprints are 1..=255).
///
/// Eight bytes a step, at memory speed: an RDB load counts every slot of
/// every sub-filter (a byte-wise count vectorises badly: 2.3 GB/s, 0.17 s
/// of a 4 s reload holding two 128 MiB filters). A byte `x` is non-zero
/// iff bit 7 of `((x & 0x7f) + 0x7f) | x` is set; up to 255 words add
/// their 0/1 bytes without a carry, then the bytes are summed.
pub(super) fn occupied_in(b: &[u8]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const ONES: u64 = 0x0101_0101_0101_0101;
    const PAIRS: u64 = 0x00ff_00ff_00ff_00ff;
    let (words, tail) = b.as_chunks::<8>();
    let mut total = 0;
    for block in words.chunks(255) {
        let mut bytes = 0u64;
        for w in block {
            let w = u64::from_ne_bytes(*w);
            bytes += ((((w & LOW7) + LOW7) | w) >> 7) & ONES;
        }
        // Four 16-bit sums (at most 510 each), then their total in the top 16 bits.
        let pairs = (bytes & PAIRS) + ((bytes >> 8) & PAIRS);
        total += pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48;
    }
    total + tail.iter().filter(|&&x| x != 0).count() as u64
}

impl SubFilter {
    /// The shape word (occupied count 0) and slot count of `num_buckets`
    /// buckets of `bs` slots, if the invariants allow them.
    fn shape(num_buckets: u64, bs: u16) -> Option<(u64, u64)> {
        let bs = u8::try_from(bs).ok().filter(|&b| b > 0)?;
        let len = num_buckets.checked_mul(u64::from(bs))?;
        let log2 = num_buckets.trailing_zeros();
        if !num_buckets.is_power_of_two() || log2 > MAX_LOG2 || len > MAX_SLOTS {
            return None;
        }
        Some((u64::from(log2) | u64::from(bs) << BS_SHIFT, len))
    }

    fn from_parts(shape: u64, slots: Box<[u8]>) -> SubFilter {
        SubFilter {
            shape,
            slots: NonNull::from(Box::leak(slots)).cast::<u8>(),
        }
    }

    /// Adopts `slots` as `num_buckets` buckets of `bs` slots, counting its
    /// fingerprints; `None` (and `slots` freed) unless the invariants hold.
    pub(super) fn new(num_buckets: u64, bs: u16, slots: Box<[u8]>) -> Option<SubFilter> {
        let (shape, len) = Self::shape(num_buckets, bs)?;
        if len != slots.len() as u64 {
            return None;
        }
        let mut f = Self::from_parts(shape, slots);
        f.set_occupied(occupied_in(f.slots()));
        Some(f)
    }

    /// `num_buckets` empty buckets of `bs` slots; the storage is not touched
    /// (lazily zeroed pages stay so).
    pub(super) fn zeroed(num_buckets: u64, bs: u16) -> Result<SubFilter, AllocError> {
        let (shape, len) = Self::shape(num_buckets, bs).ok_or(AllocError)?;
        Ok(Self::from_parts(shape, try_zeroed(len)?))
    }

    pub(super) fn try_clone(&self) -> Result<SubFilter, AllocError> {
        Ok(Self::from_parts(self.shape, try_copy(self.slots())?))
    }

    /// `N - 1`: bucket `h mod N` is `h & mask`.
    #[inline]
    pub(super) fn mask(&self) -> u64 {
        self.num_buckets() - 1
    }

    #[inline]
    pub(super) fn num_buckets(&self) -> u64 {
        1 << (self.shape & ((1 << LOG2_BITS) - 1))
    }

    #[inline]
    pub(super) fn bs(&self) -> usize {
        (self.shape >> BS_SHIFT) as u8 as usize
    }

    /// Slots holding a fingerprint.
    #[inline]
    pub(super) fn occupied(&self) -> u64 {
        self.shape >> COUNT_SHIFT
    }

    fn set_occupied(&mut self, n: u64) {
        let shape = self.shape & ((1 << COUNT_SHIFT) - 1);
        self.shape = shape | n.min(MAX_SLOTS) << COUNT_SHIFT;
    }

    /// Keeps the occupied count when a slot goes from `before` to `after`.
    #[inline]
    fn recount(&mut self, before: u8, after: u8) {
        match (before != 0, after != 0) {
            (false, true) => self.set_occupied(self.occupied().saturating_add(1)),
            (true, false) => self.set_occupied(self.occupied().saturating_sub(1)),
            _ => {}
        }
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        // Fits: it is the length of the Box the slots came from.
        self.num_buckets() as usize * self.bs()
    }

    #[inline]
    pub(super) fn slots(&self) -> &[u8] {
        // SAFETY: `slots` owns `len()` initialised bytes (invariants).
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr(), self.len()) }
    }

    /// Private: every write keeps the occupied count.
    #[inline]
    fn slots_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `slots`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.slots.as_ptr(), self.len()) }
    }

    /// Byte range of bucket `h mod N`, in full 64-bit arithmetic (docs/differences.md §1 item 6).
    #[inline]
    pub(super) fn bucket_range(&self, h: u64) -> Option<std::ops::Range<usize>> {
        let bs = self.bs();
        let start = usize::try_from(h & self.mask()).ok()?.checked_mul(bs)?;
        Some(start..start.checked_add(bs)?)
    }

    #[inline]
    pub(super) fn bucket(&self, h: u64) -> Option<&[u8]> {
        self.slots().get(self.bucket_range(h)?)
    }

    /// Offset of the first slot of bucket `h mod N` holding `fp` (0 = empty).
    #[inline]
    pub(super) fn find(&self, h: u64, fp: u8) -> Option<usize> {
        let range = self.bucket_range(h)?;
        let s = self
            .slots()
            .get(range.clone())?
            .iter()
            .position(|&b| b == fp)?;
        Some(range.start + s)
    }

    /// First empty slot in bucket `h1 mod N`, then in bucket `h2 mod N`.
    #[inline]
    pub(super) fn find_available(&self, h1: u64, h2: u64) -> Option<usize> {
        self.find(h1, 0).or_else(|| self.find(h2, 0))
    }

    #[inline]
    pub(super) fn set(&mut self, offset: usize, fp: u8) {
        if let Some(slot) = self.slots_mut().get_mut(offset) {
            let before = std::mem::replace(slot, fp);
            self.recount(before, fp);
        }
    }

    /// Exchanges `cur` with the slot at `offset` (a kick-out step).
    #[inline]
    pub(super) fn swap(&mut self, offset: usize, cur: &mut u8) {
        if let Some(slot) = self.slots_mut().get_mut(offset) {
            std::mem::swap(slot, cur);
            let after = *slot;
            self.recount(*cur, after);
        }
    }

    /// Copies `data` to the slots from `start` if it lies inside them and
    /// `fits` accepts the occupied count it would leave; else writes nothing.
    pub(super) fn load(
        &mut self,
        start: usize,
        data: &[u8],
        fits: impl FnOnce(u64) -> bool,
    ) -> bool {
        let Some(end) = start.checked_add(data.len()) else {
            return false;
        };
        let Some(dst) = self.slots().get(start..end) else {
            return false;
        };
        let after = self
            .occupied()
            .saturating_sub(occupied_in(dst))
            .saturating_add(occupied_in(data));
        if !fits(after) {
            return false;
        }
        if let Some(dst) = self.slots_mut().get_mut(start..end) {
            dst.copy_from_slice(data);
            self.set_occupied(after);
        }
        true
    }

    pub(super) fn count_in(&self, h: u64, fp: u8) -> u64 {
        self.bucket(h)
            .map_or(0, |b| b.iter().filter(|&&s| s == fp).count() as u64)
    }

    /// Clears the first slot holding `fp` in bucket `h1`, else in bucket `h2`.
    pub(super) fn delete(&mut self, h: super::CuckooHash) -> bool {
        let found = self.find(h.h1, h.fp).or_else(|| self.find(h.h2, h.fp));
        found.map(|off| self.set(off, 0)).is_some()
    }
}

impl Drop for SubFilter {
    fn drop(&mut self) {
        let slots = std::ptr::slice_from_raw_parts_mut(self.slots.as_ptr(), self.len());
        // SAFETY: `slots` came from a Box<[u8]> of exactly this length
        // (invariants) and is dropped once, here.
        drop(unsafe { Box::from_raw(slots) });
    }
}

impl Block for SubFilter {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.slots_mut()
    }

    unsafe fn adopt(&mut self, moved: NonNull<u8>) {
        // The old block is already freed (contract): just point elsewhere.
        self.slots = moved;
    }
}

impl PartialEq for SubFilter {
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape && self.slots() == other.slots()
    }
}

impl Eq for SubFilter {}

impl std::fmt::Debug for SubFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubFilter")
            .field("num_buckets", &self.num_buckets())
            .field("bucket_size", &self.bs())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn record_is_sixteen_bytes() {
        assert_eq!(std::mem::size_of::<SubFilter>(), 16);
    }

    #[test]
    fn new_checks_the_shape() {
        let ok = SubFilter::new(4, 3, vec![0; 12].into()).unwrap();
        assert_eq!((ok.num_buckets(), ok.bs(), ok.slots().len()), (4, 3, 12));
        assert!(SubFilter::new(4, 3, vec![0; 11].into()).is_none());
        assert!(SubFilter::new(3, 4, vec![0; 12].into()).is_none());
        assert!(SubFilter::new(4, 0, Box::default()).is_none());
        assert!(SubFilter::new(1, 256, vec![0; 256].into()).is_none());
        assert!(SubFilter::new(1 << 56, 1, Box::default()).is_none());
        assert!(SubFilter::shape(1 << 49, 1).is_some());
        assert!(SubFilter::shape(1 << 49, 2).is_none(), "2^50 slots");
    }

    /// Every write keeps the count of non-zero slots; a refused load writes nothing.
    #[test]
    fn writes_keep_the_occupied_count() {
        let mut f = SubFilter::new(4, 2, vec![0, 3, 0, 0, 9, 9, 0, 1].into()).unwrap();
        let check = |f: &SubFilter| assert_eq!(f.occupied(), occupied_in(f.slots()));
        assert_eq!(f.occupied(), 4);
        f.set(0, 5);
        f.set(1, 0);
        f.set(4, 6);
        check(&f);
        let mut cur = 7;
        f.swap(2, &mut cur);
        assert_eq!((cur, f.occupied()), (0, 5));
        f.swap(4, &mut cur);
        assert_eq!((cur, f.occupied()), (6, 4));
        check(&f);
        let before = f.slots().to_vec();
        assert!(!f.load(6, &[1, 1], |after| after <= 4));
        assert!(!f.load(7, &[1, 1], |_| true), "past the end");
        assert_eq!(f.slots(), before);
        assert!(f.load(6, &[0, 0], |after| after <= 4));
        assert_eq!(f.occupied(), 3);
        check(&f);
        assert_eq!(f.try_clone().unwrap().occupied(), 3);
        assert_eq!(SubFilter::zeroed(8, 2).unwrap().occupied(), 0);
    }

    proptest! {
        /// The word-wise count is the byte-wise one, on any length (blocks
        /// of 255 words and a tail) and with every byte value, 0x80 included.
        #[test]
        fn occupied_in_counts_non_zero_bytes(
            b in proptest::collection::vec(prop_oneof![Just(0u8), Just(0x80), any::<u8>()], 0..5000)
        ) {
            prop_assert_eq!(occupied_in(&b), b.iter().filter(|&&x| x != 0).count() as u64);
        }
    }

    #[test]
    fn occupied_in_full_blocks() {
        for len in [0, 7, 8, 2040, 2047, 2048, 100_000] {
            assert_eq!(occupied_in(&vec![0xff; len]), len as u64);
            assert_eq!(occupied_in(&vec![0; len]), 0);
        }
    }

    #[test]
    fn slots_round_trip_and_clone() {
        let mut f = SubFilter::new(2, 2, vec![0; 4].into()).unwrap();
        f.set(3, 7);
        assert_eq!(f.find(1, 7), Some(3));
        assert_eq!(f.find_available(1, 0), Some(2));
        let g = f.try_clone().unwrap();
        assert_eq!(g, f);
        assert_eq!(g.slots(), [0, 0, 0, 7]);
    }
}
