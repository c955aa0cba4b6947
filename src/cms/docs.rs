//! COMMAND INFO / COMMAND DOCS of the CMS.* commands, as RedisBloom for
//! Redis 8.12 registers them (docs/cms.md §1.3). Every literal is
//! RedisBloom's but CMS.TICK's and the INIT commands' WINDOW and BUCKETS
//! (rsbloom's, docs/cms-window.md §3.1, §5).

use std::ffi::CStr;

use crate::command_docs::*;

const CMS_INCRBY: &[Arg] = &[
    KEY,
    block(c"items", &[string(c"item"), integer(c"increment")]).multiple(),
];

/// `[CELL_SIZE size]` of both INIT commands.
const CELL_SIZE: Arg = block(
    c"cellsize",
    &[pure_token(c"cell_size", c"CELL_SIZE"), integer(c"size")],
)
.optional();

const CMS_INITBYDIM: &[Arg] = &[
    KEY,
    integer(c"width"),
    integer(c"depth"),
    CELL_SIZE,
    WINDOW_ARG,
    BUCKETS_ARG,
];

const CMS_INITBYPROB: &[Arg] = &[
    KEY,
    double(c"error"),
    double(c"probability"),
    CELL_SIZE,
    WINDOW_ARG,
    BUCKETS_ARG,
];

/// The sources are keys of their own (read-only) key spec.
const CMS_MERGE: &[Arg] = &[
    KEY,
    integer(c"numKeys"),
    key(c"source", 1).multiple(),
    block(
        c"weights",
        &[
            pure_token(c"weights", c"WEIGHTS"),
            double(c"weight").multiple(),
        ],
    )
    .optional(),
];

const CMS_TICK: &[Arg] = &[KEY, integer(c"unix-time-milliseconds")];

const O_N_ITEMS: &CStr = c"O(n) where n is the number of items";

#[rustfmt::skip]
pub static DOCS: &[Doc] = &[
    //   name              arity access since   tips        summary / complexity / arguments
    doc(c"CMS.INCRBY",     -4, Rw, c"2.0.0", NO_TIPS,
        c"Changes the count of one or more items by increment, which may be negative", O_N_ITEMS, CMS_INCRBY),
    doc(c"CMS.INFO",       2,  Ro, c"2.0.0", DONT_CACHE, c"Returns information about a sketch", O_1, KEY_ONLY),
    doc(c"CMS.INITBYDIM",  -4, Rw, c"2.0.0", NO_TIPS,    c"Initializes a Count-Min Sketch to dimensions specified by user", O_1, CMS_INITBYDIM),
    doc(c"CMS.INITBYPROB", -4, Rw, c"2.0.0", NO_TIPS,
        c"Initializes a Count-Min Sketch to accommodate requested tolerances.", O_1, CMS_INITBYPROB),
    doc(c"CMS.MERGE",      -4, Rw, c"2.0.0", NO_TIPS,    c"Merges several sketches into one sketch",
        c"O(n) where n is the number of sketches", CMS_MERGE)
        .with_keynum(MERGE_SOURCES),
    doc(c"CMS.QUERY",      -3, Ro, c"2.0.0", NO_TIPS,    c"Returns the count for one or more items in a sketch", O_N_ITEMS, KEY_ITEMS),
    doc(c"CMS.TICK",       3,  Rw, c"0.1.0", NO_TIPS,    c"Ages a windowed sketch to the given time (how the master's clock reaches replicas)",
        c"O(n) where n is the number of counters of the buckets that expire", CMS_TICK),
];
