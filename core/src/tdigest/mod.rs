//! T-Digest (`TDIS-TYPE`), bit-compatible with RedisBloom (docs/tdigest.md).
//!
//! Every formula is evaluated in exactly RedisBloom's operation order, in
//! IEEE binary64 without fused multiply-add (Rust never contracts `a * b + c`;
//! `mul_add` is not used), with `f64::ln` (the C library's `log`) and C's
//! conversion semantics (see [`c_i64`]): a digest fed the same commands holds
//! the same bits in both modules, and every reply is the same double.

pub mod args;
mod nodes;
mod query;
mod rdb;
mod sort;
pub mod window;

#[cfg(test)]
mod tests;

pub use query::{Compressions, Emit};
pub use rdb::{LoadError, ENCODING_VERSION};
pub use window::{WindowError, WindowedTDigest, WINDOW_TYPE};

/// The data type (`TYPE` reply, RDB module id).
pub const TYPE: crate::ModuleType = crate::ModuleType {
    name: c"TDIS-TYPE",
    encoding_version: ENCODING_VERSION,
    commands: "TDIGEST.",
    family: "tdigest",
    probe: "TDIGEST.ADD",
    chunked: None,
    volatile: None,
    added: None,
    flavour: None,
    config: &[],
    tour: &[
        &["TDIGEST.CREATE", "K"],
        &["TDIGEST.ADD", "K", "1", "2", "3"],
        &["TDIGEST.QUANTILE", "K", "0.5"],
        &["TDIGEST.CDF", "K", "2"],
        &["TDIGEST.MIN", "K"],
        &["TDIGEST.INFO", "K"],
    ],
};

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::alloc::{AllocError, Block};
use nodes::Nodes;

/// Live digests whose next compression would merge ([`TDigest::pending_merge`]).
static PENDING_MERGES: AtomicUsize = AtomicUsize::new(0);

/// How many live digests have a merge pending: the server compresses them
/// when it forks a snapshot (docs/tdigest.md §8.4) and uses this count to
/// know it found them all.
pub fn pending_merges() -> usize {
    PENDING_MERGES.load(Ordering::Relaxed)
}

