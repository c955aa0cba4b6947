//! `APBF-rsbl`: how a sliding-window filter lives in the keyspace
//! (docs/apbf.md §6).

use rsbloom_core::apbf::Apbf;

use crate::ffi::io::AofWriter;

data_type! {
    Apbf = rsbloom_core::apbf::TYPE, bytes size_bytes;

    {
        /// The slices are sized by the header at creation and rotate in
        /// place; LOADCHUNK of a header makes a new value.
        const FIXED_FOOTPRINT: bool = true;

        /// APBF.LOADCHUNK of every SCANDUMP chunk (at most 16 MiB each), as a
        /// client copying the filter would send them.
        fn aof_rewrite(&self, aof: &mut AofWriter) {
            let mut iter = 0;
            while let Some((next, chunk)) = self.scandump(iter) {
                aof.loadchunk(c"APBF.LOADCHUNK", next as i64, &chunk);
                iter = next;
            }
        }
    }
}
