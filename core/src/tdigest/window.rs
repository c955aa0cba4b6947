//! Windowed T-Digest (type `TDigw-rsb`, docs/tdigest-window.md): the
//! observations of the last `span` milliseconds.
//!
//! A ring of `B` buckets (core/src/window.rs), each a digest of the key's
//! compression; observations go to the youngest. A read merges the live
//! buckets into a scratch digest and answers from it. So that this costs
//! one bucket's merge and not `B`, the closed buckets (all but the
//! youngest) are kept merged in `closed`, a pure function of the stored
//! buckets recomputed at each shift, at load and at RESET: never saved,
//! the same on replicas and after a restart. Only a reader whose clock
//! expired buckets no write has shifted yet merges every live bucket.
//!
//! The buckets change only through TDIGEST.ADD (compressing when full, as
//! a plain digest does) and the clock; reads never compress them, and a
//! save writes their unmerged nodes too: replicas and the AOF hold the
//! same bytes without the replicated compressions plain digests need.

use super::{capacity_for, AddFailure, LoadError, TDigest};
use crate::alloc::{AllocError, Block};
use crate::rdb::{RdbSink, RdbSource};
use crate::window::{Ring, WindowSpec, Windowed};

/// Most node bytes of a windowed digest (buckets and the closed merge):
/// its DUMP payload, which the AOF rewrite sends as one RESTORE argument,
/// then stays well below the 512 MB bulk limit.
pub const MAX_NODE_BYTES: u64 = 256 << 20;
/// Most observations a window holds: below 2^53 every total is an exact
/// double, so merging the buckets never overflows.
pub const MAX_OBSERVATIONS: i64 = (1 << 53) - 1;
/// The encoding written and read.
pub const WINDOW_ENCODING_VERSION: i32 = 0;

/// The data type (`TYPE` reply, RDB module id). rsbloom's own: RedisBloom
/// cannot load it, and does not know `TDIGEST.TICK` (the probe).
pub const WINDOW_TYPE: crate::ModuleType = crate::ModuleType {
    name: c"TDigw-rsb",
    encoding_version: WINDOW_ENCODING_VERSION,
    commands: "TDIGEST.",
    family: "tdigestw",
    probe: "TDIGEST.TICK",
    chunked: None,
    volatile: None,
    added: None,
    flavour: None,
    config: &[],
    // A fixed tick and buckets of 5 years make the same value whenever the
    // tour runs (as the windowed CMS's tour).
    tour: &[
        &[
            "TDIGEST.CREATE",
            "K",
            "COMPRESSION",
            "50",
            "WINDOW",
            "315360000000",
            "BUCKETS",
            "2",
        ],
        &["TDIGEST.TICK", "K", "1700000000000"],
        &["TDIGEST.ADD", "K", "1", "2", "3"],
        &["TDIGEST.QUANTILE", "K", "0.5"],
        &["TDIGEST.CDF", "K", "2"],
        &["TDIGEST.INFO", "K"],
    ],
};

/// Why a windowed digest was not created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowError {
    /// The compression gives no digest, or memory is short.
    Alloc,
    /// The window is out of range (the parser checks it).
    Window,
    /// More than [`MAX_NODE_BYTES`] of nodes.
    TooLarge,
}

/// What a read is answered from: the live buckets merged and compressed.
pub struct View(TDigest);

impl std::ops::Deref for View {
    type Target = TDigest;
    fn deref(&self) -> &TDigest {
        &self.0
    }
}

impl std::ops::DerefMut for View {
    fn deref_mut(&mut self) -> &mut TDigest {
        &mut self.0
    }
}

pub struct WindowedTDigest {
    ring: Ring<TDigest>,
    /// The buckets' compression (an integer ≥ 1).
    compression: f64,
    /// The closed buckets merged, oldest first, and compressed (derived).
    closed: TDigest,
}

impl WindowedTDigest {
    /// An empty windowed digest; its clock starts with the first write.
    pub fn new(compression: i64, w: WindowSpec) -> Result<Self, WindowError> {
        Self::new_size(compression, w)?;
        let c = compression as f64;
        let ring =
            Ring::new(w, || TDigest::uncounted(c), AllocError).map_err(|_| WindowError::Alloc)?;
        Ok(WindowedTDigest {
            ring,
            compression: c,
            closed: TDigest::uncounted(c).map_err(|_| WindowError::Alloc)?,
        })
    }

    /// MEMORY USAGE of the digest [`WindowedTDigest::new`] would create, or
    /// why it would refuse it; nothing is allocated.
    pub fn new_size(compression: i64, w: WindowSpec) -> Result<u64, WindowError> {
        if !w.is_valid() {
            return Err(WindowError::Window);
        }
        let c = compression as f64;
        let cap = capacity_for(c).ok_or(WindowError::Alloc)?;
        let digests = w.buckets + 1;
        (16 * cap as u64)
            .checked_mul(digests)
            .filter(|&b| b <= MAX_NODE_BYTES)
            .ok_or(WindowError::TooLarge)?;
        let one = TDigest::new_size(c).ok_or(WindowError::Alloc)?;
        Ok(WINDOW_RECORD_BYTES + digests * one)
    }

    pub fn compression(&self) -> f64 {
        self.compression
    }

    /// `closed` from the buckets; on a failed allocation (or the overflow
    /// [`MAX_OBSERVATIONS`] rules out) it is left empty, which only a
    /// short memory can cause.
    fn merge_closed(&mut self) {
        let ring = &self.ring;
        let closed = (1..ring.buckets()).rev().filter_map(|age| ring.at_age(age));
        if let Ok(m) = merge(self.compression, closed) {
            self.closed = m;
        } else {
            self.closed.reset();
        }
    }

