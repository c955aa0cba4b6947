//! RDB primitives over `RedisModuleIO`: the server side of the core's
//! `RdbSource`/`RdbSink`, so the decoder that runs here is the fuzzed one.
//!
//! The module sets `HANDLE_IO_ERRORS`, so a failed read returns a dummy value
//! and flags the stream; every read is checked here and becomes `ReadError`.

use std::ffi::CStr;

use redis_module::raw::{self, RedisModuleIO};
use rsbloom_core::rdb::{RdbSink, RdbSource, ReadError};

pub struct IoSource {
    io: *mut RedisModuleIO,
}

impl IoSource {
    pub fn new(io: *mut RedisModuleIO) -> Self {
        IoSource { io }
    }

    fn checked<T>(&self, v: T) -> Result<T, ReadError> {
        if rm!(RedisModule_IsIOError(self.io)) != 0 {
            Err(ReadError)
        } else {
            Ok(v)
        }
    }
}

impl RdbSource for IoSource {
    fn read_unsigned(&mut self) -> Result<u64, ReadError> {
        let v = rm!(RedisModule_LoadUnsigned(self.io));
        self.checked(v)
    }

    fn read_double(&mut self) -> Result<f64, ReadError> {
        let v = rm!(RedisModule_LoadDouble(self.io));
        self.checked(v)
    }

    /// Adopts the server's buffer as a `Vec` without copying: it was allocated
    /// by the server allocator, which is also this module's global allocator.
    fn read_buffer(&mut self) -> Result<Box<[u8]>, ReadError> {
        let mut len = 0usize;
        let ptr = rm!(RedisModule_LoadStringBuffer(self.io, &mut len));
        if rm!(RedisModule_IsIOError(self.io)) != 0 || ptr.is_null() {
            if !ptr.is_null() {
                rm!(RedisModule_Free(ptr.cast()));
            }
            return Err(ReadError);
        }
        if len == 0 {
            rm!(RedisModule_Free(ptr.cast()));
            return Ok(Box::default());
        }
        // SAFETY: `ptr` is a live server-allocated block of at least `len`
        // bytes, owned by us from here on; the Box frees it via the global
        // allocator, i.e. RedisModule_Free.
        unsafe {
            // Already written: khugepaged collapses it in the background.
            crate::ffi::alloc::advise_huge(ptr.cast(), len);
            Ok(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                ptr.cast::<u8>(),
                len,
            )))
        }
    }
}

pub struct IoSink {
    io: *mut RedisModuleIO,
}

impl IoSink {
    pub fn new(io: *mut RedisModuleIO) -> Self {
        IoSink { io }
    }
}

impl RdbSink for IoSink {
    fn write_unsigned(&mut self, v: u64) {
        rm!(RedisModule_SaveUnsigned(self.io, v));
    }

    fn write_double(&mut self, v: f64) {
        rm!(RedisModule_SaveDouble(self.io, v));
    }

    fn write_buffer(&mut self, b: &[u8]) {
        rm!(RedisModule_SaveStringBuffer(
            self.io,
            b.as_ptr().cast(),
            b.len()
        ));
    }
}

/// Where an AOF rewrite callback writes the commands that rebuild one key.
pub struct AofWriter {
    aof: *mut RedisModuleIO,
    key: *mut raw::RedisModuleString,
}

impl AofWriter {
    pub fn new(aof: *mut RedisModuleIO, key: *mut raw::RedisModuleString) -> Self {
        AofWriter { aof, key }
    }

    /// `COMMAND key <iterator> <data>`: the LOADCHUNK form of the filters.
    pub fn loadchunk(&mut self, command: &CStr, iterator: i64, data: &[u8]) {
        rm!(RedisModule_EmitAOF(
            self.aof,
            command.as_ptr(),
            c"slb".as_ptr(),
            self.key,
            iterator as std::ffi::c_longlong,
            data.as_ptr(),
            data.len(),
        ));
    }

    /// `RESTORE key 0 <payload>` with the payload `DUMP key` gives in the
    /// rewriting process (RDB version and CRC included): how RedisBloom
    /// rewrites the types that have no LOADCHUNK. A key DUMP cannot
    /// serialize is logged and skipped, as RedisBloom does.
    pub fn restore_from_dump(&mut self) {
        // The I/O context has no client, which RedisModule_Call needs (to
        // take its database from): a detached context brings a fake one,
        // switched to the database being rewritten. The rewrite runs in a
        // forked child with no other thread, so no lock is taken.
        let db = rm!(RedisModule_GetDbIdFromIO(self.aof));
        let ctx = rm!(RedisModule_GetThreadSafeContext(std::ptr::null_mut()));
        rm!(RedisModule_SelectDb(ctx, db));
        let reply = rm!(RedisModule_Call(
            ctx,
            c"DUMP".as_ptr(),
            c"s".as_ptr(),
            self.key
        ));
        let mut len = 0usize;
        let payload = if reply.is_null() {
            std::ptr::null()
        } else {
            rm!(RedisModule_CallReplyStringPtr(reply, &mut len))
        };
        if payload.is_null() {
            log_io_warning(
                self.aof,
                "rsbloom: DUMP failed; key skipped in the AOF rewrite",
            );
        } else {
            rm!(RedisModule_EmitAOF(
                self.aof,
                c"RESTORE".as_ptr(),
                c"slb".as_ptr(),
                self.key,
                0 as std::ffi::c_longlong,
                payload,
                len,
            ));
        }
        if !reply.is_null() {
            rm!(RedisModule_FreeCallReply(reply));
        }
        rm!(RedisModule_FreeThreadSafeContext(ctx));
    }
}

/// Logs a load failure against the I/O context (reaches the server log).
pub fn log_io_warning(io: *mut RedisModuleIO, msg: &str) {
    let msg = std::ffi::CString::new(msg.replace('\0', "")).unwrap_or_default();
    rm!(RedisModule_LogIOError(
        io,
        c"warning".as_ptr(),
        c"%s".as_ptr(),
        msg.as_ptr()
    ));
}
