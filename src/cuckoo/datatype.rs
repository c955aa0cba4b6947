//! `MBbloomCF`: how a cuckoo filter lives in the keyspace (docs/module.md
//! §1.2, docs/cuckoo.md §13, §15).

use rsbloom_core::cuckoo::{CuckooFilter, LegacyDefaults, ENCODING_VERSION};
use std::ffi::{c_int, CStr};

use crate::ffi::datatype::{DataType, TypeCell};
use rsbloom_core::alloc::Block;
use rsbloom_core::rdb::RdbSink;

use crate::ffi::io::{AofWriter, IoSource};

static CELL: TypeCell = TypeCell::new();

/// RDB values are trusted up to the type's own limit (255), not the current
/// cf-bucket-size bound: lowering a config must never make a restart drop data.
const RDB_MAX_BUCKET_SIZE: u16 = 255;

fn legacy_defaults() -> LegacyDefaults {
    let cfg = crate::config::get();
    let narrow = |v: i64, fallback: u16| u16::try_from(v).unwrap_or(fallback);
    LegacyDefaults {
        bucket_size: narrow(cfg.cf_bucket_size, 2),
        max_iterations: narrow(cfg.cf_max_iterations, 20),
        expansion: narrow(cfg.cf_expansion_factor, 1),
    }
}

impl DataType for CuckooFilter {
    const NAME: &'static CStr = c"MBbloomCF";
    const ENCODING_VERSION: c_int = ENCODING_VERSION;

    fn cell() -> &'static TypeCell {
        &CELL
    }

    fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Self, String> {
        CuckooFilter::rdb_load(src, encver, legacy_defaults(), RDB_MAX_BUCKET_SIZE)
            .map_err(|e| format!("{e:?}"))
    }

    fn rdb_save_to<S: RdbSink>(&self, sink: &mut S) {
        CuckooFilter::rdb_save(self, sink)
    }

    /// CF.LOADCHUNK of the header at position 1, then of every sub-filter
    /// chunk (even when empty, unlike CF.SCANDUMP; docs/cuckoo.md §15).
    fn aof_rewrite(&self, aof: &mut AofWriter) {
        aof.loadchunk(c"CF.LOADCHUNK", 1, &self.encode_header());
        for (pos, chunk) in self.aof_chunks() {
            aof.loadchunk(c"CF.LOADCHUNK", pos, chunk);
        }
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.size_bytes()).unwrap_or(usize::MAX)
    }

    fn try_clone(&self) -> Option<Self> {
        CuckooFilter::try_clone(self).ok()
    }

    fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        self.blocks_mut().for_each(f)
    }
}
