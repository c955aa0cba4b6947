//! CMS.* on windowed sketches (`CMSw-rsbl`, docs/cms-window.md): the same
//! commands as the plain sketch, each write first aged to the master's
//! clock (`crate::clock`), each read aged virtually by the reader's.

use rsbloom_core::cms::args::BAD_TIMESTAMP;
use rsbloom_core::cms::{CellSize, WindowError, WindowedCms};
use rsbloom_core::window::{WindowSpec, Windowed};

use super::replies::{create_error, pair_item, reply_incremented, Increments, KEY_MISSING};
use crate::clock::{age_to_clock, create_window, reply_window_info, tick_command, TickCommand};
use crate::ffi::{CmdResult, Ctx, Key, RStr, ReplyError};

const TOO_LARGE: ReplyError =
    ReplyError::Text("CMS: a windowed sketch holds at most 268435456 bytes of counters");
const BAD_WINDOW: ReplyError =
    ReplyError::Text("CMS: WINDOW must be at least BUCKETS milliseconds");
/// CMS.MERGE sums whole sketches; a window's buckets have no counterpart
/// in a plain sketch, nor in another window's ring.
pub const NO_MERGE: ReplyError = ReplyError::Text("CMS: MERGE does not support windowed sketches");
const TICK: TickCommand = TickCommand {
    name: c"CMS.TICK",
    bad_timestamp: BAD_TIMESTAMP,
    missing: KEY_MISSING,
    future: ReplyError::Text("CMS: timestamp is more than 60 s past the server's clock"),
    key_first: false,
};

/// The end of CMS.INITBY* with WINDOW: the key is vacant and the numbers
/// checked; the size limits, then the allocation.
pub fn init(
    ctx: &Ctx,
    key: Key,
    width: u64,
    depth: u64,
    cell_size: CellSize,
    w: WindowSpec,
) -> CmdResult {
    create_window(
        ctx,
        key,
        WindowedCms::new_size(width, depth, cell_size, w),
        || WindowedCms::new(width, depth, cell_size, w),
        window_error,
    )
}

fn window_error(e: WindowError) -> ReplyError {
    match e {
        WindowError::Sketch(e) => create_error(e),
        // The parser checks the window first.
        WindowError::Window => BAD_WINDOW,
        WindowError::TooLarge => TOO_LARGE,
    }
}

/// CMS.INCRBY on a window: increments checked first, the sketch aged to
/// the master's clock (its tick replicated first), then every pair.
pub fn incrby(ctx: &Ctx, name: &RStr, mut key: Key, pairs: &[[RStr; 2]]) -> CmdResult {
    let s = key.get::<WindowedCms>().or_missing(KEY_MISSING)?;
    let incs = Increments::check(pairs)?;
    age_to_clock(ctx, TICK.name, name, s);
    ctx.reply_array(pairs.len());
    s.increment_batch(
        pairs,
        pair_item,
        |p| incs.of(p),
        |r| reply_incremented(ctx, r),
    );
    ctx.propagate();
    Ok(())
}

/// CMS.QUERY on a window, as of the reader's clock.
pub fn query(ctx: &Ctx, key: &Key, items: &[RStr]) -> CmdResult {
    let s = key.get_shared::<WindowedCms>().or_missing(KEY_MISSING)?;
    ctx.reply_array(items.len());
    s.query_batch(items, ctx.now_ms(), |v| {
        ctx.reply_int(i64::try_from(v).unwrap_or(i64::MAX))
    });
    Ok(())
}

/// CMS.INFO on a window: the plain sketch's fields (count over the window,
/// as of the reader's clock), then the window's.
pub fn info(ctx: &Ctx, key: &Key) -> CmdResult {
    let s = key.get_shared::<WindowedCms>().or_missing(KEY_MISSING)?;
    let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let plain = [
        ("width", int(s.width())),
        ("depth", int(s.depth())),
        ("count", s.count(ctx.now_ms())),
        ("cell_size", int(s.cell_size().bytes() as u64)),
    ];
    reply_window_info(ctx, &plain, s.ring());
    Ok(())
}

/// CMS.TICK key unix-ms: ages a windowed sketch to that time.
pub fn tick(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    tick_command::<WindowedCms>(ctx, args, TICK)
}