fn count_pending(was: bool, is: bool) {
    match (was, is) {
        (false, true) => {
            PENDING_MERGES.fetch_add(1, Ordering::Relaxed);
        }
        (true, false) => {
            PENDING_MERGES.fetch_sub(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// Compression of a digest created without COMPRESSION.
pub const DEFAULT_COMPRESSION: i64 = 100;

/// 2π as RedisBloom multiplies it: 6.283185307179586 (twice the double
/// nearest to π, which is the double nearest to 2π).
const TWO_PI: f64 = std::f64::consts::TAU;

/// 2^63: a total weight whose double reaches it does not convert back.
pub(crate) const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// 2^53: totals below it are exact doubles.
const TWO_POW_53: f64 = 9_007_199_254_740_992.0;

/// Bytes of the digest record (RedisBloom's struct on LP64, and this one).
const RECORD_BYTES: u64 = 80;

/// C's `(long long)d` on x86-64: truncation, and `i64::MIN` for NaN and
/// out-of-range values (cvttsd2si), where Rust's `as` would saturate.
pub fn c_i64(d: f64) -> i64 {
    // 2^63 is exact as a double.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(-LIMIT..LIMIT).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// Node slots for `compression`: `6·trunc(compression) + 10` (§2.2), or
/// `None` when that is not a positive `i32` (RedisBloom would wrap it).
pub fn capacity_for(compression: f64) -> Option<i32> {
    if compression.is_nan() || compression < 1.0 || compression.is_infinite() {
        return None;
    }
    let t = compression.trunc();
    // Compared in f64 first: trunc may be far beyond any integer type.
    if t > f64::from((i32::MAX - 10) / 6) {
        return None;
    }
    i32::try_from(6 * (t as i64) + 10).ok()
}

/// An add or a compression would overflow a weight (docs/tdigest.md §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

/// Where TDIGEST.ADD stopped: `added` values went in, and the failing one
/// may have compressed the digest first (§4.3 step 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddFailure {
    pub added: usize,
    pub compressed: bool,
}

/// What one compression call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compressed {
    /// Nothing changed: no unmerged node, or (total weight ≤ 1) the sort
    /// left every slot as it was.
    Nothing,
    /// The nodes were sorted, and merged unless the total weight is ≤ 1.
    Done,
    /// Sorted, then an overflow stopped it.
    Overflow,
}

impl Compressed {
    /// Whether the call may have changed the digest.
    pub fn changed(self) -> bool {
        self != Compressed::Nothing
    }
}

/// The digest state of docs/tdigest.md §2.1. Nodes `0..merged_nodes` are
/// sorted centroids, the `unmerged_nodes` after them are buffered raw
/// observations; slots past those hold stale values that are never read.
pub struct TDigest {
    compression: f64,
    min: f64,
    max: f64,
    merged_nodes: i32,
    unmerged_nodes: i32,
    total_compressions: i64,
    merged_weight: i64,
    unmerged_weight: i64,
    /// `cap` slots; the capacity is its length.
    nodes: Nodes,
}

impl TDigest {
    /// An empty digest (§2.2): `AllocError` when the capacity is not a
    /// positive `i32` or the node arrays cannot be allocated.
    pub fn new(compression: f64) -> Result<TDigest, AllocError> {
        let cap = capacity_for(compression).ok_or(AllocError)?;
        let nodes = Nodes::zeroed(u32::try_from(cap).map_err(|_| AllocError)?)?;
        Ok(TDigest {
            compression,
            min: f64::MAX,
            max: -f64::MAX,
            merged_nodes: 0,
            unmerged_nodes: 0,
            total_compressions: 0,
            merged_weight: 0,
            unmerged_weight: 0,
            nodes,
        })
    }

    /// MEMORY USAGE of the digest [`TDigest::new`] would create, computed
    /// without allocating it; `None` when `new` refuses the compression.
    pub fn new_size(compression: f64) -> Option<u64> {
        let cap = u64::try_from(capacity_for(compression)?).ok()?;
        Some(RECORD_BYTES.saturating_add(16u64.saturating_mul(cap)))
    }

    /// A deep copy (COPY, and reads served by a replica); fails cleanly.
    pub fn try_clone(&self) -> Result<TDigest, AllocError> {
        let copy = TDigest {
            nodes: self.nodes.try_clone()?,
            ..*self
        };
        copy.count(false, copy.pending_merge());
        Ok(copy)
    }

    /// Runs a change of state, keeping [`pending_merges`] exact.
    fn counted<R>(&mut self, change: impl FnOnce(&mut TDigest) -> R) -> R {
        let was = self.pending_merge();
        let r = change(self);
        self.count(was, self.pending_merge());
        r
    }

    /// [`count_pending`] for a digest that counts (not a window's).
    fn count(&self, was: bool, is: bool) {
        if self.nodes.counted {
            count_pending(was, is);
        }
    }

    /// An empty digest that never counts in [`pending_merges`]: a window's
    /// bucket or a scratch digest, which the fork handler leaves alone (a
    /// window saves its unmerged nodes).
    pub(crate) fn uncounted(compression: f64) -> Result<TDigest, AllocError> {
        let mut td = TDigest::new(compression)?;
        td.nodes.counted = false;
        Ok(td)
    }

    /// Adds every node of `src` in use, merged then unmerged, with its
    /// weight (zero-weight ones skipped), as observations do (a full digest
    /// compresses, or frees a slot); `src` is not changed. Min and max take
    /// the nodes' values: callers set the exact extrema after.
    pub(crate) fn absorb(&mut self, src: &TDigest) -> Result<(), Overflow> {
        self.counted(|td| {
            let n = src.used();
            let nodes = src.nodes.means().iter().zip(src.nodes.weights()).take(n);
            for (&m, &w) in nodes.filter(|(_, &w)| w != 0) {
                td.add_node(m, w, true)?;
            }
            Ok(())
        })
    }

    /// Whether a compression would merge nodes: unmerged nodes and a total
    /// weight above 1 (§4.4 step 4).
    pub fn pending_merge(&self) -> bool {
        self.unmerged_nodes > 0 && self.merged_weight as f64 + self.unmerged_weight as f64 > 1.0
    }

    /// TDIGEST.RESET (§5.2): empty again; capacity and stale slots stay.
    pub fn reset(&mut self) {
        self.counted(TDigest::reset_fields)
    }

    fn reset_fields(&mut self) {
        self.min = f64::MAX;
        self.max = -f64::MAX;
        self.merged_nodes = 0;
        self.unmerged_nodes = 0;
        self.total_compressions = 0;
        self.merged_weight = 0;
        self.unmerged_weight = 0;
    }

    pub fn capacity(&self) -> i32 {
        // At most i32::MAX by construction (capacity_for / the loader).
        i32::try_from(self.nodes.len()).unwrap_or(i32::MAX)
    }

    pub fn compression(&self) -> f64 {
        self.compression
    }

    pub fn merged_nodes(&self) -> i32 {
        self.merged_nodes
    }

    pub fn unmerged_nodes(&self) -> i32 {
        self.unmerged_nodes
    }

    pub fn merged_weight(&self) -> i64 {
        self.merged_weight
    }

    pub fn unmerged_weight(&self) -> i64 {
        self.unmerged_weight
    }

    pub fn total_compressions(&self) -> i64 {
        self.total_compressions
    }

    pub fn min(&self) -> f64 {
        self.min
    }

    pub fn max(&self) -> f64 {
        self.max
    }

    /// Observations: both weights (their sum fits: §4.3 step 3, §7.2).
    pub fn size(&self) -> i64 {
        self.merged_weight.saturating_add(self.unmerged_weight)
    }

    /// Nodes in use: the merged ones, then the unmerged ones.
    fn used(&self) -> usize {
        (self.merged_nodes as usize).saturating_add(self.unmerged_nodes as usize)
    }

    /// Bytes reported by MEMORY USAGE and INFO `Memory usage` (docs/tdigest.md §2.1).
    pub fn memory_usage(&self) -> u64 {
        RECORD_BYTES + 16 * u64::from(self.nodes.len())
    }

    /// Whether the next add compresses first (§4.3 step 1).
    pub fn is_full(&self) -> bool {
        (self.merged_nodes.saturating_add(self.unmerged_nodes)) >= self.capacity() - 1
    }

    /// Whether a compression would do anything.
    pub fn has_unmerged(&self) -> bool {
        self.unmerged_nodes > 0
    }

    /// Adds value `v` with weight `w` (§4.3), as MERGE adds centroids: a
    /// digest whose merged centroids fill every slot fails, as RedisBloom's.
    /// On `Err` the value is not added, but a compression of step 1 may have
    /// happened.
    pub fn add(&mut self, v: f64, w: i64) -> Result<(), Overflow> {
        self.counted(|td| td.add_node(v, w, false))
    }

    /// TDIGEST.ADD (§5.3): each value with weight 1, in order; a full
    /// digest makes room for each (§4.3). On overflow the values before stay
    /// added.
    pub fn add_values(&mut self, values: &[f64]) -> Result<(), AddFailure> {
        self.counted(|td| {
            for (added, &v) in values.iter().enumerate() {
                let compressed = td.is_full() && td.has_unmerged();
                if td.add_node(v, 1, true).is_err() {
                    return Err(AddFailure { added, compressed });
                }
            }
            Ok(())
        })
    }

    /// `make_room`: merge two centroids when they fill every slot. Only an
    /// observation does; MERGE keeps RedisBloom's failure (and its silent
    /// stop on the old destination, §4.10), so its replies and bytes stay
    /// RedisBloom's.
    fn add_node(&mut self, v: f64, w: i64, make_room: bool) -> Result<(), Overflow> {
        let cap = self.capacity();
        if self.is_full() && self.compress_nodes() == Compressed::Overflow {
            return Err(Overflow);
        }
        // Step 3. Its other checks — (f64)nu, (f64)nt or (2π × nt) × ln(nt)
        // infinite — cannot fail for 64-bit weights (the largest gives
        // 2.5e21), so they are not computed. rsbloom also fails where the
        // compression's double total would reach 2^63 (exact totals past
        // 2^63 − 512): RedisBloom stores `(long long)2^63` there, a negative
        // total that no save can load back (§7.2).
        let nu = self.unmerged_weight.checked_add(w).ok_or(Overflow)?;
        nu.checked_add(self.merged_weight).ok_or(Overflow)?;
        let total = self.merged_weight as f64 + nu as f64;
        if total >= TWO_POW_63 {
            return Err(Overflow);
        }
        // Past 2^53 that total rounds, and what a compression drops from it
        // stays in the centroids, whose sum then outgrows the merged weight
        // cycle after cycle: stop before a save could not load back (§4.3).
        if total >= TWO_POW_53 && !self.centroids_fit(nu, total) {
            return Err(Overflow);
        }
        // Step 2, after the checks that change nothing: RedisBloom fails
        // (or writes past its arrays) when merged centroids fill every slot;
        // rsbloom frees one by merging two of them (docs/tdigest.md §4.3).
        if self.used() >= cap as usize && !(make_room && self.merge_lightest_pair()) {
            return Err(Overflow);
        }
        let pos = self.merged_nodes.saturating_add(self.unmerged_nodes);
        if v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
        let pos = pos as usize;
        let (means, weights) = self.nodes.both_mut();
        if let (Some(m), Some(wt)) = (means.get_mut(pos), weights.get_mut(pos)) {
            *m = v;
            *wt = w;
        }
        self.unmerged_nodes += 1;
        self.unmerged_weight = nu;
        Ok(())
    }

    /// Whether the centroids, with `nu` of unmerged weight merged into them
    /// (total `total`), still weigh what a load accepts for that total once
    /// a save has rounded each weight to a double (up to 2^-53 of it more).
    fn centroids_fit(&self, nu: i64, total: f64) -> bool {
        let merged: i128 = self
            .nodes
            .weights()
            .iter()
            .take(self.merged_nodes as usize)
            .map(|&w| i128::from(w))
            .sum();
        let sum = merged + i128::from(nu);
        sum + (sum >> 52) <= i128::from(rdb::centroid_weight_limit(c_i64(total)))
    }

    /// Frees a slot of a digest whose merged centroids fill it: the two
    /// adjacent centroids of least combined weight (the leftmost such pair)
    /// become one, by the merge pass's formula. False when nothing can be
    /// merged (unmerged nodes, or fewer than two centroids).
    fn merge_lightest_pair(&mut self) -> bool {
        let n = self.merged_nodes as usize;
        if self.unmerged_nodes != 0 || n < 2 || n > self.nodes.len() as usize {
            return false;
        }
        let (means, weights) = self.nodes.both_mut();
        let (means, weights) = (&mut means[..n], &mut weights[..n]);
        let Some(i) = (0..n - 1).min_by_key(|&i| weights[i].saturating_add(weights[i + 1])) else {
            return false;
        };
        // Weights are non-negative and sum within i64 (§4.3 step 3).
        weights[i] = weights[i].saturating_add(weights[i + 1]);
        if weights[i] != 0 {
            let delta = means[i + 1] - means[i];
            means[i] += (delta * weights[i + 1] as f64) / weights[i] as f64;
        }
        means.copy_within(i + 2.., i + 1);
        weights.copy_within(i + 2.., i + 1);
        means[n - 1] = 0.0;
        weights[n - 1] = 0;
        self.merged_nodes -= 1;
        true
    }

    /// Merges the unmerged nodes into centroids (§4.4).
    pub fn compress(&mut self) -> Compressed {
        self.counted(TDigest::compress_nodes)
    }

    fn compress_nodes(&mut self) -> Compressed {
        if self.unmerged_nodes <= 0 {
            return Compressed::Nothing;
        }
        let n = self.used().min(self.nodes.len() as usize);
        let total = self.merged_weight as f64 + self.unmerged_weight as f64;
        let (means, weights) = self.nodes.both_mut();
        let (means, weights) = (&mut means[..n], &mut weights[..n]);
        if total <= 1.0 {
            // Only the sort happens: report whether it moved anything (a
            // rare case, which may pay for a copy).
            let before: Vec<(u64, i64)> = means
                .iter()
                .map(|m| m.to_bits())
                .zip(weights.iter().copied())
                .collect();
            sort::sort(means, weights);
            let same = before
                .iter()
                .zip(means.iter().zip(weights.iter()))
                .all(|(b, (m, w))| *b == (m.to_bits(), *w));
            return if same {
                Compressed::Nothing
            } else {
                Compressed::Done
            };
        }
        sort::sort(means, weights);
        if (self.unmerged_weight as f64).is_infinite() || log_term_overflows(total) {
            return Compressed::Overflow;
        }
        let denom = (TWO_PI * total) * total.ln();
        let normalizer = self.compression / denom;
        if denom.is_infinite() || normalizer.is_infinite() {
            return Compressed::Overflow;
        }
        let cur = merge_pass(means, weights, total, normalizer);
        self.merged_nodes = i32::try_from(cur + 1).unwrap_or(i32::MAX);
        self.merged_weight = c_i64(total);
        self.unmerged_nodes = 0;
        self.unmerged_weight = 0;
        // Saturates where RedisBloom would wrap (after 2^63 compressions,
        // so only from a crafted count): a negative count does not load.
        self.total_compressions = self.total_compressions.saturating_add(1);
        Compressed::Done
    }

    /// `merge_into(self, src)` of §4.10: compresses both, then adds every
    /// node of `src` with its weight. Returns what compressing `src` did
    /// (it stays compressed even when the merge fails).
    pub fn merge_from(&mut self, src: &mut TDigest) -> (Compressed, Result<(), Overflow>) {
        self.counted(|td| td.merge_nodes(src))
    }

    fn merge_nodes(&mut self, src: &mut TDigest) -> (Compressed, Result<(), Overflow>) {
        if self.compress_nodes() == Compressed::Overflow {
            return (Compressed::Nothing, Err(Overflow));
        }
        let compressed = src.compress();
        if compressed == Compressed::Overflow {
            return (compressed, Err(Overflow));
        }
        let n = src.used();
        let (means, weights) = (src.nodes.means(), src.nodes.weights());
        // Zero-weight nodes (RedisBloom's lost observation, docs/tdigest.md
        // §4.10) are not carried over: alone in a digest they stay unmerged,
        // unsaved, and take the next observation with them.
        let carried = means.iter().zip(weights).take(n).filter(|(_, &w)| w != 0);
        for (&m, &w) in carried {
            if self.add_node(m, w, false).is_err() {
                return (compressed, Err(Overflow));
            }
        }
        (compressed, Ok(()))
    }

    /// The large storage blocks (active defragmentation, freeing).
    pub fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        self.nodes.for_each_block_mut(f)
    }

    /// Every field and every node in use, for DEBUG DIGEST-VALUE: the exact
    /// in-memory state, unmerged nodes included (§7.4).
    pub fn state_words(&self, mut out: impl FnMut(u64)) {
        out(self.compression.to_bits());
        out(self.min.to_bits());
        out(self.max.to_bits());
        out(u64::from(self.nodes.len()));
        out(self.merged_nodes as u64);
        out(self.unmerged_nodes as u64);
        out(self.total_compressions as u64);
        out(self.merged_weight as u64);
        out(self.unmerged_weight as u64);
        let n = self.used();
        for (m, w) in self.nodes.means().iter().zip(self.nodes.weights()).take(n) {
            out(m.to_bits());
            out(*w as u64);
        }
    }
}

impl Drop for TDigest {
    fn drop(&mut self) {
        self.count(self.pending_merge(), false);
    }
}

/// Whether `2π·t·ln(t)` is infinite (the overflow checks of §4.3 and §4.4).
fn log_term_overflows(t: f64) -> bool {
    t.is_infinite() || ((TWO_PI * t) * t.ln()).is_infinite()
}

/// The left-to-right merge pass of §4.4 over sorted nodes; returns the index
/// of the last centroid.
fn merge_pass(means: &mut [f64], weights: &mut [i64], total: f64, normalizer: f64) -> usize {
    let mut cur = 0usize;
    let mut weight_so_far = 0.0f64;
    for i in 1..means.len().min(weights.len()) {
        let proposed = weights[cur] as f64 + weights[i] as f64;
        let z = proposed * normalizer;
        let q0 = weight_so_far / total;
        let q2 = (weight_so_far + proposed) / total;
        if z <= q0 * (1.0 - q0) && z <= q2 * (1.0 - q2) {
            // Never saturates: the centroids sum within i64 (§4.3 step 3).
            weights[cur] = weights[cur].saturating_add(weights[i]);
            let delta = means[i] - means[cur];
            means[cur] += (delta * weights[i] as f64) / weights[cur] as f64;
        } else {
            weight_so_far += weights[cur] as f64;
            cur += 1;
            weights[cur] = weights[i];
            means[cur] = means[i];
        }
        if cur != i {
            weights[i] = 0;
            means[i] = 0.0;
        }
    }
    cur
}
