//! `TDIS-TYPE` and `TDigw-rsb`: how a T-Digest lives in the keyspace
//! (docs/tdigest.md §7; docs/tdigest-window.md §6).

use rsbloom_core::tdigest::{TDigest, WindowedTDigest};

use crate::ffi::io::{AofWriter, IoSink};

data_type! {
    TDigest = rsbloom_core::tdigest::TYPE, bytes memory_usage;
    blocks(td, f) => TDigest::for_each_block_mut(td, f);
    {
        const FIXED_FOOTPRINT: bool = true;

        /// Saves the compressed digest (§7.1). Like RedisBloom, a save in the
        /// serving process compresses the live digest (later answers depend on
        /// it), and then replicates that compression so replicas and the AOF
        /// follow (§8.3). A replica, or any server while replication is paused,
        /// saves a compressed copy instead, and a forked child (BGSAVE, full
        /// sync, AOF rewrite) may change its own copy freely.
        fn rdb_save(&mut self, sink: &mut IoSink) {
            if !self.has_unmerged() || sink.in_forked_child() {
                self.compress();
                self.rdb_save_to(sink);
                return;
            }
            let follower = sink.on_replica() || sink.replication_paused();
            if follower {
                if let Ok(mut copy) = self.try_clone() {
                    copy.compress();
                    copy.rdb_save_to(sink);
                    return;
                }
            }
            let changed = self.compress().changed();
            self.rdb_save_to(sink);
            if changed && !follower {
                sink.replicate_for_key(c"TDIGEST.CDF", b"0", 1);
            }
        }

        /// The whole live state, unmerged nodes included, unchanged (§7.4).
        fn digest_to<S: RdbSink>(&self, sink: &mut S) {
            self.state_words(|w| sink.write_unsigned(w));
        }

        /// `RESTORE key 0 <DUMP payload>`, as RedisBloom (§7.5).
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            aof.restore_from_dump();
        }
    }
}

data_type! {
    WindowedTDigest = rsbloom_core::tdigest::WINDOW_TYPE, bytes size_bytes;
    blocks(td, f) => WindowedTDigest::for_each_block_mut(td, f);
    {
        const FIXED_FOOTPRINT: bool = true;

        /// `RESTORE key 0 <DUMP payload>`: the value is at most 256 MiB of
        /// nodes (docs/tdigest-window.md §6), within the bulk limit.
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            aof.restore_from_dump();
        }
    }
}
