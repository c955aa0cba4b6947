//! BF.* argument parsing (docs/bloom.md §8).

use crate::args::{
    find_word, in_range, items_start, lower_at, narrow, option_value, parse_f64, parse_i64,
    ranged_i64, ArgError, MAX_CAPACITY, MAX_EXPANSION,
};
use crate::config::{Config, MAX_ERROR_RATE};

/// Parameters for creating a Bloom chain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BfReserve {
    /// In (0, 0.25].
    pub error_rate: f64,
    /// In [1, 1073741824].
    pub capacity: u64,
    /// Growth factor in [0, 32768]; 0 only together with `nonscaling`.
    pub expansion: u32,
    pub nonscaling: bool,
}

/// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
/// (docs/bloom.md §8.1 steps 1–4, in that order).
pub fn parse_bf_reserve<A: AsRef<[u8]>>(argv: &[A], cfg: &Config) -> Result<BfReserve, ArgError> {
    if !(4..=7).contains(&argv.len()) {
        return Err(ArgError::WrongArity);
    }
    let arg = |i: usize| argv.get(i).map_or(&[][..], AsRef::as_ref);
    let error_rate = parse_f64(arg(2)).ok_or(ArgError::Reply("ERR bad error rate"))?;
    let error_rate = check_error_rate(error_rate).ok_or(ArgError::Reply(
        "ERR error rate must be in the range (0.000000, 1.000000)",
    ))?;
    let capacity = parse_i64(arg(3)).ok_or(ArgError::Reply("ERR bad capacity"))?;
    let capacity = in_range(
        capacity,
        1,
        MAX_CAPACITY,
        "ERR capacity must be in the range [1, 1073741824]",
    )?;
    // Both words are searched over the whole list, key included (docs/differences.md §2).
    let mut nonscaling = cfg.bf_expansion_factor == 0 || find_word(argv, "NONSCALING").is_some();
    let mut expansion = cfg.bf_expansion_factor;
    if let Some(i) = find_word(argv, "EXPANSION") {
        let value = argv.get(i + 1).ok_or(ArgError::Reply("ERR no expansion"))?;
        expansion = parse_i64(value.as_ref()).ok_or(ArgError::Reply("ERR bad expansion"))?;
        if expansion == 0 {
            nonscaling = true;
        } else if nonscaling {
            return Err(ArgError::Reply("Nonscaling filters cannot expand"));
        }
        in_range(
            expansion,
            0,
            MAX_EXPANSION,
            "ERR expansion must be in the range [0, 32768]",
        )?;
    }
    Ok(BfReserve {
        error_rate,
        capacity: narrow(capacity),
        expansion: narrow(expansion),
        nonscaling,
    })
}

/// `Some(rate)` if 0 < rate < 1, with rates above 0.25 capped to 0.25.
fn check_error_rate(rate: f64) -> Option<f64> {
    (rate > 0.0 && rate < 1.0).then_some(rate.min(MAX_ERROR_RATE))
}

/// Parameters for BF.ADD / BF.MADD auto-creation, from the configuration at
/// the time of the call (docs/bloom.md §8.2).
pub fn bf_autocreate(cfg: &Config) -> BfReserve {
    BfReserve {
        error_rate: cfg.bf_error_rate,
        capacity: narrow(cfg.bf_initial_size),
        expansion: narrow(cfg.bf_expansion_factor),
        nonscaling: cfg.bf_expansion_factor == 0,
    }
}

/// Parsed BF.INSERT options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BfInsert {
    pub capacity: u64,
    pub error_rate: f64,
    pub expansion: u32,
    pub nonscaling: bool,
    pub nocreate: bool,
    /// Index in argv of the first item (≥ 1 item guaranteed).
    pub items_at: usize,
}

impl BfInsert {
    /// Creation parameters for a missing key (when `nocreate` is false).
    pub fn reserve(&self) -> BfReserve {
        BfReserve {
            error_rate: self.error_rate,
            capacity: self.capacity,
            expansion: self.expansion,
            nonscaling: self.nonscaling,
        }
    }
}

/// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING]
/// ITEMS item... (docs/bloom.md §8.3): options are classified by their first letter, may
/// repeat (last wins); range errors are reported while scanning.
pub fn parse_bf_insert<A: AsRef<[u8]>>(argv: &[A], cfg: &Config) -> Result<BfInsert, ArgError> {
    if argv.len() < 4 {
        return Err(ArgError::WrongArity);
    }
    let mut capacity = cfg.bf_initial_size;
    let mut expansion = cfg.bf_expansion_factor;
    let mut error_rate = cfg.bf_error_rate;
    let mut nonscaling = cfg.bf_expansion_factor == 0;
    let mut nocreate = false;
    let mut marker = None;
    let mut i = 2;
    while let Some(arg) = argv.get(i).map(AsRef::as_ref) {
        match lower_at(arg, 0) {
            Some(b'i') => {
                marker = Some(i);
                break;
            }
            Some(b'e') => {
                let value = option_value(argv, i)?;
                if lower_at(arg, 1) == Some(b'r') {
                    error_rate = parse_f64(value)
                        .and_then(check_error_rate)
                        .ok_or(ArgError::Reply("Bad error rate"))?;
                } else {
                    expansion = ranged_i64(value, 0, MAX_EXPANSION, "Bad expansion")?;
                }
                i += 2;
            }
            Some(b'c') => {
                capacity = ranged_i64(option_value(argv, i)?, 1, MAX_CAPACITY, "Bad capacity")?;
                i += 2;
            }
            Some(b'n') => {
                // 1–2 letter tokens have no third letter: NONSCALING
                // (docs/differences.md §1 item 13).
                if lower_at(arg, 2) == Some(b'c') {
                    nocreate = true;
                } else {
                    nonscaling = true;
                }
                i += 1;
            }
            _ => return Err(ArgError::Reply("Unknown argument received")),
        }
    }
    let items_at = items_start(marker, argv.len())?;
    Ok(BfInsert {
        capacity: narrow(capacity),
        error_rate,
        expansion: narrow(expansion),
        nonscaling: nonscaling || expansion == 0,
        nocreate,
        items_at,
    })
}

/// Field selector of BF.INFO (docs/bloom.md §8.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoField {
    Capacity,
    Size,
    Filters,
    Items,
    Expansion,
}

/// BF.INFO field word: the exact word, case-insensitive.
pub fn parse_info_field(arg: &[u8]) -> Result<InfoField, ArgError> {
    const FIELDS: [(&str, InfoField); 5] = [
        ("CAPACITY", InfoField::Capacity),
        ("SIZE", InfoField::Size),
        ("FILTERS", InfoField::Filters),
        ("ITEMS", InfoField::Items),
        ("EXPANSION", InfoField::Expansion),
    ];
    FIELDS
        .iter()
        .find(|(word, _)| arg.eq_ignore_ascii_case(word.as_bytes()))
        .map(|&(_, field)| field)
        .ok_or(ArgError::Reply("Invalid information value"))
}

/// BF.SCANDUMP iterator (checked after the key, docs/bloom.md §8.8).
pub fn parse_scandump_iter(arg: &[u8]) -> Result<i64, ArgError> {
    parse_i64(arg).ok_or(ArgError::Reply("Second argument must be numeric"))
}

