//! RDB primitives over `RedisModuleIO`: the server side of the core's
//! `RdbSource`/`RdbSink`, so the decoder that runs here is the fuzzed one.
//!
//! The module sets `HANDLE_IO_ERRORS`, so a failed read returns a dummy value
//! and flags the stream; every read is checked here and becomes `ReadError`.

use std::ffi::{c_int, CStr};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleIO};
use rsbloom_core::rdb::{RdbSink, RdbSource, ReadError};

pub struct IoSource {
    io: *mut RedisModuleIO,
}

impl IoSource {
    pub fn new(io: *mut RedisModuleIO) -> Self {
        IoSource { io }
    }

    /// Whether the value comes from a source that must be obeyed, never
    /// from a client's RESTORE: the server loading its data or syncing as a
    /// replica, or an atomic slot migration importing the key (Redis sends
    /// every value as RESTORE on its import client).
    pub fn must_obey(&self) -> bool {
        loading_or_replica() || !self.key_served()
    }

    /// Whether this node serves the key being loaded (true when the server
    /// does not name it).
    fn key_served(&self) -> bool {
        let key = rm!(RedisModule_GetKeyNameFromIO(self.io)).cast_mut();
        key.is_null() || super::slot_migration::owns_key(key)
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

impl IoSink {
    /// Whether this save runs in a forked child (BGSAVE, full sync, AOF
    /// rewrite), whose changes to a value nobody sees.
    pub fn in_forked_child(&self) -> bool {
        server_flags() & raw::REDISMODULE_CTX_FLAGS_IS_CHILD != 0
    }

    /// Whether the server is a replica.
    pub fn on_replica(&self) -> bool {
        server_flags() & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0
    }

    /// Whether nothing may be replicated now (CLIENT PAUSE WRITE, failover,
    /// slot hand-over): the server would abort on a propagation.
    pub fn replication_paused(&self) -> bool {
        rm!(RedisModule_AvoidReplicaTraffic()) != 0
    }

    /// Replicates `cmd <key being saved> arg...` (`times` copies of `arg`)
    /// after the running command (DUMP, SAVE, DEBUG RELOAD, ...), in the
    /// key's database. Nothing when the server does not name the key.
    pub fn replicate_for_key(&self, cmd: &CStr, arg: &[u8], times: usize) {
        let key = rm!(RedisModule_GetKeyNameFromIO(self.io)).cast_mut();
        if key.is_null() {
            return;
        }
        with_db_context(self.io, |ctx| {
            let arg = super::context::OwnedString::new(ctx, arg);
            let args = vec![arg.as_ptr(); times];
            super::context::replicate(ctx, cmd, key, &args);
        });
    }
}

/// Whether the server is loading its data (RDB or AOF at start-up, a
/// replica's full sync) or is a replica.
fn loading_or_replica() -> bool {
    server_flags() & (raw::REDISMODULE_CTX_FLAGS_LOADING | raw::REDISMODULE_CTX_FLAGS_SLAVE) != 0
}

/// Flags of the server as a whole (no client).
fn server_flags() -> u32 {
    rm!(RedisModule_GetContextFlags(std::ptr::null_mut())) as u32
}

/// Runs `f` with a context whose client has the database of the value being
/// saved or rewritten selected. `RedisModule_GetContextFromIO` gives one
/// without a client, which neither `RedisModule_Call` nor
/// `RedisModule_Replicate` can use; a detached context has its own.
fn with_db_context(io: *mut RedisModuleIO, f: impl FnOnce(*mut RedisModuleCtx)) {
    let db = rm!(RedisModule_GetDbIdFromIO(io));
    if db < 0 {
        return;
    }
    let module_ctx = rm!(RedisModule_GetContextFromIO(io));
    let ctx = rm!(RedisModule_GetDetachedThreadSafeContext(module_ctx));
    if ctx.is_null() {
        return;
    }
    if rm!(RedisModule_SelectDb(ctx, db as c_int)) == raw::REDISMODULE_OK as c_int {
        f(ctx);
    }
    rm!(RedisModule_FreeThreadSafeContext(ctx));
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

    /// `COMMAND key <data>`: valkey-bloom's `BF.LOAD` form.
    pub fn key_and_blob(&mut self, command: &CStr, data: &[u8]) {
        rm!(RedisModule_EmitAOF(
            self.aof,
            command.as_ptr(),
            c"sb".as_ptr(),
            self.key,
            data.as_ptr(),
            data.len(),
        ));
    }

    /// `RESTORE key 0 <payload>` with the payload `DUMP key` gives in the
    /// rewriting process (RDB version and CRC included): how RedisBloom
    /// rewrites the types that have no LOADCHUNK. A key DUMP cannot
    /// serialize is logged and skipped, as RedisBloom does.
    pub fn restore_from_dump(&mut self) {
        let (aof, key) = (self.aof, self.key);
        let mut dumped = false;
        with_db_context(aof, |ctx| {
            let reply = rm!(RedisModule_Call(ctx, c"DUMP".as_ptr(), c"s".as_ptr(), key));
            if reply.is_null() {
                return;
            }
            let mut len = 0usize;
            let payload = rm!(RedisModule_CallReplyStringPtr(reply, &mut len));
            if !payload.is_null() {
                rm!(RedisModule_EmitAOF(
                    aof,
                    c"RESTORE".as_ptr(),
                    c"slb".as_ptr(),
                    key,
                    0 as std::ffi::c_longlong,
                    payload,
                    len,
                ));
                dumped = true;
            }
            rm!(RedisModule_FreeCallReply(reply));
        });
        if !dumped {
            log_io_warning(aof, "rsbloom: DUMP failed; key skipped in the AOF rewrite");
        }
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
