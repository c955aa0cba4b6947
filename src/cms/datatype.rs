//! `CMSk-TYPE` and `CMSw-rsbl`: how a sketch lives in the keyspace
//! (docs/cms.md §1.1, §6; docs/cms-window.md §6).

use rsbloom_core::cms::{CellSize, CountMinSketch, WindowedCms};

use crate::ffi::io::AofWriter;

data_type! {
    CountMinSketch = rsbloom_core::cms::TYPE, bytes size_bytes;
    load(src, encver) => {
        let s = CountMinSketch::rdb_load(src, encver).map_err(|e| format!("{e:?}"))?;
        if s.cell_size() != CellSize::Four && crate::config::cms_legacy_encoding() {
            return Err(format!(
                "cell size {} refused under bf.cms-rdb-encoding 0",
                s.cell_size().bytes()
            ));
        }
        Ok(s)
    };
    // In the registered encoding; under encoding 0 every sketch has 4-byte
    // cells (creation and load refuse others).
    save(sketch, sink) => sketch.rdb_save(sink, crate::config::cms_rdb_encoding());
    blocks(sketch, f) => f(sketch.block_mut());

    {
        const FIXED_FOOTPRINT: bool = true;

        fn registered_encoding_version() -> c_int {
            crate::config::cms_rdb_encoding()
        }

        /// `RESTORE key 0 <DUMP payload>`, as RedisBloom rewrites it (§6.3).
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            aof.restore_from_dump();
        }
    }
}

data_type! {
    WindowedCms = rsbloom_core::cms::WINDOW_TYPE, bytes size_bytes;

    {
        const FIXED_FOOTPRINT: bool = true;

        /// `RESTORE key 0 <DUMP payload>`: the value is at most 256 MiB of
        /// counters (docs/cms-window.md §6), within the bulk limit.
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            aof.restore_from_dump();
        }
    }
}
