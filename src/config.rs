//! Module configuration: the core's `Config` exposed through the server's
//! module-config API (`CONFIG GET/SET`, redis.conf), after the legacy
//! module-load arguments have set the defaults.
//!
//! Names are registered unprefixed (`bf-error-rate`) on servers ≥ 8.0, like
//! RedisBloom 8; older servers (Redis 7.x, Valkey 8) only know prefixed module
//! configs, so there they appear as `bf.bf-error-rate`.
//!
//! rsbloom's own settings, `bf.huge-pages`, `bf.cms-rdb-encoding` and
//! `bf.max-key-memory` (not in RedisBloom), are always prefixed: a bare name
//! could clash with a future server or module config.

mod state;
mod typed;
mod valkey_bloom;

pub use state::{
    cf_max_expansions, cms_legacy_encoding, cms_rdb_encoding, flavor, flavor_at_load, get,
    max_key_memory,
};

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Mutex;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};
use rsbloom_core::cms::{ENCODING_VERSION, LEGACY_ENCODING_VERSION};
use rsbloom_core::config::{IntConfig, NAMES};

use state::{handed_out, server_string, with_mut};
use typed::{Bool, Numeric};

use crate::ffi::barrier::guarded;
use crate::ffi::{Ctx, RStr, ReplyError};

/// Applies the legacy `MODULE LOAD ... NAME VALUE` arguments.
pub fn apply_load_args(args: &[RStr]) -> Result<(), String> {
    with_mut(|cfg| cfg.apply_module_args(args))
}

/// The strings the getter handed out last, one per setting.
static RETURNED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

unsafe extern "C" fn get_config(
    _name: *const c_char,
    privdata: *mut c_void,
) -> *mut RedisModuleString {
    guarded("config get", std::ptr::null_mut(), || {
        config_string(privdata as usize)
    })
}

fn config_string(index: usize) -> *mut RedisModuleString {
    let Some(name) = NAMES.get(index) else {
        return std::ptr::null_mut();
    };
    handed_out(&RETURNED, index, &get().get(name).unwrap_or_default())
}

unsafe extern "C" fn set_config(
    _name: *const c_char,
    value: *mut RedisModuleString,
    privdata: *mut c_void,
    err: *mut *mut RedisModuleString,
) -> c_int {
    let Some(name) = NAMES.get(privdata as usize) else {
        return raw::REDISMODULE_ERR as c_int;
    };
    let value = RStr::from_ptr(value);
    let result = guarded("config set", Err("internal error".into()), || {
        with_mut(|cfg| cfg.set(name, value.as_ref()))
    });
    match result {
        Ok(()) => raw::REDISMODULE_OK as c_int,
        Err(msg) => {
            if !err.is_null() {
                *err = server_string(&msg);
            }
            raw::REDISMODULE_ERR as c_int
        }
    }
}

/// Registers every config, unprefixed where the server accepts that (Redis
/// ≥ 8.0; Valkey 8 reports a version ≥ 8 but refuses the flag, so the answer
/// to the first registration decides). Returns whether they are unprefixed.
pub fn register(ctx: *mut RedisModuleCtx, try_unprefixed: bool) -> Result<bool, String> {
    let mut unprefixed = try_unprefixed;
    for (index, name) in NAMES.iter().enumerate() {
        let mut ok = register_one(ctx, index, name, unprefixed)?;
        if !ok && unprefixed && index == 0 {
            unprefixed = false;
            ok = register_one(ctx, index, name, false)?;
        }
        if !ok {
            return Err(format!("could not register config {name}"));
        }
    }
    typed::register_bool(ctx, &HUGE_PAGES)?;
    typed::register_numeric(ctx, &CMS_RDB_ENCODING)?;
    typed::register_numeric(ctx, &MAX_KEY_MEMORY)?;
    valkey_bloom::register(ctx)?;
    if rm!(RedisModule_LoadConfigs(ctx)) != raw::REDISMODULE_OK as c_int {
        return Err("could not load module configs".into());
    }
    state::fix_flavor_at_load();
    Ok(unprefixed)
}

