//! CMS.* argument parsing (docs/cms.md §5). The commands check the key
//! between the argument count and the numbers, so these parse the numbers
//! only; the handlers check the count first.

use crate::args::{parse_f64, parse_i64, ArgError};
use crate::cms::CellSize;
use crate::window::{asks_for_window, Taken, WindowErrors, WindowOptions, WindowSpec};

const INVALID_WIDTH: ArgError = ArgError::Reply("CMS: invalid width");
const INVALID_DEPTH: ArgError = ArgError::Reply("CMS: invalid depth");
const INVALID_ERROR: ArgError = ArgError::Reply("CMS: invalid overestimation value");
const INVALID_PROB: ArgError = ArgError::Reply("CMS: invalid prob value");
const CANNOT_PARSE: ArgError = ArgError::Reply("CMS: Cannot parse number");
const INVALID_INCREMENT: ArgError = ArgError::Reply("CMS: invalid increment");
const UNKNOWN_ARGUMENT: ArgError = ArgError::Reply("CMS: unknown argument");
const BAD_CELL_SIZE: ArgError = ArgError::Reply("CMS: CELL_SIZE must be 1, 2, 4 or 8");
const INVALID_NUMKEYS: ArgError = ArgError::Reply("CMS: invalid numkeys");
const NUMKEYS_NOT_POSITIVE: ArgError = ArgError::Reply("CMS: Number of keys must be positive");
const WRONG_KEYS: ArgError = ArgError::Reply("CMS: wrong number of keys");
const WRONG_KEYS_WEIGHTS: ArgError = ArgError::Reply("CMS: wrong number of keys/weights");
const INVALID_WEIGHT: ArgError = ArgError::Reply("CMS: invalid weight value");
const WINDOW_ERRORS: WindowErrors = WindowErrors {
    window: ArgError::Reply(
        "CMS: WINDOW must be an integer number of milliseconds in [1, 315360000000]",
    ),
    buckets: ArgError::Reply("CMS: BUCKETS must be an integer in [1, 1024]"),
    below: ArgError::Reply("CMS: WINDOW must be at least BUCKETS milliseconds"),
};
const DUPLICATE: ArgError = ArgError::Reply("CMS: duplicate argument");
/// CMS.TICK's text for a time that is not Unix milliseconds ≥ 1.
pub const BAD_TIMESTAMP: ArgError = ArgError::Reply("CMS: invalid timestamp");

/// CMS.INITBYDIM width and depth: integers ≥ 1, width checked first (§5.2).
pub fn parse_dims(width: &[u8], depth: &[u8]) -> Result<(u64, u64), ArgError> {
    Ok((
        positive(width, INVALID_WIDTH)?,
        positive(depth, INVALID_DEPTH)?,
    ))
}

fn positive(arg: &[u8], err: ArgError) -> Result<u64, ArgError> {
    parse_i64(arg)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|&v| v >= 1)
        .ok_or(err)
}

/// CMS.INITBYPROB error and probability: doubles strictly inside (0, 1),
/// error checked first (§5.3).
pub fn parse_error_prob(error: &[u8], prob: &[u8]) -> Result<(f64, f64), ArgError> {
    Ok((
        unit_open(error, INVALID_ERROR)?,
        unit_open(prob, INVALID_PROB)?,
    ))
}

fn unit_open(arg: &[u8], err: ArgError) -> Result<f64, ArgError> {
    parse_f64(arg).filter(|&v| v > 0.0 && v < 1.0).ok_or(err)
}

/// CMS.INITBYDIM / CMS.INITBYPROB argument count: the key, two numbers
/// and optionally `CELL_SIZE size`, nothing else (§5.2).
pub fn init_arity(argc: usize) -> Result<(), ArgError> {
    if argc == 4 || argc == 6 {
        Ok(())
    } else {
        Err(ArgError::WrongArity)
    }
}

