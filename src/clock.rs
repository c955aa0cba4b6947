//! Who decides time for time windows (docs/apbf.md §4.2), the same for
//! every windowed type: the master's clock, replicated as data.
//!
//! A write on the master, from a client, first ages the value to the
//! master's clock and replicates that as `<FAMILY>.TICK key <ms>` before
//! the write itself (one MULTI/EXEC); replicas, AOF replays and slot
//! imports never read the clock, the tick carries it. A client's tick may
//! not run more than `MAX_AHEAD_MS` past the master's clock.

use std::ffi::CStr;

use rsbloom_core::clock::MAX_AHEAD_MS;
use rsbloom_core::window::Ring;

use crate::ffi::{CmdResult, Ctx, RStr, ReplyError};

/// A value that ages with a time window (the core's deterministic clock).
pub trait Windowed {
    /// Whether `advance(now_ms)` changes the value.
    fn needs_advance(&self, now_ms: u64) -> bool;
    /// Ages the value to `now_ms` (starting its clock); the shifts due.
    fn advance(&mut self, now_ms: u64) -> u64;
}

/// Before a write on the master: ages the value to the clock (starting
/// it on the first write) and replicates `tick key <now>` ahead of the
/// write; elsewhere nothing.
pub fn age_to_clock<T: Windowed>(ctx: &Ctx, tick: &CStr, name: &RStr, v: &mut T) {
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
pub fn tick<T: Windowed>(ctx: &Ctx, v: &mut T, ms: u64, future: ReplyError) -> CmdResult {
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

/// How many fields [`window_info`] gives.
pub const WINDOW_INFO_FIELDS: usize = 4;

/// The fields every windowed type's INFO reply ends with: the window, its
/// buckets, a bucket's span, the clock (0 before the first write).
pub fn window_info<T>(r: &Ring<T>) -> [(&'static str, i64); WINDOW_INFO_FIELDS] {
    let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    [
        ("window", int(r.span_ms())),
        ("buckets", int(r.buckets())),
        ("bucket_ms", int(r.period_ms())),
        ("last_shift_ms", int(r.last_shift_ms())),
    ]
}
