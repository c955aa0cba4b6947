//! `bloomfltr`: how a valkey-bloom filter lives in the keyspace
//! (COMPAT-VALKEY-BLOOM §5, docs/valkey-bloom.md §5).

use std::ffi::{c_int, CStr};

use rsbloom_core::alloc::Block;
use rsbloom_core::rdb::RdbSink;
use rsbloom_core::valkey_bloom::{Object, ENCODING_VERSION};

use crate::config;
use crate::ffi::datatype::{DataType, TypeCell};
use crate::ffi::io::{loading_or_replica, AofWriter, IoSource};
use crate::ffi::stats::Footprint;

static CELL: TypeCell = TypeCell::new();

/// The per-object memory limit, when it applies: to a client's RESTORE,
/// never while the server loads its data or syncs as a replica, which must
/// take what the master took (valkey-bloom checks it there too, and a lower
/// limit then drops keys or stops the replica: COMPAT-VALKEY-BLOOM §8).
fn load_limit() -> Option<u64> {
    (!loading_or_replica()).then(memory_limit)
}

/// `bf.bloom-memory-usage-limit` in bytes.
pub fn memory_limit() -> u64 {
    u64::try_from(config::get().valkey_bloom.memory_limit).unwrap_or(0)
}

impl DataType for Object {
    const NAME: &'static CStr = c"bloomfltr";
    const ENCODING_VERSION: c_int = ENCODING_VERSION;

    fn cell() -> &'static TypeCell {
        &CELL
    }

    fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Self, String> {
        Object::rdb_load(src, encver, load_limit()).map_err(|e| format!("{e:?}"))
    }

    fn rdb_save_to<S: RdbSink>(&self, sink: &mut S) {
        Object::rdb_save(self, sink)
    }

    fn digest_to<S: RdbSink>(&self, sink: &mut S) {
        self.digest(sink)
    }

    /// `BF.LOAD key <blob>`, as valkey-bloom rewrites it.
    fn aof_rewrite(&self, aof: &mut AofWriter) {
        if let Ok(blob) = self.to_load_blob() {
            aof.key_and_blob(c"BF.LOAD", &blob);
        }
    }

    fn mem_usage(&self) -> usize {
        usize::try_from(self.size()).unwrap_or(usize::MAX)
    }

    fn footprint(&self) -> Footprint {
        Footprint {
            bytes: i64::try_from(self.size()).unwrap_or(i64::MAX),
            filters: i64::try_from(self.num_filters()).unwrap_or(i64::MAX),
            items: self.card(),
            capacity: self.capacity(),
        }
    }

    fn defrag_enabled() -> bool {
        config::get().valkey_bloom.defrag
    }

    fn try_clone(&self) -> Option<Self> {
        Object::try_clone(self).ok()
    }

    fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        self.blocks_mut().for_each(f)
    }
}
