//! One sub-filter: `N` buckets of `bs` one-byte slots, laid out consecutively.
//!
//! The record is 16 bytes, like RedisBloom's (bucket count and bucket size in
//! one word, then a thin pointer to the slots): a filter's record array is
//! allocated per filter, and identical filters must take identical memory.

use std::ptr::NonNull;

use crate::alloc::{try_copy, AllocError, Block};

/// Bits of `shape` holding the bucket mask; the bucket size is above them.
const MASK_BITS: u32 = 56;
const MASK: u64 = (1 << MASK_BITS) - 1;

/// Invariants (checked by [`SubFilter::new`], the only constructor): `N` is a
/// power of two below 2^56, `bs` is in 1..=255, and `slots` owns exactly
/// `N × bs` bytes from the global allocator (a `Box<[u8]>` in thin form).
pub(super) struct SubFilter {
    /// `N - 1` in the low 56 bits, `bs` in the high 8.
    shape: u64,
    slots: NonNull<u8>,
}

// SAFETY: a SubFilter owns its slots exclusively, like the Box<[u8]> it was
// made from.
unsafe impl Send for SubFilter {}
unsafe impl Sync for SubFilter {}

impl SubFilter {
    /// Adopts `slots` as `num_buckets` buckets of `bs` slots; `None` (and
    /// `slots` freed) unless the invariants hold.
    pub(super) fn new(num_buckets: u64, bs: u16, slots: Box<[u8]>) -> Option<SubFilter> {
        let bs = u8::try_from(bs).ok().filter(|&b| b > 0)?;
        let len = num_buckets.checked_mul(u64::from(bs))?;
        if !num_buckets.is_power_of_two() || num_buckets > MASK || len != slots.len() as u64 {
            return None;
        }
        // `len ≥ 1`, so the pointer is a real allocation, never null.
        let slots = NonNull::new(Box::into_raw(slots).cast::<u8>())?;
        Some(SubFilter {
            shape: (num_buckets - 1) | u64::from(bs) << MASK_BITS,
            slots,
        })
    }

    pub(super) fn try_clone(&self) -> Result<SubFilter, AllocError> {
        let copy = try_copy(self.slots())?;
        SubFilter::new(self.num_buckets(), self.bs() as u16, copy).ok_or(AllocError)
    }

    /// `N - 1`: bucket `h mod N` is `h & mask`.
    #[inline]
    pub(super) fn mask(&self) -> u64 {
        self.shape & MASK
    }

    pub(super) fn num_buckets(&self) -> u64 {
        self.mask() + 1
    }

    #[inline]
    pub(super) fn bs(&self) -> usize {
        (self.shape >> MASK_BITS) as usize
    }

    #[inline]
    fn len(&self) -> usize {
        // Fits: it is the length of the Box the slots came from.
        (self.mask() as usize + 1) * self.bs()
    }

    #[inline]
    pub(super) fn slots(&self) -> &[u8] {
        // SAFETY: `slots` owns `len()` initialised bytes (invariants).
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr(), self.len()) }
    }

    #[inline]
    pub(super) fn slots_mut(&mut self) -> &mut [u8] {
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
            *slot = fp;
        }
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
