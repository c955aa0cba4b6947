//! The node arrays of a digest: `len` means and `len` weights, two separate
//! zeroed allocations like RedisBloom's, held as thin pointers so that the
//! digest record stays 80 bytes (docs/tdigest.md §2.1): identical digests
//! then take identical `used_memory` in both modules.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

use crate::alloc::{AllocError, Block};

/// One array of `len` elements from the global allocator (never empty).
struct Array<T: Copy> {
    ptr: NonNull<T>,
}

impl<T: Copy> Array<T> {
    /// A zeroed array; all-zero bytes are `0.0` / `0` for the element types used.
    fn zeroed(len: usize) -> Result<Self, AllocError> {
        let layout = Layout::array::<T>(len).map_err(|_| AllocError)?;
        if layout.size() == 0 {
            return Err(AllocError);
        }
        // SAFETY: non-zero size; null (failure) is checked.
        let ptr = unsafe { alloc_zeroed(layout) };
        NonNull::new(ptr.cast())
            .map(|ptr| Array { ptr })
            .ok_or(AllocError)
    }

    /// # Safety
    /// `len` must be the length this array was allocated with.
    unsafe fn free(&mut self, len: usize) {
        if let Ok(layout) = Layout::array::<T>(len) {
            // SAFETY: allocated by `zeroed(len)` with this very layout.
            unsafe { dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

/// Invariants: both arrays hold exactly `len ≥ 1` initialised elements
/// allocated by [`Array::zeroed`]; `Nodes` owns them exclusively.
pub(super) struct Nodes {
    means: Array<f64>,
    weights: Array<i64>,
    len: u32,
    /// Whether the digest counts in `pending_merges` (every digest but a
    /// window's buckets and scratch digests); here, in the padding after
    /// `len`, so the digest record stays 80 bytes.
    pub(super) counted: bool,
}

// SAFETY: Nodes owns its arrays exclusively (like two Box<[T]>).
unsafe impl Send for Nodes {}
unsafe impl Sync for Nodes {}

impl Nodes {
    /// `len` zeroed slots (mean 0.0, weight 0).
    pub(super) fn zeroed(len: u32) -> Result<Nodes, AllocError> {
        let n = len as usize;
        let means = Array::zeroed(n)?;
        let weights = match Array::zeroed(n) {
            Ok(w) => w,
            Err(e) => {
                let mut means = means;
                // SAFETY: just allocated with length n.
                unsafe { means.free(n) };
                return Err(e);
            }
        };
        Ok(Nodes {
            means,
            weights,
            len,
            counted: true,
        })
    }

    pub(super) fn try_clone(&self) -> Result<Nodes, AllocError> {
        let mut copy = Nodes::zeroed(self.len)?;
        copy.counted = self.counted;
        copy.means_mut().copy_from_slice(self.means());
        copy.weights_mut().copy_from_slice(self.weights());
        Ok(copy)
    }

    pub(super) fn len(&self) -> u32 {
        self.len
    }

    #[inline]
    pub(super) fn means(&self) -> &[f64] {
        // SAFETY: `len` initialised elements (invariants).
        unsafe { std::slice::from_raw_parts(self.means.ptr.as_ptr(), self.len as usize) }
    }

    #[inline]
    pub(super) fn weights(&self) -> &[i64] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.weights.ptr.as_ptr(), self.len as usize) }
    }

    #[inline]
    pub(super) fn means_mut(&mut self) -> &mut [f64] {
        // SAFETY: as above; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.means.ptr.as_ptr(), self.len as usize) }
    }

    #[inline]
    pub(super) fn weights_mut(&mut self) -> &mut [i64] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.weights.ptr.as_ptr(), self.len as usize) }
    }

    /// Both arrays at once, for the sort and the merge pass.
    #[inline]
    pub(super) fn both_mut(&mut self) -> (&mut [f64], &mut [i64]) {
        let n = self.len as usize;
        // SAFETY: two distinct allocations, each of `n` elements.
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.means.ptr.as_ptr(), n),
                std::slice::from_raw_parts_mut(self.weights.ptr.as_ptr(), n),
            )
        }
    }

    /// Hands both arrays as storage blocks to `f` (defragmentation, freeing).
    pub(super) fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        let bytes = self.len as usize * 8;
        f(&mut ArrayBlock {
            ptr: &mut self.means.ptr,
            bytes,
        });
        f(&mut ArrayBlock {
            ptr: &mut self.weights.ptr,
            bytes,
        });
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        let n = self.len as usize;
        // SAFETY: both allocated with length n.
        unsafe {
            self.means.free(n);
            self.weights.free(n);
        }
    }
}

/// One node array seen as raw bytes, movable by the server.
struct ArrayBlock<'a, T> {
    ptr: &'a mut NonNull<T>,
    bytes: usize,
}

impl<T> Block for ArrayBlock<'_, T> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the array owns `bytes` initialised bytes, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast(), self.bytes) }
    }

    unsafe fn adopt(&mut self, moved: NonNull<u8>) {
        // Per the contract the old block is already freed by the server.
        *self.ptr = moved.cast();
    }
}
