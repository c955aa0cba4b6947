//! COMMAND INFO / COMMAND DOCS of the BF.* commands, as RedisBloom 8.x
//! registers them (docs/module.md §2.1 arity column, §2.3 key specs, docs,
//! arguments). Every literal is RedisBloom's, typos included, but for
//! BF.MERGE, which RedisBloom does not have.

use std::ffi::CStr;

use crate::command_docs::*;

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

/// BF.MERGE is rsbloom's (RedisBloom has none): destkey, then the sources.
const BF_MERGE: &[Arg] = &[key(c"destkey", 0), key(c"srckey", 1).multiple()];

const O_K_LAST: &CStr =
    c"O(k), where k is the number of hash functions used by the last sub-filter";
const O_KN_HASH: &CStr =
    c"O(k * n), where k is the number of hash functions and n is the number of items";

#[rustfmt::skip]
pub static DOCS: &[Doc] = &[
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
    doc(c"BF.MERGE",     -3, Rw, c"0.1.0", NO_TIPS,
        c"Stores the union of Bloom filters of one shape at destkey (rsbloom)",
        c"O(n * m), where n is the number of sources and m the size of a filter", BF_MERGE)
        .with_rest(RestSpec { access: Ro, index: 2 }),
    doc(c"BF.MEXISTS",   -3, Ro, c"1.0.0", NO_TIPS,    c"Checks whether one or more items exist in a Bloom Filter", O_KN_HASH, KEY_ITEMS),
    doc(c"BF.RESERVE",   -4, Rw, c"1.0.0", NO_TIPS,    c"Creates a new Bloom Filter", O_1, BF_RESERVE),
    doc(c"BF.SCANDUMP",  3,  Rw, c"1.0.0", DONT_CACHE, c"Begins an incremental save of the bloom filter", O_N_CAP, SCANDUMP),
];
