//! Numeric and boolean settings through the server's typed config API: a
//! setting is a static entry naming its accessors, and one pair of
//! callbacks per kind serves them all (the server hands the entry back as
//! the callbacks' private data). The range and boolean errors are then the
//! server's own texts.

use std::ffi::{c_char, c_int, c_longlong, c_void, CString};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};
use rsbloom_core::config::IntConfig;

use super::state::registered;
use crate::ffi::barrier::guarded;

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// A numeric setting: name and range, `REDISMODULE_CONFIG_*` flags.
pub struct Numeric {
    pub spec: IntConfig,
    pub flags: u32,
    pub get: fn() -> i64,
    /// Called with a value the server checked against the range.
    pub set: fn(i64),
}

pub struct Bool {
    pub name: &'static str,
    pub get: fn() -> bool,
    pub set: fn(bool),
}

/// Registers `c`, its value now (the default, or what the module-load
/// arguments set) as its default.
pub fn register_numeric(ctx: *mut RedisModuleCtx, c: &'static Numeric) -> Result<(), String> {
    let name = CString::new(c.spec.name).map_err(|e| e.to_string())?;
    let status = rm!(RedisModule_RegisterNumericConfig(
        ctx,
        name.as_ptr(),
        (c.get)(),
        c.flags,
        c.spec.min,
        c.spec.max,
        Some(get_numeric),
        Some(set_numeric),
        None,
        std::ptr::from_ref(c).cast_mut().cast(),
    ));
    registered(status, c.spec.name)
}

/// Registers `c`, its value now as its default.
pub fn register_bool(ctx: *mut RedisModuleCtx, c: &'static Bool) -> Result<(), String> {
    let name = CString::new(c.name).map_err(|e| e.to_string())?;
    let status = rm!(RedisModule_RegisterBoolConfig(
        ctx,
        name.as_ptr(),
        c_int::from((c.get)()),
        0,
        Some(get_bool),
        Some(set_bool),
        None,
        std::ptr::from_ref(c).cast_mut().cast(),
    ));
    registered(status, c.name)
}

/// The entry behind `privdata`: registered from a `&'static T` of its kind.
unsafe fn entry<T>(privdata: *mut c_void) -> Option<&'static T> {
    privdata.cast::<T>().cast_const().as_ref()
}

unsafe extern "C" fn get_numeric(_name: *const c_char, privdata: *mut c_void) -> c_longlong {
    guarded("config get", 0, || {
        entry::<Numeric>(privdata).map_or(0, |c| (c.get)())
    })
}

unsafe extern "C" fn set_numeric(
    _name: *const c_char,
    value: c_longlong,
    privdata: *mut c_void,
    _err: *mut *mut RedisModuleString,
) -> c_int {
    guarded("config set", ERR, || match entry::<Numeric>(privdata) {
        Some(c) => {
            (c.set)(value);
            OK
        }
        None => ERR,
    })
}

unsafe extern "C" fn get_bool(_name: *const c_char, privdata: *mut c_void) -> c_int {
    guarded("config get", 0, || {
        entry::<Bool>(privdata).map_or(0, |c| c_int::from((c.get)()))
    })
}

unsafe extern "C" fn set_bool(
    _name: *const c_char,
    value: c_int,
    privdata: *mut c_void,
    _err: *mut *mut RedisModuleString,
) -> c_int {
    guarded("config set", ERR, || match entry::<Bool>(privdata) {
        Some(c) => {
            (c.set)(value != 0);
            OK
        }
        None => ERR,
    })
}