/// BF.LOADCHUNK iterator (checked before the key, docs/bloom.md §8.8); same check as
/// SCANDUMP but this reply carries the ERR prefix.
pub fn parse_loadchunk_iter(arg: &[u8]) -> Result<i64, ArgError> {
    parse_i64(arg).ok_or(ArgError::Reply("ERR Second argument must be numeric"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|s| s.as_bytes().to_vec()).collect()
    }

    fn reserve(line: &str) -> Result<BfReserve, ArgError> {
        parse_bf_reserve(&argv(line), &Config::default())
    }

    fn reserve_cfg(line: &str, name: &str, value: &str) -> Result<BfReserve, ArgError> {
        let mut cfg = Config::default();
        cfg.set(name, value.as_bytes()).unwrap();
        parse_bf_reserve(&argv(line), &cfg)
    }

    fn insert(line: &str) -> Result<BfInsert, ArgError> {
        parse_bf_insert(&argv(line), &Config::default())
    }

    fn reply(s: &'static str) -> ArgError {
        ArgError::Reply(s)
    }

    #[test]
    fn reserve_plain() {
        assert_eq!(
            reserve("BF.RESERVE k 0.01 100"),
            Ok(BfReserve {
                error_rate: 0.01,
                capacity: 100,
                expansion: 2,
                nonscaling: false
            })
        );
    }

    #[test]
    fn reserve_arity() {
        assert_eq!(reserve("BF.RESERVE k 0.01"), Err(ArgError::WrongArity));
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 a b c d"),
            Err(ArgError::WrongArity)
        );
        assert!(reserve("BF.RESERVE k 0.01 10 a b c").is_ok());
        // Arity comes before anything else.
        assert_eq!(reserve("BF.RESERVE k x"), Err(ArgError::WrongArity));
    }

    #[test]
    fn reserve_error_rate() {
        assert_eq!(
            reserve("BF.RESERVE k x 10"),
            Err(reply("ERR bad error rate"))
        );
        assert_eq!(
            reserve("BF.RESERVE k nan 10"),
            Err(reply("ERR bad error rate"))
        );
        let range = reply("ERR error rate must be in the range (0.000000, 1.000000)");
        for e in ["0", "1", "-0.1", "inf", "2"] {
            assert_eq!(reserve(&format!("BF.RESERVE k {e} 10")), Err(range), "{e}");
        }
        // Error rate is checked before the capacity.
        assert_eq!(reserve("BF.RESERVE k 1 x"), Err(range));
        assert_eq!(reserve("BF.RESERVE k 0.5 10").unwrap().error_rate, 0.25);
        assert_eq!(reserve("BF.RESERVE k 0.25 10").unwrap().error_rate, 0.25);
        assert_eq!(reserve("BF.RESERVE k 0x1p-3 10").unwrap().error_rate, 0.125);
    }

    #[test]
    fn reserve_capacity() {
        assert_eq!(
            reserve("BF.RESERVE k 0.1 x"),
            Err(reply("ERR bad capacity"))
        );
        assert_eq!(
            reserve("BF.RESERVE k 0.1 1.5"),
            Err(reply("ERR bad capacity"))
        );
        let range = reply("ERR capacity must be in the range [1, 1073741824]");
        assert_eq!(reserve("BF.RESERVE k 0.1 0"), Err(range));
        assert_eq!(reserve("BF.RESERVE k 0.1 -1"), Err(range));
        assert_eq!(reserve("BF.RESERVE k 0.1 1073741825"), Err(range));
        assert_eq!(
            reserve("BF.RESERVE k 0.1 1073741824").unwrap().capacity,
            1 << 30
        );
        // Capacity is checked before the expansion.
        assert_eq!(reserve("BF.RESERVE k 0.1 0 EXPANSION"), Err(range));
    }

    #[test]
    fn reserve_nonscaling_anywhere() {
        assert!(
            reserve("BF.RESERVE k 0.01 10 nonScaling")
                .unwrap()
                .nonscaling
        );
        // The key itself counts (verified quirk).
        assert!(reserve("BF.RESERVE NONSCALING 0.01 10").unwrap().nonscaling);
        assert!(
            !reserve("BF.RESERVE k 0.01 10 NONSCALINGX")
                .unwrap()
                .nonscaling
        );
        // Unknown extra arguments are ignored.
        assert!(reserve("BF.RESERVE k 0.01 10 foo").is_ok());
    }

    #[test]
    fn reserve_expansion() {
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION 4")
                .unwrap()
                .expansion,
            4
        );
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION"),
            Err(reply("ERR no expansion"))
        );
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION x"),
            Err(reply("ERR bad expansion"))
        );
        // Key named EXPANSION: its "value" is the error rate argument.
        assert_eq!(
            reserve("BF.RESERVE EXPANSION 0.01 10"),
            Err(reply("ERR bad expansion"))
        );
        assert_eq!(
            reserve("BF.RESERVE EXPANSION 0.01 10 EXPANSION 3"),
            Err(reply("ERR bad expansion"))
        );
        // First occurrence wins.
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION 3 EXPANSION")
                .unwrap()
                .expansion,
            3
        );
        let range = reply("ERR expansion must be in the range [0, 32768]");
        assert_eq!(reserve("BF.RESERVE k 0.01 10 EXPANSION 32769"), Err(range));
        assert_eq!(reserve("BF.RESERVE k 0.01 10 EXPANSION -1"), Err(range));
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION 32768")
                .unwrap()
                .expansion,
            32768
        );
    }

    #[test]
    fn reserve_expansion_zero_is_nonscaling() {
        let r = reserve("BF.RESERVE k 0.01 10 EXPANSION 0").unwrap();
        assert!(r.nonscaling);
        assert_eq!(r.expansion, 0);
        assert!(
            reserve("BF.RESERVE k 0.01 10 NONSCALING EXPANSION 0")
                .unwrap()
                .nonscaling
        );
    }

    #[test]
    fn reserve_nonscaling_conflict() {
        let conflict = reply("Nonscaling filters cannot expand");
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 NONSCALING EXPANSION 2"),
            Err(conflict)
        );
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION 2 NONSCALING"),
            Err(conflict)
        );
        // The conflict is detected before the range check.
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION -1 NONSCALING"),
            Err(conflict)
        );
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION 99999 NONSCALING"),
            Err(conflict)
        );
        // ... but after the parse check.
        assert_eq!(
            reserve("BF.RESERVE k 0.01 10 EXPANSION x NONSCALING"),
            Err(reply("ERR bad expansion"))
        );
    }

    #[test]
    fn reserve_with_expansion_factor_zero() {
        let r = reserve_cfg("BF.RESERVE k 0.01 10", "bf-expansion-factor", "0").unwrap();
        assert!(r.nonscaling);
        assert_eq!(r.expansion, 0);
        assert_eq!(
            reserve_cfg(
                "BF.RESERVE k 0.01 10 EXPANSION 2",
                "bf-expansion-factor",
                "0"
            ),
            Err(reply("Nonscaling filters cannot expand"))
        );
        let r = reserve_cfg("BF.RESERVE k 0.01 10", "bf-expansion-factor", "7").unwrap();
        assert_eq!((r.expansion, r.nonscaling), (7, false));
    }

    #[test]
    fn autocreate_follows_config() {
        let mut cfg = Config::default();
        assert_eq!(
            bf_autocreate(&cfg),
            BfReserve {
                error_rate: 0.01,
                capacity: 100,
                expansion: 2,
                nonscaling: false
            }
        );
        cfg.set("bf-expansion-factor", b"0").unwrap();
        cfg.set("bf-initial-size", b"5").unwrap();
        cfg.set("bf-error-rate", b"0.9").unwrap();
        assert_eq!(
            bf_autocreate(&cfg),
            BfReserve {
                error_rate: 0.25,
                capacity: 5,
                expansion: 0,
                nonscaling: true
            }
        );
    }

    #[test]
    fn insert_defaults() {
        assert_eq!(
            insert("BF.INSERT k ITEMS a b"),
            Ok(BfInsert {
                capacity: 100,
                error_rate: 0.01,
                expansion: 2,
                nonscaling: false,
                nocreate: false,
                items_at: 3,
            })
        );
    }

    #[test]
    fn insert_all_options_any_order_last_wins() {
        let r = insert("BF.INSERT k ERROR 0.1 CAPACITY 5 capacity 50 EXPANSION 4 NOCREATE NONSCALING error 0.2 ITEMS a")
            .unwrap();
        assert_eq!(r.capacity, 50);
        assert_eq!(r.error_rate, 0.2);
        assert_eq!(r.expansion, 4);
        assert!(r.nonscaling && r.nocreate);
        assert_eq!(r.items_at, 15);
        let created = r.reserve();
        assert_eq!((created.capacity, created.error_rate), (50, 0.2));
    }

    #[test]
    fn insert_first_letter_classification() {
        let r = insert("BF.INSERT k c 7 er 0.05 e 3 iTeMz a").unwrap();
        assert_eq!(
            (r.capacity, r.error_rate, r.expansion, r.items_at),
            (7, 0.05, 3, 9)
        );
        // `eXPANSION`-like words without `r` second letter are expansion.
        assert_eq!(insert("BF.INSERT k ex 9 I a").unwrap().expansion, 9);
        assert_eq!(
            insert("BF.INSERT k ERRORS 0.3 I a").unwrap().error_rate,
            0.25
        );
        // Unknown words after the marker are items.
        assert_eq!(insert("BF.INSERT k ITEMS x NOPE").unwrap().items_at, 3);
    }

    #[test]
    fn insert_n_tokens() {
        let ns = |line: &str| insert(line).map(|r| (r.nonscaling, r.nocreate));
        assert_eq!(ns("BF.INSERT k NONSCALING ITEMS a"), Ok((true, false)));
        assert_eq!(ns("BF.INSERT k NOCREATE ITEMS a"), Ok((false, true)));
        assert_eq!(ns("BF.INSERT k nxc ITEMS a"), Ok((false, true)));
        assert_eq!(ns("BF.INSERT k nx ITEMS a"), Ok((true, false)));
        // 1–2 character tokens are NONSCALING (docs/differences.md §1 item 13).
        assert_eq!(ns("BF.INSERT k n ITEMS a"), Ok((true, false)));
        assert_eq!(ns("BF.INSERT k NO ITEMS a"), Ok((true, false)));
    }

    #[test]
    fn insert_expansion_zero_is_nonscaling() {
        let r = insert("BF.INSERT k EXPANSION 0 ITEMS a").unwrap();
        assert_eq!((r.expansion, r.nonscaling), (0, true));
        // No conflict error in BF.INSERT.
        let r = insert("BF.INSERT k NONSCALING EXPANSION 3 ITEMS a").unwrap();
        assert_eq!((r.expansion, r.nonscaling), (3, true));
    }

    #[test]
    fn insert_expansion_does_not_clear_config_nonscaling() {
        let mut cfg = Config::default();
        cfg.set("bf-expansion-factor", b"0").unwrap();
        let r = parse_bf_insert(&argv("BF.INSERT k EXPANSION 4 ITEMS a"), &cfg).unwrap();
        assert_eq!((r.expansion, r.nonscaling), (4, true));
        let r = parse_bf_insert(&argv("BF.INSERT k ITEMS a"), &cfg).unwrap();
        assert_eq!((r.expansion, r.nonscaling), (0, true));
    }

    #[test]
    fn insert_range_errors() {
        for e in ["0", "1", "x", "-0.5", "nan", "inf", "1e-400"] {
            assert_eq!(
                insert(&format!("BF.INSERT k ERROR {e} ITEMS a")),
                Err(reply("Bad error rate")),
                "{e}"
            );
        }
        for c in ["0", "-1", "1073741825", "x", "01"] {
            assert_eq!(
                insert(&format!("BF.INSERT k CAPACITY {c} ITEMS a")),
                Err(reply("Bad capacity")),
                "{c}"
            );
        }
        assert_eq!(
            insert("BF.INSERT k CAPACITY 1073741824 ITEMS a")
                .unwrap()
                .capacity,
            1 << 30
        );
        for x in ["-1", "32769", "x"] {
            assert_eq!(
                insert(&format!("BF.INSERT k EXPANSION {x} ITEMS a")),
                Err(reply("Bad expansion")),
                "{x}"
            );
        }
        // Range errors come during the scan, before the items check.
        assert_eq!(
            insert("BF.INSERT k CAPACITY 0 x"),
            Err(reply("Bad capacity"))
        );
    }

    #[test]
    fn insert_unknown_argument() {
        assert_eq!(
            insert("BF.INSERT k FOO ITEMS a"),
            Err(reply("Unknown argument received"))
        );
        assert_eq!(
            insert("BF.INSERT k  ITEMS a"),
            Err(reply("Unknown argument received"))
        );
        // An unknown word stops the scan before a missing marker is noticed.
        assert_eq!(
            insert("BF.INSERT k NOCREATE FOO"),
            Err(reply("Unknown argument received"))
        );
    }

    #[test]
    fn insert_arity() {
        assert_eq!(insert("BF.INSERT k ITEMS"), Err(ArgError::WrongArity));
        assert_eq!(
            insert("BF.INSERT k NOCREATE ITEMS"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            insert("BF.INSERT k NOCREATE NONSCALING"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(insert("BF.INSERT k ITEMS a CAPACITY").unwrap().items_at, 3);
        // Option missing its value.
        assert_eq!(
            insert("BF.INSERT k NOCREATE CAPACITY"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            insert("BF.INSERT k NOCREATE ERROR"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            insert("BF.INSERT k NOCREATE EXPANSION"),
            Err(ArgError::WrongArity)
        );
        // A value is consumed even if it looks like the marker.
        assert_eq!(
            insert("BF.INSERT k CAPACITY ITEMS a"),
            Err(reply("Bad capacity"))
        );
        assert_eq!(
            insert("BF.INSERT k CAPACITY 5 ITEMS"),
            Err(ArgError::WrongArity)
        );
    }

    #[test]
    fn info_field() {
        assert_eq!(parse_info_field(b"capacity"), Ok(InfoField::Capacity));
        assert_eq!(parse_info_field(b"Size"), Ok(InfoField::Size));
        assert_eq!(parse_info_field(b"FILTERS"), Ok(InfoField::Filters));
        assert_eq!(parse_info_field(b"items"), Ok(InfoField::Items));
        assert_eq!(parse_info_field(b"expansion"), Ok(InfoField::Expansion));
        for bad in [&b"cap"[..], b"ITEMSX", b"", b"EXPANSION "] {
            assert_eq!(
                parse_info_field(bad),
                Err(reply("Invalid information value"))
            );
        }
    }

    #[test]
    fn iterators() {
        assert_eq!(parse_scandump_iter(b"-5"), Ok(-5));
        assert_eq!(
            parse_scandump_iter(b"x"),
            Err(reply("Second argument must be numeric"))
        );
        assert_eq!(parse_loadchunk_iter(b"145"), Ok(145));
        assert_eq!(
            parse_loadchunk_iter(b"1.0"),
            Err(reply("ERR Second argument must be numeric"))
        );
    }
}
