//! Software prefetch: asks the CPU to start loading a cache line that a later
//! probe will read, so the misses of a batch overlap instead of queueing.
//! A hint only: results never depend on it.

/// Starts loading the cache line holding `byte` into all cache levels.
#[inline(always)]
pub fn prefetch(byte: &u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no architectural effect; the
    // address is that of a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(byte).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // Portable fallback: no prefetch (touching the byte would serialise).
        let _ = byte;
    }
}

/// Items hashed ahead of the one being processed in a batch: far enough
/// that its lines arrive in time, near enough that they stay in L1/L2.
pub const DISTANCE: usize = 8;
