//! Bloom filters (`BF.*`, type `MBbloom--`): the command table (docs/module.md §2.1),
//! the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

/// RedisBloom's filters, and valkey-bloom's beside them: a second data type
/// and, when `bf.bloom-flavor` is `valkey-bloom` at load, valkey-bloom's
/// command table (docs/valkey-bloom.md §1).
pub static FAMILY: Family =
    Family::of::<rsbloom_core::bloom::Chain>(c"bloom", COMMANDS, docs::DOCS)
        .with_second_flavor(VALKEY_BLOOM_COMMANDS, crate::valkey_bloom::create_type);

/// Flags and ACL categories exactly as docs/module.md §2.1 lists them.
static COMMANDS: &[CommandSpec] = commands!("bloom";
    "bf.reserve" => commands::reserve, write "deny-oom", acl fast;
    "bf.add" => commands::add, write "deny-oom";
    "bf.madd" => commands::madd, write "deny-oom";
    "bf.insert" => commands::insert_cmd, write "deny-oom";
    "bf.exists" => commands::exists, readonly "fast";
    "bf.mexists" => commands::mexists, readonly "fast";
    "bf.info" => commands::info, readonly "fast", acl fast;
    "bf.card" => commands::card, readonly "fast", acl fast;
    "bf.debug" => commands::debug, readonly "fast";
    "bf.scandump" => commands::scandump, readonly "fast";
    "bf.loadchunk" => commands::loadchunk, write "deny-oom";
    // valkey-bloom's, for the AOF of its filters; RedisBloom has none, so
    // it is not in @bloom (issue 39).
    "bf.load" => crate::valkey_bloom::load, write "deny-oom", category "";
    // rsbloom's (docs/bloom.md §12); not RedisBloom's, so not in @bloom
    // either (issue 39).
    "bf.merge" => commands::merge, write "deny-oom", category "", last key -1;
);

/// valkey-bloom's registration (COMPAT-VALKEY-BLOOM §1.2): upper-case names
/// (arity errors say `'BF.ADD'`), `fast` on the writes, no metadata (arity
/// -1); RedisBloom's chunk and debug commands stay for its filters.
static VALKEY_BLOOM_COMMANDS: &[CommandSpec] = commands!("bloom";
    "BF.RESERVE" as "bf.reserve" => commands::reserve, write "deny-oom fast", acl fast;
    "BF.ADD" as "bf.add" => commands::add, write "deny-oom fast", acl fast;
    "BF.MADD" as "bf.madd" => commands::madd, write "deny-oom fast", acl fast;
    "BF.INSERT" as "bf.insert" => commands::insert_cmd, write "deny-oom fast", acl fast;
    "BF.EXISTS" as "bf.exists" => commands::exists, readonly "fast", acl fast;
    "BF.MEXISTS" as "bf.mexists" => commands::mexists, readonly "fast", acl fast;
    "BF.INFO" as "bf.info" => commands::info, readonly "fast", acl fast;
    "BF.CARD" as "bf.card" => commands::card, readonly "fast", acl fast;
    "BF.LOAD" as "bf.load" => crate::valkey_bloom::load, write "deny-oom";
    "BF.DEBUG" as "bf.debug" => commands::debug, readonly "fast";
    "BF.SCANDUMP" as "bf.scandump" => commands::scandump, readonly "fast";
    "BF.LOADCHUNK" as "bf.loadchunk" => commands::loadchunk, write "deny-oom";
    "BF.MERGE" as "bf.merge" => commands::merge, write "deny-oom", last key -1;
);
