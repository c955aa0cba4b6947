//! Top-K (`TOPK.*`, type `TopK-TYPE`): the command table (docs/topk.md §1),
//! the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;
mod replies;
mod window;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

/// Plain Top-Ks, and windowed ones beside them (`TopKw-rsb`, served by the
/// same commands).
pub static FAMILY: Family = Family::of::<rsbloom_core::topk::TopK>(c"topk", COMMANDS, docs::DOCS)
    .with_second_type::<rsbloom_core::topk::WindowedTopK>("topk_window");

/// Flags and ACL categories of RedisBloom 8.x (docs/topk.md §1.2): none
/// has the `fast` flag; TOPK.COUNT is read-only. TOPK.TICK (rsbloom's)
/// carries the master's clock to a window's replicas.
static COMMANDS: &[CommandSpec] = commands!("topk";
    "topk.reserve" => commands::reserve, write "deny-oom", acl fast;
    "topk.add" => commands::add, write "deny-oom";
    "topk.incrby" => commands::incrby, write "deny-oom";
    "topk.query" => commands::query, readonly;
    "topk.count" => commands::count, readonly;
    "topk.list" => commands::list, readonly;
    "topk.info" => commands::info, readonly, acl fast;
    // rsbloom's: outside @topk, which holds RedisBloom's seven (issue 39).
    "topk.tick" => window::tick, write, acl fast, category "";
);
