//! TDIGEST.* argument parsing (docs/tdigest.md §5). The key is checked
//! before any argument (§5.0), so each parser runs after the lookup and
//! sees the whole argument vector (`argv[0]` the command, `argv[1]` the key).

use crate::args::{parse_f64, parse_i64, ArgError};
use crate::window::{asks_for_window, Taken, WindowErrors, WindowOptions, WindowSpec};

pub const KEY_MISSING: &str = "ERR T-Digest: key does not exist";
pub const KEY_EXISTS: &str = "ERR T-Digest: key already exists";
pub const ALLOC_FAILED: &str = "ERR T-Digest: allocation failed";
pub const DEST_ALLOC_FAILED: &str = "ERR T-Digest: allocation of destination digest failed";
pub const OVERFLOW: &str = "ERR T-Digest: overflow detected";
const WRONG_KEYWORD: &str = "ERR T-Digest: wrong keyword";
const BAD_COMPRESSION: &str = "ERR T-Digest: error parsing compression parameter";
const COMPRESSION_RANGE: &str =
    "ERR T-Digest: compression parameter needs to be a positive integer";

/// `argc == n`, else a wrong-arity error.
pub fn exact_arity(argc: usize, n: usize) -> Result<(), ArgError> {
    if argc == n {
        Ok(())
    } else {
        Err(ArgError::WrongArity)
    }
}

/// `argc ≥ n`, else a wrong-arity error.
pub fn min_arity(argc: usize, n: usize) -> Result<(), ArgError> {
    if argc >= n {
        Ok(())
    } else {
        Err(ArgError::WrongArity)
    }
}

fn is_word<A: AsRef<[u8]>>(a: &A, word: &str) -> bool {
    a.as_ref().eq_ignore_ascii_case(word.as_bytes())
}

/// A COMPRESSION value (§5.1 step 4): a positive integer.
fn compression_value(v: &[u8]) -> Result<i64, ArgError> {
    let c = parse_i64(v).ok_or(ArgError::Reply(BAD_COMPRESSION))?;
    if c <= 0 {
        return Err(ArgError::Reply(COMPRESSION_RANGE));
    }
    Ok(c)
}

/// TDIGEST.CREATE key [COMPRESSION c] arity: `key` alone or `key KW value`.
pub fn create_arity(argc: usize) -> Result<(), ArgError> {
    if argc == 2 || argc == 4 {
        Ok(())
    } else {
        Err(ArgError::WrongArity)
    }
}

/// TDIGEST.CREATE's compression (§5.1 steps 3–4), after the key check. The
/// keyword may be either of the last two arguments; the value is always
/// the last one.
pub fn parse_create<A: AsRef<[u8]>>(argv: &[A]) -> Result<i64, ArgError> {
    create_arity(argv.len())?;
    match (argv.get(2), argv.get(3)) {
        (Some(a), Some(v)) => {
            if !is_word(a, "COMPRESSION") && !is_word(v, "COMPRESSION") {
                return Err(ArgError::Reply(WRONG_KEYWORD));
            }
            compression_value(v.as_ref())
        }
        _ => Ok(crate::tdigest::DEFAULT_COMPRESSION),
    }
}

const WINDOW_ERRORS: WindowErrors = WindowErrors {
    window: ArgError::Reply(
        "ERR T-Digest: WINDOW must be an integer number of milliseconds in [1, 315360000000]",
    ),
    buckets: ArgError::Reply("ERR T-Digest: BUCKETS must be an integer in [1, 1024]"),
    below: ArgError::Reply("ERR T-Digest: WINDOW must be at least BUCKETS milliseconds"),
};
const DUPLICATE: ArgError = ArgError::Reply("ERR T-Digest: duplicate argument");
/// TDIGEST.TICK's text for a time that is not Unix milliseconds ≥ 1.
pub const BAD_TIMESTAMP: ArgError = ArgError::Reply("ERR T-Digest: invalid timestamp");

/// Whether TDIGEST.CREATE asks for a window: `WINDOW` (any case) where an
/// option's token stands. RedisBloom answers every such call with an
/// error (`wrong keyword`, the compression's parse error, or an arity
/// error), so windows change no reply it gives (docs/tdigest-window.md §4).
pub fn create_asks_for_window<A: AsRef<[u8]>>(argv: &[A]) -> bool {
    asks_for_window(argv.get(2..).unwrap_or_default())
}

