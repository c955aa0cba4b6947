//! Cuckoo filters (`CF.*`, type `MBbloomCF`): the command table (docs/module.md §2.1),
//! the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

pub static FAMILY: Family =
    Family::of::<rsbloom_core::cuckoo::CuckooFilter>(c"cuckoo", COMMANDS, docs::DOCS);

/// Flags and ACL categories exactly as docs/module.md §2.1 lists them.
static COMMANDS: &[CommandSpec] = &[
    command!(
        "cf.reserve",
        commands::reserve,
        "write deny-oom",
        "write fast cuckoo"
    ),
    command!("cf.add", commands::add, "write deny-oom", "write cuckoo"),
    command!(
        "cf.addnx",
        commands::addnx,
        "write deny-oom",
        "write cuckoo"
    ),
    command!(
        "cf.insert",
        commands::insert,
        "write deny-oom",
        "write cuckoo"
    ),
    command!(
        "cf.insertnx",
        commands::insertnx,
        "write deny-oom",
        "write cuckoo"
    ),
    command!(
        "cf.exists",
        commands::exists,
        "readonly fast",
        "read cuckoo"
    ),
    command!(
        "cf.mexists",
        commands::mexists,
        "readonly fast",
        "read cuckoo"
    ),
    command!("cf.count", commands::count, "readonly fast", "read cuckoo"),
    command!("cf.del", commands::del, "write fast", "write cuckoo"),
    command!(
        "cf.compact",
        commands::compact,
        "readonly fast",
        "read cuckoo"
    ),
    command!(
        "cf.scandump",
        commands::scandump,
        "readonly fast",
        "read cuckoo"
    ),
    command!(
        "cf.loadchunk",
        commands::loadchunk,
        "write deny-oom",
        "write cuckoo"
    ),
    command!(
        "cf.info",
        commands::info,
        "readonly fast",
        "read fast cuckoo"
    ),
    command!("cf.debug", commands::debug, "readonly fast", "read cuckoo"),
];
