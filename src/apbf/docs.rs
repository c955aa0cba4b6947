//! COMMAND INFO / COMMAND DOCS of the APBF.* commands (docs/apbf.md §5).

use crate::command_docs::*;

const APBF_RESERVE: &[Arg] = &[
    KEY,
    oneof(
        c"window",
        &[pure_token(c"count", c"COUNT"), pure_token(c"time", c"TIME")],
    ),
    double(c"error"),
    integer(c"capacity"),
    integer(c"timespan").optional(),
];

const APBF_TICK: &[Arg] = &[KEY, integer(c"unix-time-milliseconds")];

const SINCE: &std::ffi::CStr = c"0.1.0";
const O_K_ITEMS: &std::ffi::CStr = c"O(k·n) where n is the number of items";

#[rustfmt::skip]
pub static DOCS: &[Doc] = &[
    //   name              arity access since  tips        summary / complexity / arguments
    doc(c"APBF.ADD",       -3, Rw, SINCE, NO_TIPS,    c"Adds items to a sliding-window filter; answers whether each was already present", O_K_ITEMS, KEY_ITEMS),
    doc(c"APBF.EXISTS",    -3, Ro, SINCE, NO_TIPS,    c"Checks whether items were added within the window", O_K_ITEMS, KEY_ITEMS),
    doc(c"APBF.INFO",      2,  Ro, SINCE, DONT_CACHE, c"Returns the parameters and state of a sliding-window filter", O_1, KEY_ONLY),
    doc(c"APBF.LOADCHUNK", 4,  Rw, SINCE, NO_TIPS,    c"Restores a sliding-window filter saved with APBF.SCANDUMP", O_N_CAP, LOADCHUNK),
    doc(c"APBF.RESERVE",   -5, Rw, SINCE, NO_TIPS,    c"Creates a sliding-window filter for the last N items or the last T seconds", O_N_CAP, APBF_RESERVE),
    doc(c"APBF.SCANDUMP",  3,  Ro, SINCE, DONT_CACHE, c"Saves a sliding-window filter in chunks", O_N_CAP, SCANDUMP),
    doc(c"APBF.TICK",      3,  Rw, SINCE, NO_TIPS,    c"Ages a time-window filter to the given time (how the master's clock reaches replicas)", O_N_CAP, APBF_TICK),
];
