//! Bloom filters (`BF.*`, type `MBbloom--`): the command table (docs/module.md §2.1),
//! the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

pub static FAMILY: Family =
    Family::of::<rsbloom_core::bloom::Chain>(c"bloom", COMMANDS, docs::DOCS);

/// Flags and ACL categories exactly as docs/module.md §2.1 lists them.
static COMMANDS: &[CommandSpec] = &[
    command!(
        "bf.reserve",
        commands::reserve,
        "write deny-oom",
        "write fast bloom"
    ),
    command!("bf.add", commands::add, "write deny-oom", "write bloom"),
    command!("bf.madd", commands::madd, "write deny-oom", "write bloom"),
    command!(
        "bf.insert",
        commands::insert_cmd,
        "write deny-oom",
        "write bloom"
    ),
    command!("bf.exists", commands::exists, "readonly fast", "read bloom"),
    command!(
        "bf.mexists",
        commands::mexists,
        "readonly fast",
        "read bloom"
    ),
    command!(
        "bf.info",
        commands::info,
        "readonly fast",
        "read fast bloom"
    ),
    command!(
        "bf.card",
        commands::card,
        "readonly fast",
        "read fast bloom"
    ),
    command!("bf.debug", commands::debug, "readonly fast", "read bloom"),
    command!(
        "bf.scandump",
        commands::scandump,
        "readonly fast",
        "read bloom"
    ),
    command!(
        "bf.loadchunk",
        commands::loadchunk,
        "write deny-oom",
        "write bloom"
    ),
];
