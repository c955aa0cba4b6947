//! Server events the module reacts to.

use std::ffi::c_void;
use std::sync::OnceLock;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleEvent};

use super::barrier::guarded;
use super::context::Ctx;
use super::datatype::{registered, Registered};
use super::stats::Count;

static FORK_HANDLERS: OnceLock<Vec<fn(&Ctx)>> = OnceLock::new();

/// Calls each of `handlers` in the parent right after the server forked a
/// child (BGSAVE, full sync, AOF rewrite), before anything else runs. Their
/// replication goes out after the child's snapshot point.
pub fn on_fork(ctx: *mut RedisModuleCtx, handlers: Vec<fn(&Ctx)>) -> Result<(), String> {
    if handlers.is_empty() {
        return Ok(());
    }
    FORK_HANDLERS
        .set(handlers)
        .map_err(|_| "fork handlers registered twice".to_string())?;
    // The header's RedisModuleEvent_ForkChild, a static the bindings cannot link.
    let event = RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_FORK_CHILD,
        dataver: 1,
    };
    if rm!(RedisModule_SubscribeToServerEvent(ctx, event, Some(forked)))
        != raw::REDISMODULE_OK as std::ffi::c_int
    {
        return Err("could not subscribe to fork events".into());
    }
    Ok(())
}

unsafe extern "C" fn forked(
    ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FORK_CHILD_BORN {
        return;
    }
    guarded("fork event", (), || {
        let ctx = Ctx::for_event(ctx);
        for handler in FORK_HANDLERS.get().into_iter().flatten() {
            handler(&ctx);
        }
    })
}

/// Keeps INFO's counts to the keyspace when the server frees values after
/// they left it (issue 39): an asynchronous flush (FLUSHALL/FLUSHDB ASYNC,
/// lazy-flush configs, a replica's full sync) and a replica's swapdb load
/// free on the lazy-free thread; the values leave INFO when the flush or
/// the swap happens. Servers without an event keep counting at the free.
pub fn count_what_leaves(ctx: *mut RedisModuleCtx) {
    for (id, handler) in [
        (raw::REDISMODULE_EVENT_FLUSHDB, flushing as Handler),
        (
            raw::REDISMODULE_EVENT_REPL_ASYNC_LOAD,
            swapdb_loading as Handler,
        ),
    ] {
        let event = RedisModuleEvent { id, dataver: 1 };
        optional!(RedisModule_SubscribeToServerEvent(
            ctx,
            event,
            Some(handler)
        ));
    }
}

type Handler = unsafe extern "C" fn(*mut RedisModuleCtx, RedisModuleEvent, u64, *mut c_void);

unsafe extern "C" fn flushing(
    ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    // SAFETY: the server passes its RedisModuleFlushInfoV1 with this event.
    let Some(info) = (unsafe { data.cast::<raw::RedisModuleFlushInfoV1>().as_ref() }) else {
        return;
    };
    // A synchronous flush frees on the main thread as it goes.
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_START || info.sync != 0 {
        return;
    }
    guarded("flush event", (), || {
        let types = registered();
        if info.dbnum < 0 || only_database_with_keys(ctx, info.dbnum) {
            types.iter().for_each(|t| t.stats.leave_all());
        } else {
            // The server selected the flushed database for this context.
            for (t, count) in types.iter().zip(count_database(ctx, &types)) {
                t.stats.leave(count);
            }
        }
    })
}

/// Whether no database but `db` holds keys. Leaves `db` selected.
fn only_database_with_keys(ctx: *mut RedisModuleCtx, db: i32) -> bool {
    let mut only = true;
    let mut other = 0;
    while only && rm!(RedisModule_SelectDb(ctx, other)) == raw::REDISMODULE_OK as i32 {
        only = other == db || rm!(RedisModule_DbSize(ctx)) == 0;
        other += 1;
    }
    rm!(RedisModule_SelectDb(ctx, db));
    only
}

/// What the selected database holds of each registered type, by one walk
/// of its keys: FLUSHDB ASYNC of one of several non-empty databases.
fn count_database(ctx: *mut RedisModuleCtx, types: &[Registered]) -> Vec<Count> {
    struct Walk<'a> {
        types: &'a [Registered],
        counts: Vec<Count>,
    }
    unsafe extern "C" fn each(
        _ctx: *mut RedisModuleCtx,
        _name: *mut raw::RedisModuleString,
        key: *mut raw::RedisModuleKey,
        walk: *mut c_void,
    ) {
        // SAFETY: `walk` is the Walk below, alive during the scan.
        let Some(walk) = (unsafe { walk.cast::<Walk>().as_mut() }) else {
            return;
        };
        if key.is_null() || rm!(RedisModule_KeyType(key)) != raw::REDISMODULE_KEYTYPE_MODULE as i32
        {
            return;
        }
        let handle = rm!(RedisModule_ModuleTypeGetType(key));
        for (t, count) in walk.types.iter().zip(walk.counts.iter_mut()) {
            if t.handle == handle {
                // SAFETY: the value is of the type its handle names.
                let value = rm!(RedisModule_ModuleTypeGetValue(key));
                let f = unsafe { (t.footprint)(value) };
                *count = count.plus_one(f);
            }
        }
    }
    let mut walk = Walk {
        types,
        counts: vec![Count::default(); types.len()],
    };
    let cursor = rm!(RedisModule_ScanCursorCreate());
    let data = std::ptr::addr_of_mut!(walk).cast::<c_void>();
    while rm!(RedisModule_Scan(ctx, cursor, Some(each), data)) != 0 {}
    rm!(RedisModule_ScanCursorDestroy(cursor));
    walk.counts
}

/// The values in the keyspace when a replica's swapdb load started: after
/// the swap they are the old dataset, freed on the lazy-free thread.
static BEFORE_SWAP: std::sync::Mutex<Vec<Count>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn swapdb_loading(
    _ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    guarded("swapdb load event", (), || {
        let types = registered();
        let mut before = BEFORE_SWAP.lock().unwrap_or_else(|e| e.into_inner());
        let now: Vec<Count> = types.iter().map(|t| t.stats.counted()).collect();
        match subevent {
            s if s == raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_STARTED => *before = now,
            // The old dataset goes.
            s if s == raw::REDISMODULE_SUBEVENT_REPL_ASYNC_LOAD_COMPLETED => {
                for (t, old) in types.iter().zip(before.iter()) {
                    t.stats.leave(*old);
                }
            }
            // What was loaded goes.
            _ => {
                for ((t, old), now) in types.iter().zip(before.iter()).zip(now) {
                    t.stats.leave(now.minus(*old));
                }
            }
        }
    })
}
