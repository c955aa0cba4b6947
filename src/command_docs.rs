//! Command metadata for `COMMAND INFO` / `COMMAND DOCS`, as RedisBloom 8.x
//! registers it (docs/module.md §2.1 arity column, §2.3 key specs, docs, arguments).
//!
//! The table below is a compact Rust description; [`apply`] turns each entry
//! into the C structures of `RedisModule_SetCommandInfo` once, at load. The
//! strings are `c"…"` literals (NUL-terminated, `'static`); the arrays are
//! built here and leaked, so they outlive the call whatever the server does
//! with them (Redis 7.0 and Valkey 8 copy them; the leak is a few KB, once).
//!
//! Every literal is RedisBloom's, typos included (`capcaity`). CF.COMPACT has
//! no entry: RedisBloom registers no command info for it (arity stays -1).

use std::ffi::{c_int, CStr};
use std::mem::size_of;
use std::ptr::{null, null_mut};

use redis_module::raw::{
    self, RedisModuleCommandArg, RedisModuleCommandArgType, RedisModuleCommandHistoryEntry,
    RedisModuleCommandInfo, RedisModuleCommandInfoVersion, RedisModuleCommandKeySpec,
    RedisModuleCommandKeySpec__bindgen_ty_1 as BeginSearch,
    RedisModuleCommandKeySpec__bindgen_ty_1__bindgen_ty_1 as BeginSearchIndex,
    RedisModuleCommandKeySpec__bindgen_ty_2 as FindKeys,
    RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 as FindKeysRange,
    RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_2 as FindKeysKeynum, RedisModuleCtx,
};

use crate::ffi::context::log;

// ---------------------------------------------------------------------------
// Rust-side description

/// Key-spec access flag. Every command has the key spec of its first key
/// (docs/module.md §2.3); a command with more keys adds a [`KeynumSpec`].
#[derive(Clone, Copy)]
pub enum Access {
    Ro,
    Rw,
}
pub use Access::{Ro, Rw};

#[derive(Clone, Copy)]
pub enum Kind {
    Key,
    String,
    Integer,
    Double,
    PureToken,
    OneOf(&'static [Arg]),
    Block(&'static [Arg]),
}

/// One argument descriptor: `name : kind [token] {flags}`.
#[derive(Clone, Copy)]
pub struct Arg {
    name: &'static CStr,
    kind: Kind,
    token: Option<&'static CStr>,
    flags: u32,
    /// For keys: the key spec they belong to.
    key_spec: c_int,
}

pub const fn arg(name: &'static CStr, kind: Kind) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        flags: raw::REDISMODULE_CMD_ARG_NONE,
        key_spec: 0,
    }
}

/// The key argument; it refers to key spec 0.
pub const KEY: Arg = arg(c"key", Kind::Key);

/// A key argument of key spec `spec`.
pub const fn key(name: &'static CStr, spec: c_int) -> Arg {
    let mut a = arg(name, Kind::Key);
    a.key_spec = spec;
    a
}

pub const fn string(name: &'static CStr) -> Arg {
    arg(name, Kind::String)
}

pub const fn integer(name: &'static CStr) -> Arg {
    arg(name, Kind::Integer)
}

pub const fn double(name: &'static CStr) -> Arg {
    arg(name, Kind::Double)
}

pub const fn pure_token(name: &'static CStr, token: &'static CStr) -> Arg {
    arg(name, Kind::PureToken).token(token)
}

pub const fn block(name: &'static CStr, args: &'static [Arg]) -> Arg {
    arg(name, Kind::Block(args))
}

pub const fn oneof(name: &'static CStr, args: &'static [Arg]) -> Arg {
    arg(name, Kind::OneOf(args))
}

impl Arg {
    pub const fn token(mut self, token: &'static CStr) -> Arg {
        self.token = Some(token);
        self
    }

    pub const fn optional(mut self) -> Arg {
        self.flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
        self
    }

