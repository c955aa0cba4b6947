//! Access to the server's API function table.
//!
//! The table is filled by `RedisModule_Init`; an entry is `None` when the
//! running server predates that API. Every API the module calls
//! unconditionally is listed in `REQUIRED` and checked once at load, so a
//! missing one fails `MODULE LOAD` with a message instead of failing later.

use redis_module::raw;

/// Calls a server API function. The `None` arm is unreachable once
/// [`check_required`] has passed at load (each name used through `rm!` must
/// be in `REQUIRED`, or be called through `optional!` instead).
macro_rules! rm {
    ($name:ident($($arg:expr),* $(,)?)) => {
        // SAFETY: the argument contracts are those of the Redis module API;
        // callers pass live pointers obtained from the server.
        unsafe {
            match redis_module::raw::$name {
                Some(f) => f($($arg),*),
                None => $crate::ffi::api::missing(stringify!($name)),
            }
        }
    };
}

/// Calls an API that older servers lack; evaluates to `None` there.
macro_rules! optional {
    ($name:ident($($arg:expr),* $(,)?)) => {
        // SAFETY: as for `rm!`.
        unsafe { redis_module::raw::$name.map(|f| f($($arg),*)) }
    };
}

/// Never returns: only reachable if a name used with `rm!` was left out of
/// `REQUIRED`, which the `required_list_is_complete` test guards against.
#[cold]
pub fn missing(name: &str) -> ! {
    eprintln!("rsbloom: server API {name} missing after load-time check");
    std::process::abort()
}

macro_rules! required {
    ($($name:ident),* $(,)?) => {
        /// Names of the APIs called through `rm!` (checked by a test).
        #[cfg(test)]
        pub const REQUIRED: &[&str] = &[$(stringify!($name)),*];

        /// Returns the first required API the server does not provide.
        pub fn check_required() -> Result<(), &'static str> {
            // SAFETY: reading function-pointer statics filled at init.
            // Copy each pointer out: no reference to the mutable static is taken.
            $( if unsafe { raw::$name }.is_none() { return Err(stringify!($name)); } )*
            Ok(())
        }
    };
}

required!(
    RedisModule_Alloc,
    RedisModule_Free,
    RedisModule_CreateCommand,
    RedisModule_CreateDataType,
    RedisModule_SetModuleOptions,
    RedisModule_Log,
    RedisModule_LogIOError,
    RedisModule_StringPtrLen,
    RedisModule_CreateString,
    RedisModule_StringToDouble,
    RedisModule_FreeString,
    RedisModule_OpenKey,
    RedisModule_CloseKey,
    RedisModule_KeyType,
    RedisModule_ModuleTypeGetType,
    RedisModule_ModuleTypeGetValue,
    RedisModule_ModuleTypeSetValue,
    RedisModule_ReplyWithError,
    RedisModule_ReplyWithSimpleString,
    RedisModule_ReplyWithLongLong,
    RedisModule_ReplyWithBool,
    RedisModule_ReplyWithDouble,
    RedisModule_ReplyWithNull,
    RedisModule_ReplyWithArray,
    RedisModule_ReplySetArrayLength,
    RedisModule_ReplyWithMap,
    RedisModule_ReplyWithStringBuffer,
    RedisModule_ReplicateVerbatim,
    RedisModule_Replicate,
    RedisModule_GetKeyNameFromIO,
    RedisModule_GetDbIdFromIO,
    RedisModule_GetDetachedThreadSafeContext,
    RedisModule_FreeThreadSafeContext,
    RedisModule_SelectDb,
    RedisModule_GetSelectedDb,
    RedisModule_ScanCursorCreate,
    RedisModule_ScanCursorDestroy,
    RedisModule_Scan,
    RedisModule_SubscribeToServerEvent,
    RedisModule_NotifyKeyspaceEvent,
    RedisModule_GetContextFlags,
    RedisModule_AvoidReplicaTraffic,
    RedisModule_Milliseconds,
    RedisModule_SaveUnsigned,
    RedisModule_LoadUnsigned,
    RedisModule_SaveDouble,
    RedisModule_LoadDouble,
    RedisModule_SaveStringBuffer,
    RedisModule_LoadStringBuffer,
    RedisModule_IsIOError,
    RedisModule_EmitAOF,
    RedisModule_GetContextFromIO,
    RedisModule_Call,
    RedisModule_CallReplyStringPtr,
    RedisModule_FreeCallReply,
    RedisModule_GetServerVersion,
    RedisModule_RegisterStringConfig,
    RedisModule_RegisterBoolConfig,
    RedisModule_RegisterNumericConfig,
    RedisModule_RegisterEnumConfig,
    RedisModule_LoadConfigs,
    RedisModule_RegisterInfoFunc,
    RedisModule_InfoAddSection,
    RedisModule_InfoAddFieldLongLong,
    RedisModule_InfoAddFieldCString,
    RedisModule_DigestAddLongLong,
    RedisModule_DigestAddStringBuffer,
    RedisModule_DigestEndSequence,
    RedisModule_DefragAlloc,
    RedisModule_DbSize,
);

#[cfg(test)]
mod tests {
    use super::REQUIRED;

    /// Every `rm!(Name(...))` in the source must be covered by the load check.
    #[test]
    fn required_list_is_complete() {
        let src_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut missing = Vec::new();
        for path in rs_files(std::path::Path::new(src_dir)) {
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("rm!(RedisModule_") {
                let name: String = text[i + 4..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                // Only calls count (not this test's own search string).
                let is_call = text[i + 4 + name.len()..].starts_with('(');
                if is_call && !REQUIRED.contains(&name.as_str()) {
                    missing.push(format!("{}: {name}", path.display()));
                }
            }
        }
        assert!(missing.is_empty(), "not in REQUIRED: {missing:?}");
    }

    fn rs_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(rs_files(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
        out
    }
}
