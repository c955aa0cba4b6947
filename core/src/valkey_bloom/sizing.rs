//! Sizing (COMPAT-VALKEY-BLOOM.md §4.2), the Size formula (§5.6) and the
//! max-scaled-capacity walk (§4.7), in valkey-bloom's exact f64 arithmetic.

use std::f64::consts::LN_2;

/// Bytes of the object record, of one list slot, of one sub-filter record
/// (with the crate's structure) in the Size formula (§5.6).
pub(crate) const OBJECT: u64 = 48;
pub(crate) const SLOT: u64 = 8;
pub(crate) const FILTER: u64 = 208;
/// Sub-filters an object may hold (§4.4 step 3).
pub(crate) const MAX_FILTERS: i32 = i32::MAX;

/// Bitmap bytes for `n` items at rate `p`: ceil(n·ln p / (−8·ln²2)). Saturates
/// (like the crate's cast) for sizes no limit or allocation would accept.
pub(crate) fn bytes_for(n: i64, p: f64) -> u64 {
    ((n as f64 * p.ln()) / (-8.0 * (LN_2 * LN_2))).ceil() as u64
}

/// Hash count for a bitmap of `bytes` bytes and `n` items: max(1, round(bits/n · ln 2)).
pub(crate) fn hash_count(bytes: u64, n: i64) -> u32 {
    let bits = bytes.saturating_mul(8) as f64;
    (((bits / n as f64) * LN_2).round() as u32).max(1)
}

/// Rate of sub-filter `i`: fp × powi(t, i), computed from the object's rate.
pub(crate) fn rate(fp: f64, tightening: f64, i: i32) -> f64 {
    fp * tightening.powi(i)
}

/// The list capacity after appending to a list of `count` sub-filters with
/// capacity `list`: it grows only when full, to max(2L, count + 1, 4).
pub(crate) fn grown_list(list: u64, count: u64) -> u64 {
    if count < list {
        return list;
    }
    list.saturating_mul(2).max(count.saturating_add(1)).max(4)
}

/// Size of an object with list capacity `list` and sub-filters of these
/// bitmap sizes (§5.6).
pub(crate) fn object_size(list: u64, bitmaps: impl Iterator<Item = u64>) -> u64 {
    let base = OBJECT.saturating_add(SLOT.saturating_mul(list));
    bitmaps.fold(base, |acc, b| acc.saturating_add(FILTER).saturating_add(b))
}

/// Why the §4.7 walk stopped short of its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScaleError {
    Degrades,
    Limit,
    BadCapacity,
}

/// Parameters of the §4.7 walk.
pub(crate) struct Scale {
    pub capacity: i64,
    pub fp: f64,
    pub tightening: f64,
    pub expansion: u32,
    pub limit: u64,
}

impl Scale {
    /// Total capacity of the sub-filters an object could reach under the
    /// limit. With a target, stops once the total reaches it and reports the
    /// reason it cannot; without one ("report" mode) returns the total at the
    /// first stop. Capacity overflow is an error in both modes. The walk is
    /// bounded by MAX_FILTERS (no object can hold more).
    pub(crate) fn walk(&self, target: Option<i64>) -> Result<i64, ScaleError> {
        let stop = |total: i64, why: ScaleError| match target {
            None => Ok(total),
            Some(_) => Err(why),
        };
        let (mut cap, mut total, mut used) = (self.capacity, 0i64, 0u64);
        for i in 0..MAX_FILTERS {
            if target.is_some_and(|t| total >= t) {
                return Ok(total);
            }
            let p = rate(self.fp, self.tightening, i);
            let positive = p > f64::MIN_POSITIVE;
            if !positive {
                return stop(total, ScaleError::Degrades);
            }
            let size = FILTER.saturating_add(bytes_for(cap, p));
            let list = match i {
                0 => 1,
                _ => u64::from(i.unsigned_abs().saturating_add(1).max(4)).next_power_of_two(),
            };
            let projected = object_size(list, std::iter::empty())
                .saturating_add(used)
                .saturating_add(size);
            if projected > self.limit {
                return stop(total, ScaleError::Limit);
            }
            used = used.saturating_add(size);
            total = total.checked_add(cap).ok_or(ScaleError::BadCapacity)?;
            cap = cap
                .checked_mul(i64::from(self.expansion))
                .ok_or(ScaleError::BadCapacity)?;
        }
        stop(total, ScaleError::Limit)
    }
}