/// TDIGEST.CREATE with WINDOW: the key, then token/value pairs.
pub fn create_window_arity(argc: usize) -> Result<(), ArgError> {
    if argc >= 4 && argc.is_multiple_of(2) {
        Ok(())
    } else {
        Err(ArgError::WrongArity)
    }
}

/// TDIGEST.CREATE's options with WINDOW, after the key check: `COMPRESSION`,
/// `WINDOW`, `BUCKETS` in any order, each at most once, each value checked
/// as it comes, then the window against the buckets.
pub fn parse_create_window<A: AsRef<[u8]>>(argv: &[A]) -> Result<(i64, WindowSpec), ArgError> {
    create_window_arity(argv.len())?;
    let (pairs, _) = argv.get(2..).unwrap_or_default().as_chunks::<2>();
    let mut compression = None;
    let mut window = WindowOptions::default();
    for [token, value] in pairs {
        let taken = if is_word(token, "COMPRESSION") {
            match compression.replace(compression_value(value.as_ref())?) {
                Some(_) => Taken::Again,
                None => Taken::Yes,
            }
        } else {
            window.take(token.as_ref(), value.as_ref(), &WINDOW_ERRORS)?
        };
        match taken {
            Taken::Yes => {}
            Taken::Again => return Err(DUPLICATE),
            Taken::No => return Err(ArgError::Reply(WRONG_KEYWORD)),
        }
    }
    // WINDOW is among the tokens.
    let w = window.finish(&WINDOW_ERRORS)?.ok_or(ArgError::WrongArity)?;
    Ok((
        compression.unwrap_or(crate::tdigest::DEFAULT_COMPRESSION),
        w,
    ))
}

/// Arguments up to this many are parsed on the stack.
const INLINE: usize = 16;

/// Parsed arguments: a slice, kept on the stack for short commands (no
/// heap allocation on the hot paths, like the ADD of one value).
pub struct Parsed<T> {
    inline: [T; INLINE],
    len: usize,
    heap: Vec<T>,
}

impl<T> std::ops::Deref for Parsed<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        if self.len <= INLINE {
            self.inline.get(..self.len).unwrap_or_default()
        } else {
            &self.heap
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Parsed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: PartialEq> PartialEq for Parsed<T> {
    fn eq(&self, other: &Parsed<T>) -> bool {
        **self == **other
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for Parsed<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        **self == **other
    }
}

/// Parses every argument from `argv[2]` with `each`, in order; the first
/// error wins (§5.0: nothing is computed before all are valid). Inlined:
/// the parsed values are then built where the caller keeps them, not
/// copied out through each `Result`.
#[inline(always)]
fn all<A: AsRef<[u8]>, T: Copy + Default>(
    argv: &[A],
    each: impl Fn(&[u8]) -> Result<T, ArgError>,
) -> Result<Parsed<T>, ArgError> {
    let args = argv.get(2..).unwrap_or_default();
    let mut out = Parsed {
        inline: [T::default(); INLINE],
        len: args.len(),
        heap: Vec::new(),
    };
    if args.len() <= INLINE {
        for (slot, a) in out.inline.iter_mut().zip(args) {
            *slot = each(a.as_ref())?;
        }
    } else {
        out.heap.reserve_exact(args.len());
        for a in args {
            out.heap.push(each(a.as_ref())?);
        }
    }
    Ok(out)
}

/// One TDIGEST.ADD value (§5.3): a finite double.
fn add_value(a: &[u8]) -> Result<f64, ArgError> {
    let v = parse_f64(a).ok_or(ArgError::Reply("ERR T-Digest: error parsing val parameter"))?;
    if v.is_infinite() {
        return Err(ArgError::Reply(
            "ERR T-Digest: val parameter needs to be a finite number",
        ));
    }
    Ok(v)
}

/// TDIGEST.ADD values (§5.3).
#[inline]
pub fn parse_add<A: AsRef<[u8]>>(argv: &[A]) -> Result<Parsed<f64>, ArgError> {
    all(argv, add_value)
}

/// TDIGEST.QUANTILE fractions (§5.6): each in [0, 1].
pub fn parse_quantiles<A: AsRef<[u8]>>(argv: &[A]) -> Result<Parsed<f64>, ArgError> {
    all(argv, |a| {
        let q = parse_f64(a).ok_or(ArgError::Reply("ERR T-Digest: error parsing quantile"))?;
        if !(0.0..=1.0).contains(&q) {
            return Err(ArgError::Reply("ERR T-Digest: quantile should be in [0,1]"));
        }
        Ok(q)
    })
}

/// TDIGEST.CDF values (§5.7): any double, infinities included.
pub fn parse_cdf<A: AsRef<[u8]>>(argv: &[A]) -> Result<Parsed<f64>, ArgError> {
    all(argv, |a| {
        parse_f64(a).ok_or(ArgError::Reply("ERR T-Digest: error parsing cdf"))
    })
}

/// TDIGEST.RANK / REVRANK values (§5.9).
pub fn parse_rank_values<A: AsRef<[u8]>>(argv: &[A]) -> Result<Parsed<f64>, ArgError> {
    all(argv, |a| {
        parse_f64(a).ok_or(ArgError::Reply("ERR T-Digest: error parsing value"))
    })
}

/// TDIGEST.BYRANK / BYREVRANK ranks (§5.10): non-negative integers.
pub fn parse_ranks<A: AsRef<[u8]>>(argv: &[A]) -> Result<Parsed<i64>, ArgError> {
    all(argv, |a| {
        let r = parse_i64(a).ok_or(ArgError::Reply("ERR T-Digest: error parsing rank"))?;
        if r < 0 {
            return Err(ArgError::Reply(
                "ERR T-Digest: rank needs to be non negative",
            ));
        }
        Ok(r)
    })
}

/// TDIGEST.TRIMMED_MEAN cut-offs (§5.8): `(low, high)`.
pub fn parse_trimmed_mean<A: AsRef<[u8]>>(argv: &[A]) -> Result<(f64, f64), ArgError> {
    exact_arity(argv.len(), 4)?;
    let arg = |i: usize| argv.get(i).map_or(&[][..], AsRef::as_ref);
    let low = parse_f64(arg(2)).ok_or(ArgError::Reply(
        "ERR T-Digest: error parsing low_cut_percentile",
    ))?;
    let high = parse_f64(arg(3)).ok_or(ArgError::Reply(
        "ERR T-Digest: error parsing high_cut_percentile",
    ))?;
    let unit = 0.0..=1.0;
    if !unit.contains(&low) || !unit.contains(&high) {
        return Err(ArgError::Reply(
            "ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]",
        ));
    }
    if low >= high {
        return Err(ArgError::Reply(
            "ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile",
        ));
    }
    Ok((low, high))
}

/// TDIGEST.MERGE destination numkeys source... [COMPRESSION c] [OVERRIDE].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merge {
    /// Sources are `argv[3..3 + numkeys]`.
    pub numkeys: usize,
    /// An explicit COMPRESSION.
    pub compression: Option<i64>,
    pub override_dest: bool,
}

