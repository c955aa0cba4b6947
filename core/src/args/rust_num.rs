//! valkey-bloom's numbers and keywords (COMPAT-VALKEY-BLOOM.md §0): Rust's
//! own `str::parse` of the argument as UTF-8, and Unicode upper-casing for
//! keywords. Shared by its command parser and its configs.

pub const ERROR_RATE_RANGE: &str = "ERR (0 < error rate range < 1)";
pub const TIGHTENING_RANGE: &str = "ERR (0 < tightening ratio range < 1)";

fn text(s: &[u8]) -> Option<&str> {
    std::str::from_utf8(s).ok()
}

pub fn parse_f64_rust(s: &[u8]) -> Option<f64> {
    text(s)?.parse().ok()
}

/// Rust's `i64` parse: optional sign, ASCII digits, leading zeros allowed
/// (module arguments, §3).
pub fn parse_i64_rust(s: &[u8]) -> Option<i64> {
    text(s)?.parse().ok()
}

pub fn parse_u32_rust(s: &[u8]) -> Option<u32> {
    text(s)?.parse().ok()
}

/// The keyword rule: `arg`'s Unicode upper-case form is exactly `keyword`.
pub fn is_keyword(arg: &[u8], keyword: &str) -> bool {
    text(arg).is_some_and(|t| t.chars().flat_map(char::to_uppercase).eq(keyword.chars()))
}

/// A rate strictly inside (0, 1): `bad` when unparsable, `range` otherwise.
pub fn unit_rate(s: &[u8], bad: &'static str, range: &'static str) -> Result<f64, &'static str> {
    let v = parse_f64_rust(s).ok_or(bad)?;
    if v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(range)
    }
}
