//! `bf.cms-rdb-encoding` (docs/cms.md §6.5): the encoding sketches are
//! written in, set once while the module loads, before the data type is
//! registered with it.

use std::sync::atomic::{AtomicI32, Ordering};

use rsbloom_core::cms::{ENCODING_VERSION, LEGACY_ENCODING_VERSION};

/// `bf.cms-rdb-encoding`: set once, while the module loads, before the
/// data type is registered.
static RDB_ENCODING: AtomicI32 = AtomicI32::new(ENCODING_VERSION);

/// The encoding CMS values are written in (and the type registered with).
pub fn rdb_encoding() -> i32 {
    RDB_ENCODING.load(Ordering::Relaxed)
}

pub fn set_rdb_encoding(v: i32) {
    RDB_ENCODING.store(v, Ordering::Relaxed)
}

/// Whether values are written as RedisBloom before 8.12 reads them: only
/// 4-byte sketches may then exist.
pub fn legacy_encoding() -> bool {
    rdb_encoding() == LEGACY_ENCODING_VERSION
}
