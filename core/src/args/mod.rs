//! What every family's argument parser (`<family>/args.rs`) and the
//! configuration share: Redis number parsing, the error type, common
//! limits and option helpers. Free of Redis types; below every family.
//!
//! Every parser takes the raw argument vector as Redis passes it (`argv[0]` is
//! the command name, `argv[1]` the key) and returns either the parsed request
//! or the exact error reply of the specification. Parsers never allocate.

pub mod num;
pub mod rust_num;

pub use num::{parse_f64, parse_i64};

/// Why a command's arguments were rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgError {
    /// Reply `ERR wrong number of arguments for '<lower-case name>' command`.
    WrongArity,
    /// Reply this text verbatim as an error ("ERR" included only if present).
    Reply(&'static str),
}

/// Largest capacity accepted by BF.RESERVE, BF.INSERT, CF.RESERVE, CF.INSERT.
pub const MAX_CAPACITY: i64 = 1 << 30;

/// Largest expansion accepted anywhere (Bloom and Cuckoo).
pub const MAX_EXPANSION: i64 = 32768;

/// Index of the first argument after the command name equal to `word`
/// (ASCII case-insensitive). RESERVE commands search this way, so the key
/// itself can be mistaken for an option word (docs/differences.md §2).
pub fn find_word<A: AsRef<[u8]>>(argv: &[A], word: &str) -> Option<usize> {
    argv.iter()
        .enumerate()
        .skip(1)
        .find(|(_, a)| a.as_ref().eq_ignore_ascii_case(word.as_bytes()))
        .map(|(i, _)| i)
}

/// `v` if it lies in `[min, max]`, else the error reply `err`.
pub fn in_range(v: i64, min: i64, max: i64, err: &'static str) -> Result<i64, ArgError> {
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(ArgError::Reply(err))
    }
}

/// Parses an integer that must lie in `[min, max]`; `err` for both failures.
pub fn ranged_i64(s: &[u8], min: i64, max: i64, err: &'static str) -> Result<i64, ArgError> {
    let v = parse_i64(s).ok_or(ArgError::Reply(err))?;
    in_range(v, min, max, err)
}

/// Lower-cased byte `i` of an argument, if present (option classification).
pub fn lower_at(arg: &[u8], i: usize) -> Option<u8> {
    arg.get(i).map(u8::to_ascii_lowercase)
}

/// The value following an option at `i`; a missing value is a wrong arity
/// for the INSERT commands.
pub fn option_value<A: AsRef<[u8]>>(argv: &[A], i: usize) -> Result<&[u8], ArgError> {
    argv.get(i + 1)
        .map(AsRef::as_ref)
        .ok_or(ArgError::WrongArity)
}

/// Start of the item list given the index of the items marker: there must be
/// a marker and at least one item after it.
pub fn items_start(marker: Option<usize>, argc: usize) -> Result<usize, ArgError> {
    marker
        .map(|i| i + 1)
        .filter(|&start| start < argc)
        .ok_or(ArgError::WrongArity)
}

/// Converts a value already range-checked (by the parser or by
/// [`crate::config::Config::set`]) to the width the filters use.
pub fn narrow<T: TryFrom<i64> + Default>(v: i64) -> T {
    T::try_from(v).unwrap_or_default()
}

/// A TICK command's time: Unix milliseconds, 1 ..= `clock::MAX_MS`
/// (i64::MAX); the family's `err` otherwise.
pub fn parse_tick_ms(arg: &[u8], err: ArgError) -> Result<u64, ArgError> {
    parse_i64(arg)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|&v| v >= 1)
        .ok_or(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_word_skips_command_name_and_is_case_insensitive() {
        let argv = ["EXPANSION", "k", "x", "expansion", "EXPANSION"];
        assert_eq!(find_word(&argv, "EXPANSION"), Some(3));
        assert_eq!(find_word(&argv, "NONSCALING"), None);
    }

    #[test]
    fn ranged_i64_bounds_inclusive() {
        assert_eq!(ranged_i64(b"1", 1, 3, "e"), Ok(1));
        assert_eq!(ranged_i64(b"3", 1, 3, "e"), Ok(3));
        assert_eq!(ranged_i64(b"4", 1, 3, "e"), Err(ArgError::Reply("e")));
        assert_eq!(ranged_i64(b"x", 1, 3, "e"), Err(ArgError::Reply("e")));
    }

    #[test]
    fn narrow_converts_in_range_values() {
        assert_eq!(narrow::<u16>(65535), u16::MAX);
        assert_eq!(narrow::<u32>(-1), 0);
        assert_eq!(narrow::<u64>(5), 5);
    }

    #[test]
    fn tick_times_are_positive_milliseconds() {
        let err = ArgError::Reply("bad");
        assert_eq!(parse_tick_ms(b"1", err), Ok(1));
        assert_eq!(parse_tick_ms(b"1700000000000", err), Ok(1_700_000_000_000));
        assert_eq!(
            parse_tick_ms(b"9223372036854775807", err),
            Ok(crate::clock::MAX_MS)
        );
        for bad in ["0", "-1", "9223372036854775808", "1.5", "", "x"] {
            assert_eq!(parse_tick_ms(bad.as_bytes(), err), Err(err), "{bad}");
        }
    }
}
