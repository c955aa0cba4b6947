//! Command metadata for `COMMAND INFO` / `COMMAND DOCS`, as RedisBloom 8.x
//! registers it (COMPAT §1.4 arity column, §1.5 key specs, docs, arguments).
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
    RedisModuleCommandKeySpec__bindgen_ty_2__bindgen_ty_1 as FindKeysRange, RedisModuleCtx,
};

use crate::ffi::context::log;

// ---------------------------------------------------------------------------
// Rust-side description

/// Key-spec access flag; every command has exactly one key spec (COMPAT §1.5).
#[derive(Clone, Copy)]
enum Access {
    Ro,
    Rw,
}
use Access::{Ro, Rw};

#[derive(Clone, Copy)]
enum Kind {
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
struct Arg {
    name: &'static CStr,
    kind: Kind,
    token: Option<&'static CStr>,
    flags: u32,
}

const fn arg(name: &'static CStr, kind: Kind) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        flags: raw::REDISMODULE_CMD_ARG_NONE,
    }
}

/// The key argument; it refers to key spec 0.
const KEY: Arg = arg(c"key", Kind::Key);

const fn string(name: &'static CStr) -> Arg {
    arg(name, Kind::String)
}

const fn integer(name: &'static CStr) -> Arg {
    arg(name, Kind::Integer)
}

const fn double(name: &'static CStr) -> Arg {
    arg(name, Kind::Double)
}

const fn pure_token(name: &'static CStr, token: &'static CStr) -> Arg {
    arg(name, Kind::PureToken).token(token)
}

const fn block(name: &'static CStr, args: &'static [Arg]) -> Arg {
    arg(name, Kind::Block(args))
}

const fn oneof(name: &'static CStr, args: &'static [Arg]) -> Arg {
    arg(name, Kind::OneOf(args))
}

impl Arg {
    const fn token(mut self, token: &'static CStr) -> Arg {
        self.token = Some(token);
        self
    }

    const fn optional(mut self) -> Arg {
        self.flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
        self
    }

    const fn multiple(mut self) -> Arg {
        self.flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
        self
    }
}

/// Metadata of one command.
struct Doc {
    name: &'static CStr,
    arity: c_int,
    access: Access,
    since: &'static CStr,
    tips: Option<&'static CStr>,
    summary: &'static CStr,
    complexity: &'static CStr,
    args: &'static [Arg],
}

/// One row of the table, in the column order of COMPAT §1.4/§1.5.
#[allow(clippy::too_many_arguments)]
const fn doc(
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
        since,
        tips,
        summary,
        complexity,
        args,
    }
}

const NO_TIPS: Option<&CStr> = None;
const DONT_CACHE: Option<&CStr> = Some(c"dont_cache");

// Argument lists shared by several commands.
const KEY_ONLY: &[Arg] = &[KEY];
const KEY_ITEM: &[Arg] = &[KEY, string(c"item")];
const KEY_ITEMS: &[Arg] = &[KEY, string(c"item").multiple()];
const SCANDUMP: &[Arg] = &[KEY, integer(c"iterator")];
const LOADCHUNK: &[Arg] = &[KEY, integer(c"iterator"), string(c"data")];

const BF_RESERVE: &[Arg] = &[
    KEY,
    double(c"error_rate"),
    integer(c"capacity"),
    block(c"expansion", &[integer(c"expansion")])
        .token(c"EXPANSION")
        .optional(),
    pure_token(c"nonscaling", c"NONSCALING").optional(),
];

const BF_INSERT: &[Arg] = &[
    KEY,
    block(c"capacity", &[integer(c"capacity")])
        .token(c"CAPACITY")
        .optional(),
    block(c"error", &[double(c"error")])
        .token(c"ERROR")
        .optional(),
    block(c"expansion", &[integer(c"expansion")])
        .token(c"EXPANSION")
        .optional(),
    pure_token(c"nocreate", c"NOCREATE").optional(),
    pure_token(c"nonscaling", c"NONSCALING").optional(),
    pure_token(c"items", c"ITEMS"),
    string(c"item").multiple(),
];

const BF_INFO: &[Arg] = &[
    KEY,
    oneof(
        c"single_value",
        &[
            pure_token(c"capcaity", c"CAPACITY"), // sic
            pure_token(c"SIZE", c"SIZE"),
            pure_token(c"FILTERS", c"FILTERS"),
            pure_token(c"ITEMS", c"ITEMS"),
            pure_token(c"EXPANSION", c"EXPANSION"),
        ],
    )
    .optional(),
];

