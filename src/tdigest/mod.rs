//! T-Digest (`TDIGEST.*`, type `TDIS-TYPE`): the command table
//! (docs/tdigest.md §3), the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;
mod forks;
mod window;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

/// Plain digests, and windowed ones beside them (`TDigw-rsb`, served by
/// the same commands).
pub static FAMILY: Family =
    Family::of::<rsbloom_core::tdigest::TDigest>(c"tdigest", COMMANDS, docs::DOCS)
        .with_fork_handler(forks::compress_pending)
        .with_second_type::<rsbloom_core::tdigest::WindowedTDigest>("tdigest_window");

/// Flags and ACL categories exactly as docs/tdigest.md §3 lists them.
/// TDIGEST.TICK (rsbloom's) carries the master's clock to a window's
/// replicas.
static COMMANDS: &[CommandSpec] = commands!("tdigest";
    "tdigest.create" => commands::create, write "deny-oom", acl fast;
    "tdigest.reset" => commands::reset, write "deny-oom", acl fast;
    "tdigest.add" => commands::add, write "deny-oom";
    "tdigest.merge" => commands::merge, write "deny-oom";
    "tdigest.min" => commands::min, readonly, acl fast;
    "tdigest.max" => commands::max, readonly, acl fast;
    "tdigest.quantile" => commands::quantile, readonly, acl fast;
    "tdigest.cdf" => commands::cdf, readonly, acl fast;
    "tdigest.rank" => commands::rank, readonly, acl fast;
    "tdigest.revrank" => commands::revrank, readonly, acl fast;
    "tdigest.byrank" => commands::byrank, readonly, acl fast;
    "tdigest.byrevrank" => commands::byrevrank, readonly, acl fast;
    "tdigest.trimmed_mean" => commands::trimmed_mean, readonly;
    "tdigest.info" => commands::info, readonly, acl fast;
    // rsbloom's: outside @tdigest, which holds RedisBloom's commands (issue 39).
    "tdigest.tick" => window::tick, write, acl fast, category "";
);
