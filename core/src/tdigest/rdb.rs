//! T-Digest RDB value (`TDIS-TYPE`, encoding 0; docs/tdigest.md §7.1–§7.2).

use super::{capacity_for, TDigest, TWO_POW_63};
use crate::rdb::{RdbSink, RdbSource, ReadError};

/// The only encoding version that ever existed.
pub const ENCODING_VERSION: i32 = 0;

/// Why an RDB value was refused (the server fails the load either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadError {
    /// Truncated or malformed primitive stream.
    Read,
    /// A field outside what any RedisBloom digest can hold (§7.2 rules).
    Invalid,
    /// The node arrays cannot be allocated.
    OutOfMemory,
}

impl From<ReadError> for LoadError {
    fn from(_: ReadError) -> Self {
        LoadError::Read
    }
}

/// A weight stored as a double: an integer in `[0, 2^63)` (a NaN, an
/// infinity or a fraction was never a weight; RedisBloom's `(long long)`
/// would turn the rest into negative weights).
fn weight(d: f64) -> Result<i64, LoadError> {
    if (0.0..TWO_POW_63).contains(&d) && d.fract() == 0.0 {
        Ok(d as i64)
    } else {
        Err(LoadError::Invalid)
    }
}

fn signed<S: RdbSource>(src: &mut S) -> Result<i64, LoadError> {
    Ok(src.read_unsigned()? as i64)
}

/// A node count: `0 ≤ n`, as an `i32`.
fn count(v: i64) -> Result<i32, LoadError> {
    i32::try_from(v)
        .ok()
        .filter(|&n| n >= 0)
        .ok_or(LoadError::Invalid)
}

impl TDigest {
    /// Writes the value as it is; callers compress first (§7.1), so the
    /// unmerged nodes are only counted, never written.
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        sink.write_double(self.compression);
        sink.write_double(self.min);
        sink.write_double(self.max);
        sink.write_unsigned(i64::from(self.capacity()) as u64);
        sink.write_unsigned(i64::from(self.merged_nodes) as u64);
        sink.write_unsigned(i64::from(self.unmerged_nodes) as u64);
        sink.write_unsigned(self.total_compressions as u64);
        sink.write_double(self.merged_weight as f64);
        sink.write_double(self.unmerged_weight as f64);
        let n = self.centroids_in_use();
        for m in self.nodes.means().iter().take(n) {
            sink.write_double(*m);
        }
        for w in self.nodes.weights().iter().take(n) {
            sink.write_double(*w as f64);
        }
    }

    fn centroids_in_use(&self) -> usize {
        (self.merged_nodes.max(0) as usize).min(self.nodes.len() as usize)
    }

    /// Reads a value (§7.2). Refused: what could touch memory outside the
    /// node arrays (the capacity must be the one the compression
    /// allocates, the node counts must fit in it), and every value no
    /// sequence of commands builds, since such a value would not save and
    /// load back to itself or would fail later commands ([`Header::check`],
    /// [`check_weights`]). NaN and infinite means stay accepted: values
    /// near ±1.7e308 overflow a centroid update, and a server must load
    /// every value it saves. The encoding version is ignored, as RedisBloom
    /// does.
    pub fn rdb_load<S: RdbSource>(src: &mut S, _encver: i32) -> Result<TDigest, LoadError> {
        let compression = src.read_double()?;
        let h = Header::read(src)?;
        let cap = capacity_for(compression).ok_or(LoadError::Invalid)?;
        h.check(cap)?;
        let mut td = TDigest::new(compression).map_err(|_| LoadError::OutOfMemory)?;
        let n = h.merged_nodes as usize;
        for m in td.nodes.means_mut().iter_mut().take(n) {
            *m = src.read_double()?;
        }
        for w in td.nodes.weights_mut().iter_mut().take(n) {
            *w = weight(src.read_double()?)?;
        }
        check_weights(td.nodes.weights().iter().take(n), h.merged_weight)?;
        // Only now: a digest dropped half-loaded must not count as pending.
        td.min = h.min;
        td.max = h.max;
        td.merged_nodes = h.merged_nodes;
        td.unmerged_nodes = h.unmerged_nodes;
        td.total_compressions = h.total_compressions;
        td.merged_weight = h.merged_weight;
        td.unmerged_weight = h.unmerged_weight;
        td.restore_single_observation();
        td.count(false, td.pending_merge());
        Ok(td)
    }

    /// A digest holding one observation is saved without it (RedisBloom's
    /// compression never merges a total weight of 1, and only merged nodes
    /// are written). It is the one value ever added, so min and max hold
    /// it: put it back (docs/tdigest.md §7.3) instead of the zero node
    /// RedisBloom reads there.
    fn restore_single_observation(&mut self) {
        let single = self.merged_nodes == 0
            && self.merged_weight == 0
            && self.unmerged_nodes == 1
            && self.unmerged_weight == 1;
        if let (true, Some(v)) = (single, self.single_value()) {
            let (means, weights) = self.nodes.both_mut();
            if let (Some(m), Some(w)) = (means.first_mut(), weights.first_mut()) {
                *m = v;
                *w = 1;
            }
        }
    }

    /// The value min and max agree on. An infinite one (a centroid a merge
    /// carried over) leaves the sentinel on its side: +inf is not below
    /// DBL_MAX, −inf not above −DBL_MAX.
    fn single_value(&self) -> Option<f64> {
        let (min, max) = (self.min, self.max);
        let same = min.to_bits() == max.to_bits() && !min.is_nan();
        if same || (min == f64::MAX && max == f64::INFINITY) {
            Some(max)
        } else if min == f64::NEG_INFINITY && max == -f64::MAX {
            Some(min)
        } else {
            None
        }
    }
}

