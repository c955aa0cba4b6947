//! How many times a value has changed shape: gained or lost a part (a
//! Bloom link, a Cuckoo sub-filter), the only changes that change the size
//! it counts for. The Redis layer, which keeps the INFO totals of sizes,
//! measures a value it wrote again only when this count moved meanwhile.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static RESHAPES: AtomicU64 = AtomicU64::new(0);

/// Records that a value gained or lost a part (rare: an atomic add).
pub fn reshaped() {
    RESHAPES.fetch_add(1, Relaxed);
}

/// The count so far.
#[inline]
pub fn reshapes() -> u64 {
    RESHAPES.load(Relaxed)
}