    pub const fn multiple(mut self) -> Arg {
        self.flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
        self
    }
}

/// A second key spec: keys counted by an argument, `numkeys key...`
/// (begin-search index, then find-keys keynum).
#[derive(Clone, Copy)]
pub struct KeynumSpec {
    pub access: Access,
    pub index: c_int,
    pub keynumidx: c_int,
    pub firstkey: c_int,
    pub keystep: c_int,
}

/// The sources of a MERGE (CMS, T-Digest): `numkeys` at index 2, keys
/// from the next argument on, read only.
pub const MERGE_SOURCES: KeynumSpec = KeynumSpec {
    access: Access::Ro,
    index: 2,
    keynumidx: 0,
    firstkey: 1,
    keystep: 1,
};

/// A second key spec: the keys from argument `index` to the last one
/// (BF.MERGE's sources).
#[derive(Clone, Copy)]
pub struct RestSpec {
    pub access: Access,
    pub index: c_int,
}

/// Metadata of one command.
pub struct Doc {
    name: &'static CStr,
    arity: c_int,
    access: Access,
    keynum: Option<KeynumSpec>,
    rest: Option<RestSpec>,
    since: &'static CStr,
    tips: Option<&'static CStr>,
    summary: &'static CStr,
    complexity: &'static CStr,
    args: &'static [Arg],
    /// (version, change) entries of COMMAND DOCS `history`.
    history: &'static [(&'static CStr, &'static CStr)],
}

/// One row of the table, in the column order of docs/module.md §2.1/§2.3.
#[allow(clippy::too_many_arguments)]
pub const fn doc(
    name: &'static CStr,
    arity: c_int,
    access: Access,
    since: &'static CStr,
    tips: Option<&'static CStr>,
    summary: &'static CStr,
    complexity: &'static CStr,
    args: &'static [Arg],
) -> Doc {
    Doc {
        name,
        arity,
        access,
        keynum: None,
        rest: None,
        since,
        tips,
        summary,
        complexity,
        args,
        history: &[],
    }
}

impl Doc {
    pub const fn history(mut self, history: &'static [(&'static CStr, &'static CStr)]) -> Doc {
        self.history = history;
        self
    }
}

impl Doc {
    #[cfg(test)]
    pub fn name(&self) -> &'static CStr {
        self.name
    }

    /// Adds the key spec of the keys after the first.
    pub const fn with_keynum(mut self, spec: KeynumSpec) -> Doc {
        self.keynum = Some(spec);
        self
    }

    /// Adds the key spec of the keys after the first, to the last argument.
    pub const fn with_rest(mut self, spec: RestSpec) -> Doc {
        self.rest = Some(spec);
        self
    }
}

pub const NO_TIPS: Option<&CStr> = None;
pub const DONT_CACHE: Option<&CStr> = Some(c"dont_cache");

// Argument lists and complexities shared by several families.
/// `WINDOW ms` and `BUCKETS n` of the creation commands of windowed
/// types (rsbloom's; docs/cms-window.md §3.1, docs/topk-window.md §3.1).
pub const WINDOW_ARG: Arg = block(c"window", &[integer(c"milliseconds")])
    .token(c"WINDOW")
    .optional();
pub const BUCKETS_ARG: Arg = block(c"buckets", &[integer(c"buckets")])
    .token(c"BUCKETS")
    .optional();

pub const KEY_ONLY: &[Arg] = &[KEY];
pub const KEY_ITEM: &[Arg] = &[KEY, string(c"item")];
pub const KEY_ITEMS: &[Arg] = &[KEY, string(c"item").multiple()];
pub const SCANDUMP: &[Arg] = &[KEY, integer(c"iterator")];
pub const LOADCHUNK: &[Arg] = &[KEY, integer(c"iterator"), string(c"data")];
pub const O_1: &CStr = c"O(1)";
pub const O_N_CAP: &CStr = c"O(n), where n is the capacity";

