//! The `MBbloom--` RDB value (docs/bloom.md §9), written at version 4, read at 0..=4.

use super::dump::MAX_LINKS;
use super::link::{LinkMeta, LooseLink};
use super::{loose_items, Chain, LoadError, ENCODING_VERSION};
use crate::rdb::{RdbSink, RdbSource, ReadError};

/// Growth of chains saved before version 4 stored it.
const LEGACY_GROWTH: u32 = 2;

impl From<ReadError> for LoadError {
    fn from(_: ReadError) -> Self {
        LoadError::Read
    }
}

impl Chain {
    /// Writes the value at `ENCODING_VERSION`.
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        sink.write_unsigned(self.items());
        sink.write_unsigned(self.num_links() as u64);
        sink.write_unsigned(u64::from(self.options()));
        sink.write_unsigned(u64::from(self.growth()));
        for l in self.links().iter() {
            sink.write_unsigned(l.entries());
            sink.write_double(l.error());
            sink.write_unsigned(u64::from(l.hashes()));
            sink.write_double(l.bpe());
            sink.write_unsigned(l.bits());
            sink.write_unsigned(u64::from(l.n2()));
            sink.write_buffer(l.data());
            sink.write_unsigned(l.size());
        }
    }

    /// Reads a value saved at encoding version `encver` (0..=4).
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Box<Chain>, LoadError> {
        if !(0..=ENCODING_VERSION).contains(&encver) {
            return Err(LoadError::Version);
        }
        let size = src.read_unsigned()?;
        let n = src.read_unsigned()?;
        if n == 0 || n > MAX_LINKS {
            return Err(LoadError::Invalid("number of links"));
        }
        // Both fields are 32-bit in RedisBloom, which truncates what it reads.
        let options = if encver >= 2 {
            src.read_unsigned()? as u32
        } else {
            0
        };
        let growth = if encver >= 4 {
            src.read_unsigned()? as u32
        } else {
            LEGACY_GROWTH
        };
        let mut links = Vec::new();
        links
            .try_reserve_exact(n as usize)
            .map_err(|_| LoadError::OutOfMemory)?;
        for _ in 0..n {
            links.push(read_link(src, encver)?);
        }
        loose_items(&links, size)?;
        Chain::from_parts(options, growth, links).map_err(|_| LoadError::OutOfMemory)
    }
}

/// One link; its parameters are validated before the bit array is read.
fn read_link<S: RdbSource>(src: &mut S, encver: i32) -> Result<LooseLink, LoadError> {
    let entries = src.read_unsigned()?;
    let error = src.read_double()?;
    let hashes = src.read_unsigned()?;
    let bpe = src.read_double()?;
    let (bits, n2) = if encver >= 1 {
        (src.read_unsigned()?, src.read_unsigned()?)
    } else {
        ((entries as f64 * bpe) as u64, 0)
    };
    let mut meta = LinkMeta {
        entries,
        error,
        bpe,
        hashes,
        bits,
        n2,
        size: 0,
    };
    meta.check()?;
    let data = src.read_buffer()?;
    meta.size = src.read_unsigned()?;
    LooseLink::from_meta(&meta, data)
}
