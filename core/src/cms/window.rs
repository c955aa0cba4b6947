//! Windowed Count-Min Sketch (type `CMSw-rsbl`, docs/cms-window.md): the
//! counts of the last `span` milliseconds.
//!
//! A ring of `B` buckets, each a sketch of the key's width, depth and cell
//! size, plus an aggregate sketch equal to the sum of the buckets. An
//! increment goes to the youngest bucket and to the aggregate; a query
//! reads the aggregate, minus the buckets a read sees as expired (shifts
//! due by the reader's clock are applied virtually, nothing is written);
//! a shift subtracts the oldest bucket from the aggregate and zeroes it,
//! and it becomes the youngest. Counters are never negative and every
//! bucket's counter is at most the aggregate's, so a change the aggregate
//! accepts the bucket accepts too (and a decrement the bucket accepts, the
//! aggregate accepts): one check each way.

use super::batch;
use super::{
    byte_len, check_dims, CellSize, CountMinSketch, CreateError, Incremented, MAX_TOTAL,
    RECORD_BYTES,
};
use crate::alloc::{AllocError, Block};
use crate::rdb::{LoadError, RdbSink, RdbSource};
use crate::window::{Ring, WindowSpec};
/// Most counter bytes of a windowed sketch (buckets and aggregate): its
/// DUMP payload, which the AOF rewrite sends as one RESTORE argument, then
/// stays well below the 512 MB bulk limit.
pub const MAX_COUNTER_BYTES: u64 = 256 << 20;
/// The encoding written and read.
pub const WINDOW_ENCODING_VERSION: i32 = 0;

/// The data type (`TYPE` reply, RDB module id). rsbloom's own: RedisBloom
/// cannot load it, and does not know `CMS.TICK` (the probe).
pub const WINDOW_TYPE: crate::ModuleType = crate::ModuleType {
    name: c"CMSw-rsbl",
    encoding_version: WINDOW_ENCODING_VERSION,
    commands: "CMS.",
    family: "cmsw",
    probe: "CMS.TICK",
    chunked: None,
    volatile: None,
    added: None,
    flavour: None,
    config: &[],
    // The tick starts the clock at a fixed time, so that the tour makes
    // the same value on every server whenever it runs: with buckets of
    // 5 years, two runs differ only if they straddle 2028-11-12 22:13 UTC
    // (or a later multiple of 5 years from the tick).
    tour: &[
        &[
            "CMS.INITBYDIM",
            "K",
            "100",
            "5",
            "WINDOW",
            "315360000000",
            "BUCKETS",
            "2",
        ],
        &["CMS.TICK", "K", "1700000000000"],
        &["CMS.INCRBY", "K", "a", "3", "b", "1"],
        &["CMS.QUERY", "K", "a", "z"],
        &["CMS.INFO", "K"],
    ],
};

/// Why a windowed sketch was not created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowError {
    /// The sketch's own checks (`CMS: invalid init arguments`, memory).
    Sketch(CreateError),
    /// Window or bucket count out of range (the parser checks them).
    Window,
    /// More than [`MAX_COUNTER_BYTES`] of counters.
    TooLarge,
}

#[derive(PartialEq, Eq)]
pub struct WindowedCms {
    /// The sum of the buckets.
    aggregate: CountMinSketch,
    ring: Ring<CountMinSketch>,
}

impl WindowedCms {
    /// An empty windowed sketch; its clock starts with the first write.
    pub fn new(
        width: u64,
        depth: u64,
        cell_size: CellSize,
        w: WindowSpec,
    ) -> Result<Self, WindowError> {
        Self::new_size(width, depth, cell_size, w)?;
        let sketch = || CountMinSketch::new(width, depth, cell_size).map_err(WindowError::Sketch);
        Ok(WindowedCms {
            aggregate: sketch()?,
            ring: Ring::new(w, sketch, WindowError::Sketch(CreateError::OutOfMemory))?,
        })
    }

    /// MEMORY USAGE of the sketch [`WindowedCms::new`] would create, or
    /// why it would refuse it; nothing is allocated.
    pub fn new_size(
        width: u64,
        depth: u64,
        cell_size: CellSize,
        w: WindowSpec,
    ) -> Result<u64, WindowError> {
        check_dims(width, depth).map_err(WindowError::Sketch)?;
        if !w.is_valid() {
            return Err(WindowError::Window);
        }
        let sketches = w.buckets + 1;
        let counters = byte_len(width, depth, cell_size)
            .and_then(|b| b.checked_mul(sketches))
            .filter(|&b| b <= MAX_COUNTER_BYTES)
            .ok_or(WindowError::TooLarge)?;
        Ok(WINDOW_RECORD_BYTES + sketches * RECORD_BYTES + counters)
    }