/// The fields of §7.1 between the compression and the nodes.
struct Header {
    min: f64,
    max: f64,
    cap: i64,
    merged_nodes: i32,
    unmerged_nodes: i32,
    total_compressions: i64,
    merged_weight: i64,
    unmerged_weight: i64,
}

impl Header {
    fn read<S: RdbSource>(src: &mut S) -> Result<Header, LoadError> {
        Ok(Header {
            min: src.read_double()?,
            max: src.read_double()?,
            cap: signed(src)?,
            merged_nodes: count(signed(src)?)?,
            unmerged_nodes: count(signed(src)?)?,
            total_compressions: signed(src)?,
            merged_weight: weight(src.read_double()?)?,
            unmerged_weight: weight(src.read_double()?)?,
        })
    }

    /// A digest commands can build, with `cap` slots: empty (min and max
    /// still the sentinels), one observation not yet merged (§7.3), or
    /// merged centroids of a total above 1 with nothing pending (saves
    /// compress first). Unmerged nodes elsewhere would be counted but
    /// never written (the reproducer of issue 20).
    fn check(&self, cap: i32) -> Result<(), LoadError> {
        let (merged, unmerged) = (self.merged_nodes, self.unmerged_nodes);
        let (mw, uw) = (self.merged_weight, self.unmerged_weight);
        let sentinels = self.min == f64::MAX && self.max == -f64::MAX;
        let ok = self.cap == i64::from(cap)
            // A compression may fill every slot: a merge into compression 1
            // leaves 16 centroids in 16 slots (differential seed 1371708150).
            && i64::from(merged) + i64::from(unmerged) <= i64::from(cap)
            && self.total_compressions >= 0
            && (mw as f64 + uw as f64) < TWO_POW_63
            && !self.min.is_nan()
            && !self.max.is_nan()
            && if merged == 0 && unmerged == 0 {
                mw == 0 && uw == 0 && sentinels
            } else {
                (self.min <= self.max || sentinels)
                    && (merged == 0) == (mw == 0)
                    && (merged == 0 || mw > 1)
                    && if unmerged == 0 {
                        uw == 0
                    } else {
                        // Only a total of at most 1 stays unmerged (§4.4
                        // step 4): one observation, or RedisBloom's
                        // zero-weight nodes merged into an empty digest.
                        merged == 0 && uw <= 1
                    }
            };
        ok.then_some(()).ok_or(LoadError::Invalid)
    }
}

/// The merged centroids' weights add up to the merged weight, give or take
/// what rounding totals past 2^53 loses (RedisBloom's zero-weight nodes,
/// §7.3, make the sum smaller): a sum far above it would wrap when
/// centroids merge.
fn check_weights<'a>(
    mut weights: impl Iterator<Item = &'a i64>,
    merged_weight: i64,
) -> Result<(), LoadError> {
    let sum = weights.try_fold(0i64, |acc, &w| acc.checked_add(w));
    match sum {
        Some(s) if s <= centroid_weight_limit(merged_weight) => Ok(()),
        _ => Err(LoadError::Invalid),
    }
}

