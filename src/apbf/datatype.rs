//! `APBF-rsbl`: how a sliding-window filter lives in the keyspace
//! (docs/apbf.md §6).

use rsbloom_core::apbf::{Apbf, ENCODING_VERSION};
use std::ffi::{c_int, CStr};

use crate::ffi::datatype::{DataType, TypeCell};
use rsbloom_core::alloc::Block;
use rsbloom_core::rdb::RdbSink;

use crate::ffi::io::{AofWriter, IoSource};

static CELL: TypeCell = TypeCell::new();

impl DataType for Apbf {
    const NAME: &'static CStr = c"APBF-rsbl";
    const ENCODING_VERSION: c_int = ENCODING_VERSION;

    fn cell() -> &'static TypeCell {
        &CELL
    }

    fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Self, String> {
        Apbf::rdb_load(src, encver).map_err(|e| format!("{e:?}"))
    }

    fn rdb_save_to<S: RdbSink>(&self, sink: &mut S) {
        Apbf::rdb_save(self, sink)
    }

    /// APBF.LOADCHUNK of every SCANDUMP chunk (at most 16 MiB each), as a
    /// client copying the filter would send them.
    fn aof_rewrite(&self, aof: &mut AofWriter) {
        let mut iter = 0;
        while let Some((next, chunk)) = self.scandump(iter) {
            aof.loadchunk(c"APBF.LOADCHUNK", next as i64, &chunk);
            iter = next;
        }
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.size_bytes()).unwrap_or(usize::MAX)
    }

    fn try_clone(&self) -> Option<Self> {
        Apbf::try_clone(self).ok()
    }

    fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        self.blocks_mut().for_each(f)
    }
}
