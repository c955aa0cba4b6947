//! The module's INFO sections (`INFO bf`): rsbloom's version, keys and memory
//! per filter type, and per-command call counters. The server prefixes
//! section and field names with the module name (`bf_`).

use std::ffi::{c_int, CString};

use redis_module::raw::{RedisModuleCtx, RedisModuleInfoCtx};

use crate::ffi::command::CommandSpec;
use crate::ffi::stats::TypeStats;
use crate::registry::{FAMILIES, MODULE_VERSION};

fn text(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

fn section(ctx: *mut RedisModuleInfoCtx, name: &str) {
    let name = text(name);
    rm!(RedisModule_InfoAddSection(ctx, name.as_ptr()));
}

fn field_i64(ctx: *mut RedisModuleInfoCtx, name: &str, v: i64) {
    let name = text(name);
    rm!(RedisModule_InfoAddFieldLongLong(ctx, name.as_ptr(), v));
}

fn field_str(ctx: *mut RedisModuleInfoCtx, name: &str, v: &str) {
    let (name, v) = (text(name), text(v));
    rm!(RedisModule_InfoAddFieldCString(
        ctx,
        name.as_ptr(),
        v.as_ptr()
    ));
}

fn type_fields(ctx: *mut RedisModuleInfoCtx, prefix: &str, stats: &TypeStats) {
    let (keys, bytes) = stats.snapshot();
    field_i64(ctx, &format!("{prefix}_keys"), keys);
    field_i64(ctx, &format!("{prefix}_memory"), bytes);
}

/// `cmd_bf_add:calls=3,failed=1` for every command.
fn command_fields(ctx: *mut RedisModuleInfoCtx, commands: &[CommandSpec]) {
    for spec in commands {
        let (calls, failed) = spec.stats.snapshot();
        let name = spec.event.to_string_lossy().replace('.', "_");
        field_str(
            ctx,
            &format!("cmd_{name}"),
            &format!("calls={calls},failed={failed}"),
        );
    }
}

unsafe extern "C" fn info(ctx: *mut RedisModuleInfoCtx, _for_crash_report: c_int) {
    crate::ffi::barrier::guarded("info", (), || {
        section(ctx, "stats");
        field_str(ctx, "version", env!("CARGO_PKG_VERSION"));
        field_i64(ctx, "compat_version", i64::from(MODULE_VERSION));
        for family in FAMILIES {
            type_fields(ctx, &family.name.to_string_lossy(), (family.stats)());
            if let Some((name, _, stats)) = family.second_type {
                type_fields(ctx, name, stats());
            }
        }
        section(ctx, "commands");
        for family in FAMILIES {
            command_fields(ctx, family.commands_for(crate::config::flavor_at_load()));
        }
        for (name, fields) in crate::valkey_bloom::info_sections() {
            section(ctx, name);
            for (field, v) in fields {
                field_i64(ctx, field, v);
            }
        }
    })
}

/// Registers the INFO callback (every supported server has the API).
pub fn register(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    if rm!(RedisModule_RegisterInfoFunc(ctx, Some(info))) != 0 {
        return Err("could not register the INFO section".into());
    }
    Ok(())
}