    pub fn width(&self) -> u64 {
        self.aggregate.width()
    }

    pub fn depth(&self) -> u64 {
        self.aggregate.depth()
    }

    pub fn cell_size(&self) -> CellSize {
        self.aggregate.cell_size()
    }

    /// The window: its span, buckets and clock.
    pub fn ring(&self) -> &Ring<CountMinSketch> {
        &self.ring
    }

    /// Whether `advance(now_ms)` changes the sketch.
    pub fn needs_advance(&self, now_ms: u64) -> bool {
        self.ring.needs_advance(now_ms)
    }

    /// Starts the clock at `now_ms`, or applies the shifts due then: each
    /// time the oldest bucket leaves the aggregate, is zeroed and becomes
    /// the youngest. Answers the shifts due.
    pub fn advance(&mut self, now_ms: u64) -> u64 {
        let aggregate = &mut self.aggregate;
        self.ring.advance(now_ms, |b| {
            aggregate.subtract(b);
            b.cells.fill(0);
            b.counter = 0;
        })
    }

    /// The total of increments within the window as of `now_ms`.
    pub fn count(&self, now_ms: u64) -> i64 {
        let gone = (self.ring.expired(now_ms)).fold(0u64, |s, b| s.saturating_add(b.counter));
        i64::try_from(self.aggregate.counter.saturating_sub(gone)).unwrap_or(i64::MAX)
    }

    /// MEMORY USAGE: the record, the aggregate and the buckets, all of one
    /// shape (O(1): INFO's accounting asks after every write).
    pub fn size_bytes(&self) -> u64 {
        let sketches = self.ring.buckets().saturating_add(1);
        (self.aggregate.size_bytes().saturating_mul(sketches)).saturating_add(WINDOW_RECORD_BYTES)
    }

    #[inline]
    fn increment_cells<I>(&mut self, cells: I, inc: i64) -> Incremented
    where
        I: Iterator<Item = usize> + Clone,
    {
        let bucket = self.ring.youngest_mut();
        if inc >= 0 {
            let r = self.aggregate.increment_cells(cells.clone(), inc);
            if r.is_ok() {
                // Within range: the bucket's counters are at most the aggregate's.
                let _ = bucket.increment_cells(cells, inc);
            }
            r
        } else {
            // A decrement takes back increments of the youngest bucket only.
            bucket.increment_cells(cells.clone(), inc)?;
            self.aggregate.increment_cells(cells, inc)
        }
    }

    /// CMS.INCRBY on a window (docs/cms-window.md §1): each increment to the
    /// youngest bucket and the aggregate, in order; the estimate over the
    /// window after it, or why nothing changed. Call [`Self::advance`]
    /// first.
    pub fn increment_batch<T>(
        &mut self,
        items: &[T],
        item: impl Fn(&T) -> &[u8],
        inc: impl Fn(&T) -> i64,
        mut each: impl FnMut(Incremented),
    ) {
        let g = self.aggregate.geometry();
        let Some(blocks) = g.blocks(items.len()) else {
            for t in items {
                each(self.increment_cells(g.cells(item(t)), inc(t)));
            }
            return;
        };
        batch::pipelined(
            blocks,
            self,
            items,
            item,
            |s, c| s.aggregate.prefetch(c),
            |s, t, cols| each(s.increment_cells(g.cells_at(cols), inc(t))),
        );
    }

