//! Module configuration (docs/module.md §5): the eight `bf-*` / `cf-*` settings, their
//! setter validation and error texts, and the legacy module-load arguments.

mod valkey_bloom;

pub use valkey_bloom::{
    parse_fp_rate_config, parse_tightening_config, BloomFlavor, IntConfig, ValkeyBloomConfig,
    CAPACITY, EXPANSION, MEMORY_LIMIT,
};

use crate::args::{parse_f64, parse_i64, MAX_CAPACITY, MAX_EXPANSION};

/// Configuration names as registered with Redis, in `Config` field order.
pub const NAMES: [&str; 8] = [
    "bf-error-rate",
    "bf-initial-size",
    "bf-expansion-factor",
    "cf-bucket-size",
    "cf-initial-size",
    "cf-max-iterations",
    "cf-expansion-factor",
    "cf-max-expansions",
];

/// Default values as `CONFIG GET` shows them, in `NAMES` order.
/// `cf-max-expansions` until set.
pub const DEFAULT_CF_MAX_EXPANSIONS: i64 = 32;

const DEFAULT_TEXT: [&str; 8] = ["0.01", "100", "2", "2", "1024", "20", "1", "32"];

/// Error rates above this are stored as this (docs/differences.md §3 "error-rate cap").
pub const MAX_ERROR_RATE: f64 = 0.25;
const MAX_ERROR_RATE_TEXT: &str = "0.25";

/// Largest bucket size, before cf-initial-size lowers it.
const MAX_BUCKET_SIZE: i64 = 255;
/// Smallest cf-initial-size, before cf-bucket-size changes it.
const MIN_CF_INITIAL_SIZE: i64 = 4;

/// Legacy module-load argument names and the settings they map to.
const LEGACY_ARGS: [(&str, &str); 3] = [
    ("ERROR_RATE", "bf-error-rate"),
    ("INITIAL_SIZE", "bf-initial-size"),
    ("CF_MAX_EXPANSIONS", "cf-max-expansions"),
];

/// Current configuration. Read the public fields freely; change them only
/// through [`Config::set`] so that ranges, interlocked bounds and the
/// `CONFIG GET` text stay consistent.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub bf_error_rate: f64,
    pub bf_initial_size: i64,
    pub bf_expansion_factor: i64,
    pub cf_bucket_size: i64,
    pub cf_initial_size: i64,
    pub cf_max_iterations: i64,
    pub cf_expansion_factor: i64,
    pub cf_max_expansions: i64,
    /// cf-bucket-size has been set at least once (raises the
    /// cf-initial-size minimum to 2 × bucket size).
    bucket_size_set: bool,
    /// cf-initial-size has been set at least once (lowers the
    /// cf-bucket-size maximum to half of it).
    initial_size_set: bool,
    /// Last accepted text of each setting, in `NAMES` order.
    text: [String; 8],
    /// The flavour switch and valkey-bloom's own configs.
    pub valkey_bloom: ValkeyBloomConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bf_error_rate: 0.01,
            bf_initial_size: 100,
            bf_expansion_factor: 2,
            cf_bucket_size: 2,
            cf_initial_size: 1024,
            cf_max_iterations: 20,
            cf_expansion_factor: 1,
            cf_max_expansions: DEFAULT_CF_MAX_EXPANSIONS,
            bucket_size_set: false,
            initial_size_set: false,
            text: DEFAULT_TEXT.map(String::from),
            valkey_bloom: ValkeyBloomConfig::default(),
        }
    }
}

impl Config {
    /// Current maximum of cf-bucket-size (also bounds CF.RESERVE BUCKETSIZE
    /// and CF.LOADCHUNK headers): 255, or min(cf-initial-size / 2, 255) once
    /// cf-initial-size has been set.
    pub fn cf_bucket_size_max(&self) -> i64 {
        if self.initial_size_set {
            (self.cf_initial_size / 2).min(MAX_BUCKET_SIZE)
        } else {
            MAX_BUCKET_SIZE
        }
    }

    /// Current minimum of cf-initial-size (also of CF.INSERT CAPACITY): 4, or
    /// 2 × cf-bucket-size once cf-bucket-size has been set.
    pub fn cf_initial_size_min(&self) -> i64 {
        if self.bucket_size_set {
            2 * self.cf_bucket_size
        } else {
            MIN_CF_INITIAL_SIZE
        }
    }

