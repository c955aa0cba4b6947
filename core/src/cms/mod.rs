//! Count-Min Sketch (`CMSk-TYPE`), byte-compatible with RedisBloom
//! (docs/cms.md §2–§4).
//!
//! `depth` rows of `width` counters of 1, 2, 4 or 8 bytes, row-major. Row
//! `i` of an item is column `MurmurHash2(item, i) mod width`; an increment
//! (or decrement) changes the item's counter in every row, or nothing when
//! a counter or the total would leave its range; a query answers the
//! smallest of them.

pub mod args;
mod batch;
mod cell;
mod merge;
mod rdb;
mod sizing;
mod window;

#[cfg(test)]
mod tests;

pub use crate::rdb::LoadError;
pub use cell::CellSize;
pub use merge::{MergeError, Source};
pub use rdb::{ENCODING_VERSION, LEGACY_ENCODING_VERSION};
pub use sizing::dims_for_error;
pub use window::{
    WindowError, WindowedCms, MAX_COUNTER_BYTES, WINDOW_ENCODING_VERSION, WINDOW_TYPE,
};

/// The data type (`TYPE` reply, RDB module id).
pub const TYPE: crate::ModuleType = crate::ModuleType {
    name: c"CMSk-TYPE",
    encoding_version: ENCODING_VERSION,
    commands: "CMS.",
    family: "cms",
    probe: "CMS.QUERY",
    chunked: None,
    volatile: None,
    // Redis 8.12's encoding 1 saves the cell size after the total;
    // encoding 0 has 4-byte cells (docs/cms.md §6.1, §6.5).
    added: Some(crate::module_type::AddedField {
        since: 1,
        prim: 3,
        legacy: 4,
        readers_from: 81181,
        what: "cell size",
    }),
    flavour: None,
    config: &[],
    tour: &[
        &["CMS.INITBYDIM", "K", "100", "5"],
        &["CMS.INCRBY", "K", "a", "3", "b", "1"],
        &["CMS.QUERY", "K", "a", "z"],
        &["CMS.INFO", "K"],
    ],
};

use crate::alloc::{try_copy, try_zeroed, AllocError};
use batch::Geometry;

/// Size of RedisBloom 8.12's sketch record (width, depth, array pointer,
/// total, cell size: 40 bytes padded), part of every sketch's MEMORY USAGE
/// (§6.4).
const RECORD_BYTES: u64 = 40;
/// The total stays within 0 ..= this (§4.1).
const MAX_TOTAL: u64 = i64::MAX as u64;
/// Counter arrays from this size (a core's L2, as for Top-K's buckets) are
/// prefetched a block of items ahead; on smaller ones the column buffers
/// and prefetches cost more than they save (measured: 245 of a one-item
/// CMS.INCRBY's 2,539 instructions).
const PREFETCH_MIN: usize = 512 << 10;

/// Why `CountMinSketch::new` failed (§3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateError {
    /// `CMS: invalid init arguments`.
    Invalid,
    /// `CMS: Insufficient memory to create the key`.
    OutOfMemory,
}

/// Why one increment changed nothing (§4.1): the element errors
/// `CMS: INCRBY overflow` and `CMS: INCRBY underflow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    Overflow,
    Underflow,
}

/// The result of one increment: the new estimate, or why nothing changed.
pub type Incremented = Result<u64, Rejected>;

/// A sketch. The record is 40 bytes like RedisBloom 8.12's (the counter
/// bytes as a fat pointer, the width, the total, the cell size): the depth
/// is implied by the length, since `cells.len() = size · width · depth`.
#[derive(PartialEq, Eq)]
pub struct CountMinSketch {
    /// Counters as RDB stores them: little-endian, row-major.
    cells: Box<[u8]>,
    width: u64,
    /// Sum of all accepted increments and merged totals, 0 ..= 2^63 − 1.
    counter: u64,
    cell_size: CellSize,
}

/// Creation check 1 of §3.3: both at least 1 and `width · depth` < 2^63.
pub fn check_dims(width: u64, depth: u64) -> Result<(), CreateError> {
    if width == 0 || depth == 0 || width > MAX_TOTAL / depth {
        return Err(CreateError::Invalid);
    }
    Ok(())
}

impl CountMinSketch {
    /// A zeroed sketch (creation checks of §3.3).
    pub fn new(width: u64, depth: u64, cell_size: CellSize) -> Result<Self, CreateError> {
        check_dims(width, depth)?;
        let bytes = byte_len(width, depth, cell_size).ok_or(CreateError::OutOfMemory)?;
        let cells = try_zeroed(bytes).map_err(|_| CreateError::OutOfMemory)?;
        Ok(CountMinSketch {
            cells,
            width,
            counter: 0,
            cell_size,
        })
    }