    /// TDIGEST.ADD on a window (call [`Windowed::advance`] first): the values
    /// go to the youngest bucket, in order; refused whole when the window
    /// would hold more than [`MAX_OBSERVATIONS`].
    pub fn add_values(&mut self, values: &[f64]) -> Result<(), AddFailure> {
        let held = self
            .closed
            .size()
            .saturating_add(self.ring.youngest().size());
        let room = MAX_OBSERVATIONS.saturating_sub(held);
        if i64::try_from(values.len()).map_or(true, |n| n > room) {
            return Err(AddFailure {
                added: 0,
                compressed: false,
            });
        }
        self.ring.youngest_mut().add_values(values)
    }

    /// TDIGEST.RESET on a window: every bucket empty; window and clock stay.
    pub fn reset(&mut self) {
        self.ring.slots_mut().iter_mut().for_each(TDigest::reset);
        self.closed.reset();
    }

    /// The window as of `now_ms` as one compressed digest: `closed` and the
    /// youngest bucket, or, when the reader's clock expired buckets that no
    /// write has shifted yet, the live ones merged as the shift would.
    pub fn view(&self, now_ms: u64) -> Result<View, AllocError> {
        let mut v = if self.ring.due(now_ms) == 0 {
            let mut v = self.closed.try_clone()?;
            let youngest = self.ring.youngest();
            v.absorb(youngest).map_err(|_| AllocError)?;
            set_extrema(&mut v, [&self.closed, youngest].into_iter());
            v
        } else {
            merge(self.compression, self.ring.live(now_ms).rev())?
        };
        v.compress();
        Ok(View(v))
    }

    /// MEMORY USAGE: the record, the buckets and `closed`.
    pub fn size_bytes(&self) -> u64 {
        let digests = self.ring.slots().len() as u64 + 1;
        WINDOW_RECORD_BYTES.saturating_add(digests.saturating_mul(self.closed.memory_usage()))
    }

    /// A deep copy (COPY); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        Ok(WindowedTDigest {
            ring: self.ring.try_clone_with(TDigest::try_clone)?,
            compression: self.compression,
            closed: self.closed.try_clone()?,
        })
    }

    /// The node arrays, for active defragmentation and lazy free.
    pub fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        for td in self.ring.slots_mut() {
            td.for_each_block_mut(f);
        }
        self.closed.for_each_block_mut(f);
    }

    /// The RDB value (docs/tdigest-window.md §6): the compression, the
    /// ring's header, then every bucket by physical position.
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        sink.write_unsigned(self.compression as u64);
        self.ring.save_header(sink);
        for b in self.ring.slots() {
            b.save_bucket(sink);
        }
    }

    /// Reads a value, refusing any the commands could not have made (the
    /// ring's header, each bucket: [`TDigest::load_bucket`], the window's
    /// total), and merges `closed` from it.
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Self, LoadError> {
        if encver != WINDOW_ENCODING_VERSION {
            return Err(LoadError::Invalid);
        }
        let compression = i64::try_from(src.read_unsigned()?).map_err(|_| LoadError::Invalid)?;
        let h = Ring::<TDigest>::load_header(src).map_err(|_| LoadError::Invalid)?;
        Self::new_size(compression, h.spec).map_err(|_| LoadError::Invalid)?;
        let c = compression as f64;
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(h.spec.buckets as usize)
            .map_err(|_| LoadError::OutOfMemory)?;
        let mut total = 0i64;
        for _ in 0..h.spec.buckets {
            let b = TDigest::load_bucket(src, c)?;
            total = total.saturating_add(b.size());
            slots.push(b);
        }
        if total > MAX_OBSERVATIONS {
            return Err(LoadError::Invalid);
        }
        let ring = Ring::from_parts(h, slots).map_err(|_| LoadError::Invalid)?;
        let mut v = WindowedTDigest {
            ring,
            compression: c,
            closed: TDigest::uncounted(c).map_err(|_| LoadError::OutOfMemory)?,
        };
        v.merge_closed();
        Ok(v)
    }
}

impl Windowed for WindowedTDigest {
    type Bucket = TDigest;

    fn ring(&self) -> &Ring<TDigest> {
        &self.ring
    }

    /// The oldest buckets emptied, `closed` merged anew.
    fn advance(&mut self, now_ms: u64) -> u64 {
        let shifts = self.ring.advance(now_ms, TDigest::reset);
        if shifts > 0 {
            self.merge_closed();
        }
        shifts
    }
}

/// `buckets` merged in order into a new digest of `compression`, its
/// extrema theirs, compressed.
fn merge<'a>(
    compression: f64,
    buckets: impl Iterator<Item = &'a TDigest> + Clone,
) -> Result<TDigest, AllocError> {
    let mut m = TDigest::uncounted(compression)?;
    for b in buckets.clone() {
        m.absorb(b).map_err(|_| AllocError)?;
    }
    set_extrema(&mut m, buckets);
    m.compress();
    Ok(m)
}

/// The merged digest's min and max: the parts' own (a centroid's mean is
/// within them, and an empty part keeps its sentinels out of the way).
fn set_extrema<'a>(m: &mut TDigest, parts: impl Iterator<Item = &'a TDigest>) {
    let (min, max) = parts.fold((f64::MAX, -f64::MAX), |(lo, hi), b| {
        (lo.min(b.min()), hi.max(b.max()))
    });
    m.min = min;
    m.max = max;
}

/// The windowed record beside its digests' (MEMORY USAGE).
const WINDOW_RECORD_BYTES: u64 = std::mem::size_of::<WindowedTDigest>() as u64;

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
