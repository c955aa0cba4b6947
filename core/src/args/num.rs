//! Number parsing with exactly the server's semantics (docs/module.md §4), so that every
//! argument accepted or rejected by RedisBloom is accepted or rejected here.

use std::sync::atomic::{AtomicBool, Ordering};

/// Longest accepted integer text is 20 bytes ("-9223372036854775808").
const LONG_STR_SIZE: usize = 21;

/// Port of Redis' `string2ll` (what `RM_StringToLongLong` uses).
///
/// Canonical decimal only: optional `-`, no `+`, no spaces, no leading zeros,
/// `0` only as the whole string, `-0` rejected, must fit in an `i64`.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() >= LONG_STR_SIZE {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    // First digit 1-9: this rejects "-", "-0", "01" and "+1" in one place.
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if negative {
        // i64::MIN has magnitude i64::MAX + 1, which still fits in a u64.
        0i64.checked_sub_unsigned(v)
    } else {
        i64::try_from(v).ok()
    }
}

/// Inputs up to this length are NUL-terminated on the stack, longer ones on
/// the heap (a double never needs more than a few dozen characters).
const STACK_BUF: usize = 64;

/// Whether hexadecimal floats (`0x1p-7`) are numbers, as for C `strtod`
/// (Redis). Valkey ≥ 8.1 parses doubles with fast_float, which has none;
/// the module sets this once at load from the server's own parser.
static HEX_FLOATS: AtomicBool = AtomicBool::new(true);

pub fn set_hex_floats(accepted: bool) {
    HEX_FLOATS.store(accepted, Ordering::Relaxed);
}

/// Port of Redis' `string2d` / `getDoubleFromObject` (what
/// `RM_StringToDouble` uses): C `strtod` syntax (exponents, hex floats, `inf`)
/// consuming every byte, no leading space, no NaN, no overflow to ±HUGE_VAL
/// and no underflow to zero. Subnormal results are accepted.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    plain_decimal(s)
        .or_else(|| decimal_f64(s))
        .or_else(|| strtod_f64(s))
}

/// The powers of ten a double holds exactly.
const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The commonest text, `[+-]digits[.digits]`, without a general parser
/// (a fifth of a TDIGEST.QUANTILE of ten values): when its digits make an
/// integer `m` of at most 2^53 and at most 22 of them follow the point,
/// `m` and `10^k` are exact doubles, and the one correctly rounded
/// division `m / 10^k` is the double nearest the text, the value strtod
/// and std's parser find (Clinger's fast path). Zero and all else go on to
/// them.
fn plain_decimal(s: &[u8]) -> Option<f64> {
    let (negative, text) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    let (mut m, mut digits, mut point) = (0u64, 0u32, None);
    for (i, &c) in text.iter().enumerate() {
        match c {
            // 19 digits stay below 2^64.
            b'0'..=b'9' if digits < 19 => {
                m = m * 10 + u64::from(c - b'0');
                digits += 1;
            }
            b'.' if point.is_none() => point = Some(i),
            _ => return None,
        }
    }
    if m == 0 || m > 1 << 53 {
        return None;
    }
    let after = point.map_or(0, |p| text.len() - p - 1);
    let v = m as f64 / EXACT_POW10.get(after)?;
    Some(if negative { -v } else { v })
}

/// The common case, without glibc's strtod (half of a TDIGEST.ADD of one
/// value): text std's parser reads whole, finite and non-zero. strtod reads
/// such text whole too, with no range error, and both round correctly to
/// the nearest double, so the value is the same. Zero (underflow), the
/// infinities (overflow, `inf`), NaN and everything else go to strtod.
fn decimal_f64(s: &[u8]) -> Option<f64> {
    // Number text is ASCII: a word-at-a-time test, cheaper than validating
    // UTF-8 (what is not ASCII goes to strtod).
    if !s.is_ascii() {
        return None;
    }
    // SAFETY: ASCII is valid UTF-8.
    let text = unsafe { std::str::from_utf8_unchecked(s) };
    let v: f64 = text.parse().ok()?;
    (v.is_finite() && v != 0.0).then_some(v)
}

