//! `TopK-TYPE`: how a Top-K lives in the keyspace (docs/topk.md §5).

use std::ffi::{c_int, CStr};

use rsbloom_core::alloc::Block;
use rsbloom_core::rdb::RdbSink;
use rsbloom_core::topk::{TopK, ENCODING_VERSION};

use crate::ffi::datatype::{DataType, TypeCell};
use crate::ffi::io::{AofWriter, IoSource};

static CELL: TypeCell = TypeCell::new();

impl DataType for TopK {
    const NAME: &'static CStr = c"TopK-TYPE";
    const ENCODING_VERSION: c_int = ENCODING_VERSION;

    fn cell() -> &'static TypeCell {
        &CELL
    }

    fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Self, String> {
        TopK::rdb_load(src, encver).map_err(|e| format!("{e:?}"))
    }

    fn rdb_save_to<S: RdbSink>(&self, sink: &mut S) {
        TopK::rdb_save(self, sink)
    }

    /// `RESTORE key 0 <DUMP payload>`, as RedisBloom rewrites it.
    fn aof_rewrite(&self, aof: &mut AofWriter) {
        aof.restore_from_dump();
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.memory_usage()).unwrap_or(usize::MAX)
    }

    fn try_clone(&self) -> Option<Self> {
        TopK::try_clone(self).ok()
    }

    fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        self.blocks_mut().for_each(f)
    }

    fn for_each_linked_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        f(self.heap_block_mut())
    }
}
