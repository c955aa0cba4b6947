//! Compaction: moving fingerprints from newer into older sub-filters (docs/cuckoo.md §10).
//!
//! The search order is RedisBloom's (older sub-filters from the oldest, first
//! free slot of bucket `j mod N_k`, then `alt(fp, j) mod N_k`), so results are
//! byte-identical. What differs is cost: sub-filters without a single free
//! slot cannot take anything and are skipped through [`Room`], so a filter
//! whose older sub-filters are full (e.g. crafted by CF.LOADCHUNK with
//! thousands of full sub-filters) compacts in linear instead of quadratic time.

use super::{alt, slot_count, CuckooFilter, SubFilter};

impl CuckooFilter {
    /// Compacts sub-filters newest to second-oldest. CF.COMPACT passes
    /// `continue_after_failure = true`; automatic compaction after a delete
    /// stops at the first sub-filter that cannot be emptied.
    pub fn compact(&mut self, continue_after_failure: bool) {
        // Without memory for the bookkeeping, compaction is skipped: it is
        // an optimisation, and the filter stays correct as it is.
        if let Some(mut room) = Room::new(&self.filters) {
            for i in (1..self.filters.len()).rev() {
                let emptied = self.compact_one(i, &mut room);
                // Only the newest sub-filter is freed; emptied middle ones
                // stay. Without memory to shrink the record array it stays too.
                if emptied && i + 1 == self.filters.len() && self.rest_holds_count(i) {
                    if let Ok(Some(_)) = crate::alloc::try_pop_exact(&mut self.filters) {
                        crate::reshape::reshaped();
                    }
                }
                if !emptied && !continue_after_failure {
                    break;
                }
            }
        }
        self.num_deletes = 0;
    }

    /// Whether the sub-filters before `i` have slots for numItems. Always so
    /// when the count is the fingerprints held; a key between LOADCHUNKs
    /// counts items still to come, and keeps the slots its count claims
    /// (docs/cuckoo.md §14).
    fn rest_holds_count(&self, i: usize) -> bool {
        self.num_items <= slot_count(self.filters.get(..i).unwrap_or_default())
    }

    /// Tries to move every fingerprint of sub-filter `i` into an older one;
    /// true if all of them moved (the scan always completes).
    fn compact_one(&mut self, i: usize, room: &mut Room) -> bool {
        let Some((older, rest)) = self.filters.get_mut(..=i).map(|f| f.split_at_mut(i)) else {
            return false;
        };
        let Some(cur) = rest.first_mut() else {
            return false;
        };
        if cur.occupied() == 0 {
            return true;
        }
        let mut all_moved = true;
        let bs = cur.bs();
        for offset in 0..cur.len() {
            let fp = cur.slots().get(offset).copied().unwrap_or(0);
            if fp == 0 {
                continue;
            }
            if relocate(older, room, (offset / bs) as u64, fp) {
                cur.set(offset, 0);
            } else {
                all_moved = false;
            }
        }
        all_moved
    }
}

/// Stores `fp`, found in bucket `j` of a newer sub-filter, in the first older
/// sub-filter with room in bucket `j mod N_k` or `alt(fp, j) mod N_k`.
fn relocate(older: &mut [SubFilter], room: &mut Room, j: u64, fp: u8) -> bool {
    let h2 = alt(fp, j);
    let mut k = room.next_with_space(0);
    while let Some(f) = older.get_mut(k) {
        if let Some(off) = f.find_available(j, h2) {
            f.set(off, fp);
            room.take(k);
            return true;
        }
        k = room.next_with_space(k + 1);
    }
    false
}

/// Free-slot counts per sub-filter, and for each index the next sub-filter
/// at or after it that still has a free slot (path-compressed, so skipping
/// full ones is amortised constant time).
struct Room {
    free: Vec<u64>,
    next: Vec<usize>,
}

impl Room {
    fn new(filters: &[SubFilter]) -> Option<Room> {
        let mut free = Vec::new();
        let mut next = Vec::new();
        free.try_reserve_exact(filters.len()).ok()?;
        next.try_reserve_exact(filters.len() + 1).ok()?;
        free.extend(
            filters
                .iter()
                .map(|f| (f.len() as u64).saturating_sub(f.occupied())),
        );
        next.extend(0..=filters.len());
        let mut room = Room { free, next };
        for k in 0..filters.len() {
            if room.free.get(k) == Some(&0) {
                room.skip(k);
            }
        }
        Some(room)
    }

    /// The first sub-filter at or after `k` with a free slot (or past the end).
    fn next_with_space(&mut self, k: usize) -> usize {
        let mut root = k;
        while let Some(&n) = self.next.get(root) {
            if n == root {
                break;
            }
            root = n;
        }
        let mut at = k;
        while let Some(n) = self.next.get_mut(at) {
            if *n == root || at == root {
                break;
            }
            at = std::mem::replace(n, root);
        }
        root
    }

    /// One free slot of sub-filter `k` was used.
    fn take(&mut self, k: usize) {
        if let Some(free) = self.free.get_mut(k) {
            *free = free.saturating_sub(1);
            if *free == 0 {
                self.skip(k);
            }
        }
    }

    fn skip(&mut self, k: usize) {
        if let Some(n) = self.next.get_mut(k) {
            *n = k + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::CuckooFilter;

    /// Older sub-filters all full: every fingerprint fails at once instead of
    /// scanning each older sub-filter's buckets.
    #[test]
    fn full_older_sub_filters_compact_quickly() {
        let mut header = [0u8; 38];
        header[8] = 1; // 1 bucket
        header[24..26].copy_from_slice(&2000u16.to_le_bytes()); // sub-filters
        header[..8].copy_from_slice(&(2000u64 * 255).to_le_bytes()); // items
        header[32] = 255; // bucket size
        header[34] = 20; // max iterations
        header[36] = 1; // expansion
        let mut f = CuckooFilter::from_header(&header, 255).unwrap();
        let full = vec![0xabu8; 255];
        let mut pos = 1i64;
        for _ in 0..2000 {
            pos += 255;
            f.load_chunk(pos, &full).unwrap();
        }
        let start = std::time::Instant::now();
        f.compact(true);
        assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
        assert_eq!(f.num_filters(), 2000);
    }
}
