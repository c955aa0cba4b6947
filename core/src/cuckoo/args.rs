//! CF.* argument parsing (docs/cuckoo.md §12).

use std::sync::OnceLock;

use crate::args::{
    find_word, in_range, items_start, lower_at, narrow, option_value, parse_i64, ranged_i64,
    ArgError, MAX_CAPACITY, MAX_EXPANSION,
};
use crate::config::Config;

/// Parameters for creating a cuckoo filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CfReserve {
    pub capacity: u64,
    pub bucket_size: u16,
    pub max_iterations: u16,
    pub expansion: u16,
}

/// CF.RESERVE key capacity [BUCKETSIZE bs] [MAXITERATIONS mi] [EXPANSION x]
/// (docs/cuckoo.md §12.1): each option is the first matching word anywhere (key included),
/// its value the next argument; options are checked in a fixed order.
pub fn parse_cf_reserve<A: AsRef<[u8]>>(argv: &[A], cfg: &Config) -> Result<CfReserve, ArgError> {
    if argv.len() < 3 || argv.len().is_multiple_of(2) {
        return Err(ArgError::WrongArity);
    }
    let capacity = argv
        .get(2)
        .and_then(|a| parse_i64(a.as_ref()))
        .ok_or(ArgError::Reply("Bad capacity"))?;
    let max_iterations = reserve_option(argv, &MAXITERATIONS, cfg.cf_max_iterations)?;
    let bucket_size = reserve_option(argv, &bucket_size_option(cfg), cfg.cf_bucket_size)?;
    let expansion = reserve_option(argv, &EXPANSION, cfg.cf_expansion_factor)?;
    if 2 * bucket_size > capacity || capacity > MAX_CAPACITY {
        return Err(ArgError::Reply(
            "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
        ));
    }
    Ok(CfReserve {
        capacity: narrow(capacity),
        bucket_size: narrow(bucket_size),
        max_iterations: narrow(max_iterations),
        expansion: narrow(expansion),
    })
}

/// A CF.RESERVE option word with its valid range and error texts.
struct CfOption {
    word: &'static str,
    parse_error: &'static str,
    min: i64,
    max: i64,
    range_error: &'static str,
}

const MAXITERATIONS: CfOption = CfOption {
    word: "MAXITERATIONS",
    parse_error: "Couldn't parse MAXITERATIONS",
    min: 1,
    max: 65535,
    range_error: "MAXITERATIONS: value must be in the range [1, 65535]",
};

const EXPANSION: CfOption = CfOption {
    word: "EXPANSION",
    parse_error: "Couldn't parse EXPANSION",
    min: 0,
    max: MAX_EXPANSION,
    range_error: "EXPANSION: value must be in the range [0, 32768]",
};

/// BUCKETSIZE's maximum is a configuration bound (docs/module.md §5).
fn bucket_size_option(cfg: &Config) -> CfOption {
    let max = cfg.cf_bucket_size_max();
    CfOption {
        word: "BUCKETSIZE",
        parse_error: "Couldn't parse BUCKETSIZE",
        min: 1,
        max,
        range_error: bucket_size_range_error(max),
    }
}

/// One CF.RESERVE option: `default` when the word is absent; a word without
/// a following argument is unparsable (RedisBloom reads past argv, docs/differences.md §1 item 1).
fn reserve_option<A: AsRef<[u8]>>(
    argv: &[A],
    opt: &CfOption,
    default: i64,
) -> Result<i64, ArgError> {
    let Some(i) = find_word(argv, opt.word) else {
        return Ok(default);
    };
    let value = argv
        .get(i + 1)
        .and_then(|a| parse_i64(a.as_ref()))
        .ok_or(ArgError::Reply(opt.parse_error))?;
    in_range(value, opt.min, opt.max, opt.range_error)
}

/// `BUCKETSIZE: value must be in the range [1, <max>]` for the current
/// maximum (1..=255, set by cf-initial-size). The texts are built once so
/// that errors stay `&'static str`.
fn bucket_size_range_error(max: i64) -> &'static str {
    static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        (0..=255)
            .map(|m| format!("BUCKETSIZE: value must be in the range [1, {m}]"))
            .collect()
    });
    usize::try_from(max).ok().and_then(|m| texts.get(m)).map_or(
        "BUCKETSIZE: value must be in the range [1, 255]",
        String::as_str,
    )
}