    /// The smallest over the rows of the aggregate's counter less the
    /// expired buckets' (`expired` are those, fewer than B).
    #[inline]
    fn query_cells<'a>(
        &self,
        cells: impl Iterator<Item = usize>,
        expired: impl Iterator<Item = &'a CountMinSketch> + Clone,
    ) -> u64 {
        cells.fold(u64::MAX, |min, c| {
            let gone = (expired.clone()).fold(0u64, |s, b| s.saturating_add(b.load(c)));
            min.min(self.aggregate.load(c).saturating_sub(gone))
        })
    }

    /// CMS.QUERY on a window as of `now_ms`: shifts due then are applied
    /// virtually (the buckets they would expire are left out).
    pub fn query_batch<T: AsRef<[u8]>>(&self, items: &[T], now_ms: u64, mut each: impl FnMut(u64)) {
        if self.ring.live(now_ms).next().is_none() {
            items.iter().for_each(|_| each(0));
            return;
        }
        let expired = self.ring.expired(now_ms);
        let g = self.aggregate.geometry();
        let Some(blocks) = g.blocks(items.len()) else {
            for t in items {
                each(self.query_cells(g.cells(t.as_ref()), expired.clone()));
            }
            return;
        };
        batch::pipelined(
            blocks,
            self,
            items,
            T::as_ref,
            |s, c| s.aggregate.prefetch(c),
            |s, _, cols| each(s.query_cells(g.cells_at(cols), expired.clone())),
        );
    }

    /// A deep copy (COPY); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        Ok(WindowedCms {
            aggregate: self.aggregate.try_clone()?,
            ring: self.ring.try_clone_with(CountMinSketch::try_clone)?,
        })
    }

    /// The counter arrays, for active defragmentation and lazy free.
    pub fn blocks_mut(&mut self) -> impl Iterator<Item = &mut dyn Block> {
        std::iter::once(&mut self.aggregate)
            .chain(self.ring.slots_mut().iter_mut())
            .map(|s| s.block_mut())
    }

    /// The RDB value (docs/cms-window.md §6): width, depth, cell size,
    /// span, buckets, head, last shift, then the aggregate and every bucket
    /// by physical position, each as its total and its counter string.
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        for v in [self.width(), self.depth(), self.cell_size().bytes() as u64] {
            sink.write_unsigned(v);
        }
        self.ring.save_header(sink);
        for s in std::iter::once(&self.aggregate).chain(self.ring.slots()) {
            sink.write_unsigned(s.counter);
            sink.write_buffer(&s.cells);
        }
    }

    /// Reads a value, refusing any the operations could not have made: a
    /// header out of range, a counter string of another size, a counter
    /// or total out of range, or an aggregate other than the buckets' sum.
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Self, LoadError> {
        if encver != WINDOW_ENCODING_VERSION {
            return Err(LoadError::UnsupportedVersion);
        }
        let mut h = [0u64; 3];
        for v in &mut h {
            *v = src.read_unsigned()?;
        }
        let [width, depth, cell] = h;
        let cell_size = CellSize::from_bytes(cell).ok_or(LoadError::Invalid)?;
        let header = Ring::<CountMinSketch>::load_header(src)?;
        Self::new_size(width, depth, cell_size, header.spec).map_err(|_| LoadError::Invalid)?;
        let len = byte_len(width, depth, cell_size).ok_or(LoadError::Invalid)?;
        let read = |src: &mut S| -> Result<CountMinSketch, LoadError> {
            let counter = src.read_unsigned()?;
            let cells = src.read_buffer()?;
            let s = CountMinSketch {
                cells,
                width,
                counter,
                cell_size,
            };
            if s.cells.len() as u64 != len || counter > MAX_TOTAL || !s.cells_in_range() {
                return Err(LoadError::Invalid);
            }
            Ok(s)
        };
        let aggregate = read(src)?;
        let mut ring = Vec::new();
        ring.try_reserve_exact(header.spec.buckets as usize)
            .map_err(|_| LoadError::Invalid)?;
        for _ in 0..header.spec.buckets {
            ring.push(read(src)?);
        }
        let v = WindowedCms {
            aggregate,
            ring: Ring::from_parts(header, ring)?,
        };
        if !v.sums_agree() {
            return Err(LoadError::Invalid);
        }
        Ok(v)
    }

    /// Whether the aggregate is the buckets' sum, totals and every counter.
    fn sums_agree(&self) -> bool {
        let total: u128 = self
            .ring
            .slots()
            .iter()
            .map(|b| u128::from(b.counter))
            .sum();
        let cells = self.aggregate.cells.len() / self.cell_size().bytes();
        total == u128::from(self.aggregate.counter)
            && (0..cells).all(|c| {
                let sum: u128 = self
                    .ring
                    .slots()
                    .iter()
                    .map(|b| u128::from(b.load(c)))
                    .sum();
                sum == u128::from(self.aggregate.load(c))
            })
    }
}

/// The windowed record beside its sketches' (MEMORY USAGE).
const WINDOW_RECORD_BYTES: u64 = std::mem::size_of::<WindowedCms>() as u64;

impl CountMinSketch {
    /// Subtracts `other` (of this shape, every counter at most this one's)
    /// counter by counter, and its total.
    fn subtract(&mut self, other: &CountMinSketch) {
        let cells = self.cells.len() / self.cell_size.bytes();
        for c in 0..cells {
            let v = self.load(c).saturating_sub(other.load(c));
            self.store(c, v);
        }
        self.counter = self.counter.saturating_sub(other.counter);
    }
}

impl std::fmt::Debug for WindowedCms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowedCms")
            .field("aggregate", &self.aggregate)
            .field("ring", &self.ring)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