    /// Validates and stores a setting (the CONFIG SET callback). Errors are
    /// the exact texts of docs/module.md §5.
    pub fn set(&mut self, name: &str, value: &[u8]) -> Result<(), String> {
        let index = NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .ok_or_else(|| format!("Unknown configuration `{name}`"))?;
        let name = NAMES.get(index).copied().unwrap_or_default();
        let text = match self.int_setting(index) {
            None => self.set_error_rate(name, value)?,
            Some((slot, min, max)) => {
                let v = parse_i64(value).ok_or_else(|| invalid_value(name))?;
                if !(min..=max).contains(&v) {
                    return Err(format!(
                        "Value for `{name}` must be in the range [{min}, {max}]"
                    ));
                }
                *slot = v;
                String::from_utf8_lossy(value).into_owned()
            }
        };
        self.bucket_size_set |= name == "cf-bucket-size";
        self.initial_size_set |= name == "cf-initial-size";
        if let Some(stored) = self.text.get_mut(index) {
            *stored = text;
        }
        Ok(())
    }

    /// The last accepted text of a setting (CONFIG GET callback).
    pub fn get(&self, name: &str) -> Option<String> {
        NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .and_then(|i| self.text.get(i))
            .cloned()
    }

    /// Applies module-load arguments: `<name> <value>` pairs with the legacy
    /// names of docs/module.md §5; a single empty argument means none.
    /// valkey-bloom's `bloom-<name> <value>` arguments may stand anywhere
    /// among them.
    pub fn apply_module_args<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<(), String> {
        let args = self.valkey_bloom.apply_module_args(args)?;
        if let [only] = args.as_slice() {
            if only.as_ref().is_empty() {
                return Ok(());
            }
        }
        if !args.len().is_multiple_of(2) {
            return Err(format!(
                "Invalid number of module arguments ({}): expected <name> <value> pairs",
                args.len()
            ));
        }
        for pair in args.chunks_exact(2) {
            if let [name, value] = pair {
                let name = name.as_ref();
                let setting = module_arg_setting(name).ok_or_else(|| {
                    format!(
                        "Unknown module argument `{}`",
                        String::from_utf8_lossy(name)
                    )
                })?;
                self.set(setting, value.as_ref())?;
            }
        }
        Ok(())
    }

    /// The integer field at `NAMES[index]` with its current bounds; `None` for
    /// bf-error-rate, the only floating-point setting.
    fn int_setting(&mut self, index: usize) -> Option<(&mut i64, i64, i64)> {
        let bucket_max = self.cf_bucket_size_max();
        let initial_min = self.cf_initial_size_min();
        match index {
            1 => Some((&mut self.bf_initial_size, 1, MAX_CAPACITY)),
            2 => Some((&mut self.bf_expansion_factor, 0, MAX_EXPANSION)),
            3 => Some((&mut self.cf_bucket_size, 1, bucket_max)),
            4 => Some((&mut self.cf_initial_size, initial_min, MAX_CAPACITY)),
            5 => Some((&mut self.cf_max_iterations, 1, 65535)),
            6 => Some((&mut self.cf_expansion_factor, 0, MAX_EXPANSION)),
            7 => Some((&mut self.cf_max_expansions, 1, 65536)),
            _ => None,
        }
    }

    /// bf-error-rate: 0 < v < 1, values above 0.25 stored (and shown) as 0.25.
    fn set_error_rate(&mut self, name: &str, value: &[u8]) -> Result<String, String> {
        let v = parse_f64(value).ok_or_else(|| invalid_value(name))?;
        if !(v > 0.0 && v < 1.0) {
            return Err(format!(
                "Value for `{name}` must be in the range (0.000000, 1.000000)"
            ));
        }
        if v > MAX_ERROR_RATE {
            self.bf_error_rate = MAX_ERROR_RATE;
            return Ok(MAX_ERROR_RATE_TEXT.to_owned());
        }
        self.bf_error_rate = v;
        Ok(String::from_utf8_lossy(value).into_owned())
    }
}

/// Whether a module-load argument name is one of the deprecated upper-case
/// legacy names (the module logs a deprecation warning for those).
pub fn is_legacy_module_arg(name: &[u8]) -> bool {
    LEGACY_ARGS
        .iter()
        .any(|(legacy, _)| name.eq_ignore_ascii_case(legacy.as_bytes()))
}

/// Setting addressed by a module-load argument name (legacy or current).
fn module_arg_setting(name: &[u8]) -> Option<&'static str> {
    LEGACY_ARGS
        .iter()
        .find(|(legacy, setting)| {
            name.eq_ignore_ascii_case(legacy.as_bytes())
                || name.eq_ignore_ascii_case(setting.as_bytes())
        })
        .map(|(_, setting)| *setting)
}

