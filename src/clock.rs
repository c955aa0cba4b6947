//! Who decides time for time windows (docs/apbf.md §4.2), the same for
//! every windowed type: the master's clock, replicated as data. And what
//! else the windowed types' commands share: creation, TICK, INFO.
//!
//! A write on the master, from a client, first ages the value to the
//! master's clock and replicates that as `<FAMILY>.TICK key <ms>` before
//! the write itself (one MULTI/EXEC); replicas, AOF replays and slot
//! imports never read the clock, the tick carries it. A client's tick may
//! not run more than `MAX_AHEAD_MS` past the master's clock.

use std::ffi::CStr;

use rsbloom_core::args::{parse_tick_ms, ArgError};
use rsbloom_core::clock::{Aging, MAX_AHEAD_MS};
use rsbloom_core::window::Ring;

use crate::ffi::context::ModuleValue;
use crate::ffi::{CmdResult, Ctx, Key, RStr, ReplyError};

/// Before a write on the master: ages the value to the clock (starting
/// it on the first write) and replicates `tick key <now>` ahead of the
/// write; elsewhere nothing.
pub fn age_to_clock<T: Aging>(ctx: &Ctx, tick: &CStr, name: &RStr, v: &mut T) {
    let now = ctx.now_ms();
    // The clock first: who owns it is asked (the server's context flags,
    // not free) only once a bucket's period, when a shift is due.
    if v.needs_advance(now) && ctx.owns_clock() {
        v.advance(now);
        let ms = ctx.string(now.to_string().as_bytes());
        ctx.replicate(tick, name, &[ms.as_ptr()]);
    }
}

/// The tick command once its key and time are checked: a client on the
/// master may not name a time past the clock's margin (`future`); replies
/// the shifts due and replicates the tick if it changed the value.
pub fn tick<T: Aging>(ctx: &Ctx, v: &mut T, ms: u64, future: ReplyError) -> CmdResult {
    if ctx.owns_clock() && ms > ctx.now_ms().saturating_add(MAX_AHEAD_MS) {
        return Err(future);
    }
    let changes = v.needs_advance(ms);
    let shifts = v.advance(ms);
    ctx.reply_u64(shifts);
    if changes {
        ctx.propagate();
    }
    Ok(())
}

/// The end of a windowed creation (the key vacant, the options checked):
/// the size limits on `size` (nothing allocated yet), then `make`'s
/// allocation; a refusal is `error`'s.
pub fn create_window<T: ModuleValue, E>(
    ctx: &Ctx,
    mut key: Key,
    size: Result<u64, E>,
    make: impl FnOnce() -> Result<T, E>,
    error: fn(E) -> ReplyError,
) -> CmdResult {
    crate::config::check_key_size(ctx, size.map_err(error)?)?;
    key.set(Box::new(make().map_err(error)?));
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

/// A windowed family's `<FAMILY>.TICK key unix-ms` and its error texts.
pub struct TickCommand {
    /// The command, as replicated ahead of a write.
    pub name: &'static CStr,
    /// The text for a time that is not Unix milliseconds ≥ 1.
    pub bad_timestamp: ArgError,
    pub missing: ReplyError,
    /// A time past the clock's margin.
    pub future: ReplyError,
    /// Whether a missing key is answered before a bad timestamp (the key
    /// is opened first, as T-Digest's commands do).
    pub key_first: bool,
}

/// `<FAMILY>.TICK key unix-ms` on a windowed value of type `T`: ages it
/// to that time; the shifts due ([`tick`]: at most 60 s past the master's
/// clock).
pub fn tick_command<T: Aging + ModuleValue>(
    ctx: &Ctx,
    args: &[RStr],
    command: TickCommand,
) -> CmdResult {
    let [_, name, ms] = args else {
        return Err(ReplyError::WrongArity);
    };
    let ms = match parse_tick_ms(ms.as_ref(), command.bad_timestamp) {
        Err(e) if !command.key_first => return Err(e.into()),
        parsed => parsed,
    };
    let mut key = ctx.open_key(name, true);
    let v = key.get::<T>().or_missing(command.missing)?;
    tick(ctx, v, ms?, command.future)
}

/// How many fields [`reply_window_fields`] gives.
pub const WINDOW_INFO_FIELDS: usize = 4;

/// The fields every windowed type's INFO reply ends with: the window, its
/// buckets, a bucket's span, the clock (0 before the first write).
pub fn reply_window_fields<T>(ctx: &Ctx, r: &Ring<T>) {
    reply_int_fields(
        ctx,
        [
            ("window", r.span_ms()),
            ("buckets", r.buckets()),
            ("bucket_ms", r.period_ms()),
            ("last_shift_ms", r.last_shift_ms()),
        ]
        .map(|(name, v)| (name, i64::try_from(v).unwrap_or(i64::MAX))),
    );
}

/// The INFO reply of a windowed value whose plain fields are integers: a
/// map of those, then the window's.
pub fn reply_window_info<T>(ctx: &Ctx, plain: &[(&str, i64)], r: &Ring<T>) {
    ctx.reply_map(plain.len() + WINDOW_INFO_FIELDS);
    reply_int_fields(ctx, plain.iter().copied());
    reply_window_fields(ctx, r);
}

fn reply_int_fields<'a>(ctx: &Ctx, fields: impl IntoIterator<Item = (&'a str, i64)>) {
    for (name, value) in fields {
        ctx.reply_simple(name);
        ctx.reply_int(value);
    }
}
