//! TOPK.* argument parsing (docs/topk.md §4).

use crate::args::{parse_f64, ranged_i64, ArgError};
use crate::topk::{DEFAULT_DECAY, DEFAULT_DEPTH, DEFAULT_WIDTH};
use crate::window::{asks_for_window, Taken, WindowErrors, WindowOptions, WindowSpec};

/// Parameters of TOPK.RESERVE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopkReserve {
    pub k: u32,
    pub width: u32,
    pub depth: u32,
    pub decay: f64,
}

/// Largest increment of TOPK.INCRBY.
pub const MAX_INCREMENT: i64 = 100_000;

/// The element error of a bad TOPK.INCRBY increment (28 spaces, as sent).
pub const INCREMENT_ERROR: &str = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000";

/// TOPK.RESERVE takes the key and k, optionally followed by width, depth
/// and decay together (docs/topk.md §4.1 step 1). Checked before the key.
pub fn check_reserve_arity(argc: usize) -> Result<(), ArgError> {
    match argc {
        3 | 6 => Ok(()),
        _ => Err(ArgError::WrongArity),
    }
}

/// TOPK.RESERVE key topk [width depth decay] (docs/topk.md §4.1 steps 3, 4),
/// after the key check.
pub fn parse_topk_reserve<A: AsRef<[u8]>>(argv: &[A]) -> Result<TopkReserve, ArgError> {
    check_reserve_arity(argv.len())?;
    let arg = |i: usize| argv.get(i).map_or(&[][..], AsRef::as_ref);
    let dim = |i: usize, err| ranged_i64(arg(i), 1, i64::from(u32::MAX), err).map(narrow);
    let k = dim(2, "TopK: invalid k")?;
    if argv.len() == 3 {
        return Ok(TopkReserve {
            k,
            width: DEFAULT_WIDTH,
            depth: DEFAULT_DEPTH,
            decay: DEFAULT_DECAY,
        });
    }
    let width = dim(3, "TopK: invalid width")?;
    let depth = dim(4, "TopK: invalid depth")?;
    let decay = parse_f64(arg(5))
        .filter(|&d| d > 0.0 && d <= 1.0)
        .ok_or(ArgError::Reply(
            "TopK: invalid decay value. must be '<= 1' & '> 0'",
        ))?;
    Ok(TopkReserve {
        k,
        width,
        depth,
        decay,
    })
}

/// The errors of TOPK.RESERVE's window options (docs/topk-window.md §3.1).
const WINDOW_ERRORS: WindowErrors = WindowErrors {
    window: ArgError::Reply(
        "TopK: WINDOW must be an integer number of milliseconds in [1, 315360000000]",
    ),
    buckets: ArgError::Reply("TopK: BUCKETS must be an integer in [1, 1024]"),
    below: ArgError::Reply("TopK: WINDOW must be at least BUCKETS milliseconds"),
};
const UNKNOWN_ARGUMENT: ArgError = ArgError::Reply("TopK: unknown argument");
const DUPLICATE: ArgError = ArgError::Reply("TopK: duplicate argument");

/// TOPK.RESERVE's window options, if the call has them: token/value pairs
/// after `topk` (an odd count) or after `decay` (an even one), `WINDOW`
/// among the tokens. RedisBloom answers every such call with the arity
/// error, so windows change no reply it gives (docs/topk-window.md §3.1).
fn window_options<A: AsRef<[u8]>>(argv: &[A]) -> Result<Option<&[A]>, ArgError> {
    let n = argv.len();
    if n == 3 || n == 6 {
        return Ok(None);
    }
    let from = if n.is_multiple_of(2) { 6 } else { 3 };
    match argv.get(from..) {
        Some(options) if asks_for_window(options) => Ok(Some(options)),
        _ => Err(ArgError::WrongArity),
    }
}

/// TOPK.RESERVE's argument count, windows included (`argv` from the
/// command name). Checked before the key.
pub fn reserve_arity_of<A: AsRef<[u8]>>(argv: &[A]) -> Result<(), ArgError> {
    window_options(argv).map(|_| ())
}

/// TOPK.RESERVE key topk [width depth decay] [WINDOW ms [BUCKETS n]]: the
/// parameters, then the window's options each as it comes, then the
/// window against the buckets.
pub fn parse_reserve<A: AsRef<[u8]>>(
    argv: &[A],
) -> Result<(TopkReserve, Option<WindowSpec>), ArgError> {
    let Some(options) = window_options(argv)? else {
        return Ok((parse_topk_reserve(argv)?, None));
    };
    let numbers = argv.get(..argv.len() - options.len()).unwrap_or_default();
    let p = parse_topk_reserve(numbers)?;
    let (pairs, _) = options.as_chunks::<2>();
    let mut w = WindowOptions::default();
    for [token, value] in pairs {
        match w.take(token.as_ref(), value.as_ref(), &WINDOW_ERRORS)? {
            Taken::Yes => {}
            Taken::Again => return Err(DUPLICATE),
            Taken::No => return Err(UNKNOWN_ARGUMENT),
        }
    }
    Ok((p, w.finish(&WINDOW_ERRORS)?))
}

