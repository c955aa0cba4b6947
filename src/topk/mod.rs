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
static COMMANDS: &[CommandSpec] = commands!("topk";
    "topk.reserve" => commands::reserve, write "deny-oom", acl fast;
    "topk.add" => commands::add, write "deny-oom";
    "topk.incrby" => commands::incrby, write "deny-oom";
    "topk.query" => commands::query, readonly;
    "topk.count" => commands::count, readonly;
    "topk.list" => commands::list, readonly;
    "topk.info" => commands::info, readonly, acl fast;
);
