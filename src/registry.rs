//! What the module registers: its identity and its families (listed by
//! `families!` in lib.rs). Families provide their tables; `module`
//! registers them, `info` reports on them.

use std::ffi::c_int;

pub use crate::FAMILIES;

/// The RedisBloom release whose behaviour rsbloom matches (docs/module.md §1.1:
/// clients compare this number); rsbloom's own version goes to the log.
pub const MODULE_VERSION: c_int = 81181;
pub const COMPAT_RELEASE: &str = "8.11.81";

#[cfg(test)]
mod tests {
    use crate::command_docs::assert_c_arrays_terminated;
    use crate::FAMILIES;

    /// Each family documents only its own registered commands, each once.
    #[test]
    fn docs_name_registered_commands_once() {
        for family in FAMILIES {
            let mut names: Vec<String> = family
                .docs
                .iter()
                .map(|d| d.name().to_str().unwrap().to_lowercase())
                .collect();
            let count = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), count, "{:?}: duplicate docs", family.name);
            for name in &names {
                assert!(
                    family.commands.iter().any(|c| c.name.to_str() == Ok(name)),
                    "{name} is documented but not a command of {:?}",
                    family.name
                );
            }
        }
    }

    #[test]
    fn c_arrays_are_terminated() {
        for d in FAMILIES.iter().flat_map(|f| f.docs) {
            assert_c_arrays_terminated(d);
        }
    }
}
