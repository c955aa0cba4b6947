//! `MBbloomCF`: how a cuckoo filter lives in the keyspace (docs/module.md
//! §1.2, docs/cuckoo.md §13, §15).

use rsbloom_core::cuckoo::{CuckooFilter, LegacyDefaults};

use crate::ffi::io::AofWriter;
use crate::ffi::stats::Footprint;

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

data_type! {
    CuckooFilter = rsbloom_core::cuckoo::TYPE, bytes size_bytes;
    load(src, encver) =>
        CuckooFilter::rdb_load(src, encver, legacy_defaults(), RDB_MAX_BUCKET_SIZE)
            .map_err(|e| format!("{e:?}"));

    {
        /// Only the number of sub-filters changes the size (each has the
        /// size growth gives it).
        fn shape(&self) -> Option<u64> {
            Some(u64::from(self.num_filters()))
        }

        fn footprint_at(&self, filters: u64) -> Footprint {
            Footprint::bytes(self.size_bytes_at(u16::try_from(filters).unwrap_or(u16::MAX)))
        }

        /// CF.LOADCHUNK of the header at position 1, then of every sub-filter
        /// chunk (even when empty, unlike CF.SCANDUMP; docs/cuckoo.md §15).
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            aof.loadchunk(c"CF.LOADCHUNK", 1, &self.encode_header());
            for (pos, chunk) in self.aof_chunks() {
                aof.loadchunk(c"CF.LOADCHUNK", pos, chunk);
            }
        }
    }
}
