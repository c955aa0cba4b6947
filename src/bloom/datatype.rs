//! `MBbloom--`: how a Bloom chain lives in the keyspace (docs/module.md §1.2,
//! docs/bloom.md §9, §11).

use rsbloom_core::bloom::{Chain, ENCODING_VERSION};
use std::ffi::{c_int, CStr};

use crate::ffi::datatype::{DataType, TypeCell};
use rsbloom_core::alloc::Block;
use rsbloom_core::rdb::RdbSink;

use crate::ffi::io::{AofWriter, IoSource};

static CELL: TypeCell = TypeCell::new();

impl DataType for Chain {
    const NAME: &'static CStr = c"MBbloom--";
    const ENCODING_VERSION: c_int = ENCODING_VERSION;

    fn cell() -> &'static TypeCell {
        &CELL
    }

    fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Self, String> {
        Chain::rdb_load(src, encver).map_err(|e| format!("{e:?}"))
    }

    fn rdb_save_to<S: RdbSink>(&self, sink: &mut S) {
        Chain::rdb_save(self, sink)
    }

    /// BF.LOADCHUNK of the header at iterator 1, then of each SCANDUMP
    /// chunk at the iterator that follows it, exactly as a client replaying
    /// SCANDUMP would.
    fn aof_rewrite(&self, aof: &mut AofWriter) {
        aof.loadchunk(c"BF.LOADCHUNK", 1, &self.encode_header());
        let mut iter = 1;
        while let Some((next, chunk)) = self.scandump_chunk(iter) {
            aof.loadchunk(c"BF.LOADCHUNK", next, chunk);
            iter = next;
        }
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.size_bytes()).unwrap_or(usize::MAX)
    }

    fn try_clone(&self) -> Option<Self> {
        Chain::try_clone(self).ok()
    }

    fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        self.blocks_mut().for_each(f)
    }
}
