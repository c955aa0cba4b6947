//! Bloom filters (`BF.*`, type `MBbloom--`): the command table (COMPAT §1.4),
//! the handlers and the data type callbacks.
mod commands;
mod datatype;

use crate::ffi::command::CommandSpec;

command_entry!(reserve_entry, "bf.reserve", commands::reserve);
command_entry!(add_entry, "bf.add", commands::add);
command_entry!(madd_entry, "bf.madd", commands::madd);
command_entry!(insert_entry, "bf.insert", commands::insert_cmd);
command_entry!(exists_entry, "bf.exists", commands::exists);
command_entry!(mexists_entry, "bf.mexists", commands::mexists);
command_entry!(info_entry, "bf.info", commands::info);
command_entry!(card_entry, "bf.card", commands::card);
command_entry!(debug_entry, "bf.debug", commands::debug);
command_entry!(scandump_entry, "bf.scandump", commands::scandump);
command_entry!(loadchunk_entry, "bf.loadchunk", commands::loadchunk);

const WRITE: &std::ffi::CStr = c"write deny-oom";
const READ: &std::ffi::CStr = c"readonly fast";

/// Flags and ACL categories exactly as COMPAT §1.4 lists them.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: c"BF.RESERVE",
        flags: WRITE,
        acl: c"write fast bloom",
        entry: reserve_entry,
    },
    CommandSpec {
        name: c"BF.ADD",
        flags: WRITE,
        acl: c"write bloom",
        entry: add_entry,
    },
    CommandSpec {
        name: c"BF.MADD",
        flags: WRITE,
        acl: c"write bloom",
        entry: madd_entry,
    },
    CommandSpec {
        name: c"BF.INSERT",
        flags: WRITE,
        acl: c"write bloom",
        entry: insert_entry,
    },
    CommandSpec {
        name: c"BF.EXISTS",
        flags: READ,
        acl: c"read bloom",
        entry: exists_entry,
    },
    CommandSpec {
        name: c"BF.MEXISTS",
        flags: READ,
        acl: c"read bloom",
        entry: mexists_entry,
    },
    CommandSpec {
        name: c"BF.INFO",
        flags: READ,
        acl: c"read fast bloom",
        entry: info_entry,
    },
    CommandSpec {
        name: c"BF.CARD",
        flags: READ,
        acl: c"read fast bloom",
        entry: card_entry,
    },
    CommandSpec {
        name: c"BF.DEBUG",
        flags: READ,
        acl: c"read bloom",
        entry: debug_entry,
    },
    CommandSpec {
        name: c"BF.SCANDUMP",
        flags: READ,
        acl: c"read bloom",
        entry: scandump_entry,
    },
    CommandSpec {
        name: c"BF.LOADCHUNK",
        flags: WRITE,
        acl: c"write bloom",
        entry: loadchunk_entry,
    },
];
