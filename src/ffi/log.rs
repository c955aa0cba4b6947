//! Logging to the server log, from any context: the lowest layer, so the
//! panic barrier can log without depending on the context wrapper.

use std::ffi::CString;

use redis_module::raw::RedisModuleCtx;

/// Copies `s` into a NUL-terminated buffer for the C API (texts here are
/// short; interior NULs cannot occur in our own messages but are dropped
/// rather than trusted).
pub fn c_text(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// Logs at `level` ("notice", "warning", ...) from any context, even null.
pub fn log(ctx: *mut RedisModuleCtx, level: &str, msg: &str) {
    let level = c_text(level);
    let msg = c_text(msg);
    rm!(RedisModule_Log(
        ctx,
        level.as_ptr(),
        c"%s".as_ptr(),
        msg.as_ptr()
    ));
}