/// The INIT commands' options after the two numbers: none (4 bytes), or
/// the token `CELL_SIZE` (any case, exactly: RedisBloom's earlier 8.12
/// code also took the token followed by a NUL and more) and 1, 2, 4 or 8.
pub fn parse_cell_size<A: AsRef<[u8]>>(options: &[A]) -> Result<CellSize, ArgError> {
    let [token, size] = options else {
        return if options.is_empty() {
            Ok(CellSize::Four)
        } else {
            Err(ArgError::WrongArity)
        };
    };
    if !token.as_ref().eq_ignore_ascii_case(b"CELL_SIZE") {
        return Err(UNKNOWN_ARGUMENT);
    }
    parse_i64(size.as_ref())
        .and_then(|v| u64::try_from(v).ok())
        .and_then(CellSize::from_bytes)
        .ok_or(BAD_CELL_SIZE)
}

/// The INIT commands' argument count, windows included: `argv` from the
/// command name; options come in token/value pairs.
pub fn init_arity_of<A: AsRef<[u8]>>(argv: &[A]) -> Result<(), ArgError> {
    let options = argv.get(4..).unwrap_or_default();
    // Today's parser answers every call with a WINDOW token with an arity
    // error or `unknown argument` (docs/cms-window.md §3.1).
    if !asks_for_window(options) {
        return init_arity(argv.len());
    }
    if options.len().is_multiple_of(2) {
        Ok(())
    } else {
        Err(ArgError::WrongArity)
    }
}

/// The INIT options: the cell size, and a window if asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitOptions {
    pub cell_size: CellSize,
    pub window: Option<WindowSpec>,
}

/// The INIT options after the two numbers: RedisBloom's (`[CELL_SIZE
/// size]`), or with `WINDOW ms` token/value pairs in any order, each at
/// most once: `CELL_SIZE`, `WINDOW`, `BUCKETS` (default 60, or the window
/// in ms if shorter), each value checked as it comes, then the window
/// against the buckets.
pub fn parse_init_options<A: AsRef<[u8]>>(options: &[A]) -> Result<InitOptions, ArgError> {
    if !asks_for_window(options) {
        return Ok(InitOptions {
            cell_size: parse_cell_size(options)?,
            window: None,
        });
    }
    let (pairs, rest) = options.as_chunks::<2>();
    if !rest.is_empty() {
        return Err(ArgError::WrongArity);
    }
    let (mut cell_size, mut window) = (None, WindowOptions::default());
    for pair @ [token, value] in pairs {
        let t = token.as_ref();
        let taken = if t.eq_ignore_ascii_case(b"CELL_SIZE") {
            match cell_size.replace(parse_cell_size(pair)?) {
                Some(_) => Taken::Again,
                None => Taken::Yes,
            }
        } else {
            window.take(t, value.as_ref(), &WINDOW_ERRORS)?
        };
        match taken {
            Taken::Yes => {}
            Taken::Again => return Err(DUPLICATE),
            Taken::No => return Err(UNKNOWN_ARGUMENT),
        }
    }
    // WINDOW is among the tokens.
    let w = window.finish(&WINDOW_ERRORS)?;
    Ok(InitOptions {
        cell_size: cell_size.unwrap_or(CellSize::Four),
        window: w,
    })
}

/// CMS.INCRBY argument count: a key and at least one item/increment pair.
pub fn incrby_arity(argc: usize) -> Result<(), ArgError> {
    if argc >= 4 && argc.is_multiple_of(2) {
        Ok(())
    } else {
        Err(ArgError::WrongArity)
    }
}

/// One CMS.INCRBY increment: any i64 but −2^63, whose magnitude has no
/// i64 (§5.4).
pub fn parse_increment(arg: &[u8]) -> Result<i64, ArgError> {
    match parse_i64(arg).ok_or(CANNOT_PARSE)? {
        i64::MIN => Err(INVALID_INCREMENT),
        v => Ok(v),
    }
}

/// The shape of a CMS.MERGE call (§5.6 steps 3–5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merge {
    /// Sources are `argv[3 .. 3 + num_keys]`.
    pub num_keys: usize,
    /// Weight `i` is `argv[4 + num_keys + i]` when the WEIGHTS word follows
    /// the sources.
    pub weighted: bool,
}

impl Merge {
    pub fn source_at(&self, i: usize) -> usize {
        3 + i
    }

    pub fn weight_at(&self, i: usize) -> Option<usize> {
        self.weighted.then_some(4 + self.num_keys + i)
    }
}

