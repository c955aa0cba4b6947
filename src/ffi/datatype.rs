//! Module data types: one generic set of `extern "C"` callbacks, instantiated
//! for each filter type through the [`DataType`] trait.

use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleIO, RedisModuleString, RedisModuleType};

use super::context::ModuleValue;
use super::io::{emit_loadchunk, log_io_warning, IoSink, IoSource};

/// What a filter type provides to be stored in the keyspace.
pub trait DataType: Sized + 'static {
    /// Registered type name (9 characters; fixes the RDB module id).
    const NAME: &'static CStr;
    const ENCODING_VERSION: c_int;
    /// Upper-case command the AOF rewrite emits (`BF.LOADCHUNK` / `CF.LOADCHUNK`).
    const LOADCHUNK: &'static CStr;

    fn handle_cell() -> &'static AtomicPtr<RedisModuleType>;
    /// Decodes an RDB value; `Err` carries the reason for the server log.
    fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Self, String>;
    fn rdb_save(&self, sink: &mut IoSink);
    /// The `(iterator, data)` pairs that rebuild the value with LOADCHUNK,
    /// header first.
    fn for_each_aof_chunk(&self, emit: &mut dyn FnMut(i64, &[u8]));
    /// Bytes reported by MEMORY USAGE (the INFO "Size").
    fn mem_usage(&self) -> usize;
}

impl<T: DataType> ModuleValue for T {
    fn handle() -> *mut RedisModuleType {
        T::handle_cell().load(Ordering::Relaxed)
    }
}

/// Runs a type callback behind a panic barrier; a panic yields `fallback`.
fn guarded<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        super::context::log(
            std::ptr::null_mut(),
            "warning",
            &format!("rsbloom: panic caught in {what}"),
        );
        fallback
    })
}

unsafe extern "C" fn rdb_load<T: DataType>(io: *mut RedisModuleIO, encver: c_int) -> *mut c_void {
    guarded("rdb_load", std::ptr::null_mut(), || {
        match T::rdb_load(&mut IoSource::new(io), encver) {
            Ok(v) => Box::into_raw(Box::new(v)).cast(),
            Err(why) => {
                log_io_warning(io, &format!("rsbloom: rejected {:?} value: {why}", T::NAME));
                std::ptr::null_mut()
            }
        }
    })
}

unsafe extern "C" fn rdb_save<T: DataType>(io: *mut RedisModuleIO, value: *mut c_void) {
    // SAFETY: the server passes a value of this type.
    if let Some(v) = value.cast::<T>().as_ref() {
        guarded("rdb_save", (), || v.rdb_save(&mut IoSink::new(io)));
    }
}

unsafe extern "C" fn aof_rewrite<T: DataType>(
    aof: *mut RedisModuleIO,
    key: *mut RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: as above.
    if let Some(v) = value.cast::<T>().as_ref() {
        guarded("aof_rewrite", (), || {
            v.for_each_aof_chunk(&mut |iter, data| {
                emit_loadchunk(aof, T::LOADCHUNK, key, iter, data)
            })
        });
    }
}

unsafe extern "C" fn mem_usage<T: DataType>(value: *const c_void) -> usize {
    // SAFETY: as above.
    value
        .cast::<T>()
        .as_ref()
        .map_or(0, |v| guarded("mem_usage", 0, || v.mem_usage()))
}

unsafe extern "C" fn free<T: DataType>(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: values are only ever created as Box<T> by this module.
        guarded("free", (), || drop(Box::from_raw(value.cast::<T>())));
    }
}

/// Registers `T` with the server.
pub fn create<T: DataType>(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    // SAFETY: an all-zero RedisModuleTypeMethods is valid (every callback None).
    let mut methods: raw::RedisModuleTypeMethods = unsafe { std::mem::zeroed() };
    methods.version = raw::REDISMODULE_TYPE_METHOD_VERSION as u64;
    methods.rdb_load = Some(rdb_load::<T>);
    methods.rdb_save = Some(rdb_save::<T>);
    methods.aof_rewrite = Some(aof_rewrite::<T>);
    methods.mem_usage = Some(mem_usage::<T>);
    methods.free = Some(free::<T>);
    let handle = rm!(RedisModule_CreateDataType(
        ctx,
        T::NAME.as_ptr(),
        T::ENCODING_VERSION,
        &mut methods
    ));
    if handle.is_null() {
        return Err(format!("could not create data type {:?}", T::NAME));
    }
    T::handle_cell().store(handle, Ordering::Relaxed);
    Ok(())
}
