//! T-Digest (`TDIGEST.*`, type `TDIS-TYPE`): the command table
//! (docs/tdigest.md §3), the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;
mod forks;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

pub static FAMILY: Family =
    Family::of::<rsbloom_core::tdigest::TDigest>(c"tdigest", COMMANDS, docs::DOCS)
        .with_fork_handler(forks::compress_pending);

/// Flags and ACL categories exactly as docs/tdigest.md §3 lists them.
static COMMANDS: &[CommandSpec] = &[
    command!(
        "tdigest.create",
        commands::create,
        "write deny-oom",
        "write fast tdigest"
    ),
    command!(
        "tdigest.reset",
        commands::reset,
        "write deny-oom",
        "write fast tdigest"
    ),
    command!(
        "tdigest.add",
        commands::add,
        "write deny-oom",
        "write tdigest"
    ),
    command!(
        "tdigest.merge",
        commands::merge,
        "write deny-oom",
        "write tdigest"
    ),
    command!(
        "tdigest.min",
        commands::min,
        "readonly",
        "read fast tdigest"
    ),
    command!(
        "tdigest.max",
        commands::max,
        "readonly",
        "read fast tdigest"
    ),
    command!(
        "tdigest.quantile",
        commands::quantile,
        "readonly",
        "read fast tdigest"
    ),
    command!(
        "tdigest.cdf",
        commands::cdf,
        "readonly",
        "read fast tdigest"
    ),
    command!(
        "tdigest.rank",
        commands::rank,
        "readonly",
        "read fast tdigest"
    ),
    command!(
        "tdigest.revrank",
        commands::revrank,
        "readonly",
        "read fast tdigest"
    ),
    command!(
        "tdigest.byrank",
        commands::byrank,
        "readonly",
        "read fast tdigest"
    ),
    command!(
        "tdigest.byrevrank",
        commands::byrevrank,
        "readonly",
        "read fast tdigest"
    ),
    command!(
        "tdigest.trimmed_mean",
        commands::trimmed_mean,
        "readonly",
        "read tdigest"
    ),
    command!(
        "tdigest.info",
        commands::info,
        "readonly",
        "read fast tdigest"
    ),
];
