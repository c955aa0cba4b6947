//! Compaction: moving fingerprints from newer into older sub-filters (§4.8).

use super::{alt, CuckooFilter, SubFilter};

impl CuckooFilter {
    /// Compacts sub-filters newest to second-oldest. CF.COMPACT passes
    /// `continue_after_failure = true`; automatic compaction after a delete
    /// stops at the first sub-filter that cannot be emptied.
    pub fn compact(&mut self, continue_after_failure: bool) {
        for i in (1..self.filters.len()).rev() {
            let emptied = self.compact_one(i);
            // Only the newest sub-filter is freed; emptied middle ones stay.
            if emptied && i + 1 == self.filters.len() {
                self.filters.pop();
            }
            if !emptied && !continue_after_failure {
                break;
            }
        }
        self.num_deletes = 0;
    }

    /// Tries to move every fingerprint of sub-filter `i` into an older one;
    /// true if all of them moved (the scan always completes).
    fn compact_one(&mut self, i: usize) -> bool {
        let bs = self.bs();
        let Some((older, rest)) = self.filters.get_mut(..=i).map(|f| f.split_at_mut(i)) else {
            return false;
        };
        let Some(cur) = rest.first_mut() else {
            return false;
        };
        let mut all_moved = true;
        for (j, bucket) in (0u64..).zip(cur.data.chunks_exact_mut(bs)) {
            for slot in bucket.iter_mut().filter(|s| **s != 0) {
                if relocate(older, j, *slot, bs) {
                    *slot = 0;
                } else {
                    all_moved = false;
                }
            }
        }
        all_moved
    }
}

/// Stores `fp`, found in bucket `j` of a newer sub-filter, in the first older
/// sub-filter with room in bucket `j mod N_k` or `alt(fp, j) mod N_k`.
fn relocate(older: &mut [SubFilter], j: u64, fp: u8, bs: usize) -> bool {
    let h2 = alt(fp, j);
    for f in older.iter_mut() {
        if let Some(off) = f.find_available(j, h2, bs) {
            f.set(off, fp);
            return true;
        }
    }
    false
}
