//! The panic barrier for server callbacks other than commands (which have
//! their own in `command::dispatch`): a panic must never unwind into C.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`; if it panics, logs `what` and returns `fallback` instead.
pub fn guarded<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        super::log::log(
            std::ptr::null_mut(),
            "warning",
            &format!("rsbloom: panic caught in {what}"),
        );
        fallback
    })
}
