//! Arguments of valkey-bloom's BF.* commands and configs
//! (COMPAT-VALKEY-BLOOM.md §0 conventions, §2.4–§2.6, §3).
//!
//! Numbers go through Rust's own `str::parse` of the argument as UTF-8 (invalid
//! bytes fail, as their replacement character would), not the server's
//! parsers: `+10`, `010`, `.5` and `inf` parse. Keywords match when their
//! Unicode upper-case form equals the keyword (`ﬁlters` is FILTERS).

use crate::args::rust_num::{
    is_keyword, parse_i64_rust, parse_u32_rust, unit_rate, ERROR_RATE_RANGE, TIGHTENING_RANGE,
};
use crate::args::ArgError;

const BAD_ERROR_RATE: &str = "ERR bad error rate";
const CAPACITY_ZERO: &str = "ERR (capacity should be larger than 0)";
const BAD_CAPACITY: &str = "ERR bad capacity";
const BAD_EXPANSION: &str = "ERR bad expansion";
const BAD_TIGHTENING: &str = "ERR bad tightening ratio";

/// The configs a creation falls back on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Defaults {
    pub capacity: i64,
    pub fp_rate: f64,
    pub tightening: f64,
    /// 0 = non-scaling.
    pub expansion: u32,
}

/// BF.RESERVE key error_rate capacity [NONSCALING | EXPANSION expansion].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reserve {
    pub fp_rate: f64,
    pub capacity: i64,
    /// 0 = non-scaling.
    pub expansion: u32,
}

/// BF.INSERT key [option ...] [ITEMS item ...].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Insert {
    pub fp_rate: f64,
    pub capacity: i64,
    /// 0 = non-scaling.
    pub expansion: u32,
    pub tightening: f64,
    pub seed: Option<[u8; 32]>,
    pub nocreate: bool,
    pub validate_scale_to: Option<i64>,
    /// Index of the first item; `argv.len()` when there is none.
    pub items_at: usize,
}

/// The field of `BF.INFO key field`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoField {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
    Error,
    Tightening,
    MaxScaledCapacity,
}

fn error_rate(s: &[u8]) -> Result<f64, ArgError> {
    unit_rate(s, BAD_ERROR_RATE, ERROR_RATE_RANGE).map_err(ArgError::Reply)
}

fn tightening(s: &[u8]) -> Result<f64, ArgError> {
    unit_rate(s, BAD_TIGHTENING, TIGHTENING_RANGE).map_err(ArgError::Reply)
}

/// A capacity (also VALIDATESCALETO): 0 and unparsable/negative have their own texts.
fn capacity(s: &[u8]) -> Result<i64, ArgError> {
    match parse_i64_rust(s) {
        Some(0) => Err(ArgError::Reply(CAPACITY_ZERO)),
        Some(v) if v > 0 => Ok(v),
        _ => Err(ArgError::Reply(BAD_CAPACITY)),
    }
}

/// An expansion in [1, 4294967295].
fn expansion(s: &[u8]) -> Result<u32, ArgError> {
    parse_u32_rust(s)
        .filter(|&v| v >= 1)
        .ok_or(ArgError::Reply(BAD_EXPANSION))
}

/// BF.RESERVE (§2.4 steps 1–4, in order). `argv[0]` is the command name.
pub fn parse_reserve<A: AsRef<[u8]>>(argv: &[A], d: &Defaults) -> Result<Reserve, ArgError> {
    let arg = |i: usize| argv.get(i).map_or(&[][..], AsRef::as_ref);
    if !(4..=6).contains(&argv.len()) {
        return Err(ArgError::WrongArity);
    }
    let fp_rate = error_rate(arg(2))?;
    let capacity = capacity(arg(3))?;
    let expansion = match argv.len() {
        5 if is_keyword(arg(4), "NONSCALING") => 0,
        6 if is_keyword(arg(4), "EXPANSION") => expansion(arg(5))?,
        4 => d.expansion,
        _ => return Err(ArgError::Reply("ERROR")),
    };
    Ok(Reserve {
        fp_rate,
        capacity,
        expansion,
    })
}