/// numKeys (`argv[2]`), then the WEIGHTS word: the first argument after
/// numKeys that is `WEIGHTS` (any case) must directly follow exactly
/// numKeys sources and precede exactly numKeys weights; without it, all
/// the rest are sources. A source named WEIGHTS thus cannot be merged.
pub fn parse_merge<A: AsRef<[u8]>>(argv: &[A]) -> Result<Merge, ArgError> {
    let num_keys = argv
        .get(2)
        .and_then(|a| parse_i64(a.as_ref()))
        .ok_or(INVALID_NUMKEYS)?;
    if num_keys <= 0 {
        return Err(NUMKEYS_NOT_POSITIVE);
    }
    let rest = argv.get(3..).unwrap_or_default();
    let marker = rest
        .iter()
        .position(|a| a.as_ref().eq_ignore_ascii_case(b"WEIGHTS"));
    // Larger than any argument count: fails the comparisons below.
    let n = usize::try_from(num_keys).unwrap_or(usize::MAX);
    let weighted = match marker {
        None if n == rest.len() => false,
        None => return Err(WRONG_KEYS),
        // p indexes `rest`, so 2p + 1 cannot overflow.
        Some(p) if p == n && rest.len() == 2 * p + 1 => true,
        Some(_) => return Err(WRONG_KEYS_WEIGHTS),
    };
    Ok(Merge {
        num_keys: n,
        weighted,
    })
}

