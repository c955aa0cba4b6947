//! Module entry point: capability detection, then registration of what
//! `registry` lists.

use std::ffi::{c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleString};

use crate::config;
use crate::ffi::command::register;
use crate::ffi::context::log;
use crate::ffi::slot_migration::{self, Interface as SlotMigration};
use crate::ffi::{api, RStr};
use crate::registry::{COMPAT_RELEASE, FAMILIES, MODULE_VERSION};

/// Entry point called by the server on `MODULE LOAD` / `loadmodule`.
///
/// # Safety
/// Called by the server with a valid context and `argc` argument strings.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut RedisModuleCtx,
    argv: *mut *mut RedisModuleString,
    argc: c_int,
) -> c_int {
    let err = raw::REDISMODULE_ERR as c_int;
    if raw::Export_RedisModule_Init(
        ctx,
        c"bf".as_ptr(),
        MODULE_VERSION,
        raw::REDISMODULE_APIVER_1 as c_int,
    ) == err
    {
        return err;
    }
    let args: &[RStr] = match usize::try_from(argc) {
        Ok(n) if !argv.is_null() => std::slice::from_raw_parts(argv.cast(), n),
        _ => &[],
    };
    match catch_unwind(AssertUnwindSafe(|| load(ctx, args))) {
        Ok(Ok(())) => raw::REDISMODULE_OK as c_int,
        Ok(Err(why)) => {
            log(ctx, "warning", &format!("rsbloom: failed to load: {why}"));
            err
        }
        Err(_) => err,
    }
}

/// What the running server offers beyond the Redis 7.0 module API.
struct Capabilities {
    acl_categories: bool,
    unprefixed_configs: bool,
    slot_migration: Option<SlotMigration>,
    /// The server's double parser reads hexadecimal floats (strtod; not
    /// Valkey ≥ 8.1's fast_float): arguments are parsed the same way.
    hex_floats: bool,
}

fn detect(ctx: *mut RedisModuleCtx, version: c_int) -> Capabilities {
    // SAFETY: reading function-pointer statics filled by RedisModule_Init.
    let (add, set) = unsafe {
        (
            raw::RedisModule_AddACLCategory,
            raw::RedisModule_SetCommandACLCategories,
        )
    };
    let acl = add.is_some() && set.is_some();
    Capabilities {
        acl_categories: acl,
        unprefixed_configs: version >= 0x0008_0000,
        slot_migration: slot_migration::detect(),
        hex_floats: server_parses_double(ctx, c"0x1p-7"),
    }
}

/// Whether the server's own `StringToDouble` accepts `text`.
fn server_parses_double(ctx: *mut RedisModuleCtx, text: &CStr) -> bool {
    let s = rm!(RedisModule_CreateString(
        ctx,
        text.as_ptr(),
        text.count_bytes()
    ));
    let mut d = 0.0;
    let ok = rm!(RedisModule_StringToDouble(s, &mut d)) == raw::REDISMODULE_OK as c_int;
    rm!(RedisModule_FreeString(ctx, s));
    ok
}

fn load(ctx: *mut RedisModuleCtx, args: &[RStr]) -> Result<(), String> {
    crate::ffi::stats::mark_main_thread();
    api::check_required().map_err(|name| format!("server lacks required API {name}"))?;
    let version = rm!(RedisModule_GetServerVersion());
    let caps = detect(ctx, version);
    rsbloom_core::args::num::set_hex_floats(caps.hex_floats);
    config::apply_load_args(args)?;
    let asm = caps.slot_migration.map_or(0, SlotMigration::option);
    rm!(RedisModule_SetModuleOptions(
        ctx,
        raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS as c_int | asm
    ));

    // Configs first: a data type's registered encoding may depend on one.
    let unprefixed = config::register(ctx, caps.unprefixed_configs)?;
    for family in FAMILIES {
        family.create_types(ctx)?;
    }
    if caps.acl_categories {
        add_acl_categories(ctx)?;
    } else {
        log(
            ctx,
            "notice",
            "rsbloom: server has no module ACL categories; none registered",
        );
    }
    let flavor = config::flavor_at_load();
    for spec in FAMILIES.iter().flat_map(|f| f.commands_for(flavor)) {
        register(ctx, spec, caps.acl_categories)?;
    }
    register_extra(ctx, caps.acl_categories)?;
    crate::ffi::events::on_fork(ctx, FAMILIES.iter().filter_map(|f| f.on_fork).collect())?;
    crate::ffi::events::count_what_leaves(ctx);
    crate::command_docs::apply(ctx, FAMILIES.iter().flat_map(|f| f.docs_for(flavor)))?;
    crate::info::register(ctx)?;
    if !unprefixed {
        log(
            ctx,
            "notice",
            "rsbloom: server has no unprefixed module configs; configs are named bf.<name>",
        );
    }
    if let Some(asm) = caps.slot_migration {
        let logged = if asm.subscribe(ctx) {
            ""
        } else {
            " (its events are not logged)"
        };
        log(
            ctx,
            "notice",
            &format!("rsbloom: atomic slot migration supported ({asm:?}){logged}"),
        );
    }
    log(
        ctx,
        "notice",
        &format!(
            "rsbloom {} loaded (RedisBloom {COMPAT_RELEASE} compatible)",
            env!("CARGO_PKG_VERSION")
        ),
    );
    Ok(())
}

fn add_acl_categories(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    for category in FAMILIES.iter().map(|f| f.name) {
        if optional!(RedisModule_AddACLCategory(ctx, category.as_ptr()))
            != Some(raw::REDISMODULE_OK as c_int)
        {
            return Err(format!("could not add ACL category {category:?}"));
        }
    }
    Ok(())
}

#[cfg(feature = "panic-test")]
fn register_extra(ctx: *mut RedisModuleCtx, _acl: bool) -> Result<(), String> {
    fn panics(_: &crate::ffi::Ctx, _: &[RStr]) -> Result<(), crate::ffi::ReplyError> {
        panic!("rsbloom.panic test command")
    }
    register(
        ctx,
        &command!("rsbloom.panic", panics, "readonly", ""),
        false,
    )
}

#[cfg(not(feature = "panic-test"))]
fn register_extra(_ctx: *mut RedisModuleCtx, _acl: bool) -> Result<(), String> {
    Ok(())
}
