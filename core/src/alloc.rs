//! Fallible, zero-initialised storage for filter bit arrays and buckets.
//!
//! Sizes come from user input (capacities, dump headers, RDB lengths): an
//! allocation failure must become an error reply, never an abort.

use std::alloc::{alloc, alloc_zeroed, Layout};

/// Allocation of filter storage failed (or the size cannot be represented).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocError;

/// A zeroed block of exactly `len` bytes, or `AllocError`.
///
/// Goes through the global allocator's `alloc_zeroed`, which in the module is
/// Redis' try-calloc: big arrays stay lazily zeroed pages and are accounted in
/// Redis' `used_memory`.
pub fn try_zeroed(len: u64) -> Result<Box<[u8]>, AllocError> {
    let len = usize::try_from(len).map_err(|_| AllocError)?;
    if len == 0 {
        return Ok(Box::default());
    }
    let layout = Layout::array::<u8>(len).map_err(|_| AllocError)?;
    // SAFETY: layout has non-zero size; on success the block holds `len`
    // initialised (zero) bytes allocated by the global allocator with align 1,
    // exactly what Box<[u8]> of length `len` expects.
    unsafe {
        let ptr = alloc_zeroed(layout);
        if ptr.is_null() {
            return Err(AllocError);
        }
        Ok(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)))
    }
}

/// `items` with `item` appended, reallocated to the exact new length.
///
/// RedisBloom reallocs its link and sub-filter record arrays to exact sizes;
/// doing the same keeps the memory of identical filters identical.
pub fn try_push_exact<T>(items: &mut Box<[T]>, item: T) -> Result<(), AllocError> {
    let mut v = Vec::new();
    v.try_reserve_exact(items.len() + 1)
        .map_err(|_| AllocError)?;
    v.extend(std::mem::take(items).into_vec());
    v.push(item);
    *items = v.into_boxed_slice();
    Ok(())
}

/// Removes the last of `items`, reallocating to the exact new length; when
/// that allocation fails nothing is removed.
pub fn try_pop_exact<T>(items: &mut Box<[T]>) -> Result<Option<T>, AllocError> {
    let Some(keep) = items.len().checked_sub(1) else {
        return Ok(None);
    };
    let mut v = Vec::new();
    v.try_reserve_exact(keep).map_err(|_| AllocError)?;
    let mut old = std::mem::take(items).into_vec();
    let last = old.pop();
    v.extend(old);
    *items = v.into_boxed_slice();
    Ok(last)
}

/// The size class an allocation of `n` bytes takes in the servers'
/// jemalloc (8-byte quantum): multiples of 8 up to 64, then four classes
/// per doubling (80, 96, 112, 128, 160, …). What MEMORY USAGE counts a
/// value's blocks as.
pub fn size_class(n: u64) -> u64 {
    match n {
        0 => 0,
        1..=32 => n.next_multiple_of(8),
        _ => {
            let step = 1u64 << (63 - (n - 1).leading_zeros() - 2);
            n.checked_next_multiple_of(step).unwrap_or(n)
        }
    }
}

/// A storage block the server may move (active defragmentation) or whose
/// pages it releases before freeing the value.
pub trait Block {
    fn bytes_mut(&mut self) -> &mut [u8];

    /// Makes `moved` this block's storage.
    ///
    /// # Safety
    /// `moved` must be a copy of the block (same length, same global
    /// allocator) made by the server, which has freed the old block.
    unsafe fn adopt(&mut self, moved: std::ptr::NonNull<u8>);
}

impl Block for Box<[u8]> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self
    }

    unsafe fn adopt(&mut self, moved: std::ptr::NonNull<u8>) {
        let len = self.len();
        // SAFETY: per the contract, `moved` holds `len` bytes from the global
        // allocator, and the old block is already freed (so it is forgotten).
        let new = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(moved.as_ptr(), len)) };
        std::mem::forget(std::mem::replace(self, new));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_and_sized() {
        let v = try_zeroed(4096).unwrap();
        assert_eq!(v.len(), 4096);
        assert!(v.iter().all(|&b| b == 0));
        assert!(try_zeroed(0).unwrap().is_empty());
    }

    #[test]
    fn absurd_sizes_fail_cleanly() {
        assert_eq!(try_zeroed(u64::MAX), Err(AllocError));
        assert_eq!(try_zeroed(1 << 62), Err(AllocError));
    }

    #[test]
    fn size_classes() {
        let sizes = [
            0, 1, 8, 9, 17, 24, 40, 41, 64, 65, 128, 129, 161, 193, 257, 1384,
        ];
        let classes = [
            0, 8, 8, 16, 24, 24, 40, 48, 64, 80, 128, 160, 192, 224, 320, 1536,
        ];
        assert_eq!(sizes.map(size_class), classes);
        assert_eq!(size_class(u64::MAX), u64::MAX);
    }

    #[test]
    fn exact_push_and_pop() {
        let mut b: Box<[u32]> = Box::default();
        for i in 0..5 {
            try_push_exact(&mut b, i).unwrap();
        }
        assert_eq!(*b, [0, 1, 2, 3, 4]);
        assert_eq!(try_pop_exact(&mut b), Ok(Some(4)));
        assert_eq!(*b, [0, 1, 2, 3]);
        let mut e: Box<[u32]> = Box::default();
        assert_eq!(try_pop_exact(&mut e), Ok(None));
    }
}

/// A fallible copy of `src` (for COPY of a filter: no zeroing pass first).
pub fn try_copy(src: &[u8]) -> Result<Box<[u8]>, AllocError> {
    let mut v = Vec::new();
    v.try_reserve_exact(src.len()).map_err(|_| AllocError)?;
    v.extend_from_slice(src);
    Ok(v.into_boxed_slice())
}

/// `src` plus a terminating 0 byte (a C string's allocation), by one plain
/// allocation: no zeroing of what is overwritten next, no `Vec` growth path.
pub fn try_copy_nul(src: &[u8]) -> Result<Box<[u8]>, AllocError> {
    let len = src.len().checked_add(1).ok_or(AllocError)?;
    let layout = Layout::array::<u8>(len).map_err(|_| AllocError)?;
    // SAFETY: layout has non-zero size; `src.len()` bytes are copied and the
    // last one written, so on success all `len` bytes are initialised, and
    // the block (align 1, from the global allocator) is what Box<[u8]> of
    // length `len` expects.
    unsafe {
        let ptr = alloc(layout);
        if ptr.is_null() {
            return Err(AllocError);
        }
        ptr.copy_from_nonoverlapping(src.as_ptr(), src.len());
        ptr.add(src.len()).write(0);
        Ok(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)))
    }
}

#[cfg(test)]
mod copy_tests {
    #[test]
    fn copies_exactly() {
        let src: Vec<u8> = (0..=255).collect();
        assert_eq!(*super::try_copy(&src).unwrap(), *src);
        assert!(super::try_copy(&[]).unwrap().is_empty());
        let mut nul = src.clone();
        nul.push(0);
        assert_eq!(*super::try_copy_nul(&src).unwrap(), *nul);
        assert_eq!(*super::try_copy_nul(&[]).unwrap(), [0]);
    }
}
