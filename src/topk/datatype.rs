//! `TopK-TYPE` and `TopKw-rsb`: how a Top-K lives in the keyspace
//! (docs/topk.md §5, docs/topk-window.md §6).

use rsbloom_core::topk::{TopK, WindowedTopK};

use crate::ffi::io::AofWriter;

data_type! {
    TopK = rsbloom_core::topk::TYPE, bytes memory_usage;

    {
        const FIXED_FOOTPRINT: bool = true;

        /// `RESTORE key 0 <DUMP payload>`, as RedisBloom rewrites it.
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            aof.restore_from_dump();
        }

        fn for_each_linked_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
            f(self.heap_block_mut())
        }
    }
}

data_type! {
    WindowedTopK = rsbloom_core::topk::WINDOW_TYPE, bytes memory_usage;

    {
        /// `RESTORE key 0 <DUMP payload>`: the buckets and heap records
        /// are at most 256 MiB (docs/topk-window.md §6), within the bulk
        /// limit.
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            aof.restore_from_dump();
        }

        fn for_each_linked_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
            self.heap_blocks_mut().for_each(f)
        }
    }
}
