//! Cuckoo filters (`MBbloomCF`): the CF.* commands and the data type.
mod commands;
mod datatype;

use crate::ffi::command::CommandSpec;

command_entry!(reserve_entry, "cf.reserve", commands::reserve);
command_entry!(add_entry, "cf.add", commands::add);
command_entry!(addnx_entry, "cf.addnx", commands::addnx);
command_entry!(insert_entry, "cf.insert", commands::insert);
command_entry!(insertnx_entry, "cf.insertnx", commands::insertnx);
command_entry!(exists_entry, "cf.exists", commands::exists);
command_entry!(mexists_entry, "cf.mexists", commands::mexists);
command_entry!(count_entry, "cf.count", commands::count);
command_entry!(del_entry, "cf.del", commands::del);
command_entry!(compact_entry, "cf.compact", commands::compact);
command_entry!(scandump_entry, "cf.scandump", commands::scandump);
command_entry!(loadchunk_entry, "cf.loadchunk", commands::loadchunk);
command_entry!(info_entry, "cf.info", commands::info);
command_entry!(debug_entry, "cf.debug", commands::debug);

const fn spec(
    name: &'static std::ffi::CStr,
    flags: &'static std::ffi::CStr,
    acl: &'static std::ffi::CStr,
    entry: unsafe extern "C" fn(
        *mut redis_module::raw::RedisModuleCtx,
        *mut *mut redis_module::raw::RedisModuleString,
        std::ffi::c_int,
    ) -> std::ffi::c_int,
) -> CommandSpec {
    CommandSpec {
        name,
        flags,
        acl,
        entry,
    }
}

/// Flags and ACL categories of COMPAT §1.4. CF.COMPACT is `readonly` although
/// it mutates and replicates (kept quirk, §8.2).
pub static COMMANDS: &[CommandSpec] = &[
    spec(
        c"CF.RESERVE",
        c"write deny-oom",
        c"write fast cuckoo",
        reserve_entry,
    ),
    spec(c"CF.ADD", c"write deny-oom", c"write cuckoo", add_entry),
    spec(c"CF.ADDNX", c"write deny-oom", c"write cuckoo", addnx_entry),
    spec(
        c"CF.INSERT",
        c"write deny-oom",
        c"write cuckoo",
        insert_entry,
    ),
    spec(
        c"CF.INSERTNX",
        c"write deny-oom",
        c"write cuckoo",
        insertnx_entry,
    ),
    spec(c"CF.EXISTS", c"readonly fast", c"read cuckoo", exists_entry),
    spec(
        c"CF.MEXISTS",
        c"readonly fast",
        c"read cuckoo",
        mexists_entry,
    ),
    spec(c"CF.COUNT", c"readonly fast", c"read cuckoo", count_entry),
    spec(c"CF.DEL", c"write fast", c"write cuckoo", del_entry),
    spec(
        c"CF.COMPACT",
        c"readonly fast",
        c"read cuckoo",
        compact_entry,
    ),
    spec(
        c"CF.SCANDUMP",
        c"readonly fast",
        c"read cuckoo",
        scandump_entry,
    ),
    spec(
        c"CF.LOADCHUNK",
        c"write deny-oom",
        c"write cuckoo",
        loadchunk_entry,
    ),
    spec(
        c"CF.INFO",
        c"readonly fast",
        c"read fast cuckoo",
        info_entry,
    ),
    spec(c"CF.DEBUG", c"readonly fast", c"read cuckoo", debug_entry),
];
