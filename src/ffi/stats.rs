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

/// Live values of one data type and the bytes they report (MEMORY USAGE).
pub struct TypeStats {
    keys: AtomicI64,
    bytes: AtomicI64,
}

impl TypeStats {
    pub const fn new() -> Self {
        TypeStats {
            keys: AtomicI64::new(0),
            bytes: AtomicI64::new(0),
        }
    }

    pub fn created(&self, bytes: usize) {
        self.keys.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes as i64, Relaxed);
    }

    pub fn freed(&self, bytes: usize) {
        self.keys.fetch_sub(1, Relaxed);
        self.bytes.fetch_sub(bytes as i64, Relaxed);
    }

    pub fn resized(&self, before: usize, after: usize) {
        if before != after {
            self.bytes.fetch_add(after as i64 - before as i64, Relaxed);
        }
    }

    /// (keys, bytes)
    pub fn snapshot(&self) -> (i64, i64) {
        (self.keys.load(Relaxed), self.bytes.load(Relaxed))
    }
}
