//! TDIGEST.* on windowed digests (`TDigw-rsb`, docs/tdigest-window.md):
//! the same commands as the plain digest, each write first aged to the
//! master's clock (`crate::clock`), each read answered from the live
//! buckets merged as of the reader's clock. Reads never change the value,
//! so they replicate nothing.

use rsbloom_core::tdigest::args::{ALLOC_FAILED, BAD_TIMESTAMP, KEY_MISSING, OVERFLOW};
use rsbloom_core::tdigest::window::View;
use rsbloom_core::tdigest::{c_i64, WindowError, WindowedTDigest};
use rsbloom_core::window::{WindowSpec, Windowed};

use crate::clock::{age_to_clock, create_window, reply_window_info, tick_command, TickCommand};
use crate::ffi::{CmdResult, Ctx, Key, RStr, ReplyError};

const TOO_LARGE: ReplyError =
    ReplyError::Text("ERR T-Digest: a windowed digest holds at most 268435456 bytes of nodes");
/// TDIGEST.MERGE builds a plain digest from whole digests: a window's
/// buckets have no counterpart in it (docs/tdigest-window.md §5).
pub const NO_MERGE: ReplyError =
    ReplyError::Text("ERR T-Digest: MERGE does not support windowed digests");
const TICK: TickCommand = TickCommand {
    name: c"TDIGEST.TICK",
    bad_timestamp: BAD_TIMESTAMP,
    missing: ReplyError::Text(KEY_MISSING),
    future: ReplyError::Text("ERR T-Digest: timestamp is more than 60 s past the server's clock"),
    key_first: true,
};

/// The end of TDIGEST.CREATE with WINDOW: the key is vacant and the
/// options checked; the size limits, then the allocation.
pub fn create(ctx: &Ctx, key: Key, compression: i64, w: WindowSpec) -> CmdResult {
    create_window(
        ctx,
        key,
        WindowedTDigest::new_size(compression, w),
        || WindowedTDigest::new(compression, w),
        window_error,
    )
}

fn window_error(e: WindowError) -> ReplyError {
    match e {
        WindowError::TooLarge => TOO_LARGE,
        // The parser checks the window and the compression first.
        WindowError::Alloc | WindowError::Window => ReplyError::Text(ALLOC_FAILED),
    }
}

/// TDIGEST.ADD on a window: values checked, the digest aged to the
/// master's clock (its tick replicated first), then the values.
pub fn add(ctx: &Ctx, name: &RStr, mut key: Key, values: &[f64]) -> CmdResult {
    let td = key
        .get::<WindowedTDigest>()
        .or_missing(ReplyError::Text(KEY_MISSING))?;
    age_to_clock(ctx, TICK.name, name, td);
    td.add_values(values)
        .map_err(|_| ReplyError::Text(OVERFLOW))?;
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

/// TDIGEST.RESET on a window: every bucket emptied, window and clock kept.
pub fn reset(ctx: &Ctx, mut key: Key) -> CmdResult {
    key.get::<WindowedTDigest>()
        .or_missing(ReplyError::Text(KEY_MISSING))?
        .reset();
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

/// The digest a read answers from: the window as of the reader's clock.
pub fn view(ctx: &Ctx, td: &WindowedTDigest) -> Result<View, ReplyError> {
    td.view(ctx.now_ms())
        .map_err(|_| ReplyError::Text(ALLOC_FAILED))
}

/// TDIGEST.INFO on a window: the plain digest's fields over the window
/// (the merged digest reads answer from; memory usage the key's), then
/// the window's.
pub fn info(ctx: &Ctx, td: &WindowedTDigest) -> CmdResult {
    let v = view(ctx, td)?;
    let plain = [
        ("Compression", c_i64(td.compression())),
        ("Capacity", i64::from(v.capacity())),
        ("Merged nodes", i64::from(v.merged_nodes())),
        ("Unmerged nodes", i64::from(v.unmerged_nodes())),
        ("Merged weight", v.merged_weight()),
        ("Unmerged weight", v.unmerged_weight()),
        ("Observations", v.size()),
        ("Total compressions", v.total_compressions()),
        (
            "Memory usage",
            i64::try_from(td.size_bytes()).unwrap_or(i64::MAX),
        ),
    ];
    reply_window_info(ctx, &plain, td.ring());
    Ok(())
}

/// TDIGEST.TICK key unix-ms: ages a windowed digest to that time.
pub fn tick(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    tick_command::<WindowedTDigest>(ctx, args, TICK)
}
