//! The `APBF-rsbl` RDB value (docs/apbf.md §6.1): the header's words, then
//! each slice as one string, by physical position.

use super::header::FIELDS;
use super::{Apbf, Header};
use crate::rdb::{LoadError, RdbSink, RdbSource};

pub const ENCODING_VERSION: i32 = 0;

impl Apbf {
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        for w in self.h.to_words() {
            sink.write_unsigned(w);
        }
        for s in &self.slices {
            sink.write_buffer(s);
        }
    }

    /// Reads a value: the header is validated before any slice is read,
    /// and every slice must have the header's length.
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Self, LoadError> {
        if encver != ENCODING_VERSION {
            return Err(LoadError::UnsupportedVersion);
        }
        let mut words = [0u64; FIELDS];
        for w in &mut words {
            *w = src.read_unsigned()?;
        }
        let h = Header::from_words(words).ok_or(LoadError::Invalid)?;
        let n = usize::try_from(h.slices()).map_err(|_| LoadError::Invalid)?;
        let mut slices = Vec::with_capacity(n);
        for _ in 0..n {
            let s = src.read_buffer()?;
            if s.len() as u64 != h.slice_bytes() {
                return Err(LoadError::Invalid);
            }
            slices.push(s);
        }
        Ok(Apbf {
            h,
            slices: slices.into_boxed_slice(),
        })
    }
}