const CF_RESERVE: &[Arg] = &[
    KEY,
    integer(c"capacity"),
    block(c"bucketsize", &[integer(c"bucketsize")])
        .token(c"BUCKETSIZE")
        .optional(),
    block(c"maxiterations", &[integer(c"maxiterations")])
        .token(c"MAXITERATIONS")
        .optional(),
    block(c"expansion", &[integer(c"expansion")])
        .token(c"EXPANSION")
        .optional(),
];

/// Shared by CF.INSERT and CF.INSERTNX. Unlike BF.INSERT, the block has no
/// token of its own: the token is a pure-token sub-argument.
const CF_INSERT: &[Arg] = &[
    KEY,
    block(
        c"capacity",
        &[pure_token(c"capacity", c"CAPACITY"), integer(c"capacity")],
    )
    .optional(),
    pure_token(c"nocreate", c"NOCREATE").optional(),
    pure_token(c"items", c"ITEMS"),
    string(c"item").multiple(),
];

const O_K_LAST: &CStr =
    c"O(k), where k is the number of hash functions used by the last sub-filter";
const O_KN_HASH: &CStr =
    c"O(k * n), where k is the number of hash functions and n is the number of items";
const O_K_SUB: &CStr = c"O(k), where k is the number of sub-filters";
const O_K_I: &CStr = c"O(k + i), where k is the number of sub-filters and i is maxIterations";
const O_N_CAP: &CStr = c"O(n), where n is the capacity";
const O_1: &CStr = c"O(1)";
const CF_INSERT_O: &CStr =
    c"O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations";

#[rustfmt::skip]
static DOCS: &[Doc] = &[
    //   name            arity access since   tips        summary / complexity / arguments
    doc(c"BF.ADD",       3,  Rw, c"1.0.0", NO_TIPS,    c"Adds an item to a Bloom Filter", O_K_LAST, KEY_ITEM),
    doc(c"BF.CARD",      2,  Ro, c"2.4.4", NO_TIPS,    c"Returns the cardinality of a Bloom filter", O_1, KEY_ONLY),
    doc(c"BF.DEBUG",     2,  Ro, c"1.0.0", DONT_CACHE, c"Returns internal debug information about a Bloom Filter",
        c"O(n), where n is the number of sub-filters", KEY_ONLY),
    doc(c"BF.EXISTS",    3,  Ro, c"1.0.0", NO_TIPS,    c"Checks whether an item exists in a Bloom Filter", O_K_LAST, KEY_ITEM),
    doc(c"BF.INFO",      -2, Ro, c"1.0.0", DONT_CACHE, c"Returns information about a Bloom Filter", O_1, BF_INFO),
    doc(c"BF.INSERT",    -4, Rw, c"1.0.0", NO_TIPS,
        c"Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", O_KN_HASH, BF_INSERT),
    doc(c"BF.LOADCHUNK", 4,  Rw, c"1.0.0", NO_TIPS,    c"Restores a filter previously saved using SCANDUMP", O_N_CAP, LOADCHUNK),
    doc(c"BF.MADD",      -3, Rw, c"1.0.0", NO_TIPS,
        c"Adds one or more items to a Bloom Filter. A filter will be created if it does not exist", O_KN_HASH, KEY_ITEMS),
    doc(c"BF.MEXISTS",   -3, Ro, c"1.0.0", NO_TIPS,    c"Checks whether one or more items exist in a Bloom Filter", O_KN_HASH, KEY_ITEMS),
    doc(c"BF.RESERVE",   -4, Rw, c"1.0.0", NO_TIPS,    c"Creates a new Bloom Filter", O_1, BF_RESERVE),
    doc(c"BF.SCANDUMP",  3,  Rw, c"1.0.0", DONT_CACHE, c"Begins an incremental save of the bloom filter", O_N_CAP, SCANDUMP),
    doc(c"CF.ADD",       3,  Rw, c"1.0.0", NO_TIPS,    c"Adds an item to a Cuckoo Filter", O_K_I, KEY_ITEM),
    doc(c"CF.ADDNX",     3,  Rw, c"1.0.0", NO_TIPS,
        c"Adds an item to a Cuckoo Filter if the item did not exist previously.", O_K_I, KEY_ITEM),
    doc(c"CF.COUNT",     3,  Ro, c"1.0.0", NO_TIPS,    c"Return the number of times an item might be in a Cuckoo Filter", O_K_SUB, KEY_ITEM),
    doc(c"CF.DEL",       3,  Rw, c"1.0.0", NO_TIPS,    c"Deletes an item from a Cuckoo Filter", O_K_SUB, KEY_ITEM),
    doc(c"CF.DEBUG",     2,  Ro, c"1.0.0", DONT_CACHE, c"Returns internal debug information about a Cuckoo Filter", O_1, KEY_ONLY),
    doc(c"CF.EXISTS",    3,  Ro, c"1.0.0", NO_TIPS,    c"Checks whether one or more items exist in a Cuckoo Filter", O_K_SUB, KEY_ITEM),
    doc(c"CF.INFO",      2,  Ro, c"1.0.0", DONT_CACHE, c"Returns information about a Cuckoo Filter", O_1, KEY_ONLY),
    doc(c"CF.INSERT",    -4, Rw, c"1.0.0", NO_TIPS,
        c"Adds one or more items to a Cuckoo Filter. A filter will be created if it does not exist", CF_INSERT_O, CF_INSERT),
    doc(c"CF.INSERTNX",  -4, Rw, c"1.0.0", NO_TIPS,
        c"Adds one or more items to a Cuckoo Filter if the items did not exist previously. A filter will be created if it does not exist",
        CF_INSERT_O, CF_INSERT),
    doc(c"CF.LOADCHUNK", 4,  Rw, c"1.0.0", NO_TIPS,    c"Restores a filter previously saved using SCANDUMP", O_N_CAP, LOADCHUNK),
    doc(c"CF.MEXISTS",   -3, Ro, c"1.0.0", NO_TIPS,    c"Checks whether one or more items exist in a Cuckoo Filter",
        c"O(k * n), where k is the number of sub-filters and n is the number of items", KEY_ITEMS),
    doc(c"CF.RESERVE",   -3, Rw, c"1.0.0", NO_TIPS,    c"Creates a new Cuckoo Filter", O_1, CF_RESERVE),
    doc(c"CF.SCANDUMP",  3,  Rw, c"1.0.0", DONT_CACHE, c"Begins an incremental save of the bloom filter", O_N_CAP, SCANDUMP),
];

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
            key_spec_index: if matches!(a.kind, Kind::Key) { 0 } else { -1 },
            token: a.token.map_or(null(), CStr::as_ptr),
            flags: a.flags as c_int,
            subargs,
            ..ARG_END
        });
    }
    out.push(ARG_END);
    Box::leak(out.into_boxed_slice()).as_mut_ptr()
}