// ---------------------------------------------------------------------------
// C structures

/// `REDISMODULE_COMMAND_INFO_VERSION`: the header defines it as a `static`,
/// so it is not exported to Rust; this is the same value.
static INFO_VERSION: RedisModuleCommandInfoVersion = RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: size_of::<RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: size_of::<RedisModuleCommandKeySpec>(),
    sizeof_arg: size_of::<RedisModuleCommandArg>(),
};

/// Array terminator (`name == NULL`).
const ARG_END: RedisModuleCommandArg = RedisModuleCommandArg {
    name: null(),
    type_: 0,
    key_spec_index: -1,
    token: null(),
    summary: null(),
    since: null(),
    flags: 0,
    deprecated_since: null(),
    subargs: null_mut(),
    display_text: null(),
};

impl Kind {
    fn c_type(self) -> RedisModuleCommandArgType {
        match self {
            Kind::Key => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
            Kind::String => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            Kind::Integer => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            Kind::Double => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
            Kind::PureToken => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            Kind::OneOf(_) => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
            Kind::Block(_) => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK,
        }
    }
}

/// Builds a terminated C argument array (recursively for blocks and oneofs).
fn c_args(args: &[Arg]) -> *mut RedisModuleCommandArg {
    let mut out: Vec<RedisModuleCommandArg> = Vec::with_capacity(args.len() + 1);
    for a in args {
        let subargs = match a.kind {
            Kind::OneOf(sub) | Kind::Block(sub) => c_args(sub),
            _ => null_mut(),
        };
        out.push(RedisModuleCommandArg {
            name: a.name.as_ptr(),
            type_: a.kind.c_type(),
            key_spec_index: if matches!(a.kind, Kind::Key) {
                a.key_spec
            } else {
                -1
            },
            token: a.token.map_or(null(), CStr::as_ptr),
            flags: a.flags as c_int,
            subargs,
            ..ARG_END
        });
    }
    out.push(ARG_END);
    Box::leak(out.into_boxed_slice()).as_mut_ptr()
}

fn key_flags(access: Access) -> u64 {
    u64::from(match access {
        Ro => raw::REDISMODULE_CMD_KEY_RO,
        Rw => raw::REDISMODULE_CMD_KEY_RW,
    })
}

/// The first key's spec — begin-search index 1, find-keys range (lastkey 0,
/// keystep 1, limit 0) — then the keynum spec or the range to the last
/// argument (lastkey -1) if any, and the terminator (`begin_search_type` INVALID).
fn c_key_specs(
    access: Access,
    keynum: Option<KeynumSpec>,
    rest: Option<RestSpec>,
) -> *mut RedisModuleCommandKeySpec {
    let first = RedisModuleCommandKeySpec {
        notes: null(),
        flags: key_flags(access),
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX,
        bs: BeginSearch {
            index: BeginSearchIndex { pos: 1 },
        },
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE,
        fk: FindKeys {
            range: FindKeysRange {
                lastkey: 0,
                keystep: 1,
                limit: 0,
            },
        },
    };
    let mut specs = vec![first];
    if let Some(k) = keynum {
        specs.push(RedisModuleCommandKeySpec {
            flags: key_flags(k.access),
            bs: BeginSearch {
                index: BeginSearchIndex { pos: k.index },
            },
            find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM,
            fk: FindKeys {
                keynum: FindKeysKeynum {
                    keynumidx: k.keynumidx,
                    firstkey: k.firstkey,
                    keystep: k.keystep,
                },
            },
            ..first
        });
    }
    if let Some(r) = rest {
        specs.push(RedisModuleCommandKeySpec {
            flags: key_flags(r.access),
            bs: BeginSearch {
                index: BeginSearchIndex { pos: r.index },
            },
            fk: FindKeys {
                range: FindKeysRange {
                    lastkey: -1,
                    keystep: 1,
                    limit: 0,
                },
            },
            ..first
        });
    }
    specs.push(RedisModuleCommandKeySpec {
        flags: 0,
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INVALID,
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_OMITTED,
        ..first
    });
    Box::leak(specs.into_boxed_slice()).as_mut_ptr()
}

