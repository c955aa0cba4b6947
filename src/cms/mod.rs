//! Count-Min Sketch (`CMS.*`, type `CMSk-TYPE`): the command table
//! (docs/cms.md §1.2), the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;
pub mod encoding;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

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