fn register_one(
    ctx: *mut RedisModuleCtx,
    index: usize,
    name: &str,
    unprefixed: bool,
) -> Result<bool, String> {
    let flags = if unprefixed {
        raw::REDISMODULE_CONFIG_UNPREFIXED
    } else {
        0
    };
    let c_name = CString::new(name).map_err(|e| e.to_string())?;
    let default = CString::new(get().get(name).unwrap_or_default()).map_err(|e| e.to_string())?;
    let status = rm!(RedisModule_RegisterStringConfig(
        ctx,
        c_name.as_ptr(),
        default.as_ptr(),
        flags,
        Some(get_config),
        Some(set_config),
        None,
        index as *mut c_void,
    ));
    Ok(status == raw::REDISMODULE_OK as c_int)
}

/// `bf.huge-pages` (default no): advise transparent huge pages for the
/// storage of filters of 4 MiB and more allocated from then on (and loaded
/// from RDB), see `ffi::alloc::advise_huge`. Off by default: huge pages make
/// copy-on-write after a fork copy 2 MiB per first write to a page, and
/// page faults may compact memory; operators opt in per instance.
static HUGE_PAGES: Bool = Bool {
    name: "huge-pages",
    get: crate::ffi::alloc::huge_pages,
    set: crate::ffi::alloc::set_huge_pages,
};

/// `bf.cms-rdb-encoding` (1 or 0, default 1; load time only): the
/// encoding version of Count-Min Sketch values, which the data type is
/// registered with and so decides every RDB, DUMP and AOF the module
/// writes. 0 writes what RedisBloom before Redis 8.12 reads, for going
/// back; it then refuses sketches of cell sizes other than 4 (docs/cms.md
/// §6.5). Registered before the data types, which read it.
static CMS_RDB_ENCODING: Numeric = Numeric {
    spec: IntConfig {
        name: "cms-rdb-encoding",
        min: LEGACY_ENCODING_VERSION as i64,
        max: ENCODING_VERSION as i64,
    },
    flags: raw::REDISMODULE_CONFIG_IMMUTABLE,
    get: || state::cms_rdb_encoding().into(),
    set: |v| state::set_cms_rdb_encoding(i32::try_from(v).unwrap_or_default()),
};

/// `bf.max-key-memory` (bytes, memory units accepted; default 0 = off): no
/// write may take a value of any family above it (docs/operations.md).
static MAX_KEY_MEMORY: Numeric = Numeric {
    spec: IntConfig {
        name: "max-key-memory",
        min: 0,
        max: i64::MAX,
    },
    flags: raw::REDISMODULE_CONFIG_MEMORY,
    get: || i64::try_from(max_key_memory()).unwrap_or(i64::MAX),
    set: |v| state::set_max_key_memory(u64::try_from(v).unwrap_or_default()),
};

/// The per-key memory limit `ctx`'s command is checked against:
/// `bf.max-key-memory` (rsbloom_core::limit).
pub fn key_limit(ctx: &Ctx) -> Option<u64> {
    checked(ctx, rsbloom_core::limit::from_setting(max_key_memory()))
}

/// Refuses a value of `bytes` when that is above the key limit of `ctx`'s
/// command.
pub fn check_key_size(ctx: &Ctx, bytes: u64) -> Result<(), ReplyError> {
    rsbloom_core::limit::check(key_limit(ctx), bytes).map_err(ReplyError::Text)
}

/// `limit` when `ctx`'s command is checked against limits: never when it
/// comes from the master or the AOF, which replicas and replays must obey
/// as the master did, whatever their own settings.
pub fn checked(ctx: &Ctx, limit: Option<u64>) -> Option<u64> {
    limit.filter(|_| !ctx.must_obey())
}
