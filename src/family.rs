//! A family of commands (`BF.*`, `CF.*`, ...): what the module registers for
//! it. Each family module exports one [`Family`]; `families!` in lib.rs
//! declares the modules and lists them in registration order (`FAMILIES`),
//! and everything module-wide (data types, ACL categories, commands,
//! command docs, the INFO section) iterates that list.

use std::ffi::CStr;

use redis_module::raw::RedisModuleCtx;
use rsbloom_core::config::BloomFlavor;

use crate::command_docs::Doc;
use crate::ffi::command::CommandSpec;
use crate::ffi::context::{Ctx, ModuleValue};
use crate::ffi::datatype::{create, DataType};
use crate::ffi::stats::TypeStats;

/// Declares the family modules and `FAMILIES`, their `FAMILY` in this
/// order, the registration order: the one line a new family adds.
macro_rules! families {
    ($($family:ident),* $(,)?) => {
        $(mod $family;)*

        /// Every family, in registration order.
        pub static FAMILIES: &[&family::Family] = &[$(&$family::FAMILY),*];
    };
}

/// Registers a data type with the server.
pub type CreateType = fn(*mut RedisModuleCtx) -> Result<(), String>;

/// Live values of a data type and their memory.
pub type Stats = fn() -> &'static TypeStats;

pub struct Family {
    /// The module ACL category (`bloom`), also the INFO field prefix
    /// (`bf_bloom_keys`).
    pub name: &'static CStr,
    pub commands: &'static [CommandSpec],
    /// `COMMAND INFO` / `COMMAND DOCS` metadata, where the server has the API.
    pub docs: &'static [Doc],
    /// Registers the family's data type.
    pub create_type: CreateType,
    /// Live values of that type and their memory.
    pub stats: Stats,
    /// Runs in the server right after it forks a snapshot child.
    pub on_fork: Option<fn(&Ctx)>,
    /// A second flavour of the family (Bloom: valkey-bloom's): the command
    /// table registered instead when `bf.bloom-flavor` names it at load,
    /// and its data type, registered always.
    pub second_flavor: Option<(&'static [CommandSpec], CreateType)>,
    /// A second data type the family's commands serve (CMS: windowed
    /// sketches), registered always: its INFO field prefix, its type and
    /// its live values.
    pub second_type: Option<(&'static str, CreateType, Stats)>,
}

impl Family {
    /// The family whose values are of type `T`.
    pub const fn of<T: DataType + ?Sized>(
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
            second_flavor: None,
            second_type: None,
        }
    }

    pub const fn with_second_flavor(
        mut self,
        commands: &'static [CommandSpec],
        create_type: CreateType,
    ) -> Family {
        self.second_flavor = Some((commands, create_type));
        self
    }

    /// Values of type `T` served too, counted in INFO as `<info_name>_keys`.
    pub const fn with_second_type<T: DataType>(mut self, info_name: &'static str) -> Family {
        self.second_type = Some((info_name, create::<T>, <T as ModuleValue>::stats));
        self
    }

    /// The commands registered under `flavor` (chosen at load).
    pub fn commands_for(&self, flavor: BloomFlavor) -> &'static [CommandSpec] {
        match (flavor, self.second_flavor) {
            (BloomFlavor::ValkeyBloom, Some((commands, _))) => commands,
            _ => self.commands,
        }
    }

    /// The command metadata applied under `flavor`: none for a second
    /// flavour's table (valkey-bloom sets none).
    pub fn docs_for(&self, flavor: BloomFlavor) -> &'static [Doc] {
        match (flavor, self.second_flavor) {
            (BloomFlavor::ValkeyBloom, Some(_)) => &[],
            _ => self.docs,
        }
    }

    /// Registers the family's data types.
    pub fn create_types(&self, ctx: *mut RedisModuleCtx) -> Result<(), String> {
        (self.create_type)(ctx)?;
        if let Some((_, create_second, _)) = self.second_type {
            create_second(ctx)?;
        }
        match self.second_flavor {
            Some((_, create_second)) => create_second(ctx),
            None => Ok(()),
        }
    }

    pub const fn with_fork_handler(mut self, handler: fn(&Ctx)) -> Family {
        self.on_fork = Some(handler);
        self
    }
}
