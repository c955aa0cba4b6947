//! `CMSk-TYPE`: how a sketch lives in the keyspace (docs/cms.md §1.1, §6).

use rsbloom_core::cms::{CellSize, CountMinSketch, ENCODING_VERSION};
use std::ffi::{c_int, CStr};

use crate::ffi::datatype::{DataType, TypeCell};
use rsbloom_core::alloc::Block;
use rsbloom_core::rdb::RdbSink;

use crate::ffi::io::{AofWriter, IoSource};

static CELL: TypeCell = TypeCell::new();

impl DataType for CountMinSketch {
    const NAME: &'static CStr = c"CMSk-TYPE";
    const ENCODING_VERSION: c_int = ENCODING_VERSION;

    fn registered_encoding_version() -> c_int {
        super::encoding::rdb_encoding()
    }

    fn cell() -> &'static TypeCell {
        &CELL
    }

    fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Self, String> {
        let s = CountMinSketch::rdb_load(src, encver).map_err(|e| format!("{e:?}"))?;
        if s.cell_size() != CellSize::Four && super::encoding::legacy_encoding() {
            return Err(format!(
                "cell size {} refused under bf.cms-rdb-encoding 0",
                s.cell_size().bytes()
            ));
        }
        Ok(s)
    }

    /// In the registered encoding; under encoding 0 every sketch has
    /// 4-byte cells (creation and load refuse others).
    fn rdb_save_to<S: RdbSink>(&self, sink: &mut S) {
        CountMinSketch::rdb_save(self, sink, super::encoding::rdb_encoding())
    }

    /// `RESTORE key 0 <DUMP payload>`, as RedisBloom rewrites it (§6.3).
    fn aof_rewrite(&self, aof: &mut AofWriter) {
        aof.restore_from_dump();
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.size_bytes()).unwrap_or(usize::MAX)
    }

    fn try_clone(&self) -> Option<Self> {
        CountMinSketch::try_clone(self).ok()
    }

    fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        f(self.block_mut())
    }
}