/// The most merged centroids may weigh in all for `merged_weight`: 2^-20
/// more, within i64 (adds stop short of it, §4.3 step 3).
pub(super) fn centroid_weight_limit(merged_weight: i64) -> i64 {
    merged_weight.saturating_add(merged_weight >> 20)
}

/// A window's bucket (docs/tdigest-window.md §6): every node in use is
/// saved, the unmerged ones included, so that a bucket loads back to the
/// very state it had, on a replica and after a restart alike (a plain
/// digest's layout has no room for them, hence its compressions on save).
impl TDigest {
    /// min, max, merged nodes, total compressions, merged weight, the
    /// centroids' means then weights, the unmerged count, their values.
    pub(super) fn save_bucket<S: RdbSink>(&self, sink: &mut S) {
        let merged = self.centroids_in_use();
        sink.write_double(self.min);
        sink.write_double(self.max);
        sink.write_unsigned(merged as u64);
        sink.write_unsigned(self.total_compressions as u64);
        sink.write_unsigned(self.merged_weight as u64);
        for m in self.nodes.means().iter().take(merged) {
            sink.write_double(*m);
        }
        for w in self.nodes.weights().iter().take(merged) {
            sink.write_unsigned(*w as u64);
        }
        let unmerged = self.used().saturating_sub(merged);
        sink.write_unsigned(unmerged as u64);
        for m in self.nodes.means().iter().skip(merged).take(unmerged) {
            sink.write_double(*m);
        }
    }

    /// Reads a bucket of `compression`, refusing what TDIGEST.ADD cannot
    /// build: more nodes than slots, centroids of zero weight or weighing
    /// more than the merged weight, a merged weight of 1 (a compression
    /// merges only more), unmerged values that are not finite or lie
    /// outside min..max, extrema that are not the empty digest's yet no
    /// node, a total of 2^53 or more.
    pub(super) fn load_bucket<S: RdbSource>(
        src: &mut S,
        compression: f64,
    ) -> Result<TDigest, LoadError> {
        let mut td = TDigest::uncounted(compression).map_err(|_| LoadError::OutOfMemory)?;
        let cap = td.nodes.len() as u64;
        let (min, max) = (src.read_double()?, src.read_double()?);
        let merged = src.read_unsigned()?;
        let compressions = i64::try_from(src.read_unsigned()?).map_err(|_| LoadError::Invalid)?;
        let merged_weight = src.read_unsigned()?;
        if merged > cap || merged_weight >= 1 << 53 || (merged == 0) != (merged_weight == 0) {
            return Err(LoadError::Invalid);
        }
        let n = merged as usize;
        for m in td.nodes.means_mut().iter_mut().take(n) {
            *m = src.read_double()?;
        }
        let mut sum = 0u64;
        for w in td.nodes.weights_mut().iter_mut().take(n) {
            let v = src.read_unsigned()?;
            sum = sum.saturating_add(v);
            *w = i64::try_from(v).map_err(|_| LoadError::Invalid)?;
            if v == 0 {
                return Err(LoadError::Invalid);
            }
        }
        let unmerged = src.read_unsigned()?;
        if sum != merged_weight || merged_weight == 1 || unmerged > cap - merged {
            return Err(LoadError::Invalid);
        }
        let u = unmerged as usize;
        let (means, weights) = td.nodes.both_mut();
        let slots = means.iter_mut().zip(weights.iter_mut()).skip(n).take(u);
        for (m, w) in slots {
            *m = src.read_double()?;
            *w = 1;
            if !m.is_finite() || *m < min || *m > max {
                return Err(LoadError::Invalid);
            }
        }
        let empty = merged == 0 && unmerged == 0;
        let sentinels = min == f64::MAX && max == -f64::MAX;
        let extrema = if empty {
            sentinels
        } else {
            min <= max && min.is_finite() && max.is_finite()
        };
        if !extrema || merged_weight + unmerged >= 1 << 53 {
            return Err(LoadError::Invalid);
        }
        td.min = min;
        td.max = max;
        td.merged_nodes = merged as i32;
        td.unmerged_nodes = unmerged as i32;
        td.total_compressions = compressions;
        td.merged_weight = merged_weight as i64;
        td.unmerged_weight = unmerged as i64;
        Ok(td)
    }
}