    /// MEMORY USAGE of the sketch [`CountMinSketch::new`] would create,
    /// computed without allocating it; `None` when `new` refuses the shape.
    pub fn new_size(width: u64, depth: u64, cell_size: CellSize) -> Option<u64> {
        check_dims(width, depth).ok()?;
        Some(RECORD_BYTES.saturating_add(byte_len(width, depth, cell_size)?))
    }

    pub fn width(&self) -> u64 {
        self.width
    }

    pub fn depth(&self) -> u64 {
        // width ≥ 1 by construction; max(1) keeps this division panic-free.
        (self.cells.len() / self.cell_size.bytes()) as u64 / self.width.max(1)
    }

    pub fn cell_size(&self) -> CellSize {
        self.cell_size
    }

    /// The total of increments, as CMS.INFO `count` shows it (§4.4).
    pub fn count(&self) -> i64 {
        i64::try_from(self.counter).unwrap_or(i64::MAX)
    }

    /// MEMORY USAGE (§6.4): the record and the counters.
    pub fn size_bytes(&self) -> u64 {
        RECORD_BYTES.saturating_add(self.cells.len() as u64)
    }

    fn geometry(&self) -> Geometry {
        Geometry::new(self.width, self.depth())
    }

    #[inline]
    fn load(&self, cell: usize) -> u64 {
        self.cell_size.load(&self.cells, cell)
    }

    #[inline]
    fn store(&mut self, cell: usize, v: u64) {
        self.cell_size.store(&mut self.cells, cell, v)
    }

    #[inline]
    fn prefetch(&self, cell: usize) {
        if let Some(byte) = self.cells.get(cell.wrapping_mul(self.cell_size.bytes())) {
            crate::prefetch::prefetch(byte);
        }
    }

    /// Changes the item's counter in every row (`cells`) and the total by
    /// `inc`, or nothing if any of them would leave its range; returns the
    /// smallest counter after the change (§4.1). One pass: a counter out of
    /// range undoes the rows already changed (rare), which is cheaper than
    /// checking every row first (measured on batched increments).
    #[inline]
    fn increment_cells<I>(&mut self, cells: I, inc: i64) -> Incremented
    where
        I: Iterator<Item = usize> + Clone,
    {
        self.increment_over(&NoBase, cells, inc)
    }

    /// [`Self::increment_cells`] on top of `base` (a window's closed
    /// buckets): an increment's range and the reply are those of the sum
    /// `base + self`; a decrement takes back `self`'s counts only.
    #[inline]
    fn increment_over<B: Base, I>(&mut self, base: &B, cells: I, inc: i64) -> Incremented
    where
        I: Iterator<Item = usize> + Clone,
    {
        match self.cell_size {
            CellSize::One => self.increment_sized::<1, B, I>(base, cells, inc),
            CellSize::Two => self.increment_sized::<2, B, I>(base, cells, inc),
            CellSize::Four => self.increment_sized::<4, B, I>(base, cells, inc),
            CellSize::Eight => self.increment_sized::<8, B, I>(base, cells, inc),
        }
    }

    /// [`Self::increment_over`] for `N`-byte counters.
    #[inline]
    fn increment_sized<const N: usize, B: Base, I>(
        &mut self,
        base: &B,
        cells: I,
        inc: i64,
    ) -> Incremented
    where
        I: Iterator<Item = usize> + Clone,
    {
        let (up, m) = (inc >= 0, inc.unsigned_abs());
        let rejected = if up {
            Rejected::Overflow
        } else {
            Rejected::Underflow
        };
        // Room for `m` above `v` (with the base's `b` under it) in
        // 0 ..= max, or below `v`.
        let fits = |v: u64, b: u64, max: u64| {
            if up {
                m <= max.saturating_sub(v).saturating_sub(b)
            } else {
                m <= v
            }
        };
        if !fits(self.counter, base.total(), MAX_TOTAL) {
            return Err(rejected);
        }
        let max = self.cell_size.max();
        let mut min = u64::MAX;
        for (done, c) in cells.clone().enumerate() {
            let v = cell::load::<N>(&self.cells, c);
            let b = base.load::<N>(c);
            if !fits(v, b, max) {
                self.shift_cells(cells.take(done), m, !up);
                return Err(rejected);
            }
            // Checked: stays within 0 ..= max, and so does `b + v`.
            let v = shifted(v, m, up);
            cell::store::<N>(&mut self.cells, c, v);
            min = min.min(v.saturating_add(b));
        }
        self.counter = shifted(self.counter, m, up);
        Ok(min)
    }

