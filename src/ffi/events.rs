//! Server events the module reacts to.

use std::ffi::c_void;
use std::sync::OnceLock;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleEvent};

use super::barrier::guarded;
use super::context::Ctx;

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
