//! COMMAND INFO / COMMAND DOCS of the TOPK.* commands, as RedisBloom 8.x
//! registers them (docs/topk.md §1.3). Every literal is RedisBloom's but
//! TOPK.TICK's and TOPK.RESERVE's WINDOW and BUCKETS (rsbloom's,
//! docs/topk-window.md §3.1, §5).

use std::ffi::CStr;

use crate::command_docs::*;

const TOPK_RESERVE: &[Arg] = &[
    KEY,
    integer(c"topk"),
    block(
        c"params",
        &[integer(c"width"), integer(c"depth"), double(c"decay")],
    )
    .optional(),
    WINDOW_ARG,
    BUCKETS_ARG,
];

const TOPK_TICK: &[Arg] = &[KEY, integer(c"unix-time-milliseconds")];

const TOPK_INCRBY: &[Arg] = &[
    KEY,
    block(c"item_increment", &[string(c"item"), integer(c"increment")]).multiple(),
];

const TOPK_LIST: &[Arg] = &[KEY, pure_token(c"withcount", c"WITHCOUNT").optional()];

const O_N: &CStr = c"O(n) where n is the number of items";

const COUNT_HISTORY: &[(&CStr, &CStr)] = &[(
    c"2.4.0",
    c"As of Bloom version 2.4, this command is regarded as deprecated. The count value is not a representative of the number of appearances of an item",
)];

#[rustfmt::skip]
pub static DOCS: &[Doc] = &[
    //   name             arity access since    tips     summary / complexity / arguments
    doc(c"TOPK.ADD",      -3, Rw, c"2.0.0", NO_TIPS,
        c"Adds an item to a Top-k sketch. Multiple items can be added at the same time.",
        c"O(n * k) where n is the number of items and k is the depth", KEY_ITEMS),
    doc(c"TOPK.COUNT",    -3, Ro, c"2.0.0", NO_TIPS,
        c"Return the count for one or more items are in a sketch", O_N, KEY_ITEMS)
        .history(COUNT_HISTORY),
    doc(c"TOPK.INCRBY",   -4, Rw, c"2.0.0", NO_TIPS,
        c"Increases the count of one or more items by increment",
        c"O(n * k * incr) where n is the number of items, k is the depth and incr is the increment", TOPK_INCRBY),
    doc(c"TOPK.INFO",     2,  Ro, c"2.0.0", NO_TIPS, c"Returns information about a sketch", O_1, KEY_ONLY),
    doc(c"TOPK.LIST",     -2, Ro, c"2.0.0", NO_TIPS, c"Return the full list of items in Top-K sketch.",
        c"O(k*log(k)) where k is the value of top-k", TOPK_LIST),
    doc(c"TOPK.QUERY",    -3, Ro, c"2.0.0", NO_TIPS, c"Checks whether one or more items are in a sketch", O_N, KEY_ITEMS),
    doc(c"TOPK.RESERVE",  -3, Rw, c"2.0.0", NO_TIPS, c"Initializes a Top-K sketch with specified parameters", O_1, TOPK_RESERVE),
    doc(c"TOPK.TICK",     3,  Rw, c"0.1.0", NO_TIPS, c"Ages a windowed Top-K to the given time (how the master's clock reaches replicas)",
        c"O(B * (w * d + k)) for the buckets that expire, then O(n * B * d) for the n items of the closed buckets' heaps", TOPK_TICK),
];
