//! `bf.bloom-flavor` and valkey-bloom's seven configs through the server's
//! typed config API (numbers and booleans: `typed`), so that range, parse
//! and boolean errors are the server's own texts, as valkey-bloom's are
//! (COMPAT-VALKEY-BLOOM §3).
//! Always registered prefixed (`bf.bloom-capacity`), as valkey-bloom's are.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Mutex;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};
use rsbloom_core::config::{BloomFlavor, CAPACITY, EXPANSION, MEMORY_LIMIT};

use super::state::{get, handed_out, registered, server_string, with_mut};
use super::typed::{register_bool, register_numeric, Bool, Numeric};
use crate::ffi::barrier::guarded;
use crate::ffi::RStr;

const OK: c_int = raw::REDISMODULE_OK as c_int;
const ERR: c_int = raw::REDISMODULE_ERR as c_int;

static INTS: [Numeric; 3] = [
    Numeric {
        spec: CAPACITY,
        flags: 0,
        get: || get().valkey_bloom.capacity,
        set: |v| with_mut(|c| c.valkey_bloom.capacity = v),
    },
    Numeric {
        spec: EXPANSION,
        flags: 0,
        get: || get().valkey_bloom.expansion,
        set: |v| with_mut(|c| c.valkey_bloom.expansion = v),
    },
    Numeric {
        spec: MEMORY_LIMIT,
        flags: 0,
        get: || get().valkey_bloom.memory_limit,
        set: |v| with_mut(|c| c.valkey_bloom.memory_limit = v),
    },
];

static BOOLS: [Bool; 2] = [
    Bool {
        name: "bloom-use-random-seed",
        get: || get().valkey_bloom.random_seed,
        set: |v| with_mut(|c| c.valkey_bloom.random_seed = v),
    },
    Bool {
        name: "bloom-defrag-enabled",
        get: || get().valkey_bloom.defrag,
        set: |v| with_mut(|c| c.valkey_bloom.defrag = v),
    },
];

pub fn register(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    register_flavor(ctx)?;
    for c in &INTS {
        register_numeric(ctx, c)?;
    }
    for c in &BOOLS {
        register_bool(ctx, c)?;
    }
    let vb = get().valkey_bloom.clone();
    register_string(ctx, 0, "bloom-fp-rate", &vb.fp_rate_text)?;
    register_string(ctx, 1, "bloom-tightening-ratio", &vb.tightening_text)
}

fn register_flavor(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    let names: Vec<CString> = BloomFlavor::NAMES
        .iter()
        .map(|n| CString::new(*n).unwrap_or_default())
        .collect();
    let ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let values: Vec<c_int> = (0..ptrs.len() as c_int).collect();
    let default = get().valkey_bloom.flavor.index() as c_int;
    let status = rm!(RedisModule_RegisterEnumConfig(
        ctx,
        c"bloom-flavor".as_ptr(),
        default,
        0,
        ptrs.as_ptr().cast_mut(),
        values.as_ptr(),
        ptrs.len() as c_int,
        Some(get_flavor),
        Some(set_flavor),
        None,
        std::ptr::null_mut(),
    ));
    registered(status, "bloom-flavor")
}

unsafe extern "C" fn get_flavor(_name: *const c_char, _privdata: *mut c_void) -> c_int {
    guarded("config get", 0, || {
        get().valkey_bloom.flavor.index() as c_int
    })
}

unsafe extern "C" fn set_flavor(
    _name: *const c_char,
    value: c_int,
    _privdata: *mut c_void,
    _err: *mut *mut RedisModuleString,
) -> c_int {
    guarded("config set", ERR, || {
        with_mut(|c| c.valkey_bloom.flavor = BloomFlavor::from_index(value.into()));
        OK
    })
}

fn register_string(
    ctx: *mut RedisModuleCtx,
    index: usize,
    name: &str,
    default: &str,
) -> Result<(), String> {
    let c_name = CString::new(name).map_err(|e| e.to_string())?;
    let default = CString::new(default).map_err(|e| e.to_string())?;
    let status = rm!(RedisModule_RegisterStringConfig(
        ctx,
        c_name.as_ptr(),
        default.as_ptr(),
        0,
        Some(get_string),
        Some(set_string),
        None,
        index as *mut c_void,
    ));
    registered(status, name)
}

/// The strings the getter handed out last (fp rate, tightening ratio).
static RETURNED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

unsafe extern "C" fn get_string(
    _name: *const c_char,
    privdata: *mut c_void,
) -> *mut RedisModuleString {
    guarded("config get", std::ptr::null_mut(), || {
        let index = privdata as usize;
        let text = {
            let c = &get().valkey_bloom;
            if index == 0 {
                c.fp_rate_text.clone()
            } else {
                c.tightening_text.clone()
            }
        };
        handed_out(&RETURNED, index, &text)
    })
}

unsafe extern "C" fn set_string(
    _name: *const c_char,
    value: *mut RedisModuleString,
    privdata: *mut c_void,
    err: *mut *mut RedisModuleString,
) -> c_int {
    let value = RStr::from_ptr(value);
    let result = guarded("config set", Err("internal error"), || {
        with_mut(|c| {
            if privdata as usize == 0 {
                c.valkey_bloom.set_fp_rate(value.as_ref())
            } else {
                c.valkey_bloom.set_tightening(value.as_ref())
            }
        })
    });
    match result {
        Ok(()) => OK,
        Err(msg) => {
            if !err.is_null() {
                *err = server_string(msg);
            }
            ERR
        }
    }
}
