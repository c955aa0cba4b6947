//! Count-Min Sketch (`CMSk-TYPE`), byte-compatible with RedisBloom
//! (docs/cms.md §2–§4).
//!
//! `depth` rows of `width` u32 counters, row-major. Row `i` of an item is
//! column `MurmurHash2(item, i) mod width`; an increment raises the item's
//! counter in every row (saturating at 2^32 - 1), a query answers the
//! smallest of them.

mod batch;
mod merge;
mod rdb;
mod sizing;

#[cfg(test)]
mod tests;

pub use crate::rdb::LoadError;
pub use merge::{MergeError, Source};
pub use rdb::ENCODING_VERSION;
pub use sizing::dims_for_error;

use crate::alloc::{try_copy, try_zeroed, AllocError};
use batch::Geometry;

/// Bytes per counter.
const CELL: usize = 4;
/// Counters saturate here; a minimum of exactly this is an overflow (§4.1).
pub const SATURATED: u32 = u32::MAX;
/// Size of RedisBloom's sketch record (width, depth, array pointer, total
/// counter), part of every sketch's MEMORY USAGE (§6.4).
const RECORD_BYTES: u64 = 32;

/// Why `CountMinSketch::new` failed (§3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateError {
    /// `CMS: invalid init arguments`.
    Invalid,
    /// `CMS: Insufficient memory to create the key`.
    OutOfMemory,
}

/// A sketch. The record is 32 bytes like RedisBloom's (the counter bytes
/// as a fat pointer, the width and the total): the depth is implied by the
/// length, since `cells.len() = 4 · width · depth` exactly.
#[derive(PartialEq, Eq)]
pub struct CountMinSketch {
    /// Counters as RDB stores them: u32 little-endian, row-major.
    cells: Box<[u8]>,
    width: u64,
    /// Sum of all accepted increments and merged totals, wrapping.
    counter: u64,
}

impl CountMinSketch {
    /// A zeroed sketch (creation checks of §3.3).
    pub fn new(width: u64, depth: u64) -> Result<Self, CreateError> {
        let signed_max = i64::MAX as u64;
        if width == 0 || depth == 0 || width > signed_max / depth {
            return Err(CreateError::Invalid);
        }
        let bytes = byte_len(width, depth).ok_or(CreateError::OutOfMemory)?;
        let cells = try_zeroed(bytes).map_err(|_| CreateError::OutOfMemory)?;
        Ok(CountMinSketch {
            cells,
            width,
            counter: 0,
        })
    }

    /// CMS.INITBYPROB: the dimensions of §3.2, then `new`.
    pub fn for_error(error: f64, probability: f64) -> Result<Self, CreateError> {
        let (width, depth) = dims_for_error(error, probability).ok_or(CreateError::Invalid)?;
        Self::new(width, depth)
    }

    pub fn width(&self) -> u64 {
        self.width
    }

    pub fn depth(&self) -> u64 {
        // width ≥ 1 by construction; max(1) keeps this division panic-free.
        (self.cells.len() / CELL) as u64 / self.width.max(1)
    }

    /// The total of increments, as CMS.INFO `count` shows it (signed, §4.4).
    pub fn count(&self) -> i64 {
        self.counter as i64
    }

    /// MEMORY USAGE (§6.4): the record and the counters.
    pub fn size_bytes(&self) -> u64 {
        RECORD_BYTES.saturating_add(self.cells.len() as u64)
    }

    fn geometry(&self) -> Geometry {
        Geometry::new(self.width, self.depth())
    }

    /// The counters, each as its 4 little-endian bytes.
    #[inline]
    fn words(&self) -> &[[u8; CELL]] {
        self.cells.as_chunks::<CELL>().0
    }

    /// Counter `cell` (0 if out of range, which the geometry never makes).
    #[inline]
    fn load(&self, cell: usize) -> u32 {
        self.words().get(cell).map_or(0, |b| u32::from_le_bytes(*b))
    }

    #[inline]
    fn store(&mut self, cell: usize, v: u32) {
        if let Some(slot) = self.cells.as_chunks_mut::<CELL>().0.get_mut(cell) {
            *slot = v.to_le_bytes();
        }
    }

    #[inline]
    fn prefetch(&self, cell: usize) {
        if let Some(word) = self.words().get(cell) {
            crate::prefetch::prefetch(&word[0]);
        }
    }

    /// Adds `inc` to the item's counter in every row (`cells`), saturating,
    /// and to the total; returns the smallest counter after the increment
    /// (§4.1).
    #[inline]
    fn increment_cells(&mut self, cells: impl Iterator<Item = usize>, inc: u64) -> u32 {
        let mut min = SATURATED;
        for c in cells {
            let v = saturating_add(self.load(c), inc);
            self.store(c, v);
            min = min.min(v);
        }
        self.counter = self.counter.wrapping_add(inc);
        min
    }

    #[inline]
    fn query_cells(&self, cells: impl Iterator<Item = usize>) -> u32 {
        cells.fold(SATURATED, |min, c| min.min(self.load(c)))
    }

    /// CMS.INCRBY of one item (§4.1): the result, `SATURATED` meaning the
    /// overflow reply.
    pub fn increment(&mut self, item: &[u8], inc: u64) -> u32 {
        let g = self.geometry();
        self.increment_cells(g.cells(item), inc)
    }

    /// CMS.QUERY of one item (§4.2).
    pub fn query(&self, item: &[u8]) -> u32 {
        self.query_cells(self.geometry().cells(item))
    }

    /// Increments in order, as many single `increment`s would (an item
    /// repeated in the batch sees its earlier increments), handing each
    /// result to `each`. The counters of upcoming items are prefetched.
    pub fn increment_batch<T>(
        &mut self,
        items: &[T],
        item: impl Fn(&T) -> &[u8],
        inc: impl Fn(&T) -> u64,
        mut each: impl FnMut(u32),
    ) {
        let g = self.geometry();
        let Some(blocks) = g.blocks(items.len()) else {
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
    pub fn query_batch<T: AsRef<[u8]>>(&self, items: &[T], mut each: impl FnMut(u32)) {
        let g = self.geometry();
        let Some(blocks) = g.blocks(items.len()) else {
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

/// `min(v + inc, 2^32 - 1)`: RedisBloom adds in 64 bits and saturates.
#[inline]
fn saturating_add(v: u32, inc: u64) -> u32 {
    u32::try_from(u64::from(v).saturating_add(inc)).unwrap_or(SATURATED)
}

/// `4 · width · depth` bytes, if that fits in 64 bits.
fn byte_len(width: u64, depth: u64) -> Option<u64> {
    width.checked_mul(depth)?.checked_mul(CELL as u64)
}

impl std::fmt::Debug for CountMinSketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountMinSketch")
            .field("width", &self.width)
            .field("depth", &self.depth())
            .field("counter", &self.counter)
            .finish_non_exhaustive()
    }
}