/// The single key spec — begin-search index 1, find-keys range (lastkey 0,
/// keystep 1, limit 0) — and the terminator (`begin_search_type` INVALID).
fn c_key_specs(access: Access) -> *mut RedisModuleCommandKeySpec {
    let flags = match access {
        Ro => raw::REDISMODULE_CMD_KEY_RO,
        Rw => raw::REDISMODULE_CMD_KEY_RW,
    };
    let spec = RedisModuleCommandKeySpec {
        notes: null(),
        flags: u64::from(flags),
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
    let end = RedisModuleCommandKeySpec {
        flags: 0,
        begin_search_type: raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INVALID,
        find_keys_type: raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_OMITTED,
        ..spec
    };
    Box::leak(Box::new([spec, end])).as_mut_ptr()
}

impl Doc {
    fn c_info(&self) -> &'static mut RedisModuleCommandInfo {
        Box::leak(Box::new(RedisModuleCommandInfo {
            version: &INFO_VERSION,
            summary: self.summary.as_ptr(),
            complexity: self.complexity.as_ptr(),
            since: self.since.as_ptr(),
            history: null_mut(),
            tips: self.tips.map_or(null(), CStr::as_ptr),
            arity: self.arity,
            key_specs: c_key_specs(self.access),
            args: c_args(self.args),
        }))
    }
}

// ---------------------------------------------------------------------------

/// Attaches the metadata to the registered commands. Call once, after every
/// command is registered. Nothing here is fatal: a command whose info cannot
/// be set, or every command on a server without the command-info API, keeps
/// its legacy metadata (arity -1, key range 1/1/1) and the log says so.
pub fn apply(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    for doc in DOCS {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_complete_and_unique() {
        let names: Vec<&str> = DOCS.iter().map(|d| d.name.to_str().unwrap()).collect();
        assert_eq!(names.len(), 24);
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 24);
        assert!(!names.contains(&"CF.COMPACT"));
    }

    #[test]
    fn c_arrays_are_terminated() {
        for d in DOCS {
            let info = d.c_info();
            let mut n = 0;
            // SAFETY: arrays built by c_args, terminated by ARG_END.
            unsafe {
                while !(*info.args.add(n)).name.is_null() {
                    n += 1;
                }
                assert_eq!(
                    (*info.key_specs.add(1)).begin_search_type,
                    raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INVALID
                );
            }
            assert_eq!(n, d.args.len());
        }
    }
}
