//! The configuration's state: the core's `Config` behind a lock, the
//! settings the server fixes at load (flavour, CMS encoding), and the
//! helpers every config registration shares.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, OnceLock, RwLock, RwLockReadGuard};

use redis_module::raw::{self, RedisModuleString};
use rsbloom_core::cms::{ENCODING_VERSION, LEGACY_ENCODING_VERSION};
use rsbloom_core::config::{BloomFlavor, Config, DEFAULT_CF_MAX_EXPANSIONS};

static CONFIG: LazyLock<RwLock<Config>> = LazyLock::new(|| RwLock::new(Config::default()));

/// The current configuration (a panic elsewhere cannot poison it for good).
pub fn get() -> RwLockReadGuard<'static, Config> {
    CONFIG.read().unwrap_or_else(|e| e.into_inner())
}

/// The flavour new Bloom filters get now (`bf.bloom-flavor`).
pub fn flavor() -> BloomFlavor {
    get().valkey_bloom.flavor
}

/// The flavour when the commands were registered: their names' case, flags
/// and metadata follow it (docs/valkey-bloom.md §1).
static FLAVOR_AT_LOAD: OnceLock<BloomFlavor> = OnceLock::new();

pub fn flavor_at_load() -> BloomFlavor {
    FLAVOR_AT_LOAD.get().copied().unwrap_or_default()
}

pub fn with_mut<R>(f: impl FnOnce(&mut Config) -> R) -> R {
    let mut guard = CONFIG.write().unwrap_or_else(|e| e.into_inner());
    let r = f(&mut guard);
    CF_MAX_EXPANSIONS.store(guard.cf_max_expansions, Ordering::Relaxed);
    r
}

/// `cf-max-expansions`, which every CF.ADD and CF.INSERT checks, mirrored
/// out of the lock: taking it costs two locked instructions a command.
static CF_MAX_EXPANSIONS: AtomicI64 = AtomicI64::new(DEFAULT_CF_MAX_EXPANSIONS);

pub fn cf_max_expansions() -> i64 {
    CF_MAX_EXPANSIONS.load(Ordering::Relaxed)
}

/// Records the flavour the commands are registered with (once, at load).
pub fn fix_flavor_at_load() {
    let _ = FLAVOR_AT_LOAD.set(flavor());
}

/// `bf.cms-rdb-encoding` (docs/cms.md §6.5): set once, while the module
/// loads, before the CMS data type is registered with it.
static CMS_RDB_ENCODING: AtomicI32 = AtomicI32::new(ENCODING_VERSION);

/// The encoding CMS values are written in (and the type registered with).
pub fn cms_rdb_encoding() -> i32 {
    CMS_RDB_ENCODING.load(Ordering::Relaxed)
}

pub fn set_cms_rdb_encoding(v: i32) {
    CMS_RDB_ENCODING.store(v, Ordering::Relaxed)
}

/// `bf.max-key-memory` in bytes, 0 = no limit (core/src/limit.rs).
static MAX_KEY_MEMORY: AtomicU64 = AtomicU64::new(0);

pub fn max_key_memory() -> u64 {
    MAX_KEY_MEMORY.load(Ordering::Relaxed)
}

pub fn set_max_key_memory(bytes: u64) {
    MAX_KEY_MEMORY.store(bytes, Ordering::Relaxed)
}

/// Whether CMS values are written as RedisBloom before 8.12 reads them:
/// only 4-byte sketches may then exist.
pub fn cms_legacy_encoding() -> bool {
    cms_rdb_encoding() == LEGACY_ENCODING_VERSION
}

/// A server string for a config getter to return: the server reads it
/// after the callback, so the string handed out for `slot` lives until the
/// next one for the same slot replaces it.
pub fn handed_out(slots: &Mutex<Vec<usize>>, slot: usize, text: &str) -> *mut RedisModuleString {
    let fresh = server_string(text);
    let mut slots = slots.lock().unwrap_or_else(|e| e.into_inner());
    if slots.len() <= slot {
        slots.resize(slot + 1, 0);
    }
    if let Some(kept) = slots.get_mut(slot) {
        let old = std::mem::replace(kept, fresh as usize) as *mut RedisModuleString;
        if !old.is_null() {
            rm!(RedisModule_FreeString(std::ptr::null_mut(), old));
        }
    }
    fresh
}

pub fn server_string(s: &str) -> *mut RedisModuleString {
    rm!(RedisModule_CreateString(
        std::ptr::null_mut(),
        s.as_ptr().cast(),
        s.len()
    ))
}

/// The outcome of a config registration.
pub fn registered(status: c_int, name: &str) -> Result<(), String> {
    if status == raw::REDISMODULE_OK as c_int {
        Ok(())
    } else {
        Err(format!("could not register config {name}"))
    }
}
