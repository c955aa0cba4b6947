//! T-Digest RDB value (`TDIS-TYPE`, encoding 0; docs/tdigest.md §7.1–§7.2).

use super::{c_i64, capacity_for, count_pending, TDigest};
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

/// A weight stored as a double, converted as RedisBloom converts it.
fn weight(d: f64) -> i64 {
    c_i64(d)
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

    /// Reads a value (§7.2). What could touch memory outside the node arrays
    /// is refused: the capacity must be the one the compression allocates,
    /// and the node counts must fit in it. Weights and means are taken as
    /// RedisBloom takes them (`(long long)` of the stored double): a digest
    /// can legitimately hold NaN means (values near ±1.7e308 overflow a
    /// centroid update) and negative weights (a total past 2^63 after
    /// repeated merges), and a server must load every value it saves. The
    /// encoding version is ignored, as RedisBloom does.
    pub fn rdb_load<S: RdbSource>(src: &mut S, _encver: i32) -> Result<TDigest, LoadError> {
        let compression = src.read_double()?;
        let min = src.read_double()?;
        let max = src.read_double()?;
        let cap = signed(src)?;
        let merged_nodes = count(signed(src)?)?;
        let unmerged_nodes = count(signed(src)?)?;
        let total_compressions = signed(src)?;
        let merged_weight = weight(src.read_double()?);
        let unmerged_weight = weight(src.read_double()?);
        let expected_cap = capacity_for(compression).ok_or(LoadError::Invalid)?;
        let used = i64::from(merged_nodes) + i64::from(unmerged_nodes);
        if cap != i64::from(expected_cap) || used > cap {
            return Err(LoadError::Invalid);
        }
        let mut td = TDigest::new(compression).map_err(|_| LoadError::OutOfMemory)?;
        let n = merged_nodes as usize;
        for m in td.nodes.means_mut().iter_mut().take(n) {
            *m = src.read_double()?;
        }
        for w in td.nodes.weights_mut().iter_mut().take(n) {
            *w = weight(src.read_double()?);
        }
        td.min = min;
        td.max = max;
        td.merged_nodes = merged_nodes;
        td.unmerged_nodes = unmerged_nodes;
        td.total_compressions = total_compressions;
        td.merged_weight = merged_weight;
        td.unmerged_weight = unmerged_weight;
        td.restore_single_observation();
        count_pending(false, td.pending_merge());
        Ok(td)
    }

    /// A digest holding one observation is saved without it (RedisBloom's
    /// compression never merges a total weight of 1, and only merged nodes
    /// are written). It is the one value ever added, so it equals min and
    /// max: put it back (docs/tdigest.md §7.3) instead of the zero node
    /// RedisBloom reads there.
    fn restore_single_observation(&mut self) {
        let single = self.merged_nodes == 0
            && self.merged_weight == 0
            && self.unmerged_nodes == 1
            && self.unmerged_weight == 1
            && self.min.to_bits() == self.max.to_bits()
            && self.min.is_finite();
        if single {
            let (means, weights) = self.nodes.both_mut();
            if let (Some(m), Some(w)) = (means.first_mut(), weights.first_mut()) {
                *m = self.min;
                *w = 1;
            }
        }
    }
}
