//! Counters behind the `INFO bf` section: per-command calls/failures and
//! per-type key counts and memory. Relaxed atomics: these are statistics,
//! and values may be freed on the lazy-free thread.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

pub struct CommandStats {
    calls: AtomicU64,
    failed: AtomicU64,
}

impl CommandStats {
    pub const fn new() -> Self {
        CommandStats {
            calls: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    pub fn record(&self, ok: bool) {
        self.calls.fetch_add(1, Relaxed);
        if !ok {
            self.failed.fetch_add(1, Relaxed);
        }
    }

    /// (calls, calls answered with an error reply)
    pub fn snapshot(&self) -> (u64, u64) {
        (self.calls.load(Relaxed), self.failed.load(Relaxed))
    }
}

/// What one value adds to its type's totals: the bytes it reports
/// (MEMORY USAGE) and, for types whose INFO sums them (valkey-bloom's
/// `bf_bloom_core_metrics`), its sub-filters, items and capacity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    pub bytes: i64,
    pub filters: i64,
    pub items: i64,
    pub capacity: i64,
}

impl Footprint {
    pub fn bytes(bytes: usize) -> Self {
        Footprint {
            bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
            ..Footprint::default()
        }
    }
}

/// Live values of one data type, the sums of their footprints, and what
/// active defragmentation did to them.
pub struct TypeStats {
    keys: AtomicI64,
    bytes: AtomicI64,
    filters: AtomicI64,
    items: AtomicI64,
    capacity: AtomicI64,
    defrag_hits: AtomicU64,
    defrag_misses: AtomicU64,
}

impl TypeStats {
    pub const fn new() -> Self {
        TypeStats {
            keys: AtomicI64::new(0),
            bytes: AtomicI64::new(0),
            filters: AtomicI64::new(0),
            items: AtomicI64::new(0),
            capacity: AtomicI64::new(0),
            defrag_hits: AtomicU64::new(0),
            defrag_misses: AtomicU64::new(0),
        }
    }

    /// Adds `sign` × `f` to the sums (wrapping, like valkey-bloom's counters).
    fn add(&self, f: Footprint, sign: i64) {
        for (sum, v) in [
            (&self.bytes, f.bytes),
            (&self.filters, f.filters),
            (&self.items, f.items),
            (&self.capacity, f.capacity),
        ] {
            if v != 0 {
                sum.fetch_add(v.wrapping_mul(sign), Relaxed);
            }
        }
    }

    pub fn created(&self, f: Footprint) {
        self.keys.fetch_add(1, Relaxed);
        self.add(f, 1);
    }

    pub fn freed(&self, f: Footprint) {
        self.keys.fetch_sub(1, Relaxed);
        self.add(f, -1);
    }

    pub fn resized(&self, before: Footprint, after: Footprint) {
        if before != after {
            self.add(before, -1);
            self.add(after, 1);
        }
    }

    pub fn defragged(&self, moved: bool) {
        let counter = if moved {
            &self.defrag_hits
        } else {
            &self.defrag_misses
        };
        counter.fetch_add(1, Relaxed);
    }

    /// (keys, bytes)
    pub fn snapshot(&self) -> (i64, i64) {
        (self.keys.load(Relaxed), self.bytes.load(Relaxed))
    }

    /// The sums of every live value's footprint.
    pub fn totals(&self) -> Footprint {
        Footprint {
            bytes: self.bytes.load(Relaxed),
            filters: self.filters.load(Relaxed),
            items: self.items.load(Relaxed),
            capacity: self.capacity.load(Relaxed),
        }
    }

    /// (allocations moved, allocations left in place) by active defrag.
    pub fn defrag_counts(&self) -> (u64, u64) {
        (
            self.defrag_hits.load(Relaxed),
            self.defrag_misses.load(Relaxed),
        )
    }
}
