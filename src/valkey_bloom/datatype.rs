//! `bloomfltr`: how a valkey-bloom filter lives in the keyspace
//! (COMPAT-VALKEY-BLOOM §5, docs/valkey-bloom.md §5).

use rsbloom_core::valkey_bloom::Object;

use crate::config;
use crate::ffi::io::{AofWriter, IoSource};
use crate::ffi::stats::Footprint;

/// The per-object memory limit, when it applies: to a client's RESTORE,
/// never to what must be obeyed — the server loading its data, a replica
/// taking what the master took (valkey-bloom checks it there too, and a
/// lower limit then drops keys or stops the replica: COMPAT-VALKEY-BLOOM §8),
/// or a slot migration importing the key (it would be lost in the move).
fn load_limit(src: &IoSource) -> Option<u64> {
    (!src.must_obey()).then(memory_limit)
}

/// `bf.bloom-memory-usage-limit` in bytes.
pub fn memory_limit() -> u64 {
    u64::try_from(config::get().valkey_bloom.memory_limit).unwrap_or(0)
}

data_type! {
    Object = rsbloom_core::valkey_bloom::TYPE, bytes size;
    load(src, encver) => {
        let limit = load_limit(src);
        Object::rdb_load(src, encver, limit).map_err(|e| format!("{e:?}"))
    };
    {
        fn digest_to<S: RdbSink>(&self, sink: &mut S) {
            self.digest(sink)
        }

        /// `BF.LOAD key <blob>`, as valkey-bloom rewrites it.
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            if let Ok(blob) = self.to_load_blob() {
                aof.key_and_blob(c"BF.LOAD", &blob);
            }
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
    }
}
