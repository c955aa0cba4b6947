//! Count-Min Sketch (`CMS.*`, type `CMSk-TYPE`): the command table
//! (docs/cms.md §1.2), the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;

use std::sync::atomic::{AtomicI32, Ordering};

use rsbloom_core::cms::{ENCODING_VERSION, LEGACY_ENCODING_VERSION};

use crate::family::Family;
use crate::ffi::command::CommandSpec;

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

pub static FAMILY: Family =
    Family::of::<rsbloom_core::cms::CountMinSketch>(c"cms", COMMANDS, docs::DOCS);

/// Flags and ACL categories exactly as RedisBloom 8.x registers them:
/// the INIT commands are in `@fast` without the `fast` flag.
static COMMANDS: &[CommandSpec] = &[
    command!(
        "cms.initbydim",
        commands::initbydim,
        "write deny-oom",
        "write fast cms"
    ),
    command!(
        "cms.initbyprob",
        commands::initbyprob,
        "write deny-oom",
        "write fast cms"
    ),
    command!(
        "cms.incrby",
        commands::incrby,
        "write deny-oom",
        "write cms"
    ),
    command!("cms.query", commands::query, "readonly", "read cms"),
    command!("cms.merge", commands::merge, "write deny-oom", "write cms"),
    command!("cms.info", commands::info, "readonly", "read fast cms"),
];
