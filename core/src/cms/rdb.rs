//! The `CMSk-TYPE` RDB value (docs/cms.md §6.1, §6.2): width, depth, total,
//! then the counters as one string.

use super::{byte_len, CountMinSketch};
use crate::rdb::{RdbSink, RdbSource, ReadError};

/// The only encoding there ever was.
pub const ENCODING_VERSION: i32 = 0;

/// Why an RDB value could not be loaded (the server fails the load).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadError {
    /// An encoding version other than 0.
    UnsupportedVersion,
    /// Truncated or malformed primitive stream.
    Read,
    /// A zero dimension, `4 · width · depth` beyond 64 bits, or a counter
    /// string of another length.
    Invalid,
}

impl From<ReadError> for LoadError {
    fn from(_: ReadError) -> Self {
        LoadError::Read
    }
}

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
