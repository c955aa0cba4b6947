//! Placeholder: the family's commands land in `commands.rs`.
mod datatype;

use crate::ffi::command::CommandSpec;
pub static COMMANDS: &[CommandSpec] = &[];