/// Parameters for CF.ADD / CF.ADDNX / CF.INSERT auto-creation, from the
/// configuration at the time of the call (docs/cuckoo.md §12.3 step 1).
pub fn cf_autocreate(cfg: &Config) -> CfReserve {
    CfReserve {
        capacity: narrow(cfg.cf_initial_size),
        bucket_size: narrow(cfg.cf_bucket_size),
        max_iterations: narrow(cfg.cf_max_iterations),
        expansion: narrow(cfg.cf_expansion_factor),
    }
}

/// Parsed CF.INSERT / CF.INSERTNX options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CfInsert {
    /// CAPACITY option, else cf-initial-size.
    pub capacity: u64,
    pub nocreate: bool,
    /// Index in argv of the first item (≥ 1 item guaranteed).
    pub items_at: usize,
}

impl CfInsert {
    /// Creation parameters for a missing key (when `nocreate` is false).
    pub fn reserve(&self, cfg: &Config) -> CfReserve {
        CfReserve {
            capacity: self.capacity,
            ..cf_autocreate(cfg)
        }
    }
}

/// CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item... (docs/cuckoo.md §12.3):
/// options classified by first letter, repeatable, any order.
pub fn parse_cf_insert<A: AsRef<[u8]>>(argv: &[A], cfg: &Config) -> Result<CfInsert, ArgError> {
    if argv.len() < 4 {
        return Err(ArgError::WrongArity);
    }
    let mut capacity = cfg.cf_initial_size;
    let mut nocreate = false;
    let mut marker = None;
    let mut i = 2;
    while let Some(arg) = argv.get(i).map(AsRef::as_ref) {
        match lower_at(arg, 0) {
            Some(b'c') => {
                let value =
                    parse_i64(option_value(argv, i)?).ok_or(ArgError::Reply("Bad capacity"))?;
                capacity = in_range(
                    value,
                    cfg.cf_initial_size_min(),
                    MAX_CAPACITY,
                    "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
                )?;
                i += 2;
            }
            Some(b'i') => {
                marker = Some(i);
                break;
            }
            Some(b'n') => {
                nocreate = true;
                i += 1;
            }
            _ => return Err(ArgError::Reply("Unknown argument received")),
        }
    }
    let items_at = items_start(marker, argv.len())?;
    Ok(CfInsert {
        capacity: narrow(capacity),
        nocreate,
        items_at,
    })
}

/// CF.SCANDUMP position: an integer ≥ 0 (docs/cuckoo.md §14).
pub fn parse_scandump_pos(arg: &[u8]) -> Result<i64, ArgError> {
    ranged_i64(arg, 0, i64::MAX, "Invalid position")
}