/// The terminated C history array, or null when there is none.
fn c_history(history: &[(&'static CStr, &'static CStr)]) -> *mut RedisModuleCommandHistoryEntry {
    if history.is_empty() {
        return null_mut();
    }
    let entries = history
        .iter()
        .map(|(since, changes)| RedisModuleCommandHistoryEntry {
            since: since.as_ptr(),
            changes: changes.as_ptr(),
        })
        .chain(std::iter::once(RedisModuleCommandHistoryEntry {
            since: null(),
            changes: null(),
        }));
    Box::leak(entries.collect::<Box<[_]>>()).as_mut_ptr()
}

impl Doc {
    fn c_info(&self) -> &'static mut RedisModuleCommandInfo {
        Box::leak(Box::new(RedisModuleCommandInfo {
            version: &INFO_VERSION,
            summary: self.summary.as_ptr(),
            complexity: self.complexity.as_ptr(),
            since: self.since.as_ptr(),
            history: c_history(self.history),
            tips: self.tips.map_or(null(), CStr::as_ptr),
            arity: self.arity,
            key_specs: c_key_specs(self.access, self.keynum, self.rest),
            args: c_args(self.args),
        }))
    }
}

// ---------------------------------------------------------------------------

/// Attaches the metadata to the registered commands. Call once, after every
/// command is registered. Nothing here is fatal: a command whose info cannot
/// be set, or every command on a server without the command-info API, keeps
/// its legacy metadata (arity -1, key range 1/1/1) and the log says so.
pub fn apply<'a>(
    ctx: *mut RedisModuleCtx,
    docs: impl IntoIterator<Item = &'a Doc>,
) -> Result<(), String> {
    for doc in docs {
        let Some(cmd) = optional!(RedisModule_GetCommand(ctx, doc.name.as_ptr())) else {
            return unsupported(ctx);
        };
        if cmd.is_null() {
            // The table names a command that was not registered: a bug of
            // ours, which the integration tests catch; not worth refusing to load.
            warn(
                ctx,
                "no registered command for the command info of",
                doc.name,
            );
            continue;
        }
        let info: *const RedisModuleCommandInfo = doc.c_info();
        match optional!(RedisModule_SetCommandInfo(cmd, info)) {
            None => return unsupported(ctx),
            Some(status) if status == raw::REDISMODULE_OK as c_int => {}
            // Validation is the server's; keep the command usable with its
            // legacy metadata rather than refusing to load.
            Some(_) => warn(ctx, "server rejected the command info of", doc.name),
        }
    }
    Ok(())
}

fn warn(ctx: *mut RedisModuleCtx, what: &str, name: &CStr) {
    let name = name.to_string_lossy();
    log(ctx, "warning", &format!("rsbloom: {what} {name}"));
}

/// Logs (once: `apply` stops here) that the commands keep legacy metadata.
fn unsupported(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    log(
        ctx,
        "notice",
        "rsbloom: server has no RedisModule_SetCommandInfo; COMMAND INFO/DOCS show legacy metadata",
    );
    Ok(())
}

/// The C arrays of `d`'s command info end with their terminators.
#[cfg(test)]
pub fn assert_c_arrays_terminated(d: &Doc) {
    let info = d.c_info();
    let mut n = 0;
    // SAFETY: arrays built by c_args, terminated by ARG_END.
    unsafe {
        while !(*info.args.add(n)).name.is_null() {
            n += 1;
        }
        let end = 1 + usize::from(d.keynum.is_some()) + usize::from(d.rest.is_some());
        assert_eq!(
            (*info.key_specs.add(end)).begin_search_type,
            raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INVALID
        );
    }
    assert_eq!(n, d.args.len());
}