/// One CMS.MERGE weight: any i64 (the command docs say double; RedisBloom
/// parses integers).
pub fn parse_weight(arg: &[u8]) -> Result<i64, ArgError> {
    parse_i64(arg).ok_or(INVALID_WEIGHT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<&[u8]> {
        line.split(' ').map(str::as_bytes).collect()
    }

    fn reply(s: &'static str) -> ArgError {
        ArgError::Reply(s)
    }

    #[test]
    fn dims() {
        assert_eq!(parse_dims(b"2000", b"7"), Ok((2000, 7)));
        assert_eq!(
            parse_dims(b"9223372036854775807", b"1"),
            Ok((i64::MAX as u64, 1))
        );
        for w in ["0", "-1", "x", "1.0", "+5", "01", "", "9223372036854775808"] {
            assert_eq!(
                parse_dims(w.as_bytes(), b"x"),
                Err(reply("CMS: invalid width")),
                "{w}"
            );
        }
        assert_eq!(parse_dims(b"5", b"0"), Err(reply("CMS: invalid depth")));
        assert_eq!(parse_dims(b"5", b"-0"), Err(reply("CMS: invalid depth")));
    }

    #[test]
    fn error_and_probability() {
        assert_eq!(parse_error_prob(b"0.001", b"0.01"), Ok((0.001, 0.01)));
        assert_eq!(parse_error_prob(b"5e-324", b"1e-45"), Ok((5e-324, 1e-45)));
        for e in ["0", "1", "-0.5", "inf", "nan", "x", " 0.1", "1e-400"] {
            assert_eq!(
                parse_error_prob(e.as_bytes(), b"x"),
                Err(reply("CMS: invalid overestimation value")),
                "{e}"
            );
        }
        for p in ["0", "1", "1.5", "-inf", ""] {
            assert_eq!(
                parse_error_prob(b"0.5", p.as_bytes()),
                Err(reply("CMS: invalid prob value")),
                "{p}"
            );
        }
    }

    #[test]
    fn increments() {
        assert_eq!(incrby_arity(4), Ok(()));
        assert_eq!(incrby_arity(6), Ok(()));
        for n in [0, 1, 2, 3, 5, 7] {
            assert_eq!(incrby_arity(n), Err(ArgError::WrongArity), "{n}");
        }
        assert_eq!(parse_increment(b"0"), Ok(0));
        assert_eq!(parse_increment(b"9223372036854775807"), Ok(i64::MAX));
        assert_eq!(parse_increment(b"-1"), Ok(-1));
        assert_eq!(parse_increment(b"-9223372036854775807"), Ok(-i64::MAX));
        assert_eq!(
            parse_increment(b"-9223372036854775808"),
            Err(reply("CMS: invalid increment"))
        );
        for bad in [
            "q",
            "-0",
            "+1",
            "1.5",
            "9223372036854775808",
            "-9223372036854775809",
            "",
        ] {
            assert_eq!(
                parse_increment(bad.as_bytes()),
                Err(reply("CMS: Cannot parse number")),
                "{bad}"
            );
        }
    }

    /// §3.1 of the 8.12 spec: the count first, then the token, then the value.
    #[test]
    fn init_options() {
        for n in [4, 6] {
            assert_eq!(init_arity(n), Ok(()), "{n}");
        }
        for n in [0, 3, 5, 7, 8] {
            assert_eq!(init_arity(n), Err(ArgError::WrongArity), "{n}");
        }
        let none: [&[u8]; 0] = [];
        assert_eq!(parse_cell_size(&none), Ok(CellSize::Four));
        for (size, want) in [
            ("1", CellSize::One),
            ("2", CellSize::Two),
            ("4", CellSize::Four),
            ("8", CellSize::Eight),
        ] {
            for token in ["CELL_SIZE", "cell_size", "Cell_Size"] {
                assert_eq!(parse_cell_size(&argv(&format!("{token} {size}"))), Ok(want));
            }
        }
        for bad in [
            "0",
            "3",
            "5",
            "6",
            "7",
            "9",
            "16",
            "-1",
            "-4",
            "blah",
            "",
            "4.5",
            "+4",
            "04",
            "18446744073709551620",
        ] {
            assert_eq!(
                parse_cell_size(&[&b"CELL_SIZE"[..], bad.as_bytes()]),
                Err(reply("CMS: CELL_SIZE must be 1, 2, 4 or 8")),
                "{bad}"
            );
        }
        for token in ["OOR", "CELL_SIZE\0", "CELL_SIZE\0x", "CELLSIZE", "SEED"] {
            assert_eq!(
                parse_cell_size(&[token.as_bytes(), b"x"]),
                Err(reply("CMS: unknown argument")),
                "{token:?}"
            );
        }
        assert_eq!(
            parse_cell_size(&argv("CELL_SIZE")),
            Err(ArgError::WrongArity)
        );
    }

    fn init(line: &str) -> Result<InitOptions, ArgError> {
        let a = argv(line);
        init_arity_of(&a)?;
        parse_init_options(&a[4..])
    }

    /// Without WINDOW, exactly today's answers; with it, pairs in any order.
    #[test]
    fn init_windows() {
        let plain = |cell_size| {
            Ok(InitOptions {
                cell_size,
                window: None,
            })
        };
        assert_eq!(init("CMS.INITBYDIM k 10 5"), plain(CellSize::Four));
        assert_eq!(
            init("CMS.INITBYDIM k 10 5 cell_size 8"),
            plain(CellSize::Eight)
        );
        for (line, err) in [
            ("CMS.INITBYDIM k 10 5 CELL_SIZE", ArgError::WrongArity),
            ("CMS.INITBYDIM k 10 5 BUCKETS 4", UNKNOWN_ARGUMENT),
            (
                "CMS.INITBYDIM k 10 5 CELL_SIZE 4 BUCKETS 4",
                ArgError::WrongArity,
            ),
            ("CMS.INITBYDIM k 10 5 CELL_SIZE WINDOW", BAD_CELL_SIZE),
            ("CMS.INITBYDIM k 10 5 WINDOW", ArgError::WrongArity),
            (
                "CMS.INITBYDIM k 10 5 WINDOW 1000 BUCKETS",
                ArgError::WrongArity,
            ),
            ("CMS.INITBYDIM k 10 5 WINDOW 0", WINDOW_ERRORS.window),
            ("CMS.INITBYDIM k 10 5 WINDOW -5", WINDOW_ERRORS.window),
            ("CMS.INITBYDIM k 10 5 WINDOW 1.5", WINDOW_ERRORS.window),
            ("CMS.INITBYDIM k 10 5 WINDOW x", WINDOW_ERRORS.window),
            (
                "CMS.INITBYDIM k 10 5 WINDOW 315360000001",
                WINDOW_ERRORS.window,
            ),
            (
                "CMS.INITBYDIM k 10 5 WINDOW 1000 BUCKETS 0",
                WINDOW_ERRORS.buckets,
            ),
            (
                "CMS.INITBYDIM k 10 5 WINDOW 1000 BUCKETS 1025",
                WINDOW_ERRORS.buckets,
            ),
            (
                "CMS.INITBYDIM k 10 5 WINDOW 100 BUCKETS 101",
                WINDOW_ERRORS.below,
            ),
            ("CMS.INITBYDIM k 10 5 WINDOW 100 WINDOW 100", DUPLICATE),
            ("CMS.INITBYDIM k 10 5 WINDOW 100 SEED 1", UNKNOWN_ARGUMENT),
            ("CMS.INITBYDIM k 10 5 WINDOW 100 CELL_SIZE 3", BAD_CELL_SIZE),
        ] {
            assert_eq!(init(line), Err(err), "{line}");
        }
        let win = |cell_size, span_ms, buckets| {
            Ok(InitOptions {
                cell_size,
                window: Some(WindowSpec { span_ms, buckets }),
            })
        };
        assert_eq!(
            init("CMS.INITBYDIM k 10 5 window 60000"),
            win(CellSize::Four, 60_000, 60)
        );
        assert_eq!(
            init("CMS.INITBYDIM k 10 5 WINDOW 7"),
            win(CellSize::Four, 7, 7)
        );
        assert_eq!(
            init("CMS.INITBYPROB k 0.1 0.1 BUCKETS 1024 CELL_SIZE 2 WINDOW 315360000000"),
            win(CellSize::Two, 315_360_000_000, 1024)
        );
    }

    fn m(line: &str) -> Result<Merge, ArgError> {
        parse_merge(&argv(line))
    }

    #[test]
    fn merge_shapes() {
        assert_eq!(
            m("CMS.MERGE d 2 a b"),
            Ok(Merge {
                num_keys: 2,
                weighted: false
            })
        );
        let w = m("CMS.MERGE d 2 a b weightS 1 2").unwrap();
        assert!(w.weighted);
        assert_eq!(
            (w.source_at(1), w.weight_at(0), w.weight_at(1)),
            (4, Some(6), Some(7))
        );
        assert_eq!(m("CMS.MERGE d x a"), Err(reply("CMS: invalid numkeys")));
        for n in ["0", "-1", "-9223372036854775808"] {
            assert_eq!(
                m(&format!("CMS.MERGE d {n} a")),
                Err(reply("CMS: Number of keys must be positive"))
            );
        }
        assert_eq!(
            m("CMS.MERGE d 0 WEIGHTS"),
            Err(reply("CMS: Number of keys must be positive"))
        );
        assert_eq!(
            m("CMS.MERGE d 2 a"),
            Err(reply("CMS: wrong number of keys"))
        );
        assert_eq!(
            m("CMS.MERGE d 1 a b"),
            Err(reply("CMS: wrong number of keys"))
        );
        assert_eq!(
            m("CMS.MERGE d 9223372036854775807 a"),
            Err(reply("CMS: wrong number of keys"))
        );
        for line in [
            // §7.1 item 2: a missing weight is counted, never read.
            "CMS.MERGE foo 1 bar WEIGHTS",
            "CMS.MERGE d 1 WEIGHTS WEIGHTS 1",
            "CMS.MERGE d 2 a WEIGHTS b 1 2",
            "CMS.MERGE d 1 a WEIGHTS 1 2",
            "CMS.MERGE d 9223372036854775807 a WEIGHTS 1",
        ] {
            assert_eq!(
                m(line),
                Err(reply("CMS: wrong number of keys/weights")),
                "{line}"
            );
        }
        // Weights are only counted here: their text is checked per source.
        assert!(m("CMS.MERGE d 2 a b WEIGHTS x y").unwrap().weighted);
    }

    #[test]
    fn weights() {
        assert_eq!(parse_weight(b"-3"), Ok(-3));
        assert_eq!(parse_weight(b"-9223372036854775808"), Ok(i64::MIN));
        for bad in ["1.5", "x", "-0", "2e3"] {
            assert_eq!(
                parse_weight(bad.as_bytes()),
                Err(reply("CMS: invalid weight value")),
                "{bad}"
            );
        }
    }
}