impl Merge {
    /// Whether the compression is the maximum of the sources' (§5.4 step 4).
    pub fn use_max(&self, dest_exists: bool) -> bool {
        self.compression.is_none() && (self.override_dest || !dest_exists)
    }
}

/// MERGE's arguments after the destination's type check (§5.4 steps 3–4).
pub fn parse_merge<A: AsRef<[u8]>>(argv: &[A]) -> Result<Merge, ArgError> {
    min_arity(argv.len(), 4)?;
    let numkeys = argv
        .get(2)
        .and_then(|a| parse_i64(a.as_ref()))
        .ok_or(ArgError::Reply("ERR T-Digest: error parsing numkeys"))?;
    if numkeys <= 0 {
        return Err(ArgError::Reply(
            "ERR T-Digest: numkeys needs to be a positive integer",
        ));
    }
    let numkeys = usize::try_from(numkeys).map_err(|_| ArgError::WrongArity)?;
    if numkeys > argv.len() - 3 {
        return Err(ArgError::WrongArity);
    }
    let mut merge = Merge {
        numkeys,
        compression: None,
        override_dest: false,
    };
    let extra = &argv[3 + numkeys..];
    if extra.is_empty() {
        return Ok(merge);
    }
    let compression = extra.iter().position(|a| is_word(a, "COMPRESSION"));
    if let Some(i) = compression {
        let value = extra.get(i + 1).ok_or(ArgError::WrongArity)?;
        merge.compression = Some(compression_value(value.as_ref())?);
    }
    merge.override_dest = extra.iter().any(|a| is_word(a, "OVERRIDE"));
    if compression.is_none() && !merge.override_dest {
        return Err(ArgError::Reply(WRONG_KEYWORD));
    }
    Ok(merge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &'static str) -> ArgError {
        ArgError::Reply(text)
    }

    #[test]
    fn create() {
        assert_eq!(parse_create(&["C", "k"]), Ok(100));
        assert_eq!(parse_create(&["C", "k", "compression", "7"]), Ok(7));
        // The keyword may come last; the value is still the last argument.
        assert_eq!(
            parse_create(&["C", "k", "100", "COMPRESSION"]),
            Err(r(BAD_COMPRESSION))
        );
        assert_eq!(
            parse_create(&["C", "k", "foo", "compression"]),
            Err(r(BAD_COMPRESSION))
        );
        assert_eq!(parse_create(&["C", "k", "foo", "7"]), Err(r(WRONG_KEYWORD)));
        assert_eq!(
            parse_create(&["C", "k", "COMPRESSION", "0"]),
            Err(r(COMPRESSION_RANGE))
        );
        assert_eq!(
            parse_create(&["C", "k", "COMPRESSION", "1.5"]),
            Err(r(BAD_COMPRESSION))
        );
        assert_eq!(
            parse_create(&["C", "k", "COMPRESSION"]),
            Err(ArgError::WrongArity)
        );
    }

    #[test]
    fn values_are_checked_in_order() {
        assert_eq!(
            parse_add(&["A", "k", "1", "0x10", "-0.0"]).map(|p| p.to_vec()),
            Ok(vec![1.0, 16.0, -0.0])
        );
        assert_eq!(
            parse_add(&["A", "k", "inf", "x"]),
            Err(r("ERR T-Digest: val parameter needs to be a finite number"))
        );
        assert_eq!(
            parse_add(&["A", "k", "nan"]),
            Err(r("ERR T-Digest: error parsing val parameter"))
        );
        assert_eq!(
            parse_quantiles(&["Q", "k", "2", "abc"]),
            Err(r("ERR T-Digest: quantile should be in [0,1]"))
        );
        assert_eq!(
            parse_cdf(&["C", "k", "inf", "-inf"]).map(|p| p.to_vec()),
            Ok(vec![f64::INFINITY, f64::NEG_INFINITY])
        );
        assert_eq!(
            parse_ranks(&["B", "k", "-1", "x"]),
            Err(r("ERR T-Digest: rank needs to be non negative"))
        );
        assert_eq!(
            parse_ranks(&["B", "k", "1.0"]),
            Err(r("ERR T-Digest: error parsing rank"))
        );
    }

    #[test]
    fn trimmed_mean() {
        assert_eq!(
            parse_trimmed_mean(&["T", "k", "0.1", "0.9"]),
            Ok((0.1, 0.9))
        );
        assert_eq!(
            parse_trimmed_mean(&["T", "k", "x", "y"]),
            Err(r("ERR T-Digest: error parsing low_cut_percentile"))
        );
        assert_eq!(
            parse_trimmed_mean(&["T", "k", "0", "2"]),
            Err(r(
                "ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]"
            ))
        );
        assert_eq!(
            parse_trimmed_mean(&["T", "k", "0.5", "0.5"]),
            Err(r(
                "ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile"
            ))
        );
    }

    #[test]
    fn merge() {
        let m = |a: &[&str]| parse_merge(a);
        assert_eq!(
            m(&["M", "d", "2", "a", "b"]),
            Ok(Merge {
                numkeys: 2,
                compression: None,
                override_dest: false
            })
        );
        assert_eq!(m(&["M", "d", "3", "a", "b"]), Err(ArgError::WrongArity));
        assert_eq!(
            m(&["M", "d", "0", "a"]),
            Err(r("ERR T-Digest: numkeys needs to be a positive integer"))
        );
        assert_eq!(
            m(&["M", "d", "x", "a"]),
            Err(r("ERR T-Digest: error parsing numkeys"))
        );
        assert_eq!(m(&["M", "d", "1", "a", "junk"]), Err(r(WRONG_KEYWORD)));
        assert_eq!(
            m(&["M", "d", "1", "a", "COMPRESSION"]),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            m(&["M", "d", "1", "a", "COMPRESSION", "OVERRIDE"]),
            Err(r(BAD_COMPRESSION))
        );
        // The first COMPRESSION counts; other words are ignored.
        assert_eq!(
            m(&[
                "M",
                "d",
                "1",
                "a",
                "compression",
                "7",
                "junk",
                "COMPRESSION",
                "9",
                "override"
            ]),
            Ok(Merge {
                numkeys: 1,
                compression: Some(7),
                override_dest: true
            })
        );
        let o = m(&["M", "d", "1", "a", "OVERRIDE"]).unwrap();
        assert!(o.use_max(true) && o.override_dest);
        let plain = m(&["M", "d", "1", "a"]).unwrap();
        assert!(!plain.use_max(true) && plain.use_max(false));
    }
}
