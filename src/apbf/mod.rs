//! Age-Partitioned Bloom Filter (`APBF.*`, type `APBF-rsbl`): sliding-window
//! membership (docs/apbf.md). rsbloom's own family: no RedisBloom type or
//! command changes with it.
mod commands;
mod datatype;
mod docs;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

pub static FAMILY: Family = Family::of::<rsbloom_core::apbf::Apbf>(c"apbf", COMMANDS, docs::DOCS);

/// APBF.EXISTS and APBF.INFO only read (a time window is aged virtually,
/// docs/apbf.md §4.2); APBF.TICK carries the master's clock to replicas.
static COMMANDS: &[CommandSpec] = commands!("apbf";
    "apbf.reserve" => commands::reserve, write "deny-oom", acl fast;
    "apbf.add" => commands::add, write "deny-oom";
    "apbf.exists" => commands::exists, readonly;
    "apbf.info" => commands::info, readonly, acl fast;
    "apbf.scandump" => commands::scandump, readonly;
    "apbf.loadchunk" => commands::loadchunk, write "deny-oom";
    "apbf.tick" => commands::tick, write, acl fast;
);
