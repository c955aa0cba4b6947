//! The `CMSk-TYPE` RDB value (docs/cms.md §6.1, §6.2): width, depth, total,
//! the cell size (encoding 1), then the counters as one string.

use super::{byte_len, CellSize, CountMinSketch, MAX_TOTAL};
use crate::rdb::{LoadError, RdbSink, RdbSource};

/// Redis 8.12's encoding: the cell size follows the total.
pub const ENCODING_VERSION: i32 = 1;
/// RedisBloom before 8.12: no cell size field, 4-byte cells.
pub const LEGACY_ENCODING_VERSION: i32 = 0;

impl CountMinSketch {
    /// Writes the value in `encver`'s layout. Encoding 0 has no cell-size
    /// field, so only 4-byte sketches may be saved in it (the module
    /// refuses others when it writes encoding 0).
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S, encver: i32) {
        sink.write_unsigned(self.width);
        sink.write_unsigned(self.depth());
        sink.write_unsigned(self.counter);
        if encver >= ENCODING_VERSION {
            sink.write_unsigned(self.cell_size.bytes() as u64);
        }
        sink.write_buffer(&self.cells);
    }

    /// Reads a value; the counter string is adopted as the sketch's storage.
    /// The dimensions and cell size are checked before the string is read,
    /// the total and the 8-byte counters after (§6.2).
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Self, LoadError> {
        if !(LEGACY_ENCODING_VERSION..=ENCODING_VERSION).contains(&encver) {
            return Err(LoadError::UnsupportedVersion);
        }
        let width = src.read_unsigned()?;
        let depth = src.read_unsigned()?;
        let counter = src.read_unsigned()?;
        let cell_size = if encver >= ENCODING_VERSION {
            CellSize::from_bytes(src.read_unsigned()?).ok_or(LoadError::Invalid)?
        } else {
            CellSize::Four
        };
        if width == 0 || depth == 0 {
            return Err(LoadError::Invalid);
        }
        let len = byte_len(width, depth, cell_size).ok_or(LoadError::Invalid)?;
        let cells = src.read_buffer()?;
        if cells.len() as u64 != len {
            return Err(LoadError::Invalid);
        }
        let s = CountMinSketch {
            cells,
            width,
            counter,
            cell_size,
        };
        if counter > MAX_TOTAL || !s.cells_in_range() {
            return Err(LoadError::Invalid);
        }
        Ok(s)
    }

    /// Whether every counter is at most the cell maximum: only 8-byte
    /// counters can exceed it (2^63 − 1).
    pub(super) fn cells_in_range(&self) -> bool {
        let max = self.cell_size.max();
        self.cell_size != CellSize::Eight
            || self
                .cells
                .as_chunks::<8>()
                .0
                .iter()
                .all(|b| u64::from_le_bytes(*b) <= max)
    }
}
