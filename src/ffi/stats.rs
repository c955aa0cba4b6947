//! Counters behind the `INFO bf` section: per-command calls/failures and
//! per-type key counts and memory. Relaxed atomics: these are statistics,
//! and values may be freed on the lazy-free thread.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

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

    /// Commands run one at a time (on the main thread, or under the
    /// server's lock), so a plain load and store count them: a locked
    /// add would stall every command's pipeline.
    pub fn record(&self, ok: bool) {
        bump(&self.calls);
        if !ok {
            bump(&self.failed);
        }
    }

    /// (calls, calls answered with an error reply)
    pub fn snapshot(&self) -> (u64, u64) {
        (self.calls.load(Relaxed), self.failed.load(Relaxed))
    }
}

fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Relaxed).wrapping_add(1), Relaxed);
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
    pub fn bytes(bytes: u64) -> Self {
        Footprint {
            bytes: i64::try_from(bytes).unwrap_or(i64::MAX),
            ..Footprint::default()
        }
    }
}

/// A number of values and the sums of their footprints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    pub keys: i64,
    pub sums: Footprint,
}

impl Count {
    fn plus(self, o: Count, sign: i64) -> Count {
        let f = |a: i64, b: i64| a.wrapping_add(b.wrapping_mul(sign));
        Count {
            keys: f(self.keys, o.keys),
            sums: Footprint {
                bytes: f(self.sums.bytes, o.sums.bytes),
                filters: f(self.sums.filters, o.sums.filters),
                items: f(self.sums.items, o.sums.items),
                capacity: f(self.sums.capacity, o.sums.capacity),
            },
        }
    }

    pub fn minus(self, o: Count) -> Count {
        self.plus(o, -1)
    }

    pub fn one(f: Footprint) -> Count {
        Count { keys: 1, sums: f }
    }

    pub fn plus_one(self, f: Footprint) -> Count {
        self.plus(Count::one(f), 1)
    }
}

thread_local! {
    static MAIN_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Called once at load, on the server's main thread.
pub fn mark_main_thread() {
    MAIN_THREAD.with(|m| m.set(true));
}

/// Whether the caller runs on the server's main thread (not its lazy-free
/// thread).
pub fn on_main_thread() -> bool {
    MAIN_THREAD.with(|m| m.get())
}

/// Live values of one data type, the sums of their footprints, and what
/// active defragmentation did to them.
///
/// INFO counts what is in the keyspace (issue 39): a value leaves it when
/// the server unlinks it, but an asynchronous flush frees it later on the
/// lazy-free thread. Such values are moved to `left` when the flush starts
/// (docs/operations.md "INFO bf"), and their frees off the main thread take
/// them out of it again; every other free runs on the main thread at once.
pub struct TypeStats {
    keys: AtomicI64,
    bytes: AtomicI64,
    filters: AtomicI64,
    items: AtomicI64,
    capacity: AtomicI64,
    left: Mutex<Count>,
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
            left: Mutex::new(Count {
                keys: 0,
                sums: Footprint {
                    bytes: 0,
                    filters: 0,
                    items: 0,
                    capacity: 0,
                },
            }),
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

    fn left(&self) -> std::sync::MutexGuard<'_, Count> {
        // A poisoned lock still holds valid counts.
        self.left.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn created(&self, f: Footprint) {
        self.keys.fetch_add(1, Relaxed);
        self.add(f, 1);
    }

    pub fn freed(&self, f: Footprint) {
        if on_main_thread() {
            self.keys.fetch_sub(1, Relaxed);
            self.add(f, -1);
            return;
        }
        // Under the lock: a flush starting now must not see the value
        // counted live while it is already out of `left`.
        let mut left = self.left();
        self.keys.fetch_sub(1, Relaxed);
        self.add(f, -1);
        if left.keys > 0 {
            *left = left.minus(Count::one(f));
        }
    }

    pub fn resized(&self, before: Footprint, after: Footprint) {
        // The difference: one atomic add per field that moved (an add of
        // items moves only `items`), not two per field.
        self.add(
            Footprint {
                bytes: after.bytes.wrapping_sub(before.bytes),
                filters: after.filters.wrapping_sub(before.filters),
                items: after.items.wrapping_sub(before.items),
                capacity: after.capacity.wrapping_sub(before.capacity),
            },
            1,
        );
    }

    /// Every value not yet freed, in the keyspace or not.
    fn live(&self) -> Count {
        Count {
            keys: self.keys.load(Relaxed),
            sums: Footprint {
                bytes: self.bytes.load(Relaxed),
                filters: self.filters.load(Relaxed),
                items: self.items.load(Relaxed),
                capacity: self.capacity.load(Relaxed),
            },
        }
    }

    /// The values in the keyspace: what INFO reports.
    pub fn counted(&self) -> Count {
        let left = self.left();
        self.live().minus(*left)
    }

    /// `c` has left the keyspace; its values will be freed off the main thread.
    pub fn leave(&self, c: Count) {
        if c == Count::default() {
            return;
        }
        let mut left = self.left();
        *left = left.plus(c, 1);
    }

    /// Every value still in the keyspace has left it (FLUSHALL ASYNC).
    pub fn leave_all(&self) {
        let mut left = self.left();
        *left = self.live();
    }

    pub fn defragged(&self, moved: bool) {
        let counter = if moved {
            &self.defrag_hits
        } else {
            &self.defrag_misses
        };
        counter.fetch_add(1, Relaxed);
    }

    /// (keys, bytes) in the keyspace
    pub fn snapshot(&self) -> (i64, i64) {
        let c = self.counted();
        (c.keys, c.sums.bytes)
    }

    /// The sums of the footprints of the values in the keyspace.
    pub fn totals(&self) -> Footprint {
        self.counted().sums
    }

    /// (allocations moved, allocations left in place) by active defrag.
    pub fn defrag_counts(&self) -> (u64, u64) {
        (
            self.defrag_hits.load(Relaxed),
            self.defrag_misses.load(Relaxed),
        )
    }
}
