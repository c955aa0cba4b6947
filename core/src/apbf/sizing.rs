//! Choosing `k` and `l` for a target false-positive rate, and the slice
//! size (docs/apbf.md §3).

/// Largest `k` and `l` considered: 32 hash functions and 64 extra slices
/// reach a false-positive rate below 1e-8.
pub const MAX_K: u64 = 32;
pub const MAX_L: u64 = 64;

/// The false-positive rate of `k` hash functions and `l` extra slices,
/// the recurrence of the paper's §4 (docs/apbf.md §3.1): slice `i` has the
/// fill ratio `(i+1)/(2k)` while young, `1/2` once it has left the `k`
/// youngest; a query succeeds on `k` consecutive hits.
pub fn fpr(k: u64, l: u64) -> f64 {
    let (k, l) = (k as usize, l as usize);
    let n = k + l;
    // f[a] for the current i, computed from i = n down to 0 (f(a, i) = 0
    // once i > l + a, i.e. too few slices are left for the missing hits).
    // Past the last slice only a completed run (a = k) counts.
    let mut next = vec![0.0f64; k + 1];
    next[k] = 1.0;
    for i in (0..n).rev() {
        let ratio = if i < k {
            (i + 1) as f64 / (2 * k) as f64
        } else {
            0.5
        };
        let mut cur = vec![0.0f64; k + 1];
        for a in 0..=k {
            cur[a] = if a == k {
                1.0
            } else if i > l + a {
                0.0
            } else {
                ratio * next[a + 1] + (1.0 - ratio) * next[0]
            };
        }
        next = cur;
    }
    next[0]
}

/// Bits of storage per remembered item, relative: `(k + l)` slices of
/// `k·g / ln 2` bits remember `l·g` items.
fn cost(k: u64, l: u64) -> f64 {
    ((k + l) * k) as f64 / l as f64
}

/// The `(k, l)` with the least memory per remembered item whose
/// false-positive rate is at most `error`; among equal costs the fewest
/// slices. `None` when no pair within the bounds reaches `error`.
pub fn choose(error: f64) -> Option<(u64, u64)> {
    let mut best: Option<(f64, u64, u64)> = None;
    for k in 1..=MAX_K {
        for l in 1..=MAX_L {
            if fpr(k, l) > error {
                // A larger l only raises the rate.
                break;
            }
            let c = cost(k, l);
            if best.is_none_or(|(b, _, _)| c < b) {
                best = Some((c, k, l));
            }
        }
    }
    best.map(|(_, k, l)| (k, l))
}

/// Insertions per generation: `ceil(capacity / l)`, so that the `l` full
/// generations the filter always remembers hold at least `capacity` items.
pub fn gen_size(capacity: u64, l: u64) -> u64 {
    capacity.div_ceil(l.max(1))
}

/// Bits per slice: `k·g / ln 2` (fill ratio 1/2 when a slice retires from
/// the k youngest), rounded up to whole 64-bit words.
pub fn slice_bits(k: u64, g: u64) -> u64 {
    let bits = (k as f64 * g as f64 / std::f64::consts::LN_2).ceil() as u64;
    bits.max(1).div_ceil(64).saturating_mul(64)
}
