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
static COMMANDS: &[CommandSpec] = &[
    command!(
        "apbf.reserve",
        commands::reserve,
        "write deny-oom",
        "write fast apbf"
    ),
    command!("apbf.add", commands::add, "write deny-oom", "write apbf"),
    command!("apbf.exists", commands::exists, "readonly", "read apbf"),
    command!("apbf.info", commands::info, "readonly", "read fast apbf"),
    command!("apbf.scandump", commands::scandump, "readonly", "read apbf"),
    command!(
        "apbf.loadchunk",
        commands::loadchunk,
        "write deny-oom",
        "write apbf"
    ),
    command!("apbf.tick", commands::tick, "write", "write fast apbf"),
];
