//! Fallible, zero-initialised storage for filter bit arrays and buckets.
//!
//! Sizes come from user input (capacities, dump headers, RDB lengths): an
//! allocation failure must become an error reply, never an abort.

use std::alloc::{alloc_zeroed, Layout};

/// Allocation of filter storage failed (or the size cannot be represented).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocError;

/// A zeroed `Vec<u8>` of exactly `len` bytes, or `AllocError`.
///
/// Goes through the global allocator's `alloc_zeroed`, which in the module is
/// Redis' try-calloc: big arrays stay lazily zeroed pages and are accounted in
/// Redis' `used_memory`.
pub fn try_zeroed(len: u64) -> Result<Vec<u8>, AllocError> {
    let len = usize::try_from(len).map_err(|_| AllocError)?;
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = Layout::array::<u8>(len).map_err(|_| AllocError)?;
    // SAFETY: layout has non-zero size; on success the block holds `len`
    // initialised (zero) bytes allocated by the global allocator with align 1,
    // exactly what Vec<u8> with capacity `len` expects.
    unsafe {
        let ptr = alloc_zeroed(layout);
        if ptr.is_null() {
            return Err(AllocError);
        }
        Ok(Vec::from_raw_parts(ptr, len, len))
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
}

/// A fallible copy of `src` (for COPY of a filter: no zeroing pass first).
pub fn try_copy(src: &[u8]) -> Result<Vec<u8>, AllocError> {
    let mut v = Vec::new();
    v.try_reserve_exact(src.len()).map_err(|_| AllocError)?;
    v.extend_from_slice(src);
    Ok(v)
}

#[cfg(test)]
mod copy_tests {
    #[test]
    fn copies_exactly() {
        let src: Vec<u8> = (0..=255).collect();
        assert_eq!(super::try_copy(&src).unwrap(), src);
        assert!(super::try_copy(&[]).unwrap().is_empty());
    }
}
