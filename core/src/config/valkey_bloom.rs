//! The Bloom flavour switch (`bf.bloom-flavor`) and valkey-bloom 1.0.1's
//! seven configs (COMPAT-VALKEY-BLOOM §3, docs/valkey-bloom.md §3): values,
//! ranges, texts, and valkey-bloom's module-argument syntax.

use crate::args::rust_num::{parse_i64_rust, unit_rate, ERROR_RATE_RANGE, TIGHTENING_RANGE};

const BAD_FLOAT: &str = "Invalid floating-point value";

/// The text of `bf.bloom-fp-rate` (CONFIG SET or a module argument).
pub fn parse_fp_rate_config(text: &[u8]) -> Result<f64, &'static str> {
    unit_rate(text, BAD_FLOAT, ERROR_RATE_RANGE)
}

/// The text of `bf.bloom-tightening-ratio`.
pub fn parse_tightening_config(text: &[u8]) -> Result<f64, &'static str> {
    unit_rate(text, BAD_FLOAT, TIGHTENING_RANGE)
}

/// Which Bloom flavour new filters get, and which answers the replies that
/// depend on no key follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BloomFlavor {
    #[default]
    RedisBloom,
    ValkeyBloom,
}

impl BloomFlavor {
    /// The config's values, in the order of the variants.
    pub const NAMES: [&'static str; 2] = ["redisbloom", "valkey-bloom"];

    pub fn from_index(i: i64) -> Self {
        if i == 1 {
            BloomFlavor::ValkeyBloom
        } else {
            BloomFlavor::RedisBloom
        }
    }

    pub fn index(self) -> i64 {
        match self {
            BloomFlavor::RedisBloom => 0,
            BloomFlavor::ValkeyBloom => 1,
        }
    }

    fn parse(text: &[u8]) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|n| text.eq_ignore_ascii_case(n.as_bytes()))
            .map(|i| Self::from_index(i as i64))
    }
}

/// An integer config: name, inclusive range.
pub struct IntConfig {
    pub name: &'static str,
    pub min: i64,
    pub max: i64,
}

pub const CAPACITY: IntConfig = IntConfig {
    name: "bloom-capacity",
    min: 1,
    max: i64::MAX,
};
pub const EXPANSION: IntConfig = IntConfig {
    name: "bloom-expansion",
    min: 0,
    max: u32::MAX as i64,
};
pub const MEMORY_LIMIT: IntConfig = IntConfig {
    name: "bloom-memory-usage-limit",
    min: 0,
    max: i64::MAX,
};

/// valkey-bloom's configs, and the flavour (registered as `bf.bloom-*`).
#[derive(Debug, Clone, PartialEq)]
pub struct ValkeyBloomConfig {
    pub flavor: BloomFlavor,
    pub capacity: i64,
    /// 0: new filters do not scale.
    pub expansion: i64,
    pub fp_rate: f64,
    pub fp_rate_text: String,
    pub tightening: f64,
    pub tightening_text: String,
    pub random_seed: bool,
    pub defrag: bool,
    /// Bytes one value may take (checked only for clients' commands).
    pub memory_limit: i64,
}

impl Default for ValkeyBloomConfig {
    fn default() -> Self {
        ValkeyBloomConfig {
            flavor: BloomFlavor::RedisBloom,
            capacity: 100,
            expansion: 2,
            fp_rate: 0.01,
            fp_rate_text: "0.01".into(),
            tightening: 0.5,
            tightening_text: "0.5".into(),
            random_seed: true,
            defrag: true,
            memory_limit: 128 << 20,
        }
    }
}

/// Names of the module arguments valkey-bloom's syntax knows (and the flavour).
const ARG_NAMES: [&str; 8] = [
    "bloom-flavor",
    "bloom-capacity",
    "bloom-expansion",
    "bloom-fp-rate",
    "bloom-tightening-ratio",
    "bloom-use-random-seed",
    "bloom-defrag-enabled",
    "bloom-memory-usage-limit",
];

