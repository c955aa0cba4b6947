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
static COMMANDS: &[CommandSpec] = commands!("cuckoo";
    "cf.reserve" => commands::reserve, write "deny-oom", acl fast;
    "cf.add" => commands::add, write "deny-oom";
    "cf.addnx" => commands::addnx, write "deny-oom";
    "cf.insert" => commands::insert, write "deny-oom";
    "cf.insertnx" => commands::insertnx, write "deny-oom";
    "cf.exists" => commands::exists, readonly "fast";
    "cf.mexists" => commands::mexists, readonly "fast";
    "cf.count" => commands::count, readonly "fast";
    "cf.del" => commands::del, write "fast";
    "cf.compact" => commands::compact, readonly "fast";
    "cf.scandump" => commands::scandump, readonly "fast";
    "cf.loadchunk" => commands::loadchunk, write "deny-oom";
    "cf.info" => commands::info, readonly "fast", acl fast;
    "cf.debug" => commands::debug, readonly "fast";
);
