//! `MBbloom--`: how a Bloom chain lives in the keyspace (docs/module.md §1.2,
//! docs/bloom.md §9, §11).

use rsbloom_core::bloom::Chain;

use crate::ffi::io::AofWriter;

data_type! {
    Chain = rsbloom_core::bloom::TYPE, bytes size_bytes;

    {
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
