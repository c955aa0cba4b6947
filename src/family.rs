//! A family of commands (`BF.*`, `CF.*`, ...): what the module registers for
//! it. Each family module exports one [`Family`]; `registry::FAMILIES` lists
//! them in registration order, and everything module-wide (data types, ACL
//! categories, commands, command docs, the INFO section) iterates that list.

use std::ffi::CStr;

use redis_module::raw::RedisModuleCtx;

use crate::command_docs::Doc;
use crate::ffi::command::CommandSpec;
use crate::ffi::context::{Ctx, ModuleValue};
use crate::ffi::datatype::{create, DataType};
use crate::ffi::stats::TypeStats;

pub struct Family {
    /// The module ACL category (`bloom`), also the INFO field prefix
    /// (`bf_bloom_keys`).
    pub name: &'static CStr,
    pub commands: &'static [CommandSpec],
    /// `COMMAND INFO` / `COMMAND DOCS` metadata, where the server has the API.
    pub docs: &'static [Doc],
    /// Registers the family's data type.
    pub create_type: fn(*mut RedisModuleCtx) -> Result<(), String>,
    /// Live values of that type and their memory.
    pub stats: fn() -> &'static TypeStats,
    /// Runs in the server right after it forks a snapshot child.
    pub on_fork: Option<fn(&Ctx)>,
}

impl Family {
    /// The family whose values are of type `T`.
    pub const fn of<T: DataType>(
        name: &'static CStr,
        commands: &'static [CommandSpec],
        docs: &'static [Doc],
    ) -> Family {
        Family {
            name,
            commands,
            docs,
            create_type: create::<T>,
            stats: <T as ModuleValue>::stats,
            on_fork: None,
        }
    }

    pub const fn with_fork_handler(mut self, handler: fn(&Ctx)) -> Family {
        self.on_fork = Some(handler);
        self
    }
}
