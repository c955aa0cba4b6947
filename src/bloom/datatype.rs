//! `MBbloom--`: how a Bloom chain lives in the keyspace (docs/module.md §1.2,
//! docs/bloom.md §9, §11).

use std::ptr::NonNull;

use rsbloom_core::bloom::Chain;

use crate::ffi::io::AofWriter;
use crate::ffi::stats::Footprint;

data_type! {
    Chain = rsbloom_core::bloom::TYPE, bytes memory_usage;
    // SAFETY: the server's value is a Box<Chain>'s address (DataType::at).
    at(value) => unsafe { Chain::at(NonNull::new_unchecked(value.cast())).as_ptr() };
    blocks(chain, f) => chain.for_each_block_mut(f);

    {
        /// INFO bf counts BF.INFO Size (RedisBloom's formula), as for
        /// every family; MEMORY USAGE counts the allocations.
        fn for_each_linked_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
            Chain::for_each_linked_block_mut(self, f)
        }

        fn moved(&mut self) {
            Chain::moved(self)
        }

        fn footprint(&self) -> Footprint {
            Footprint::bytes(self.size_bytes())
        }

        /// Links are only ever appended, and only they change the size.
        fn shape(&self) -> Option<u64> {
            Some(self.num_links() as u64)
        }

        fn footprint_at(&self, links: u64) -> Footprint {
            Footprint::bytes(self.size_bytes_at(usize::try_from(links).unwrap_or(usize::MAX)))
        }


        /// BF.LOADCHUNK of the header at iterator 1, then of each SCANDUMP
        /// chunk at the iterator that follows it, exactly as a client replaying
        /// SCANDUMP would.
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            aof.loadchunk(c"BF.LOADCHUNK", 1, &self.encode_header());
            let mut iter = 1;
            while let Some((next, chunk)) = self.scandump_chunk(iter) {
                aof.loadchunk(c"BF.LOADCHUNK", next, chunk);
                iter = next;
            }
        }
    }
}