/// CF.LOADCHUNK position: a non-zero integer (docs/cuckoo.md §14).
pub fn parse_loadchunk_pos(arg: &[u8]) -> Result<i64, ArgError> {
    parse_i64(arg)
        .filter(|&v| v != 0)
        .ok_or(ArgError::Reply("Invalid position"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|s| s.as_bytes().to_vec()).collect()
    }

    fn reserve(line: &str) -> Result<CfReserve, ArgError> {
        parse_cf_reserve(&argv(line), &Config::default())
    }

    fn insert(line: &str) -> Result<CfInsert, ArgError> {
        parse_cf_insert(&argv(line), &Config::default())
    }

    fn reply(s: &'static str) -> ArgError {
        ArgError::Reply(s)
    }

    const CAP_RANGE: &str = "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]";

    #[test]
    fn reserve_defaults() {
        assert_eq!(
            reserve("CF.RESERVE k 1000"),
            Ok(CfReserve {
                capacity: 1000,
                bucket_size: 2,
                max_iterations: 20,
                expansion: 1
            })
        );
    }

    #[test]
    fn reserve_options_any_order() {
        assert_eq!(
            reserve("CF.RESERVE k 1000 expansion 0 BucketSize 4 MAXITERATIONS 500"),
            Ok(CfReserve {
                capacity: 1000,
                bucket_size: 4,
                max_iterations: 500,
                expansion: 0
            })
        );
        // First occurrence wins; unknown pairs are ignored.
        assert_eq!(
            reserve("CF.RESERVE k 1000 BUCKETSIZE 3 BUCKETSIZE x foo bar")
                .unwrap()
                .bucket_size,
            3
        );
    }

    #[test]
    fn reserve_arity() {
        assert_eq!(reserve("CF.RESERVE k"), Err(ArgError::WrongArity));
        assert_eq!(
            reserve("CF.RESERVE k 100 BUCKETSIZE"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            reserve("CF.RESERVE k x BUCKETSIZE"),
            Err(ArgError::WrongArity)
        );
        assert!(reserve("CF.RESERVE k 100 a b").is_ok());
    }

    #[test]
    fn reserve_capacity() {
        assert_eq!(reserve("CF.RESERVE k x"), Err(reply("Bad capacity")));
        assert_eq!(reserve("CF.RESERVE k 1e3"), Err(reply("Bad capacity")));
        // Capacity range is checked after all options.
        assert_eq!(
            reserve("CF.RESERVE k 0 MAXITERATIONS 0"),
            Err(reply(
                "MAXITERATIONS: value must be in the range [1, 65535]"
            ))
        );
        for line in [
            "CF.RESERVE k 3",
            "CF.RESERVE k -1",
            "CF.RESERVE k 0",
            "CF.RESERVE k 1073741825",
            "CF.RESERVE k 9 BUCKETSIZE 5",
        ] {
            assert_eq!(reserve(line), Err(reply(CAP_RANGE)), "{line}");
        }
        assert_eq!(reserve("CF.RESERVE k 4").unwrap().capacity, 4);
        assert_eq!(
            reserve("CF.RESERVE k 10 BUCKETSIZE 5").unwrap().capacity,
            10
        );
        assert_eq!(
            reserve("CF.RESERVE k 1073741824").unwrap().capacity,
            1 << 30
        );
    }

    #[test]
    fn reserve_option_errors() {
        let cases = [
            ("MAXITERATIONS x", "Couldn't parse MAXITERATIONS"),
            (
                "MAXITERATIONS 0",
                "MAXITERATIONS: value must be in the range [1, 65535]",
            ),
            (
                "MAXITERATIONS 65536",
                "MAXITERATIONS: value must be in the range [1, 65535]",
            ),
            ("BUCKETSIZE 1.0", "Couldn't parse BUCKETSIZE"),
            (
                "BUCKETSIZE 0",
                "BUCKETSIZE: value must be in the range [1, 255]",
            ),
            (
                "BUCKETSIZE 256",
                "BUCKETSIZE: value must be in the range [1, 255]",
            ),
            ("EXPANSION +1", "Couldn't parse EXPANSION"),
            (
                "EXPANSION -1",
                "EXPANSION: value must be in the range [0, 32768]",
            ),
            (
                "EXPANSION 32769",
                "EXPANSION: value must be in the range [0, 32768]",
            ),
        ];
        for (opt, want) in cases {
            assert_eq!(
                reserve(&format!("CF.RESERVE k 1000 {opt}")),
                Err(reply(want)),
                "{opt}"
            );
        }
        let ok = reserve("CF.RESERVE k 1000 MAXITERATIONS 65535 BUCKETSIZE 255 EXPANSION 32768");
        assert_eq!(
            ok,
            Ok(CfReserve {
                capacity: 1000,
                bucket_size: 255,
                max_iterations: 65535,
                expansion: 32768
            })
        );
    }

    #[test]
    fn reserve_option_order() {
        // MAXITERATIONS, then BUCKETSIZE, then EXPANSION, whatever the position.
        assert_eq!(
            reserve("CF.RESERVE k 100 EXPANSION x BUCKETSIZE x MAXITERATIONS x"),
            Err(reply("Couldn't parse MAXITERATIONS"))
        );
        assert_eq!(
            reserve("CF.RESERVE k 100 EXPANSION x BUCKETSIZE x MAXITERATIONS 5"),
            Err(reply("Couldn't parse BUCKETSIZE"))
        );
        assert_eq!(
            reserve("CF.RESERVE k 100 EXPANSION x BUCKETSIZE 2 MAXITERATIONS 5"),
            Err(reply("Couldn't parse EXPANSION"))
        );
    }

    #[test]
    fn reserve_option_word_last_never_reads_past_end() {
        // docs/differences.md §1 item 1: RedisBloom crashes on these.
        for opt in ["MAXITERATIONS", "BUCKETSIZE", "EXPANSION"] {
            assert_eq!(
                reserve(&format!("CF.RESERVE k 100 x {opt}")),
                Err(ArgError::Reply(match opt {
                    "MAXITERATIONS" => "Couldn't parse MAXITERATIONS",
                    "BUCKETSIZE" => "Couldn't parse BUCKETSIZE",
                    _ => "Couldn't parse EXPANSION",
                })),
                "{opt}"
            );
        }
        assert_eq!(
            reserve("CF.RESERVE k 100 x maxiterations"),
            Err(reply("Couldn't parse MAXITERATIONS"))
        );
    }

    #[test]
    fn reserve_key_named_like_an_option() {
        // Verified quirk: the value is taken from argv[2].
        let r = reserve("CF.RESERVE MAXITERATIONS 100").unwrap();
        assert_eq!((r.capacity, r.max_iterations), (100, 100));
        // BUCKETSIZE 100 from argv[2] then needs capacity ≥ 200.
        assert_eq!(reserve("CF.RESERVE bucketsize 100"), Err(reply(CAP_RANGE)));
        let r = reserve("CF.RESERVE EXPANSION 100").unwrap();
        assert_eq!((r.capacity, r.expansion), (100, 100));
    }

    #[test]
    fn reserve_bucket_size_max_from_config() {
        let mut cfg = Config::default();
        cfg.set("cf-initial-size", b"20").unwrap();
        assert_eq!(
            parse_cf_reserve(&argv("CF.RESERVE k 100 BUCKETSIZE 11"), &cfg),
            Err(reply("BUCKETSIZE: value must be in the range [1, 10]"))
        );
        assert_eq!(
            parse_cf_reserve(&argv("CF.RESERVE k 100 BUCKETSIZE 10"), &cfg)
                .unwrap()
                .bucket_size,
            10
        );
        cfg.set("cf-bucket-size", b"1").unwrap();
        cfg.set("cf-initial-size", b"2").unwrap();
        assert_eq!(
            parse_cf_reserve(&argv("CF.RESERVE k 100 BUCKETSIZE 2"), &cfg),
            Err(reply("BUCKETSIZE: value must be in the range [1, 1]"))
        );
    }

    #[test]
    fn reserve_defaults_from_config() {
        let mut cfg = Config::default();
        cfg.set("cf-bucket-size", b"4").unwrap();
        cfg.set("cf-max-iterations", b"7").unwrap();
        cfg.set("cf-expansion-factor", b"3").unwrap();
        assert_eq!(
            parse_cf_reserve(&argv("CF.RESERVE k 8"), &cfg),
            Ok(CfReserve {
                capacity: 8,
                bucket_size: 4,
                max_iterations: 7,
                expansion: 3
            })
        );
        assert_eq!(
            parse_cf_reserve(&argv("CF.RESERVE k 7"), &cfg),
            Err(reply(CAP_RANGE))
        );
    }

    #[test]
    fn autocreate_follows_config() {
        let mut cfg = Config::default();
        assert_eq!(
            cf_autocreate(&cfg),
            CfReserve {
                capacity: 1024,
                bucket_size: 2,
                max_iterations: 20,
                expansion: 1
            }
        );
        cfg.set("cf-initial-size", b"64").unwrap();
        cfg.set("cf-expansion-factor", b"0").unwrap();
        assert_eq!(
            cf_autocreate(&cfg),
            CfReserve {
                capacity: 64,
                bucket_size: 2,
                max_iterations: 20,
                expansion: 0
            }
        );
    }

    #[test]
    fn insert_basic() {
        assert_eq!(
            insert("CF.INSERT k ITEMS a b"),
            Ok(CfInsert {
                capacity: 1024,
                nocreate: false,
                items_at: 3
            })
        );
        let r = insert("CF.INSERTNX k cap 10 NOCREATE capacity 20 nx iTeMz a").unwrap();
        assert_eq!(
            r,
            CfInsert {
                capacity: 20,
                nocreate: true,
                items_at: 9
            }
        );
        assert_eq!(
            r.reserve(&Config::default()),
            CfReserve {
                capacity: 20,
                bucket_size: 2,
                max_iterations: 20,
                expansion: 1
            }
        );
        // Unknown words after the marker are items.
        assert_eq!(insert("CF.INSERT k I x y").unwrap().items_at, 3);
    }

    #[test]
    fn insert_capacity() {
        assert_eq!(
            insert("CF.INSERT k CAPACITY x ITEMS a"),
            Err(reply("Bad capacity"))
        );
        assert_eq!(
            insert("CF.INSERT k CAPACITY 04 ITEMS a"),
            Err(reply("Bad capacity"))
        );
        let range = reply("Capacity must be in the range [cf-bucket-size * 2, 1073741824]");
        for c in ["3", "0", "-5", "1073741825"] {
            assert_eq!(
                insert(&format!("CF.INSERT k CAPACITY {c} ITEMS a")),
                Err(range),
                "{c}"
            );
        }
        assert_eq!(
            insert("CF.INSERT k CAPACITY 4 ITEMS a").unwrap().capacity,
            4
        );
        assert_eq!(
            insert("CF.INSERT k CAPACITY 1073741824 ITEMS a")
                .unwrap()
                .capacity,
            1 << 30
        );
    }

    #[test]
    fn insert_capacity_minimum_follows_bucket_size() {
        let mut cfg = Config::default();
        cfg.set("cf-bucket-size", b"8").unwrap();
        let range = reply("Capacity must be in the range [cf-bucket-size * 2, 1073741824]");
        assert_eq!(
            parse_cf_insert(&argv("CF.INSERT k CAPACITY 15 ITEMS a"), &cfg),
            Err(range)
        );
        assert_eq!(
            parse_cf_insert(&argv("CF.INSERT k CAPACITY 16 ITEMS a"), &cfg)
                .unwrap()
                .capacity,
            16
        );
        cfg.set("cf-bucket-size", b"1").unwrap();
        assert_eq!(
            parse_cf_insert(&argv("CF.INSERT k CAPACITY 2 ITEMS a"), &cfg)
                .unwrap()
                .capacity,
            2
        );
    }

    #[test]
    fn insert_errors_and_arity() {
        assert_eq!(
            insert("CF.INSERT k FOO ITEMS a"),
            Err(reply("Unknown argument received"))
        );
        assert_eq!(
            insert("CF.INSERT k ERROR 0.1 ITEMS a"),
            Err(reply("Unknown argument received"))
        );
        assert_eq!(insert("CF.INSERT k ITEMS"), Err(ArgError::WrongArity));
        assert_eq!(
            insert("CF.INSERT k NOCREATE ITEMS"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            insert("CF.INSERT k NOCREATE NOCREATE"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            insert("CF.INSERT k NOCREATE CAPACITY"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            insert("CF.INSERT k CAPACITY 8 ITEMS"),
            Err(ArgError::WrongArity)
        );
        assert_eq!(
            insert("CF.INSERT k CAPACITY ITEMS a"),
            Err(reply("Bad capacity"))
        );
    }

    #[test]
    fn positions() {
        assert_eq!(parse_scandump_pos(b"0"), Ok(0));
        assert_eq!(parse_scandump_pos(b"57"), Ok(57));
        assert_eq!(parse_scandump_pos(b"-1"), Err(reply("Invalid position")));
        assert_eq!(parse_scandump_pos(b"x"), Err(reply("Invalid position")));
        assert_eq!(parse_loadchunk_pos(b"1"), Ok(1));
        assert_eq!(parse_loadchunk_pos(b"-3"), Ok(-3));
        assert_eq!(parse_loadchunk_pos(b"0"), Err(reply("Invalid position")));
        assert_eq!(parse_loadchunk_pos(b"1.5"), Err(reply("Invalid position")));
    }
}
