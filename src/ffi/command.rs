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

use super::context::{Ctx, ReplyError};

/// A command argument: a borrowed server string, read without copying.
#[repr(transparent)]
pub struct RStr(*mut RedisModuleString);

impl RStr {
    pub fn as_ptr(&self) -> *mut RedisModuleString {
        self.0
    }
}

impl AsRef<[u8]> for RStr {
    fn as_ref(&self) -> &[u8] {
        let mut len = 0usize;
        let ptr = rm!(RedisModule_StringPtrLen(self.0, &mut len));
        if ptr.is_null() {
            return &[];
        }
        // SAFETY: the server guarantees `len` readable bytes at `ptr` for as
        // long as the argument lives, which outlives the handler call.
        unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
    }
}

pub type Handler = fn(&Ctx, &[RStr]) -> Result<(), ReplyError>;

const PANIC_REPLY: &str = "ERR rsbloom internal error: command aborted (see server log)";

/// Runs a handler for the server: the body of every command's `extern "C"` entry.
#[inline(always)]
pub fn dispatch(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
    name: &'static str,
    handler: Handler,
) -> c_int {
    let ctx = Ctx::new(ctx);
    let args: &[RStr] = match usize::try_from(argc) {
        // SAFETY: the server passes `argc` valid string pointers; RStr is a
        // transparent wrapper around one.
        Ok(n) if !argv.is_null() => unsafe { std::slice::from_raw_parts(argv.cast(), n) },
        _ => &[],
    };
    match catch_unwind(AssertUnwindSafe(|| handler(&ctx, args))) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => ctx.reply_failure(&e, name),
        Err(_) => {
            ctx.log_warning(&format!("panic caught in {name}; the command was aborted"));
            ctx.reply_error(PANIC_REPLY);
        }
    }
    raw::REDISMODULE_OK as c_int
}

/// Declares the `extern "C"` entry point of a command around a handler.
macro_rules! command_entry {
    ($entry:ident, $name:literal, $handler:path) => {
        unsafe extern "C" fn $entry(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::ffi::c_int,
        ) -> std::ffi::c_int {
            $crate::ffi::command::dispatch(ctx, argv, argc, $name, $handler)
        }
    };
}

/// What the server needs to know about one command.
pub struct CommandSpec {
    pub name: &'static CStr,
    pub flags: &'static CStr,
    /// Module ACL category (`bloom` or `cuckoo`), where the server supports them.
    pub acl: &'static CStr,
    pub entry:
        unsafe extern "C" fn(*mut RedisModuleCtx, *mut *mut RedisModuleString, c_int) -> c_int,
}

/// Registers a command with key positions (1, 1, 1), like RedisBloom.
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
        1,
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

impl RStr {
    /// Wraps a server string owned by the caller for the duration of a callback.
    pub fn from_ptr(ptr: *mut RedisModuleString) -> Self {
        RStr(ptr)
    }
}
