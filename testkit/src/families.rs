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

/// The types on a ring of time buckets (the windowed CMS, Top-K and
/// T-Digest): their tour starts the clock with the family's `TICK`.
pub fn windowed() -> impl Iterator<Item = &'static ModuleType> {
    TYPES
        .iter()
        .copied()
        .filter(|t| t.tour.iter().any(|c| c[0] == tick(t)))
}

/// The command that moves a value of `t` to a given time (`<prefix>TICK`;
/// the windowed types and APBF have it).
pub fn tick(t: &ModuleType) -> String {
    format!("{}TICK", t.commands)
}

/// Sets the configs that make `t`'s tour create a value of `t`, and
/// RedisBloom's Bloom flavour otherwise.
pub fn configure(c: &mut crate::Conn, t: &ModuleType) {
    for (name, value) in t.config {
        assert_eq!(c.cmd(&["CONFIG", "SET", name, value]), crate::ok());
    }
    if t.config.is_empty() {
        let flavour = ["CONFIG", "SET", "bf.bloom-flavor", "redisbloom"];
        assert_eq!(c.cmd(&flavour), crate::ok());
    }
}
