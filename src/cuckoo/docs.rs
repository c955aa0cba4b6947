//! COMMAND INFO / COMMAND DOCS of the CF.* commands, as RedisBloom 8.x
//! registers them (docs/module.md §2.1 arity column, §2.3 key specs, docs,
//! arguments). Every literal is RedisBloom's, typos included. CF.COMPACT has
//! no entry: RedisBloom registers no command info for it (arity stays -1).

use std::ffi::CStr;

use crate::command_docs::*;

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

const O_K_SUB: &CStr = c"O(k), where k is the number of sub-filters";
const O_K_I: &CStr = c"O(k + i), where k is the number of sub-filters and i is maxIterations";
const CF_INSERT_O: &CStr =
    c"O(n * (k + i)), where n is the number of items, k is the number of sub-filters and i is maxIterations";

#[rustfmt::skip]
pub static DOCS: &[Doc] = &[
    //   name            arity access since   tips        summary / complexity / arguments
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