fn invalid_value(name: &str) -> String {
    format!("Invalid value for `{name}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(cfg: &mut Config, name: &str, value: &str) -> Result<(), String> {
        cfg.set(name, value.as_bytes())
    }

    #[test]
    fn defaults_and_their_text() {
        let cfg = Config::default();
        let shown: Vec<String> = NAMES.iter().filter_map(|n| cfg.get(n)).collect();
        assert_eq!(shown, DEFAULT_TEXT);
        assert_eq!(cfg.bf_error_rate, 0.01);
        assert_eq!(cfg.cf_bucket_size_max(), 255);
        assert_eq!(cfg.cf_initial_size_min(), 4);
        assert_eq!(cfg.get("nope"), None);
    }

    #[test]
    fn get_returns_text_as_accepted() {
        let mut cfg = Config::default();
        set(&mut cfg, "bf-error-rate", "2e-2").unwrap();
        assert_eq!(cfg.get("bf-error-rate").as_deref(), Some("2e-2"));
        assert_eq!(cfg.bf_error_rate, 0.02);
        set(&mut cfg, "bf-initial-size", "1000").unwrap();
        assert_eq!(cfg.get("bf-initial-size").as_deref(), Some("1000"));
        assert_eq!(cfg.bf_initial_size, 1000);
    }

    #[test]
    fn error_rate_range_and_cap() {
        let mut cfg = Config::default();
        let range = "Value for `bf-error-rate` must be in the range (0.000000, 1.000000)";
        for bad in ["0", "1", "-0.5", "inf", "1.5"] {
            assert_eq!(
                set(&mut cfg, "bf-error-rate", bad),
                Err(range.into()),
                "{bad}"
            );
        }
        let invalid = "Invalid value for `bf-error-rate`";
        for bad in ["abc", "", " 0.1", "nan", "1e-400"] {
            assert_eq!(
                set(&mut cfg, "bf-error-rate", bad),
                Err(invalid.into()),
                "{bad}"
            );
        }
        assert_eq!(cfg.bf_error_rate, 0.01);
        set(&mut cfg, "bf-error-rate", "0.5").unwrap();
        assert_eq!(cfg.bf_error_rate, 0.25);
        assert_eq!(cfg.get("bf-error-rate").as_deref(), Some("0.25"));
        set(&mut cfg, "bf-error-rate", "0.25").unwrap();
        assert_eq!(cfg.get("bf-error-rate").as_deref(), Some("0.25"));
    }

    #[test]
    fn integer_ranges_and_messages() {
        let cases = [
            ("bf-initial-size", "0", "[1, 1073741824]"),
            ("bf-initial-size", "1073741825", "[1, 1073741824]"),
            ("bf-expansion-factor", "-1", "[0, 32768]"),
            ("bf-expansion-factor", "32769", "[0, 32768]"),
            ("cf-bucket-size", "0", "[1, 255]"),
            ("cf-bucket-size", "256", "[1, 255]"),
            ("cf-initial-size", "3", "[4, 1073741824]"),
            ("cf-initial-size", "1073741825", "[4, 1073741824]"),
            ("cf-max-iterations", "0", "[1, 65535]"),
            ("cf-max-iterations", "65536", "[1, 65535]"),
            ("cf-expansion-factor", "32769", "[0, 32768]"),
            ("cf-max-expansions", "0", "[1, 65536]"),
            ("cf-max-expansions", "65537", "[1, 65536]"),
        ];
        for (name, value, range) in cases {
            let mut cfg = Config::default();
            let want = format!("Value for `{name}` must be in the range {range}");
            assert_eq!(set(&mut cfg, name, value), Err(want));
            assert_eq!(
                cfg,
                Config::default(),
                "rejected value must not change anything"
            );
        }
    }

    #[test]
    fn integer_bounds_inclusive() {
        let mut cfg = Config::default();
        for (name, value) in [
            ("bf-initial-size", "1"),
            ("bf-initial-size", "1073741824"),
            ("bf-expansion-factor", "0"),
            ("bf-expansion-factor", "32768"),
            ("cf-max-iterations", "65535"),
            ("cf-expansion-factor", "0"),
            ("cf-max-expansions", "65536"),
        ] {
            assert_eq!(set(&mut cfg, name, value), Ok(()), "{name} {value}");
        }
        assert_eq!(cfg.cf_max_expansions, 65536);
        assert_eq!(cfg.bf_expansion_factor, 32768);
    }

    #[test]
    fn integer_parse_errors() {
        let mut cfg = Config::default();
        for bad in [
            "",
            "abc",
            "+5",
            "05",
            "1.0",
            " 5",
            "-0",
            "99999999999999999999",
        ] {
            assert_eq!(
                set(&mut cfg, "cf-max-iterations", bad),
                Err("Invalid value for `cf-max-iterations`".into()),
                "{bad}"
            );
        }
    }

    #[test]
    fn bucket_size_sets_initial_size_minimum() {
        let mut cfg = Config::default();
        set(&mut cfg, "cf-bucket-size", "1").unwrap();
        assert_eq!(cfg.cf_initial_size_min(), 2);
        set(&mut cfg, "cf-initial-size", "2").unwrap();
        assert_eq!(cfg.cf_initial_size, 2);
        // cf-initial-size 2 now caps the bucket size at 1.
        assert_eq!(cfg.cf_bucket_size_max(), 1);
        assert_eq!(
            set(&mut cfg, "cf-bucket-size", "2"),
            Err("Value for `cf-bucket-size` must be in the range [1, 1]".into())
        );
    }

    #[test]
    fn initial_size_lowers_bucket_size_maximum() {
        let mut cfg = Config::default();
        set(&mut cfg, "cf-initial-size", "100").unwrap();
        assert_eq!(cfg.cf_bucket_size_max(), 50);
        assert_eq!(
            set(&mut cfg, "cf-bucket-size", "51"),
            Err("Value for `cf-bucket-size` must be in the range [1, 50]".into())
        );
        set(&mut cfg, "cf-bucket-size", "50").unwrap();
        assert_eq!(cfg.cf_initial_size_min(), 100);
        assert_eq!(
            set(&mut cfg, "cf-initial-size", "99"),
            Err("Value for `cf-initial-size` must be in the range [100, 1073741824]".into())
        );
        set(&mut cfg, "cf-initial-size", "1073741824").unwrap();
        assert_eq!(cfg.cf_bucket_size_max(), 255);
    }

    #[test]
    fn setting_default_values_keeps_default_bounds() {
        let mut cfg = Config::default();
        set(&mut cfg, "cf-bucket-size", "2").unwrap();
        set(&mut cfg, "cf-initial-size", "1024").unwrap();
        assert_eq!(cfg.cf_bucket_size_max(), 255);
        assert_eq!(cfg.cf_initial_size_min(), 4);
    }

    #[test]
    fn unknown_name() {
        let mut cfg = Config::default();
        assert!(set(&mut cfg, "bf-nope", "1").is_err());
    }

    #[test]
    fn module_args_pairs_and_aliases() {
        let mut cfg = Config::default();
        cfg.apply_module_args(&[
            "error_rate",
            "0.001",
            "INITIAL_SIZE",
            "400",
            "CF_MAX_EXPANSIONS",
            "64",
        ])
        .unwrap();
        assert_eq!(cfg.bf_error_rate, 0.001);
        assert_eq!(cfg.bf_initial_size, 400);
        assert_eq!(cfg.cf_max_expansions, 64);
        cfg.apply_module_args(&["BF-Error-Rate", "0.9", "bf-initial-size", "7"])
            .unwrap();
        assert_eq!(cfg.bf_error_rate, 0.25);
        assert_eq!(cfg.get("bf-error-rate").as_deref(), Some("0.25"));
        assert_eq!(cfg.bf_initial_size, 7);
        cfg.apply_module_args(&["cf-max-expansions", "1"]).unwrap();
        assert_eq!(cfg.cf_max_expansions, 1);
    }

    #[test]
    fn module_args_empty_forms() {
        let mut cfg = Config::default();
        let none: [&str; 0] = [];
        assert_eq!(cfg.apply_module_args(&none), Ok(()));
        assert_eq!(cfg.apply_module_args(&[""]), Ok(()));
        assert_eq!(cfg, Config::default());
    }

    #[test]
    fn module_args_errors() {
        let mut cfg = Config::default();
        assert!(cfg.apply_module_args(&["ERROR_RATE"]).is_err());
        assert!(cfg.apply_module_args(&["ERROR_RATE", "0.1", "x"]).is_err());
        assert!(cfg.apply_module_args(&["ERROR_RATE_X", "0.1"]).is_err());
        // Only three settings can be given at load time.
        assert!(cfg.apply_module_args(&["cf-bucket-size", "4"]).is_err());
        assert_eq!(
            cfg.apply_module_args(&["INITIAL_SIZE", "0"]),
            Err("Value for `bf-initial-size` must be in the range [1, 1073741824]".into())
        );
        assert_eq!(
            cfg.apply_module_args(&["ERROR_RATE", "x"]),
            Err("Invalid value for `bf-error-rate`".into())
        );
        assert_eq!(
            cfg.apply_module_args(&["ERROR_RATE", "1"]),
            Err("Value for `bf-error-rate` must be in the range (0.000000, 1.000000)".into())
        );
        assert!(cfg.apply_module_args(&["CF_MAX_EXPANSIONS", "0"]).is_err());
    }

    #[test]
    fn legacy_names_detected() {
        assert!(is_legacy_module_arg(b"error_rate"));
        assert!(is_legacy_module_arg(b"CF_MAX_EXPANSIONS"));
        assert!(!is_legacy_module_arg(b"bf-error-rate"));
    }
}
