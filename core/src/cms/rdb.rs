//! The `CMSk-TYPE` RDB value (docs/cms.md §6.1, §6.2): width, depth, total,
//! then the counters as one string.

use super::{byte_len, CountMinSketch};
use crate::rdb::{LoadError, RdbSink, RdbSource};

/// The only encoding there ever was.
pub const ENCODING_VERSION: i32 = 0;

impl CountMinSketch {
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        sink.write_unsigned(self.width);
        sink.write_unsigned(self.depth());
        sink.write_unsigned(self.counter);
        sink.write_buffer(&self.cells);
    }

    /// Reads a value; the counter string is adopted as the sketch's storage.
    /// The dimensions are checked before the string is read.
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Self, LoadError> {
        if encver != ENCODING_VERSION {
            return Err(LoadError::UnsupportedVersion);
        }
        let width = src.read_unsigned()?;
        let depth = src.read_unsigned()?;
        let counter = src.read_unsigned()?;
        if width == 0 || depth == 0 {
            return Err(LoadError::Invalid);
        }
        let len = byte_len(width, depth).ok_or(LoadError::Invalid)?;
        let cells = src.read_buffer()?;
        if cells.len() as u64 != len {
            return Err(LoadError::Invalid);
        }
        Ok(CountMinSketch {
            cells,
            width,
            counter,
        })
    }
}