/// TOPK.TICK's text for a time that is not Unix milliseconds ≥ 1.
pub const BAD_TIMESTAMP: ArgError = ArgError::Reply("TopK: invalid timestamp");

/// A range-checked dimension (1..=u32::MAX).
fn narrow(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// TOPK.INCRBY key item increment [item increment ...]: an even count ≥ 4.
pub fn check_incrby_arity(argc: usize) -> Result<(), ArgError> {
    if argc >= 4 && argc.is_multiple_of(2) {
        Ok(())
    } else {
        Err(ArgError::WrongArity)
    }
}

/// One TOPK.INCRBY increment: an integer in [0, 100000] (docs/topk.md §4.3).
pub fn parse_increment(arg: &[u8]) -> Result<u32, ArgError> {
    ranged_i64(arg, 0, MAX_INCREMENT, INCREMENT_ERROR).map(narrow)
}

/// TOPK.LIST key [WITHCOUNT]: any case-insensitive prefix of WITHCOUNT,
/// the empty one included, asks for counts (docs/topk.md §4.5). Checked
/// before the key.
pub fn parse_topk_list<A: AsRef<[u8]>>(argv: &[A]) -> Result<bool, ArgError> {
    match argv {
        [_, _] => Ok(false),
        [_, _, option] => {
            let option = option.as_ref();
            let word = b"WITHCOUNT";
            let prefix = word.get(..option.len());
            if prefix.is_some_and(|p| p.eq_ignore_ascii_case(option)) {
                Ok(true)
            } else {
                Err(ArgError::Reply("WITHCOUNT keyword expected"))
            }
        }
        _ => Err(ArgError::WrongArity),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|s| s.as_bytes().to_vec()).collect()
    }

    fn reserve(line: &str) -> Result<TopkReserve, ArgError> {
        parse_topk_reserve(&argv(line))
    }

    fn reply(s: &'static str) -> ArgError {
        ArgError::Reply(s)
    }

    #[test]
    fn reserve_defaults_and_parameters() {
        assert_eq!(
            reserve("TOPK.RESERVE t 5"),
            Ok(TopkReserve {
                k: 5,
                width: 8,
                depth: 7,
                decay: 0.9
            })
        );
        assert_eq!(
            reserve("TOPK.RESERVE t 4294967295 4294967295 1 1"),
            Ok(TopkReserve {
                k: u32::MAX,
                width: u32::MAX,
                depth: 1,
                decay: 1.0
            })
        );
        assert_eq!(
            reserve("TOPK.RESERVE t 1 1 1 4.9e-324").unwrap().decay,
            5e-324
        );
    }

    #[test]
    fn reserve_arity() {
        for line in [
            "TOPK.RESERVE t",
            "TOPK.RESERVE t 1 2",
            "TOPK.RESERVE t 1 2 3",
            "TOPK.RESERVE t 1 2 3 1 x",
        ] {
            assert_eq!(reserve(line), Err(ArgError::WrongArity), "{line}");
        }
        assert_eq!(check_reserve_arity(3), Ok(()));
        assert_eq!(check_reserve_arity(6), Ok(()));
        assert_eq!(check_reserve_arity(7), Err(ArgError::WrongArity));
    }

    #[test]
    fn reserve_errors_in_order() {
        let cases = [
            ("0", "TopK: invalid k"),
            ("-1", "TopK: invalid k"),
            ("4294967296", "TopK: invalid k"),
            ("1.0", "TopK: invalid k"),
            ("+5", "TopK: invalid k"),
        ];
        for (k, want) in cases {
            assert_eq!(
                reserve(&format!("TOPK.RESERVE t {k}")),
                Err(reply(want)),
                "{k}"
            );
            assert_eq!(
                reserve(&format!("TOPK.RESERVE t {k} 0 0 0")),
                Err(reply(want)),
                "{k}"
            );
        }
        let decay = reply("TopK: invalid decay value. must be '<= 1' & '> 0'");
        for (rest, want) in [
            ("0 7 0.9", reply("TopK: invalid width")),
            ("4294967296 7 0.9", reply("TopK: invalid width")),
            ("x 0 x", reply("TopK: invalid width")),
            ("8 0 0.9", reply("TopK: invalid depth")),
            ("8 4294967296 x", reply("TopK: invalid depth")),
            ("8 7 0", decay),
            ("8 7 1.0000001", decay),
            ("8 7 -0.5", decay),
            ("8 7 nan", decay),
            ("8 7 inf", decay),
            ("8 7 1e-400", decay),
            ("8 7 x", decay),
        ] {
            assert_eq!(
                reserve(&format!("TOPK.RESERVE t 3 {rest}")),
                Err(want),
                "{rest}"
            );
        }
    }

    /// docs/topk-window.md §3.1: windows only where RedisBloom answers the
    /// arity error; the numbers, then each option, then the window.
    #[test]
    fn reserve_windows() {
        let w = |span_ms, buckets| Some(WindowSpec { span_ms, buckets });
        let full = |line: &str| {
            let a = argv(line);
            reserve_arity_of(&a)?;
            parse_reserve(&a)
        };
        let ok = |line: &str| full(line).map(|(p, w)| (p.k, p.width, w));
        assert_eq!(ok("TOPK.RESERVE t 5"), Ok((5, 8, None)));
        assert_eq!(
            ok("TOPK.RESERVE t 5 WINDOW 60000"),
            Ok((5, 8, w(60000, 60)))
        );
        assert_eq!(
            ok("TOPK.RESERVE t 5 buckets 3 window 10"),
            Ok((5, 8, w(10, 3)))
        );
        assert_eq!(
            ok("TOPK.RESERVE t 5 9 7 1 WINDOW 30"),
            Ok((5, 9, w(30, 30)))
        );
        assert_eq!(
            ok("TOPK.RESERVE t 5 9 7 1 WINDOW 100 BUCKETS 4"),
            Ok((5, 9, w(100, 4)))
        );
        for line in [
            "TOPK.RESERVE t 5 WINDOW",
            "TOPK.RESERVE t 5 BUCKETS 3",
            "TOPK.RESERVE t 5 8 7 1 WINDOW",
            "TOPK.RESERVE t 5 8 7 1 BUCKETS 3",
        ] {
            assert_eq!(full(line), Err(ArgError::WrongArity), "{line}");
        }
        for (line, want) in [
            ("TOPK.RESERVE t 5 WINDOW 100 BUCKETS", "TopK: invalid width"),
            ("TOPK.RESERVE t 0 WINDOW 100", "TopK: invalid k"),
            ("TOPK.RESERVE t 5 WINDOW 0", WINDOW_ERRORS_TEXT),
            ("TOPK.RESERVE t 5 WINDOW 315360000001", WINDOW_ERRORS_TEXT),
            ("TOPK.RESERVE t 5 WINDOW 1e3", WINDOW_ERRORS_TEXT),
            (
                "TOPK.RESERVE t 5 WINDOW 100 BUCKETS 1025",
                "TopK: BUCKETS must be an integer in [1, 1024]",
            ),
            (
                "TOPK.RESERVE t 5 WINDOW 10 BUCKETS 11",
                "TopK: WINDOW must be at least BUCKETS milliseconds",
            ),
            (
                "TOPK.RESERVE t 5 WINDOW 10 WINDOW 10",
                "TopK: duplicate argument",
            ),
            (
                "TOPK.RESERVE t 5 WINDOW 10 SEED 10",
                "TopK: unknown argument",
            ),
            // Decay forgotten: an odd count, options after k.
            ("TOPK.RESERVE t 5 8 7 WINDOW 100", "TopK: unknown argument"),
            ("TOPK.RESERVE t 5 x WINDOW 100", "TopK: invalid width"),
        ] {
            assert_eq!(full(line), Err(reply(want)), "{line}");
        }
    }

    const WINDOW_ERRORS_TEXT: &str =
        "TopK: WINDOW must be an integer number of milliseconds in [1, 315360000000]";

    #[test]
    fn increments() {
        assert_eq!(parse_increment(b"0"), Ok(0));
        assert_eq!(parse_increment(b"100000"), Ok(100_000));
        for bad in [
            &b"-1"[..],
            b"100001",
            b"1.5",
            b"x",
            b"",
            b"01",
            b"9223372036854775808",
        ] {
            assert_eq!(parse_increment(bad), Err(reply(INCREMENT_ERROR)), "{bad:?}");
        }
        assert_eq!(INCREMENT_ERROR.len(), 115);
        assert!(INCREMENT_ERROR.contains(&format!("0{}and", " ".repeat(28))));
        assert_eq!(check_incrby_arity(4), Ok(()));
        assert_eq!(check_incrby_arity(8), Ok(()));
        assert_eq!(check_incrby_arity(5), Err(ArgError::WrongArity));
        assert_eq!(check_incrby_arity(2), Err(ArgError::WrongArity));
    }

    #[test]
    fn list_option_is_any_prefix_of_withcount() {
        let list = |args: &[&str]| parse_topk_list(args);
        assert_eq!(list(&["TOPK.LIST", "t"]), Ok(false));
        for opt in ["WITHCOUNT", "withcount", "w", "With", "withC", ""] {
            assert_eq!(list(&["TOPK.LIST", "t", opt]), Ok(true), "{opt:?}");
        }
        for opt in ["WITHCOUNTS", "bad", "count", "withcount "] {
            assert_eq!(
                list(&["TOPK.LIST", "t", opt]),
                Err(reply("WITHCOUNT keyword expected")),
                "{opt:?}"
            );
        }
        assert_eq!(
            list(&["TOPK.LIST", "t", "w", "x"]),
            Err(ArgError::WrongArity)
        );
        assert_eq!(list(&["TOPK.LIST"]), Err(ArgError::WrongArity));
    }
}
