//! Command registration and the trampoline every command runs through.
//!
//! Handlers are plain Rust functions `fn(&Ctx, &[RStr]) -> Result<(), ReplyError>`.
//! The trampoline borrows the argument vector without copying (no per-argument
//! allocation or reference counting on the hot path), catches panics so a bug
//! answers an error instead of aborting the server, and turns `Err` into the
//! error reply.

use std::ffi::{c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use super::context::{Ctx, RStr, ReplyError};
use super::stats::CommandStats;

pub type Handler = fn(&Ctx, &[RStr]) -> Result<(), ReplyError>;

const PANIC_REPLY: &str = "ERR rsbloom internal error: command aborted (see server log)";

/// Runs a handler for the server: the body of every command's `extern "C"` entry.
#[inline(always)]
pub fn dispatch(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    name: &'static CStr,
    event: &'static CStr,
    handler: Handler,
    stats: &CommandStats,
) -> c_int {
    let args: &[RStr] = match usize::try_from(argc) {
        // SAFETY: the server passes `argc` valid string pointers; RStr is a
        // transparent wrapper around one.
        Ok(n) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv.cast(), n) },
        _ => &[],
    };
    let ctx = Ctx::for_command(ctx, event, args.get(1));
    let ok = match catch_unwind(AssertUnwindSafe(|| handler(&ctx, args))) {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            fail(&ctx, Some(e), name);
            false
        }
        Err(_) => {
            fail(&ctx, None, name);
            false
        }
    };
    stats.record(ok);
    raw::REDISMODULE_OK as c_int
}

/// Replies a handler's error, or (`None`) that it panicked. Out of line
/// and cold: every command's entry inlines [`dispatch`], whose hot path
/// then spans four cache lines instead of six to eight.
#[cold]
#[inline(never)]
fn fail(ctx: &Ctx, error: Option<ReplyError>, name: &CStr) {
    match error {
        Some(e) => ctx.reply_failure(&e, name.to_str().unwrap_or_default()),
        None => {
            ctx.log_warning(&format!(
                "panic caught in {}; the command was aborted",
                name.to_string_lossy()
            ));
            ctx.reply_error(PANIC_REPLY);
        }
    }
}

/// A [`CommandSpec`] for `$name` (lower-case, as the server reports it and
/// as the wrong-arity error prints it) running `$handler`, with its own
/// `extern "C"` entry point and statistics:
/// `command!("bf.add", add, "write deny-oom", "write bloom")`.
/// `command!("BF.ADD" as "bf.add", …)` registers the name as written (it
/// shows in `COMMAND` and arity errors) and keeps the lower-case one for
/// keyspace events and INFO.
macro_rules! command {
    ($name:literal, $handler:path, $flags:expr, $acl:expr) => {
        command!($name as $name, $handler, $flags, $acl)
    };
    (@acl write) => {
        "write"
    };
    (@acl readonly) => {
        "read"
    };
    (@category $family:literal) => {
        concat!(" ", $family)
    };
    (@category $family:literal, $own:literal) => {
        $own
    };
    ($name:literal as $event:literal, $handler:path, $flags:expr, $acl:expr) => {{
        static STATS: $crate::ffi::stats::CommandStats = $crate::ffi::stats::CommandStats::new();
        unsafe extern "C" fn entry(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::ffi::c_int,
        ) -> std::ffi::c_int {
            // Consts: `c_str` must not scan the names on every call.
            const NAME: &std::ffi::CStr = $crate::ffi::command::c_str(concat!($name, "\0"));
            const EVENT: &std::ffi::CStr = $crate::ffi::command::c_str(concat!($event, "\0"));
            $crate::ffi::command::dispatch(ctx, argv, argc, NAME, EVENT, $handler, &STATS)
        }
        $crate::ffi::command::CommandSpec {
            name: $crate::ffi::command::c_str(concat!($name, "\0")),
            event: $crate::ffi::command::c_str(concat!($event, "\0")),
            flags: $crate::ffi::command::c_str(concat!($flags, "\0")),
            acl: $crate::ffi::command::c_str(concat!($acl, "\0")),
            entry,
            stats: &STATS,
            last_key: 1,
        }
    }};
}

/// A family's command table, one row per command in registration order:
/// `"bf.add" => add, write "deny-oom";` is [`command!`]`("bf.add", add,
/// "write deny-oom", "write bloom")` in the family's ACL category
/// (`commands!("bloom"; …)`): the ACL categories follow from the mode
/// (`write` or `readonly`), plus `@fast` where the row ends `, acl fast`.
/// A row ending `, category ""` stays out of the family's category: a
/// command the emulated module does not have, which its users' ACL rules
/// must not see (docs/module.md §2.2). A row ending `, last key -1` has
/// keys from the first argument to the last (BF.MERGE: key positions 1,
/// -1, 1).
macro_rules! commands {
    ($category:literal; $(
        $name:literal $(as $event:literal)? => $handler:path,
        $mode:ident $($flags:literal)? $(, acl $fast:ident)? $(, category $own:literal)?
        $(, last key $last:expr)?;
    )*) => {
        &[$(command!(
            $name $(as $event)?,
            $handler,
            concat!(stringify!($mode) $(, " ", $flags)?),
            concat!(
                command!(@acl $mode) $(, " ", stringify!($fast))?,
                command!(@category $category $(, $own)?)
            )
        ) $(.last_key($last))?),*]
    };
}

/// A NUL-terminated literal as a `CStr`, at compile time.
pub const fn c_str(with_nul: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(with_nul.as_bytes()) {
        Ok(c) => c,
        Err(_) => c"",
    }
}

/// What the server needs to know about one command.
pub struct CommandSpec {
    pub name: &'static CStr,
    /// The lower-case name: keyspace events and INFO fields.
    pub event: &'static CStr,
    pub flags: &'static CStr,
    /// Module ACL category (`bloom` or `cuckoo`), where the server supports them.
    pub acl: &'static CStr,
    pub entry:
        unsafe extern "C" fn(*mut RedisModuleCtx, *mut *mut RedisModuleString, c_int) -> c_int,
    pub stats: &'static CommandStats,
    /// Position of the last key (-1: the last argument).
    pub last_key: c_int,
}

impl CommandSpec {
    pub const fn last_key(mut self, last: c_int) -> CommandSpec {
        self.last_key = last;
        self
    }
}

/// Registers a command with key positions (1, 1, 1), like RedisBloom, or
/// (1, -1, 1) for one of several keys.
pub fn register(
    ctx: *mut RedisModuleCtx,
    spec: &CommandSpec,
    acl_supported: bool,
) -> Result<(), String> {
    let status = rm!(RedisModule_CreateCommand(
        ctx,
        spec.name.as_ptr(),
        Some(spec.entry),
        spec.flags.as_ptr(),
        1,
        spec.last_key,
        1,
    ));
    if status != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not register {:?}", spec.name));
    }
    if acl_supported {
        set_acl_category(ctx, spec)?;
    }
    Ok(())
}

fn set_acl_category(ctx: *mut RedisModuleCtx, spec: &CommandSpec) -> Result<(), String> {
    let cmd =
        optional!(RedisModule_GetCommand(ctx, spec.name.as_ptr())).unwrap_or(std::ptr::null_mut());
    let status = if cmd.is_null() {
        None
    } else {
        optional!(RedisModule_SetCommandACLCategories(cmd, spec.acl.as_ptr()))
    };
    match status {
        Some(s) if s == raw::REDISMODULE_OK as c_int => Ok(()),
        _ => Err(format!("could not set ACL category of {:?}", spec.name)),
    }
}
