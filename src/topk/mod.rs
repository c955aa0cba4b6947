//! Top-K (`TOPK.*`, type `TopK-TYPE`): the command table (docs/topk.md §1),
//! the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

pub static FAMILY: Family = Family::of::<rsbloom_core::topk::TopK>(c"topk", COMMANDS, docs::DOCS);

/// Flags and ACL categories of RedisBloom 8.x (docs/topk.md §1.2): none
/// has the `fast` flag; TOPK.COUNT is read-only.
static COMMANDS: &[CommandSpec] = &[
    command!(
        "topk.reserve",
        commands::reserve,
        "write deny-oom",
        "write fast topk"
    ),
    command!("topk.add", commands::add, "write deny-oom", "write topk"),
    command!(
        "topk.incrby",
        commands::incrby,
        "write deny-oom",
        "write topk"
    ),
    command!("topk.query", commands::query, "readonly", "read topk"),
    command!("topk.count", commands::count, "readonly", "read topk"),
    command!("topk.list", commands::list, "readonly", "read topk"),
    command!("topk.info", commands::info, "readonly", "read fast topk"),
];
