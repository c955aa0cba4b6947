//! CMS.INITBYPROB dimensions (docs/cms.md §3.2).

/// Width and depth for an overestimation `error` and a `probability` of
/// exceeding it, both in (0, 1): `width = ceil(2 / error)` in double
/// precision, `depth = ceil(log10(p) / log10(0.5))` in **single** precision
/// as RedisBloom computes it (`log10f`; the f32 rounding shows in the depth
/// of probabilities just below a power of two). `None` when either is not a
/// count from 1 to 2^63 - 1 (RedisBloom's C conversion then yields 0 or a
/// value ≥ 2^63, both refused as invalid init arguments).
pub fn dims_for_error(error: f64, probability: f64) -> Option<(u64, u64)> {
    let width = (2.0 / error).ceil();
    let depth = ((probability as f32).log10() / 0.5f32.log10()).ceil();
    Some((to_count(width)?, to_count(f64::from(depth))?))
}

/// `v` as a count in 1..2^63, if it is one.
fn to_count(v: f64) -> Option<u64> {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    // Also refuses NaN.
    if !(1.0..TWO_POW_63).contains(&v) {
        return None;
    }
    Some(v as u64)
}
