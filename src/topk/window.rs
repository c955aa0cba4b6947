//! TOPK.* on windowed Top-Ks (`TopKw-rsb`, docs/topk-window.md): the same
//! commands as the plain sketch, each write first aged to the master's
//! clock (`crate::clock`), each read aged virtually by the reader's.

use rsbloom_core::topk::args::{TopkReserve, BAD_TIMESTAMP};
use rsbloom_core::topk::{cstr, TopK, WindowError, WindowedTopK};
use rsbloom_core::window::{WindowSpec, Windowed};

use super::replies::{reply_item, NO_KEY, NO_MEMORY, OUT_OF_MEMORY};
use crate::clock::{
    age_to_clock, create_window, reply_window_fields, tick_command, TickCommand, WINDOW_INFO_FIELDS,
};
use crate::ffi::{CmdResult, Ctx, Key, Lookup, RStr, ReplyError};

const TOO_LARGE: ReplyError = ReplyError::Text(
    "TopK: a windowed Top-K holds at most 268435456 bytes of buckets and heap records",
);
const BAD_WINDOW: ReplyError =
    ReplyError::Text("TopK: WINDOW must be at least BUCKETS milliseconds");
const TICK: TickCommand = TickCommand {
    name: c"TOPK.TICK",
    bad_timestamp: BAD_TIMESTAMP,
    missing: ReplyError::Text(NO_KEY),
    future: ReplyError::Text("TopK: timestamp is more than 60 s past the server's clock"),
    key_first: false,
};

/// Runs `write` on the sketch a TOPK.ADD or TOPK.INCRBY on `key` writes
/// to: a plain Top-K, or a window's youngest bucket once the window is aged
/// to the master's clock (its tick replicated first). A window is looked
/// for only in a key of another type, so the usual call looks its key up
/// once; hence a closure: the first lookup's reference cannot be returned
/// past a second lookup.
pub fn write<R>(
    ctx: &Ctx,
    name: &RStr,
    key: &mut Key,
    write: impl FnOnce(&mut TopK) -> R,
) -> Result<R, ReplyError> {
    match key.get::<TopK>() {
        Lookup::Found(t) => return Ok(write(t)),
        Lookup::Missing => return Err(ReplyError::Text(NO_KEY)),
        Lookup::WrongType(_) => {}
    }
    let w = key
        .get::<WindowedTopK>()
        .or_missing(ReplyError::Text(NO_KEY))?;
    age_to_clock(ctx, TICK.name, name, w);
    Ok(write(w.youngest_mut()))
}

/// The end of TOPK.RESERVE with WINDOW: the key is vacant and the numbers
/// checked; the size limits, then the allocation.
pub fn reserve(ctx: &Ctx, key: Key, p: TopkReserve, w: WindowSpec) -> CmdResult {
    create_window(
        ctx,
        key,
        WindowedTopK::new_size(p.k, p.width, p.depth, w),
        || WindowedTopK::new(p.k, p.width, p.depth, p.decay, w),
        window_error,
    )
}

fn window_error(e: WindowError) -> ReplyError {
    match e {
        WindowError::TooLarge => TOO_LARGE,
        // The parser checks the window first.
        WindowError::Window => BAD_WINDOW,
        WindowError::OutOfMemory => ReplyError::Text(NO_MEMORY),
    }
}

fn windowed<'a>(key: &'a Key) -> Result<&'a WindowedTopK, ReplyError> {
    key.get_shared::<WindowedTopK>()
        .or_missing(ReplyError::Text(NO_KEY))
}

/// TOPK.QUERY on a window: whether each item is in the window's list, as
/// of the reader's clock.
pub fn query(ctx: &Ctx, key: &Key, items: &[RStr]) -> CmdResult {
    let t = windowed(key)?;
    let listed = t
        .list(ctx.now_ms())
        .map_err(|_| ReplyError::Text(OUT_OF_MEMORY))?;
    ctx.reply_array(items.len());
    for item in items {
        let item = item.as_ref();
        ctx.reply_bool(listed.iter().any(|s| s.item == item));
    }
    Ok(())
}

/// TOPK.COUNT on a window: each item's count over the window.
pub fn count(ctx: &Ctx, key: &Key, items: &[RStr]) -> CmdResult {
    let t = windowed(key)?;
    let now = ctx.now_ms();
    ctx.reply_array(items.len());
    for item in items {
        ctx.reply_int(i64::try_from(t.count(item.as_ref(), now)).unwrap_or(i64::MAX));
    }
    Ok(())
}

/// TOPK.LIST on a window: its k heaviest items, as of the reader's clock.
pub fn list(ctx: &Ctx, key: &Key, with_count: bool) -> CmdResult {
    let t = windowed(key)?;
    let listed = t
        .list(ctx.now_ms())
        .map_err(|_| ReplyError::Text(OUT_OF_MEMORY))?;
    ctx.reply_array(listed.len() * if with_count { 2 } else { 1 });
    for s in &listed {
        reply_item(ctx, Some(cstr(s.item)));
        if with_count {
            ctx.reply_int(i64::try_from(s.count).unwrap_or(i64::MAX));
        }
    }
    Ok(())
}

/// TOPK.INFO on a window: the plain fields, then the window's.
pub fn info(ctx: &Ctx, key: &Key) -> CmdResult {
    let t = windowed(key)?;
    ctx.reply_map(4 + WINDOW_INFO_FIELDS);
    for (name, value) in [("k", t.k()), ("width", t.width()), ("depth", t.depth())] {
        ctx.reply_simple(name);
        ctx.reply_int(i64::from(value));
    }
    ctx.reply_simple("decay");
    ctx.reply_double(t.decay());
    reply_window_fields(ctx, t.ring());
    Ok(())
}

/// TOPK.TICK key unix-ms: ages a windowed Top-K to that time.
pub fn tick(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    tick_command::<WindowedTopK>(ctx, args, TICK)
}