/// BF.INSERT (§2.5 steps 1–4, without the memory-dependent §4.7 walk, which
/// the glue runs with [`crate::valkey_bloom::validate_scale_to`] when validating).
pub fn parse_insert<A: AsRef<[u8]>>(argv: &[A], d: &Defaults) -> Result<Insert, ArgError> {
    if argv.len() < 2 {
        return Err(ArgError::WrongArity);
    }
    let mut o = Insert {
        fp_rate: d.fp_rate,
        capacity: d.capacity,
        expansion: d.expansion,
        tightening: d.tightening,
        seed: None,
        nocreate: false,
        validate_scale_to: None,
        items_at: argv.len(),
    };
    let mut i = 2;
    while let Some(word) = argv.get(i) {
        let word = word.as_ref();
        let value = argv.get(i + 1).map(AsRef::as_ref);
        i += insert_option(&mut o, word, value)?;
        if is_keyword(word, "ITEMS") {
            if i >= argv.len() {
                return Err(ArgError::WrongArity);
            }
            o.items_at = i;
            break;
        }
    }
    if o.validate_scale_to.is_some() && o.expansion == 0 {
        return Err(ArgError::Reply(
            "ERR cannot use NONSCALING and VALIDATESCALETO options together",
        ));
    }
    Ok(o)
}

/// Applies one BF.INSERT option word; returns how many arguments it used.
fn insert_option(o: &mut Insert, word: &[u8], value: Option<&[u8]>) -> Result<usize, ArgError> {
    for flag in ["NONSCALING", "NOCREATE", "ITEMS"] {
        if is_keyword(word, flag) {
            match flag {
                "NONSCALING" => o.expansion = 0,
                "NOCREATE" => o.nocreate = true,
                _ => {}
            }
            return Ok(1);
        }
    }
    const VALUED: [&str; 6] = [
        "ERROR",
        "CAPACITY",
        "EXPANSION",
        "TIGHTENING",
        "SEED",
        "VALIDATESCALETO",
    ];
    let Some(key) = VALUED.into_iter().find(|k| is_keyword(word, k)) else {
        return Err(ArgError::Reply("ERR unknown argument received"));
    };
    let v = value.ok_or(ArgError::WrongArity)?;
    match key {
        "ERROR" => o.fp_rate = error_rate(v)?,
        "CAPACITY" => o.capacity = capacity(v)?,
        "EXPANSION" => o.expansion = expansion(v)?,
        "TIGHTENING" => o.tightening = tightening(v)?,
        "SEED" => {
            o.seed = Some(
                v.try_into()
                    .map_err(|_| ArgError::Reply("ERR invalid seed"))?,
            )
        }
        _ => o.validate_scale_to = Some(capacity(v)?),
    }
    Ok(2)
}