/// [`parse_f64`] by C `strtod` itself.
fn strtod_f64(s: &[u8]) -> Option<f64> {
    if s.first().is_none_or(|&c| is_c_space(c)) {
        return None;
    }
    // In strtod's syntax an `x` only occurs in a hexadecimal float.
    if !HEX_FLOATS.load(Ordering::Relaxed) && s.iter().any(|c| c.eq_ignore_ascii_case(&b'x')) {
        return None;
    }
    let mut stack = [0u8; STACK_BUF];
    let heap: Vec<u8>;
    let buf: &[u8] = if s.len() < STACK_BUF {
        stack.get_mut(..s.len())?.copy_from_slice(s);
        &stack
    } else {
        heap = [s, b"\0"].concat();
        &heap
    };
    let (value, consumed, erange) = strtod(buf);
    // A NUL inside `s` stops strtod early, so it is rejected here too.
    let range_error = erange && (value.is_infinite() || value == 0.0);
    if consumed != s.len() || range_error || value.is_nan() {
        return None;
    }
    Some(value)
}

/// C `isspace` in the "C" locale (Redis does not set LC_CTYPE).
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C `strtod`; returns the value, the number of bytes consumed and whether
/// errno was ERANGE.
/// `text` ends with a NUL (both buffers of `parse_f64` do: the input is
/// shorter than the stack buffer, or the heap copy has one appended).
fn strtod(text: &[u8]) -> (f64, usize, bool) {
    if text.last() != Some(&0) {
        return (f64::NAN, 0, false);
    }
    let start: *const libc::c_char = text.as_ptr().cast();
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    // SAFETY: `text` ends with a NUL, so strtod reads only inside it and
    // sets `end` to a pointer into it, at or after `start`. errno is
    // thread-local.
    unsafe {
        *libc::__errno_location() = 0;
        let value = libc::strtod(start, &mut end);
        let erange = *libc::__errno_location() == libc::ERANGE;
        let consumed = usize::try_from(end.offset_from(start)).unwrap_or(0);
        (value, consumed, erange)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn i64_accepts_canonical() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"7"), Some(7));
        assert_eq!(parse_i64(b"-7"), Some(-7));
        assert_eq!(parse_i64(b"1073741824"), Some(1 << 30));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
    }

    #[test]
    fn i64_rejects_non_canonical() {
        for s in [
            &b""[..],
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"00",
            b"-0",
            b"-",
            b"-01",
            b"1.0",
            b"1e3",
            b"0x10",
            b"1\0",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"99999999999999999999",
        ] {
            assert_eq!(parse_i64(s), None, "{:?}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn i64_rejects_21_chars_even_if_valid_value() {
        // Same value as "-9223372036854775808"-like width but 21 bytes long.
        assert_eq!(parse_i64(b"-92233720368547758080"), None);
        assert_eq!(parse_i64(b"100000000000000000000"), None);
    }

    #[test]
    fn f64_accepts_strtod_syntax() {
        assert_eq!(parse_f64(b"0.01"), Some(0.01));
        assert_eq!(parse_f64(b"1e5"), Some(1e5));
        assert_eq!(parse_f64(b"2e-2"), Some(0.02));
        assert_eq!(parse_f64(b"0x1p-3"), Some(0.125));
        assert_eq!(parse_f64(b"inf"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"5e-324"), Some(5e-324));
        assert_eq!(parse_f64(b"+.5"), Some(0.5));
        assert_eq!(parse_f64(b"-0"), Some(0.0));
    }

    #[test]
    fn f64_rejects() {
        for s in [
            &b""[..],
            b" 1",
            b"\t1",
            b"1 ",
            b"1.5\0",
            b"abc",
            b"1e-400",
            b"-1e-400",
            b"1e400",
            b"-1e400",
            b"nan",
            b"NaN",
            b"-nan",
            b".",
            b"1,5",
        ] {
            assert_eq!(parse_f64(s), None, "{:?}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn f64_long_input_uses_heap_path() {
        let mut s = b"0.".to_vec();
        s.extend(std::iter::repeat_n(b'0', 100));
        s.push(b'1');
        assert_eq!(parse_f64(&s), Some(1e-101));
        s.push(b'x');
        assert_eq!(parse_f64(&s), None);
        // Exactly at the stack boundary.
        let edge = vec![b'1'; STACK_BUF - 1];
        assert!(parse_f64(&edge).is_some());
        let edge = vec![b'1'; STACK_BUF];
        assert!(parse_f64(&edge).is_some());
    }

    /// The decimal shortcut answers as strtod, bit for bit, wherever it answers.
    fn same_as_strtod(s: &[u8]) -> Result<(), TestCaseError> {
        for fast in [plain_decimal(s), decimal_f64(s)] {
            if fast.is_some() {
                prop_assert_eq!(
                    fast.map(f64::to_bits),
                    strtod_f64(s).map(f64::to_bits),
                    "{:?}",
                    s
                );
            }
        }
        prop_assert_eq!(
            parse_f64(s).map(f64::to_bits),
            strtod_f64(s).map(f64::to_bits)
        );
        Ok(())
    }

    #[test]
    fn f64_shortcut_edges() {
        for s in [
            "1",
            "-1",
            "+1",
            ".5",
            "5.",
            "0.1",
            "-0.05",
            "9007199254740992",
            "9007199254740993",
            "900719925474099.3",
            "1234567890123456789",
            "12345678901234567890",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "1..5",
            "1.5.",
            "1.e5",
            "1e",
            "1e+",
            "e5",
            ".",
            "-",
            "+",
            "0",
            "-0",
            "0.0",
            "1e308",
            "1e309",
            "-1e309",
            "1e-320",
            "4.9e-324",
            "2e-324",
            "1e-400",
            "inf",
            "-inf",
            "Infinity",
            "infinit",
            "nan",
            "NaN",
            "nan(1)",
            "0x10",
            "0x1p-3",
            " 1",
            "1 ",
            "1\0",
            "1_0",
            "١",
            "1e5000000000000000000",
            "0.000000000000000000000000000001",
            "179769313486231570000000000000000000000000000000000000000000000000000000000000000000\
             000000000000000000000000000000000000000000000000000000000000000000000000000000000000\
             000000000000000000000000000000000000000000000000000000000000000000000000000000000000\
             00000000000000000000000000000000000000000000000000000000000000000000000000000000",
        ] {
            same_as_strtod(s.as_bytes()).unwrap();
        }
    }

    proptest! {
        #[test]
        fn f64_shortcut_agrees_with_strtod_on_text(s in "[-+]?[0-9]{0,25}[.]?[0-9]{0,25}([eE][-+]?[0-9]{0,4})?") {
            same_as_strtod(s.as_bytes())?;
        }

        #[test]
        fn f64_plain_decimals_agree_with_strtod(s in "[-+]?[0-9]{1,10}[.]?[0-9]{0,12}") {
            same_as_strtod(s.as_bytes())?;
        }

        #[test]
        fn f64_shortcut_agrees_with_strtod_on_noise(s in "[-+0-9.eEinfatyxXpP \x00]{0,12}") {
            same_as_strtod(s.as_bytes())?;
        }

        #[test]
        fn f64_shortcut_agrees_with_strtod_on_values(v in any::<f64>()) {
            for text in [format!("{v}"), format!("{v:e}"), format!("{v:.17e}"), format!("{v:.3}")] {
                same_as_strtod(text.as_bytes())?;
            }
        }

        #[test]
        fn i64_agrees_with_std_on_canonical(v in any::<i64>()) {
            prop_assert_eq!(parse_i64(v.to_string().as_bytes()), Some(v));
        }

        #[test]
        fn i64_rejects_non_canonical_renderings(v in any::<i64>(), zeros in 1usize..3) {
            let plus = format!("+{}", v.unsigned_abs());
            let padded = match v {
                0 => "-0".to_string(),
                _ if v < 0 => format!("-{}{}", "0".repeat(zeros), v.unsigned_abs()),
                _ => format!("{}{}", "0".repeat(zeros), v),
            };
            prop_assert_eq!(parse_i64(plus.as_bytes()), None);
            prop_assert_eq!(parse_i64(padded.as_bytes()), None);
            prop_assert_eq!(parse_i64(format!(" {v}").as_bytes()), None);
            prop_assert_eq!(parse_i64(format!("{v} ").as_bytes()), None);
        }

        #[test]
        fn i64_matches_std_on_arbitrary_digit_strings(s in "-?[0-9]{0,21}") {
            let canonical = s.parse::<i64>().ok().filter(|v| v.to_string() == s);
            prop_assert_eq!(parse_i64(s.as_bytes()), canonical);
        }
    }
}