    /// Adds `m` to (`up`) or subtracts it from each of `cells`: the undo of
    /// a partly applied increment (rows are distinct cells).
    #[cold]
    fn shift_cells(&mut self, cells: impl Iterator<Item = usize>, m: u64, up: bool) {
        for c in cells {
            self.store(c, shifted(self.load(c), m, up));
        }
    }

    #[inline]
    fn query_cells(&self, cells: impl Iterator<Item = usize>) -> u64 {
        cells.fold(u64::MAX, |min, c| min.min(self.load(c)))
    }

    /// CMS.INCRBY of one item (§4.1).
    pub fn increment(&mut self, item: &[u8], inc: i64) -> Incremented {
        let g = self.geometry();
        self.increment_cells(g.cells(item), inc)
    }

    /// CMS.QUERY of one item (§4.2).
    pub fn query(&self, item: &[u8]) -> u64 {
        self.query_cells(self.geometry().cells(item))
    }

    /// The blocks a batch of `n` items goes by, if the counters are worth
    /// prefetching.
    fn prefetched(&self, g: Geometry, n: usize) -> Option<batch::Blocks> {
        g.blocks(n).filter(|_| self.cells.len() >= PREFETCH_MIN)
    }

    /// Increments in order, as many single `increment`s would (an item
    /// repeated in the batch sees its earlier increments), handing each
    /// result to `each`. The counters of upcoming items are prefetched.
    pub fn increment_batch<T>(
        &mut self,
        items: &[T],
        item: impl Fn(&T) -> &[u8],
        inc: impl Fn(&T) -> i64,
        mut each: impl FnMut(Incremented),
    ) {
        let g = self.geometry();
        let Some(blocks) = self.prefetched(g, items.len()) else {
            items
                .iter()
                .for_each(|t| each(self.increment(item(t), inc(t))));
            return;
        };
        batch::pipelined(
            blocks,
            self,
            items,
            item,
            |s, c| s.prefetch(c),
            |s, t, cols| each(s.increment_cells(g.cells_at(cols), inc(t))),
        );
    }

    /// Queries in order, handing each result to `each`.
    pub fn query_batch<T: AsRef<[u8]>>(&self, items: &[T], mut each: impl FnMut(u64)) {
        let g = self.geometry();
        let Some(blocks) = self.prefetched(g, items.len()) else {
            items.iter().for_each(|t| each(self.query(t.as_ref())));
            return;
        };
        batch::pipelined(
            blocks,
            self,
            items,
            T::as_ref,
            |s, c| s.prefetch(c),
            |s, _, cols| each(s.query_cells(g.cells_at(cols))),
        );
    }

    /// A deep copy (COPY); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        Ok(CountMinSketch {
            cells: try_copy(&self.cells)?,
            ..*self
        })
    }

    /// The counter array, for active defragmentation.
    pub fn block_mut(&mut self) -> &mut dyn crate::alloc::Block {
        &mut self.cells
    }
}

/// `v` plus `m` (`up`) or minus it, saturating: callers check the range.
#[inline]
fn shifted(v: u64, m: u64, up: bool) -> u64 {
    if up {
        v.saturating_add(m)
    } else {
        v.saturating_sub(m)
    }
}

/// Counts an increment stands on: none for a plain sketch, a window's
/// closed buckets for its youngest (`window.rs`).
trait Base {
    fn total(&self) -> u64;
    fn load<const N: usize>(&self, cell: usize) -> u64;
}

/// A plain sketch's base: zero everywhere, folded away by the compiler.
struct NoBase;

impl Base for NoBase {
    #[inline]
    fn total(&self) -> u64 {
        0
    }

    #[inline]
    fn load<const N: usize>(&self, _: usize) -> u64 {
        0
    }
}

impl Base for CountMinSketch {
    #[inline]
    fn total(&self) -> u64 {
        self.counter
    }

    #[inline]
    fn load<const N: usize>(&self, cell: usize) -> u64 {
        cell::load::<N>(&self.cells, cell)
    }
}

/// `size · width · depth` bytes, if that fits in 64 bits.
fn byte_len(width: u64, depth: u64, size: CellSize) -> Option<u64> {
    width.checked_mul(depth)?.checked_mul(size.bytes() as u64)
}

impl std::fmt::Debug for CountMinSketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountMinSketch")
            .field("width", &self.width)
            .field("depth", &self.depth())
            .field("counter", &self.counter)
            .field("cell_size", &self.cell_size)
            .finish_non_exhaustive()
    }
}
