//! Every data type of the module, as the table-driven tests iterate them:
//! `rsbloom_core::TYPES`, each with the `config` that makes it and its
//! `tour` of commands on one key. A new family fills those in its core
//! `TYPE` and needs nothing here (docs/testing.md).

pub use rsbloom_core::{ModuleType, TYPES};

/// `t.tour` with `K` replaced by `key`.
pub fn tour_on(t: &ModuleType, key: &str) -> Vec<Vec<String>> {
    t.tour
        .iter()
        .map(|c| {
            c.iter()
                .map(|a| if *a == "K" { key } else { a }.to_string())
                .collect()
        })
        .collect()
}