impl ValkeyBloomConfig {
    /// `bf.bloom-fp-rate`: the text is kept as set (CONFIG GET shows it).
    pub fn set_fp_rate(&mut self, text: &[u8]) -> Result<(), &'static str> {
        self.fp_rate = parse_fp_rate_config(text)?;
        self.fp_rate_text = String::from_utf8_lossy(text).into_owned();
        Ok(())
    }

    pub fn set_tightening(&mut self, text: &[u8]) -> Result<(), &'static str> {
        self.tightening = parse_tightening_config(text)?;
        self.tightening_text = String::from_utf8_lossy(text).into_owned();
        Ok(())
    }

    /// Takes valkey-bloom's `bloom-<name> <value>` module arguments out of
    /// `args` (anywhere in the list, names byte-exact) and applies them;
    /// returns the other arguments. Unlike valkey-bloom, which takes any
    /// integer and crashes later on a zero capacity, values are checked as
    /// CONFIG SET checks them, so a bad one fails the load with a message.
    pub fn apply_module_args<'a, A: AsRef<[u8]>>(
        &mut self,
        args: &'a [A],
    ) -> Result<Vec<&'a A>, String> {
        let mut rest = Vec::new();
        let mut i = 0;
        while let Some(arg) = args.get(i) {
            let name = ARG_NAMES.iter().find(|n| arg.as_ref() == n.as_bytes());
            match (name, args.get(i + 1)) {
                (Some(name), Some(value)) => {
                    self.apply_arg(name, value.as_ref())
                        .map_err(|why| format!("module argument {name}: {why}"))?;
                    i += 2;
                }
                _ => {
                    rest.push(arg);
                    i += 1;
                }
            }
        }
        Ok(rest)
    }

    fn apply_arg(&mut self, name: &str, value: &[u8]) -> Result<(), String> {
        let int = |c: &IntConfig| -> Result<i64, String> {
            parse_i64_rust(value)
                .filter(|v| (c.min..=c.max).contains(v))
                .ok_or_else(|| format!("must be an integer in [{}, {}]", c.min, c.max))
        };
        match name {
            "bloom-flavor" => {
                self.flavor = BloomFlavor::parse(value)
                    .ok_or_else(|| "must be redisbloom or valkey-bloom".to_string())?;
            }
            "bloom-capacity" => self.capacity = int(&CAPACITY)?,
            "bloom-expansion" => self.expansion = int(&EXPANSION)?,
            "bloom-memory-usage-limit" => self.memory_limit = int(&MEMORY_LIMIT)?,
            "bloom-fp-rate" => self.set_fp_rate(value)?,
            "bloom-tightening-ratio" => self.set_tightening(value)?,
            // valkey-bloom: exactly `yes` is yes, anything else no.
            "bloom-use-random-seed" => self.random_seed = value == b"yes",
            "bloom-defrag-enabled" => self.defrag = value == b"yes",
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_args_are_taken_anywhere_and_the_rest_kept() {
        let mut c = ValkeyBloomConfig::default();
        let args = [
            "ERROR_RATE",
            "0.1",
            "bloom-capacity",
            "333",
            "bloom-flavor",
            "valkey-bloom",
            "bloom-use-random-seed",
            "YES",
        ];
        let rest = c.apply_module_args(&args).unwrap();
        assert_eq!(rest, [&"ERROR_RATE", &"0.1"]);
        assert_eq!(c.capacity, 333);
        assert_eq!(c.flavor, BloomFlavor::ValkeyBloom);
        assert!(!c.random_seed, "only exactly `yes` is yes");
    }

    #[test]
    fn bad_module_args_fail_instead_of_crashing_later() {
        for (name, value) in [
            ("bloom-capacity", "0"),
            ("bloom-capacity", "-3"),
            ("bloom-memory-usage-limit", "-5"),
            ("bloom-fp-rate", "2"),
            ("bloom-fp-rate", "abc"),
            ("bloom-tightening-ratio", "0"),
            ("bloom-flavor", "redis"),
        ] {
            let mut c = ValkeyBloomConfig::default();
            assert!(
                c.apply_module_args(&[name, value]).is_err(),
                "{name} {value}"
            );
        }
    }

    #[test]
    fn a_name_without_value_is_left_alone() {
        let mut c = ValkeyBloomConfig::default();
        let rest = c.apply_module_args(&["bloom-capacity"]).unwrap();
        assert_eq!(rest, [&"bloom-capacity"]);
        assert_eq!(c, ValkeyBloomConfig::default());
    }
}
