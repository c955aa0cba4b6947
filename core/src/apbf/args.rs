//! APBF.* argument parsing (docs/apbf.md §5). The handlers check the key
//! after the argument count and before these numbers.

use crate::apbf::{Window, MAX_CAPACITY, MAX_SPAN_MS};
use crate::args::{parse_f64, parse_i64, ArgError};

const BAD_WINDOW: ArgError = ArgError::Reply("ERR APBF: window must be COUNT or TIME");
const COUNT_ARITY: ArgError =
    ArgError::Reply("ERR APBF: COUNT takes error and capacity, no timespan");
const TIME_ARITY: ArgError = ArgError::Reply("ERR APBF: TIME takes error, capacity and timespan");
const BAD_ERROR: ArgError = ArgError::Reply(
    "ERR APBF: error rate must be a number in [1e-8, 1), or an integer 1..5 meaning 10^-n",
);
const BAD_CAPACITY: ArgError =
    ArgError::Reply("ERR APBF: capacity must be an integer in [1, 1073741824]");
const BAD_SPAN: ArgError =
    ArgError::Reply("ERR APBF: timespan must be an integer number of seconds in [1, 315360000]");
const BAD_ITERATOR: ArgError = ArgError::Reply("ERR APBF: invalid iterator");
/// APBF.TICK's text for a time that is not Unix milliseconds ≥ 1.
pub const BAD_TIMESTAMP: ArgError = ArgError::Reply("ERR APBF: invalid timestamp");

/// Smallest error rate: the bounds on k and l reach about 4.7e-9.
pub const MIN_ERROR: f64 = 1e-8;

/// APBF.RESERVE key COUNT|TIME error capacity [timespan]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reserve {
    pub window: Window,
    pub error: f64,
    pub capacity: u64,
}

/// Parses `argv` (command name and key included): the window word, then
/// the error rate, the capacity and the timespan, each checked in order.
pub fn parse_reserve<A: AsRef<[u8]>>(argv: &[A]) -> Result<Reserve, ArgError> {
    let arg = |i: usize| argv.get(i).map_or(&[][..], AsRef::as_ref);
    if !(5..=6).contains(&argv.len()) {
        return Err(ArgError::WrongArity);
    }
    let time = match arg(2) {
        w if w.eq_ignore_ascii_case(b"COUNT") => false,
        w if w.eq_ignore_ascii_case(b"TIME") => true,
        _ => return Err(BAD_WINDOW),
    };
    match (time, argv.len()) {
        (false, 6) => return Err(COUNT_ARITY),
        (true, 5) => return Err(TIME_ARITY),
        _ => {}
    }
    let error = parse_error(arg(3))?;
    let capacity = ranged(arg(4), 1, MAX_CAPACITY, BAD_CAPACITY)?;
    let window = if time {
        let secs = ranged(arg(5), 1, MAX_SPAN_MS / 1000, BAD_SPAN)?;
        Window::Time {
            span_ms: secs * 1000,
        }
    } else {
        Window::Count
    };
    Ok(Reserve {
        window,
        error,
        capacity,
    })
}

/// A rate in [1e-8, 1) as a double; an integer literal 1..5 is the
/// prototype's exponent (10^-n). No rate is ≥ 1, so "1" is unambiguous.
pub fn parse_error(arg: &[u8]) -> Result<f64, ArgError> {
    if let Some(n) = parse_i64(arg) {
        return match n {
            1..=5 => Ok(10f64.powi(-(n as i32))),
            _ => Err(BAD_ERROR),
        };
    }
    parse_f64(arg)
        .filter(|e| (MIN_ERROR..1.0).contains(e))
        .ok_or(BAD_ERROR)
}

fn ranged(arg: &[u8], min: u64, max: u64, err: ArgError) -> Result<u64, ArgError> {
    parse_i64(arg)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| (min..=max).contains(v))
        .ok_or(err)
}

/// APBF.SCANDUMP iterator: an integer ≥ 0.
pub fn parse_scandump_iter(arg: &[u8]) -> Result<u64, ArgError> {
    ranged(arg, 0, i64::MAX as u64, BAD_ITERATOR)
}

/// APBF.LOADCHUNK iterator: an integer ≥ 1 (1 is the header).
pub fn parse_loadchunk_iter(arg: &[u8]) -> Result<u64, ArgError> {
    ranged(arg, 1, i64::MAX as u64, BAD_ITERATOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<&[u8]> {
        line.split(' ').map(str::as_bytes).collect()
    }

    fn reserve(line: &str) -> Result<Reserve, ArgError> {
        parse_reserve(&argv(line))
    }

    #[test]
    fn reserve_count_and_time() {
        assert_eq!(
            reserve("APBF.RESERVE k count 0.01 1000"),
            Ok(Reserve {
                window: Window::Count,
                error: 0.01,
                capacity: 1000
            })
        );
        assert_eq!(
            reserve("APBF.RESERVE k TIME 2 50 60"),
            Ok(Reserve {
                window: Window::Time { span_ms: 60_000 },
                error: 0.01,
                capacity: 50
            })
        );
    }

    #[test]
    fn reserve_errors_in_order() {
        let cases = [
            ("APBF.RESERVE k COUNT 0.01", ArgError::WrongArity),
            ("APBF.RESERVE k TIME 0.01 1 2 3", ArgError::WrongArity),
            ("APBF.RESERVE k SIZE 0.01 10", BAD_WINDOW),
            ("APBF.RESERVE k COUNT 0.01 10 5", COUNT_ARITY),
            ("APBF.RESERVE k TIME 0.01 10", TIME_ARITY),
            ("APBF.RESERVE k COUNT x 0", BAD_ERROR),
            ("APBF.RESERVE k COUNT 0.01 0", BAD_CAPACITY),
            ("APBF.RESERVE k COUNT 0.01 1073741825", BAD_CAPACITY),
            ("APBF.RESERVE k TIME 0.01 10 0", BAD_SPAN),
            ("APBF.RESERVE k TIME 0.01 10 315360001", BAD_SPAN),
            ("APBF.RESERVE k TIME 0.01 10 1.5", BAD_SPAN),
        ];
        for (line, err) in cases {
            assert_eq!(reserve(line), Err(err), "{line}");
        }
    }

    #[test]
    fn error_rates() {
        assert_eq!(parse_error(b"1"), Ok(0.1));
        assert_eq!(parse_error(b"5"), Ok(1e-5));
        assert_eq!(parse_error(b"0.5"), Ok(0.5));
        assert_eq!(parse_error(b"1e-8"), Ok(1e-8));
        for bad in [
            "0",
            "6",
            "-1",
            "1.0",
            "0.99999999999999999",
            "9e-9",
            "nan",
            "inf",
            "",
            " 0.1",
        ] {
            assert_eq!(parse_error(bad.as_bytes()), Err(BAD_ERROR), "{bad}");
        }
    }

    #[test]
    fn iterators() {
        assert_eq!(parse_scandump_iter(b"0"), Ok(0));
        assert_eq!(parse_loadchunk_iter(b"0"), Err(BAD_ITERATOR));
        assert_eq!(parse_loadchunk_iter(b"-1"), Err(BAD_ITERATOR));
    }
}
