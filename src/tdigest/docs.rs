//! COMMAND INFO / COMMAND DOCS of the TDIGEST.* commands, as RedisBloom 8.x
//! registers them (docs/tdigest.md §3: arity, key specs, docs, arguments).
//! TDIGEST.MERGE has a second key spec, for its sources.

use std::ffi::CStr;

use crate::command_docs::*;

/// `[COMPRESSION compression]` of CREATE and MERGE.
const COMPRESSION: Arg = block(
    c"compression_block",
    &[
        pure_token(c"compression_token", c"COMPRESSION"),
        integer(c"compression"),
    ],
)
.optional();

const KEY_VALUES: &[Arg] = &[KEY, double(c"value").multiple()];
/// rsbloom's window options (docs/tdigest-window.md §3).
const WINDOW: Arg = block(
    c"window_block",
    &[pure_token(c"window_token", c"WINDOW"), integer(c"window")],
)
.optional();
const BUCKETS: Arg = block(
    c"buckets_block",
    &[
        pure_token(c"buckets_token", c"BUCKETS"),
        integer(c"buckets"),
    ],
)
.optional();
const CREATE: &[Arg] = &[KEY, COMPRESSION, WINDOW, BUCKETS];
const TICK: &[Arg] = &[KEY, integer(c"unix-time-milliseconds")];
const MERGE: &[Arg] = &[
    key(c"destination-key", 0),
    integer(c"numkeys"),
    key(c"source-key", 1).multiple(),
    COMPRESSION,
    pure_token(c"override", c"OVERRIDE").optional(),
];
const BYRANK: &[Arg] = &[KEY, double(c"rank").multiple()];
const BYREVRANK: &[Arg] = &[KEY, double(c"reverse_rank").multiple()];
const QUANTILE: &[Arg] = &[KEY, double(c"quantile").multiple()];
const TRIMMED_MEAN: &[Arg] = &[
    KEY,
    double(c"low_cut_quantile"),
    double(c"high_cut_quantile"),
];

const V: &CStr = c"2.4.0";
const O_N_VALUES: &CStr = c"O(N) where N is the number of values specified.";

#[rustfmt::skip]
pub static DOCS: &[Doc] = &[
    //   name                     arity access since tips        summary / complexity / arguments
    doc(c"TDIGEST.ADD",           -3, Rw, V, NO_TIPS,    c"Adds one or more observations to a t-digest sketch",
        c"O(N), where N is the number of samples to add", KEY_VALUES),
    doc(c"TDIGEST.BYRANK",        -3, Ro, V, NO_TIPS,
        c"Returns, for each input rank, an estimation of the value (floating-point) with that rank",
        c"O(N) where N is the number of ranks specified", BYRANK),
    doc(c"TDIGEST.BYREVRANK",     -3, Ro, V, NO_TIPS,
        c"Returns, for each input reverse rank, an estimation of the value (floating-point) with that reverse rank",
        c"O(N) where N is the number of reverse ranks specified.", BYREVRANK),
    doc(c"TDIGEST.CDF",           -3, Ro, V, NO_TIPS,
        c"Returns, for each input value, an estimation of the floating-point fraction of (observations smaller than the given value + half the observations equal to the given value). Multiple fractions can be retrieved in a single call.",
        O_N_VALUES, KEY_VALUES),
    doc(c"TDIGEST.CREATE",        -2, Rw, V, NO_TIPS,    c"Allocates memory and initializes a new t-digest sketch", O_1, CREATE),
    doc(c"TDIGEST.INFO",          2,  Ro, V, DONT_CACHE, c"Returns information and statistics about a t-digest sketch", O_1, KEY_ONLY),
    doc(c"TDIGEST.MAX",           2,  Ro, V, NO_TIPS,    c"Returns the maximum observation value from a t-digest sketch", O_1, KEY_ONLY),
    doc(c"TDIGEST.MERGE",         -4, Rw, V, NO_TIPS,    c"Merges multiple t-digest sketches into a single sketch",
        c"O(N*K), where N is the number of centroids and K being the number of input sketches", MERGE)
        .with_keynum(MERGE_SOURCES),
    doc(c"TDIGEST.MIN",           2,  Ro, V, NO_TIPS,    c"Returns the minimum observation value from a t-digest sketch", O_1, KEY_ONLY),
    doc(c"TDIGEST.QUANTILE",      -3, Ro, V, NO_TIPS,
        c"Returns, for each input fraction, an estimation of the value (floating point) that is smaller than the given fraction of observations",
        c"O(N) where N is the number of quantiles specified.", QUANTILE),
    doc(c"TDIGEST.RANK",          -3, Ro, V, NO_TIPS,
        c"Returns, for each input value (floating-point), the estimated rank of the value (the number of observations in the sketch that are smaller than the value + half the number of observations that are equal to the value)",
        O_N_VALUES, KEY_VALUES),
    doc(c"TDIGEST.RESET",         2,  Rw, V, NO_TIPS,    c"Resets a t-digest sketch: empty the sketch and re-initializes it.", O_1, KEY_ONLY),
    doc(c"TDIGEST.REVRANK",       -3, Ro, V, NO_TIPS,
        c"Returns, for each input value (floating-point), the estimated reverse rank of the value (the number of observations in the sketch that are larger than the value + half the number of observations that are equal to the value)",
        O_N_VALUES, KEY_VALUES),
    doc(c"TDIGEST.TICK",          3,  Rw, c"0.1.0", NO_TIPS,
        c"Ages a windowed t-digest to the given time (how the master's clock reaches replicas)",
        c"O(N) where N is the number of centroids of the live buckets", TICK),
    doc(c"TDIGEST.TRIMMED_MEAN",  4,  Ro, V, NO_TIPS,
        c"Returns an estimation of the mean value from the sketch, excluding observation values outside the low and high cutoff quantiles",
        c"O(N) where N is the number of centroids", TRIMMED_MEAN),
];