/// The field word of BF.INFO (keyword rule).
pub fn parse_info_field(arg: &[u8]) -> Result<InfoField, ArgError> {
    const FIELDS: [(&str, InfoField); 8] = [
        ("CAPACITY", InfoField::Capacity),
        ("SIZE", InfoField::Size),
        ("FILTERS", InfoField::Filters),
        ("ITEMS", InfoField::Items),
        ("EXPANSION", InfoField::Expansion),
        ("ERROR", InfoField::Error),
        ("TIGHTENING", InfoField::Tightening),
        ("MAXSCALEDCAPACITY", InfoField::MaxScaledCapacity),
    ];
    FIELDS
        .into_iter()
        .find(|(k, _)| is_keyword(arg, k))
        .map(|(_, f)| f)
        .ok_or(ArgError::Reply("ERR invalid information value"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::rust_num::parse_f64_rust;
    use crate::config::{parse_fp_rate_config, parse_tightening_config};

    const D: Defaults = Defaults {
        capacity: 100,
        fp_rate: 0.01,
        tightening: 0.5,
        expansion: 2,
    };

    fn reserve(args: &[&str]) -> Result<Reserve, ArgError> {
        let argv: Vec<&str> = ["BF.RESERVE", "k"].iter().chain(args).copied().collect();
        parse_reserve(&argv, &D)
    }

    fn insert(args: &[&[u8]]) -> Result<Insert, ArgError> {
        let mut argv: Vec<&[u8]> = vec![b"BF.INSERT", b"k"];
        argv.extend_from_slice(args);
        parse_insert(&argv, &D)
    }

    fn reply(s: &'static str) -> ArgError {
        ArgError::Reply(s)
    }

    #[test]
    fn rust_number_syntax() {
        for (s, v) in [
            ("+0.5", 0.5),
            (".5", 0.5),
            ("5.", 5.0),
            ("1E-2", 0.01),
            ("5e-324", 5e-324),
        ] {
            assert_eq!(parse_f64_rust(s.as_bytes()), Some(v), "{s}");
        }
        assert!(parse_f64_rust(b"inf").is_some_and(f64::is_infinite));
        assert!(parse_f64_rust(b"NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_f64_rust(b"1e-400"), Some(0.0));
        for s in [" 1", "0x1p-3", "", "1,5", "\u{fffd}"] {
            assert_eq!(parse_f64_rust(s.as_bytes()), None, "{s}");
        }
        assert_eq!(parse_f64_rust(b"0.5\xff"), None);
        for (s, v) in [("+10", 10), ("010", 10), ("-0", 0), ("00", 0), ("-7", -7)] {
            assert_eq!(parse_i64_rust(s.as_bytes()), Some(v), "{s}");
        }
        for s in ["", "+", "-", " 1", "1.0", "9223372036854775808"] {
            assert_eq!(parse_i64_rust(s.as_bytes()), None, "{s}");
        }
        assert_eq!(parse_u32_rust(b"+4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32_rust(b"-0"), None);
        assert_eq!(parse_u32_rust(b"4294967296"), None);
    }

    #[test]
    fn keyword_rule_is_unicode_upper_case() {
        assert!(is_keyword(b"nonscaling", "NONSCALING"));
        assert!(is_keyword("nonſcaling".as_bytes(), "NONSCALING"));
        assert!(is_keyword("ﬁlters".as_bytes(), "FILTERS"));
        assert!(is_keyword("ıtems".as_bytes(), "ITEMS"));
        assert!(!is_keyword(b"ITEM", "ITEMS"));
        assert!(!is_keyword(b"ITEMSS", "ITEMS"));
        assert!(!is_keyword(b"ITEMS\xff", "ITEMS"));
    }

    #[test]
    fn reserve_grammar_of_2_4() {
        let r = |fp, capacity, expansion| {
            Ok(Reserve {
                fp_rate: fp,
                capacity,
                expansion,
            })
        };
        assert_eq!(reserve(&["0.01", "10"]), r(0.01, 10, 2));
        assert_eq!(reserve(&["0.01", "+10", "nonscaling"]), r(0.01, 10, 0));
        assert_eq!(
            reserve(&["0.01", "010", "EXPANSION", "+4294967295"]),
            r(0.01, 10, u32::MAX)
        );
        assert_eq!(reserve(&["1e-310", "1"]), r(1e-310, 1, 2));
        assert_eq!(reserve(&["0.01"]), Err(ArgError::WrongArity));
        assert_eq!(
            reserve(&["0.1", "10", "EXPANSION", "2", "x"]),
            Err(ArgError::WrongArity)
        );
        assert_eq!(reserve(&["abc", "x"]), Err(reply("ERR bad error rate")));
        for fp in ["0", "1", "nan", "inf", "1e-400", "-0.5"] {
            assert_eq!(
                reserve(&[fp, "10"]),
                Err(reply("ERR (0 < error rate range < 1)")),
                "{fp}"
            );
        }
        assert_eq!(
            reserve(&["0.01", "0"]),
            Err(reply("ERR (capacity should be larger than 0)"))
        );
        assert_eq!(
            reserve(&["0.01", "-00"]),
            Err(reply("ERR (capacity should be larger than 0)"))
        );
        assert_eq!(reserve(&["0.01", "-5"]), Err(reply("ERR bad capacity")));
        assert_eq!(reserve(&["0.01", "1.5"]), Err(reply("ERR bad capacity")));
        assert_eq!(reserve(&["0.01", "10", "EXPANSION"]), Err(reply("ERROR")));
        assert_eq!(reserve(&["0.01", "10", "FOO"]), Err(reply("ERROR")));
        assert_eq!(
            reserve(&["0.01", "10", "NONSCALING", "x"]),
            Err(reply("ERROR"))
        );
        assert_eq!(
            reserve(&["0.01", "10", "EXPANSION", "0"]),
            Err(reply("ERR bad expansion"))
        );
        assert_eq!(
            reserve(&["0.01", "10", "EXPANSION", "-1"]),
            Err(reply("ERR bad expansion"))
        );
    }

    #[test]
    fn insert_options_of_2_5() {
        let o = insert(&[]).unwrap();
        assert_eq!(
            (o.capacity, o.fp_rate, o.expansion, o.items_at),
            (100, 0.01, 2, 2)
        );
        let seed = b"0123456789abcdefghijklmnopqrstuv";
        let o = insert(&[
            b"capacity",
            b"5",
            b"ERROR",
            b"0.05",
            b"TIGHTENING",
            b".3",
            b"NONSCALING",
            b"EXPANSION",
            b"4",
            b"SEED",
            seed,
            b"NOCREATE",
            b"ITEMS",
            b"ITEMS",
            b"x",
        ])
        .unwrap();
        assert_eq!(
            (o.capacity, o.fp_rate, o.tightening, o.expansion),
            (5, 0.05, 0.3, 4)
        );
        assert_eq!((o.seed, o.nocreate, o.items_at), (Some(*seed), true, 15));
        let o = insert(&[b"EXPANSION", b"4", b"NONSCALING", b"VALIDATESCALETO", b"7"]);
        assert_eq!(
            o,
            Err(reply(
                "ERR cannot use NONSCALING and VALIDATESCALETO options together"
            ))
        );
        assert_eq!(
            insert(&[b"VALIDATESCALETO", b"7"])
                .unwrap()
                .validate_scale_to,
            Some(7)
        );
        assert_eq!(
            insert(&[b"CAPACITY", b"abc", b"ERROR", b"abc"]),
            Err(reply("ERR bad capacity"))
        );
        assert_eq!(insert(&[b"ITEMS"]), Err(ArgError::WrongArity));
        assert_eq!(insert(&[b"CAPACITY"]), Err(ArgError::WrongArity));
        assert_eq!(
            insert(&[b"FOO", b"1"]),
            Err(reply("ERR unknown argument received"))
        );
        assert_eq!(insert(&[b"SEED", b"short"]), Err(reply("ERR invalid seed")));
        assert_eq!(
            insert(&[b"EXPANSION", b"0"]),
            Err(reply("ERR bad expansion"))
        );
        assert_eq!(
            insert(&[b"TIGHTENING", b"x"]),
            Err(reply("ERR bad tightening ratio"))
        );
        assert_eq!(
            insert(&[b"TIGHTENING", b"1"]),
            Err(reply("ERR (0 < tightening ratio range < 1)"))
        );
        assert_eq!(
            insert(&[b"VALIDATESCALETO", b"0"]),
            Err(reply("ERR (capacity should be larger than 0)"))
        );
        assert_eq!(parse_insert(&["BF.INSERT"], &D), Err(ArgError::WrongArity));
        let d0 = Defaults { expansion: 0, ..D };
        let argv = ["BF.INSERT", "k", "VALIDATESCALETO", "5"];
        assert!(parse_insert(&argv, &d0).is_err());
    }

    #[test]
    fn info_fields_and_configs() {
        assert_eq!(
            parse_info_field("ﬁlters".as_bytes()),
            Ok(InfoField::Filters)
        );
        assert_eq!(
            parse_info_field(b"maxscaledcapacity"),
            Ok(InfoField::MaxScaledCapacity)
        );
        assert_eq!(parse_info_field(b"error"), Ok(InfoField::Error));
        assert_eq!(
            parse_info_field(b"cap"),
            Err(reply("ERR invalid information value"))
        );
        assert_eq!(parse_fp_rate_config(b"1e-3"), Ok(0.001));
        assert_eq!(parse_fp_rate_config(b"5e-324"), Ok(5e-324));
        assert_eq!(
            parse_fp_rate_config(b"abc"),
            Err("Invalid floating-point value")
        );
        assert_eq!(
            parse_fp_rate_config(b"2"),
            Err("ERR (0 < error rate range < 1)")
        );
        assert_eq!(parse_tightening_config(b"+0.25"), Ok(0.25));
        assert_eq!(
            parse_tightening_config(b"0"),
            Err("ERR (0 < tightening ratio range < 1)")
        );
        assert_eq!(
            parse_tightening_config(b""),
            Err("Invalid floating-point value")
        );
    }
}
