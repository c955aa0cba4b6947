//! Differential test: a seeded random stream of BF.* (resp. CF.*) commands —
//! valid and invalid — goes to rsbloom and to the reference RedisBloom 2.8.2
//! (two redis-server 7.0 processes), pipelined in batches, and every reply is
//! compared exactly (reply types included, RESP2 and RESP3). Periodically the
//! full SCANDUMP and the DUMP payload of every key are compared as well.
//!
//! rsbloom targets RedisBloom 8.x, so the documented 2.8.2 → 8.x differences
//! (docs/differences.md §3) are mapped by an explicit allowlist (`RULES`); where such a
//! difference makes the two filters diverge, the key is deleted on both sides
//! right after the command and the reset is counted.
//!
//! The driver and its environment variables: `common::diff::driver`
//! (`RSBLOOM_DIFF_OPS` commands per family).

use std::collections::VecDeque;
use std::convert::Infallible;

use common::diff::driver::*;
use common::diff::*;
use common::*;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const ONE_GIB: i64 = 1 << 30;

fn is_wrongtype(r: &Reply) -> bool {
    matches!(r, Reply::Error(e) if e.starts_with("WRONGTYPE"))
}

// ---------------------------------------------------------------------------
// Option scanners shared by the generators' safety rules and the allowlist.
// ---------------------------------------------------------------------------

/// Value following the first argument equal (case-insensitively) to `word`,
/// searched over the whole argument list from the key on (BF.RESERVE and
/// CF.RESERVE quirk, docs/bloom.md §8.1/docs/cuckoo.md §12.1/docs/differences.md §2).
fn option_value<'a>(args: &'a [Vec<u8>], word: &str) -> Option<&'a [u8]> {
    let pos = args[1..]
        .iter()
        .position(|a| a.eq_ignore_ascii_case(word.as_bytes()))?
        + 1;
    args.get(pos + 1).map(|v| v.as_slice())
}

/// Outcome of the 8.x BF.INSERT option scan (docs/bloom.md §8.3).
#[derive(Debug, PartialEq)]
enum BfInsertScan {
    /// First failure is a range error (parsable but out of range): the
    /// message 8.x answers.
    Range(&'static str),
    /// Some other failure (parse error, unknown argument, arity).
    OtherError,
    /// Scan succeeded.
    Ok { expansion: Option<i64> },
}

fn bf_insert_scan(args: &[Vec<u8>]) -> BfInsertScan {
    let mut i = 2;
    let mut expansion = None;
    let mut marker = false;
    while i < args.len() {
        let a = &args[i];
        let c = a.first().map(|c| c.to_ascii_lowercase());
        let value = args.get(i + 1);
        match c {
            Some(b'i') => {
                marker = i + 1 < args.len();
                break;
            }
            Some(b'e') => {
                let Some(v) = value else {
                    return BfInsertScan::OtherError;
                };
                if a.get(1).map(|c| c.to_ascii_lowercase()) == Some(b'r') {
                    match redis_double(v) {
                        None => return BfInsertScan::OtherError,
                        Some(e) if !(e > 0.0 && e < 1.0) => {
                            return BfInsertScan::Range("Bad error rate")
                        }
                        _ => {}
                    }
                } else {
                    match redis_ll(v) {
                        None => return BfInsertScan::OtherError,
                        Some(x) if !(0..=32768).contains(&x) => {
                            return BfInsertScan::Range("Bad expansion")
                        }
                        Some(x) => expansion = Some(x),
                    }
                }
                i += 2;
            }
            Some(b'c') => {
                let Some(v) = value else {
                    return BfInsertScan::OtherError;
                };
                match redis_ll(v) {
                    None => return BfInsertScan::OtherError,
                    Some(x) if !(1..=ONE_GIB).contains(&x) => {
                        return BfInsertScan::Range("Bad capacity")
                    }
                    _ => {}
                }
                i += 2;
            }
            Some(b'n') => i += 1,
            _ => return BfInsertScan::OtherError,
        }
    }
    if marker {
        BfInsertScan::Ok { expansion }
    } else {
        BfInsertScan::OtherError
    }
}

/// Option section of BF.INSERT / CF.INSERT (arguments before the items marker).
fn insert_options(args: &[Vec<u8>]) -> std::ops::Range<usize> {
    let mut i = 2;
    while i < args.len() {
        match args[i].first().map(|c| c.to_ascii_lowercase()) {
            Some(b'i') => break,
            Some(b'c') | Some(b'e') => i += 2,
            _ => i += 1,
        }
    }
    2..i.min(args.len())
}

/// All values given to options whose first letter is `letter` (and, for BF
/// `e…`, whose second letter matches `second` when given).
fn insert_values(args: &[Vec<u8>], letter: u8, second: Option<bool>) -> Vec<Vec<u8>> {
    let r = insert_options(args);
    let mut out = Vec::new();
    let mut i = r.start;
    while i < r.end {
        let a = &args[i];
        let c = a.first().map(|c| c.to_ascii_lowercase());
        if c == Some(b'c') || c == Some(b'e') {
            let is_r = a.get(1).map(|c| c.to_ascii_lowercase()) == Some(b'r');
            if c == Some(letter) && second.is_none_or(|s| s == is_r) {
                if let Some(v) = args.get(i + 1) {
                    out.push(v.clone());
                }
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

/// Whether the option section holds a NOCREATE token: for BF.INSERT an `n…`
/// word whose third character is `c` (docs/bloom.md §8.3), for CF.INSERT any `n…`
/// word (docs/cuckoo.md §12.3).
fn has_nocreate_token(args: &[Vec<u8>], bloom: bool) -> bool {
    args[insert_options(args)].iter().any(|a| {
        a.first().map(|c| c.to_ascii_lowercase()) == Some(b'n')
            && (!bloom || a.get(2).map(|c| c.to_ascii_lowercase()) == Some(b'c'))
    })
}

// ---------------------------------------------------------------------------
// The allowlist: each rule maps an rsbloom (8.x) reply to the reference
// (2.8.2) reply for one documented difference. `diverges`: the two servers'
// states may differ afterwards, so the key is deleted on both sides.
// ---------------------------------------------------------------------------

/// Reset-only rule: replies agree but the states differ (counted separately).
const ERROR_RATE_CAP: &str = "error-rate-cap";

/// Reset-only rule: a CF.LOADCHUNK outside a whole replay left its key
/// counting more items than it holds (a header before its chunks, a chunk
/// that took fingerprints out). Commands on such a key differ by design
/// once its count claims every slot (docs/differences.md §1 item 18).
const CF_COUNT_AHEAD: &str = "cf-count-ahead";

const RULES: &[Rule] = &[
    Rule {
        // BF.RESERVE range errors reworded (2.8.2 → 8.x).
        name: "bf-reserve-range-texts",
        cite: "docs/bloom.md §8.1 steps 1, 2, 4; docs/differences.md §3 'BF.RESERVE range errors'",
        diverges: None,
        applies: |args, rs, rf| {
            upper(&args[0]) == "BF.RESERVE"
                && [
                    ("ERR error rate must be in the range (0.000000, 1.000000)", "ERR (0 < error rate range < 1) "),
                    ("ERR capacity must be in the range [1, 1073741824]", "ERR (capacity should be larger than 0)"),
                    ("ERR expansion must be in the range [0, 32768]", "ERR expansion should be greater or equal to 1"),
                ]
                .iter()
                .any(|(a, b)| err_is(rs, a) && err_is(rf, b))
        },
    },
    Rule {
        // 2.8.2 checks the NONSCALING/EXPANSION conflict before parsing the value.
        name: "bf-reserve-nonscaling-check-order",
        cite: "docs/bloom.md §8.1 step 4 ([2.8.2] conflict checked before parsing)",
        diverges: None,
        applies: |args, rs, rf| {
            upper(&args[0]) == "BF.RESERVE"
                && args[1..].iter().any(|a| a.eq_ignore_ascii_case(b"NONSCALING"))
                && option_value(args, "EXPANSION").is_some_and(|v| redis_ll(v).is_none())
                && err_is(rs, "ERR bad expansion")
                && err_is(rf, "Nonscaling filters cannot expand")
        },
    },
    Rule {
        // 8.x: EXPANSION 0 creates a non-scaling filter; 2.8.2 rejects it.
        name: "bf-reserve-expansion-0",
        cite: "docs/bloom.md §8.1 step 4; docs/differences.md §3 'BF.RESERVE EXPANSION 0'",
        diverges: Some(1),
        applies: |args, rs, rf| {
            upper(&args[0]) == "BF.RESERVE"
                && option_value(args, "EXPANSION") == Some(b"0")
                && (matches!(rs, Reply::Simple(s) if s == "OK") || err_is(rs, "ERR item exists") || is_wrongtype(rs))
                && (err_is(rf, "ERR expansion should be greater or equal to 1")
                    || err_is(rf, "Nonscaling filters cannot expand"))
        },
    },
    Rule {
        // 8.x bounds capacity by 2^30 and expansion by 32768; 2.8.2 accepts
        // them (generated only for keys that exist, see `sanitize`).
        name: "bf-reserve-upper-bounds",
        cite: "docs/bloom.md §8.1 steps 2 and 4; docs/differences.md §3 'BF capacity upper bound'",
        diverges: Some(1),
        applies: |args, rs, rf| {
            if upper(&args[0]) != "BF.RESERVE" || !redis_double(&args[2]).is_some_and(|e| e > 0.0 && e < 1.0) {
                return false;
            }
            // Capacity is checked at step 2 in 8.x, so 2.8.2 answers whatever
            // its later steps (expansion, key) produce.
            let capacity = err_is(rs, "ERR capacity must be in the range [1, 1073741824]")
                && args.get(3).and_then(|c| redis_ll(c)).is_some_and(|c| c > ONE_GIB);
            // Expansion is the last check before the key in both versions.
            let expansion = err_is(rs, "ERR expansion must be in the range [0, 32768]")
                && option_value(args, "EXPANSION").and_then(redis_ll).is_some_and(|x| x > 32768)
                && (err_is(rf, "ERR item exists") || is_wrongtype(rf) || matches!(rf, Reply::Simple(s) if s == "OK"));
            capacity || expansion
        },
    },
    Rule {
        // 8.x rejects out-of-range BF.INSERT options while parsing (`Bad
        // error rate` / `Bad capacity` / `Bad expansion`, upper bounds
        // included); 2.8.2 detects them only after the items check (`Bad
        // argument received`, or an arity / unknown-argument / later parse
        // error first) and has no upper bounds. The rule holds only when
        // rsbloom's reply is exactly the first range error of the 8.x scan.
        name: "bf-insert-range-errors",
        cite: "docs/bloom.md §8.3 ([2.8.2] paragraph); docs/differences.md §3 'BF.INSERT range errors'",
        diverges: Some(1),
        applies: |args, rs, _rf| {
            upper(&args[0]) == "BF.INSERT"
                && matches!(bf_insert_scan(args), BfInsertScan::Range(m) if err_is(rs, m))
        },
    },
    Rule {
        // 8.x: BF.INSERT EXPANSION 0 = non-scaling; 2.8.2: `Bad argument received`.
        name: "bf-insert-expansion-0",
        cite: "docs/bloom.md §8.3 ('if expansion = 0 → non-scaling'); docs/differences.md §3 'BF.INSERT range errors'",
        diverges: Some(1),
        applies: |args, _rs, rf| {
            upper(&args[0]) == "BF.INSERT"
                && bf_insert_scan(args) == BfInsertScan::Ok { expansion: Some(0) }
                && err_is(rf, "Bad argument received")
        },
    },
    Rule {
        // CF.RESERVE range errors reworded (2.8.2 → 8.x).
        name: "cf-reserve-range-texts",
        cite: "docs/cuckoo.md §12.1 steps 3, 4 ([2.8.2] messages); docs/differences.md §3 'CF.RESERVE range errors'",
        diverges: None,
        applies: |args, rs, rf| {
            upper(&args[0]) == "CF.RESERVE"
                && [
                    (
                        "MAXITERATIONS: value must be in the range [1, 65535]",
                        "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
                    ),
                    (
                        "BUCKETSIZE: value must be in the range [1, 255]",
                        "BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
                    ),
                    (
                        "EXPANSION: value must be in the range [0, 32768]",
                        "EXPANSION: value must be an integer between 0 and 32768, inclusive.",
                    ),
                    (
                        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
                        "Capacity must be at least (BucketSize * 2)",
                    ),
                ]
                .iter()
                .any(|(a, b)| err_is(rs, a) && err_is(rf, b))
        },
    },
    Rule {
        // 8.x bounds CF.RESERVE capacity by 2^30; 2.8.2 does not (generated
        // only for keys that exist, see `sanitize`).
        name: "cf-reserve-capacity-upper-bound",
        cite: "docs/cuckoo.md §12.1 step 4 ([2.8.2] no upper bound); docs/differences.md §3 'CF.RESERVE range errors'",
        diverges: Some(1),
        applies: |args, rs, rf| {
            upper(&args[0]) == "CF.RESERVE"
                && args.get(2).and_then(|c| redis_ll(c)).is_some_and(|c| c > ONE_GIB)
                && err_is(rs, "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")
                && (err_is(rf, "ERR item exists") || is_wrongtype(rf) || matches!(rf, Reply::Simple(s) if s == "OK"))
        },
    },
    Rule {
        // CF.INSERT CAPACITY range error reworded; 8.x adds the 2^30 bound
        // (over-bound values are generated only with NOCREATE).
        name: "cf-insert-capacity",
        cite: "docs/cuckoo.md §12.3 ([2.8.2] capacity < 4 message, no upper bound); docs/differences.md §3 'CF.INSERT CAPACITY error'",
        diverges: Some(1),
        applies: |args, rs, rf| {
            let cmd = upper(&args[0]);
            (cmd == "CF.INSERT" || cmd == "CF.INSERTNX")
                && err_is(rs, "Capacity must be in the range [cf-bucket-size * 2, 1073741824]")
                && (err_is(rf, "Capacity must be at least (BucketSize * 2)")
                    || insert_values(args, b'c', None)
                        .iter()
                        .any(|v| redis_ll(v).is_some_and(|c| c > ONE_GIB)))
        },
    },
    Rule {
        // RedisBloom (2.8.2 and 8.x) writes a chunk whose offset lies past
        // the last sub-filter into the last sub-filter, and a chunk that
        // leaves more fingerprints than the header counts; rsbloom refuses
        // both (no reply tells them apart).
        name: "cf-loadchunk-refused",
        cite: "docs/cuckoo.md §14 LOADCHUNK step 4; docs/differences.md §1 items 7, 18",
        diverges: Some(1),
        applies: |args, rs, rf| {
            upper(&args[0]) == "CF.LOADCHUNK"
                && args.get(2).is_some_and(|p| p.as_slice() != b"1")
                && err_is(rs, "Couldn't load chunk!")
                && matches!(rf, Reply::Simple(s) if s == "OK")
        },
    },
];

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

const BAD_DOUBLES: &[&str] = &[
    "0", "1", "-0.1", "1.5", "inf", "-inf", "nan", "1e", "abc", "", " 0.1", "0.1 ", "1e-400",
    "5e-324", "2", "1e400", "0x10", "-0",
];

struct Gen {
    rng: SmallRng,
    fam: Fam,
    keys: Vec<Vec<u8>>,
    pinned: Vec<u8>,
    other: Vec<Vec<u8>>,
    /// `(iterator, data, is_header)` seen in SCANDUMP replies of the stream.
    chunks: Vec<(i64, Vec<u8>, bool)>,
    /// Complete SCANDUMPs taken by the periodic checks.
    dumps: Vec<Vec<(i64, Vec<u8>)>>,
    queue: VecDeque<Op>,
    universe: u32,
    /// SCANDUMP chunks the full checks compared.
    chunks_checked: usize,
}

impl Gen {
    fn new(fam: Fam, seed: u64) -> Gen {
        let (keys, pinned, other): (&[&str], &str, &[&str]) = match fam {
            Fam::Bf => (
                &[
                    "b0",
                    "b1",
                    "b2",
                    "b3",
                    "b4",
                    "b5",
                    "b6",
                    "b7",
                    "NONSCALING",
                    "EXPANSION",
                    "ITEMS",
                    "CAPACITY",
                ],
                "bpin",
                &["str", "cfkey"],
            ),
            Fam::Cf => (
                &[
                    "c0",
                    "c1",
                    "c2",
                    "c3",
                    "c4",
                    "c5",
                    "c6",
                    "c7",
                    "MAXITERATIONS",
                    "BUCKETSIZE",
                    "EXPANSION",
                    "ITEMS",
                ],
                "cpin",
                &["str", "bfkey"],
            ),
        };
        Gen {
            rng: SmallRng::seed_from_u64(seed),
            fam,
            keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
            pinned: pinned.as_bytes().to_vec(),
            other: other.iter().map(|k| k.as_bytes().to_vec()).collect(),
            chunks: Vec::new(),
            dumps: Vec::new(),
            queue: VecDeque::new(),
            universe: match fam {
                Fam::Bf => 4000,
                Fam::Cf => 400,
            },
            chunks_checked: 0,
        }
    }

    /// The command that creates a fixed key: the pinned filter of the
    /// family or a key of another type.
    fn fixed_setup(&self, key: &[u8]) -> Option<Args> {
        let create: &[&str] = match key {
            b"bpin" => &["BF.RESERVE", "bpin", "0.01", "100"],
            b"cpin" => &["CF.RESERVE", "cpin", "100"],
            b"str" => &["SET", "str", "a string"],
            b"cfkey" => &["CF.RESERVE", "cfkey", "64"],
            b"bfkey" => &["BF.ADD", "bfkey", "x"],
            _ => return None,
        };
        Some(sargs(create))
    }

    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs.choose(&mut self.rng).unwrap().clone()
    }

    fn key(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=84 => {
                // Some filters get many items (fill up, scale, grow).
                let i = self.skewed(self.keys.len());
                self.keys[i].clone()
            }
            85..=89 => self.pinned.clone(),
            _ => self.pick(&self.other.clone()),
        }
    }

    fn item(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=71 => format!("i{}", self.rng.gen_range(0..self.universe)).into_bytes(),
            72..=85 => {
                let n = self.rng.gen_range(1..16);
                (0..n).map(|_| self.rng.gen()).collect()
            }
            86..=90 => Vec::new(),
            91..=95 => self
                .pick(&[
                    "ITEMS",
                    "NOCREATE",
                    "n",
                    "CAPACITY",
                    "EXPANSION",
                    "NONSCALING",
                    "0",
                    "-1",
                ])
                .as_bytes()
                .to_vec(),
            _ => {
                let n = self.rng.gen_range(100..2000);
                (0..n).map(|_| self.rng.gen()).collect()
            }
        }
    }

    fn items(&mut self, max: usize) -> Vec<Vec<u8>> {
        let n = self.rng.gen_range(1..=max);
        (0..n).map(|_| self.item()).collect()
    }

    fn bad_int(&mut self) -> Vec<u8> {
        self.pick(BAD_INTS).as_bytes().to_vec()
    }

    fn s(&mut self, xs: &[&str]) -> Vec<u8> {
        self.pick(xs).as_bytes().to_vec()
    }

    fn error_rate(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=74 => self.s(&[
                "0.01", "0.001", "0.1", "0.05", "0.2", "0.25", "1e-3", "0.0001", "0x1p-7",
                "0.5e-1", ".01", "+0.01", "1e-30",
            ]),
            75..=81 => self.s(&["0.3", "0.5", "0.99", "0.9999"]),
            _ => self.s(BAD_DOUBLES),
        }
    }

    fn int_in(&mut self, lo: i64, hi: i64) -> Vec<u8> {
        self.rng.gen_range(lo..=hi).to_string().into_bytes()
    }

    fn bf_capacity(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=69 => self.int_in(1, 200),
            70..=79 => self.int_in(200, 5000),
            80..=82 => self.s(&["100000", "1073741824"]),
            83..=87 => self.s(&[
                "0",
                "-1",
                "1073741825",
                "9223372036854775807",
                "-9223372036854775808",
            ]),
            _ => self.bad_int(),
        }
    }

    fn bf_expansion(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=79 => self.s(&["1", "2", "3", "4", "2", "16"]),
            80..=87 => b"0".to_vec(),
            88..=91 => self.s(&["-1", "32768", "32769", "9223372036854775807"]),
            _ => self.bad_int(),
        }
    }

    /// A SCANDUMP iterator / position.
    fn position(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=29 => b"0".to_vec(),
            30..=49 => b"1".to_vec(),
            50..=74 => self.int_in(-3, 300),
            75..=89 if !self.chunks.is_empty() => {
                let (it, _, _) = self.pick(&self.chunks.clone());
                (it + self.rng.gen_range(-2..=2)).to_string().into_bytes()
            }
            _ => self.s(&[
                "abc",
                "",
                "1e",
                "-0",
                "+1",
                "99999999999999999999",
                "9223372036854775807",
                "-9223372036854775808",
            ]),
        }
    }

    fn next_op(&mut self) -> Op {
        if let Some(op) = self.queue.pop_front() {
            return op;
        }
        let args = match self.fam {
            Fam::Bf => self.bf_args(),
            Fam::Cf => self.cf_args(),
        };
        self.finish(args)
    }

    /// Often deletes a key before (re)creating it, so creation commands
    /// actually create filters (queued after the DEL).
    fn maybe_fresh(&mut self, key: Vec<u8>, args: Args) -> Args {
        let args = self.mangle_arity(args, Self::item);
        if self.keys.contains(&key) && self.chance(20) {
            let op = self.finish(args);
            self.queue.push_back(op);
            return vec![b"DEL".to_vec(), key];
        }
        args
    }

    fn bf_args(&mut self) -> Args {
        let key = self.key();
        let w = self.rng.gen_range(0..100);
        let mut args = match w {
            0..=15 => vec![self.cmd("BF.ADD"), key, self.item()],
            16..=25 => {
                let mut a = vec![self.cmd("BF.MADD"), key];
                a.extend(self.items(10));
                a
            }
            26..=39 => self.bf_insert(key),
            40..=45 => vec![self.cmd("BF.EXISTS"), key, self.item()],
            46..=53 => {
                let mut a = vec![self.cmd("BF.MEXISTS"), key];
                a.extend(self.items(12));
                a
            }
            54..=63 => {
                let a = self.bf_reserve(key.clone());
                return self.maybe_fresh(key, a);
            }
            64..=69 => {
                let mut a = vec![self.cmd("BF.INFO"), key];
                if self.chance(60) {
                    let f = self.s(&[
                        "CAPACITY",
                        "SIZE",
                        "FILTERS",
                        "ITEMS",
                        "EXPANSION",
                        "capacity",
                        "Items",
                        "foo",
                        "",
                        "CAPACITYX",
                    ]);
                    a.push(f);
                }
                a
            }
            70..=72 => vec![self.cmd("BF.CARD"), key],
            73..=76 => vec![self.cmd("BF.DEBUG"), key],
            77..=83 => vec![self.cmd("BF.SCANDUMP"), key, self.position()],
            84..=96 => return self.loadchunk(key),
            97 => {
                // Burst: many items at once (scaling chains, full non-scaling filters).
                let name = if self.rng.gen() {
                    "BF.MADD"
                } else {
                    "BF.MEXISTS"
                };
                let mut a = vec![self.cmd(name), key];
                let n = self.rng.gen_range(50..300);
                a.extend(
                    (0..n)
                        .map(|_| format!("i{}", self.rng.gen_range(0..self.universe)).into_bytes()),
                );
                a
            }
            _ => vec![b"DEL".to_vec(), self.pick(&self.keys.clone())],
        };
        args = self.mangle_arity(args, Self::item);
        args
    }

    fn bf_reserve(&mut self, key: Vec<u8>) -> Args {
        let mut a = vec![
            self.cmd("BF.RESERVE"),
            key,
            self.error_rate(),
            self.bf_capacity(),
        ];
        for _ in 0..self.rng.gen_range(0..=3) {
            match self.rng.gen_range(0..10) {
                0..=4 => {
                    let w = self.s(&["EXPANSION", "expansion", "Expansion"]);
                    a.push(w);
                    let v = self.bf_expansion();
                    a.push(v);
                }
                5..=7 => {
                    let w = self.s(&["NONSCALING", "nonscaling"]);
                    a.push(w)
                }
                8 => a.push(b"EXPANSION".to_vec()),
                _ => a.push(b"foo".to_vec()),
            }
        }
        a
    }

    fn bf_insert(&mut self, key: Vec<u8>) -> Args {
        let mut a = vec![self.cmd("BF.INSERT"), key];
        for _ in 0..self.rng.gen_range(0..=4) {
            match self.rng.gen_range(0..20) {
                0..=3 => {
                    let w = self.s(&["CAPACITY", "c", "Cap", "capacity"]);
                    a.push(w);
                    let v = self.bf_capacity();
                    a.push(v);
                }
                4..=7 => {
                    let w = self.s(&["ERROR", "er", "Err", "error"]);
                    a.push(w);
                    let v = self.error_rate();
                    a.push(v);
                }
                8..=11 => {
                    let w = self.s(&["EXPANSION", "e", "Exp", "ex"]);
                    a.push(w);
                    let v = self.bf_expansion();
                    a.push(v);
                }
                12..=13 => {
                    let w = self.s(&["NOCREATE", "noc", "NXC", "nOcReAtE"]);
                    a.push(w)
                }
                14..=17 => {
                    let w = self.s(&["NONSCALING", "no", "nx", "nonscaling"]);
                    a.push(w)
                }
                _ => {
                    let w = self.s(&["foo", "x", "", "zz", "ITEMSX"]);
                    a.push(w)
                }
            }
        }
        if self.chance(96) {
            let m = self.s(&["ITEMS", "ITEMS", "i", "iTeMz", "items"]);
            a.push(m);
            if self.chance(95) {
                a.extend(self.items(10));
            }
        }
        a
    }

    fn cf_capacity(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=59 => self.int_in(4, 24),
            60..=74 => self.int_in(24, 2000),
            75..=81 => self.s(&["1", "2", "3", "0", "-1", "5", "8"]),
            82..=85 => self.s(&["1073741825", "9223372036854775807", "1073741824"]),
            _ => self.bad_int(),
        }
    }

    fn cf_reserve(&mut self, key: Vec<u8>) -> Args {
        let mut a = vec![self.cmd("CF.RESERVE"), key, self.cf_capacity()];
        for _ in 0..self.rng.gen_range(0..=3) {
            let (w, v) = match self.rng.gen_range(0..10) {
                0..=2 => (
                    self.s(&["BUCKETSIZE", "bucketsize"]),
                    match self.rng.gen_range(0..10) {
                        0..=6 => self.s(&["1", "2", "4", "1", "2", "4", "3"]),
                        7 => self.s(&["8", "255"]),
                        8 => self.s(&["0", "256", "-1"]),
                        _ => self.bad_int(),
                    },
                ),
                3..=5 => (
                    self.s(&["MAXITERATIONS", "maxiterations"]),
                    match self.rng.gen_range(0..10) {
                        0..=6 => self.int_in(1, 30),
                        7 => self.s(&["65535", "500"]),
                        8 => self.s(&["0", "65536", "-1"]),
                        _ => self.bad_int(),
                    },
                ),
                6..=8 => (
                    self.s(&["EXPANSION", "expansion"]),
                    match self.rng.gen_range(0..10) {
                        0..=7 => self.s(&["0", "1", "2", "3", "0", "1", "2", "4"]),
                        8 => self.s(&["-1", "32769", "40000"]),
                        _ => self.bad_int(),
                    },
                ),
                _ => (self.s(&["foo", "x"]), self.s(&["bar", "1"])),
            };
            a.push(w);
            a.push(v);
        }
        a
    }

    fn cf_insert(&mut self, key: Vec<u8>, nx: bool) -> Args {
        let name = if nx { "CF.INSERTNX" } else { "CF.INSERT" };
        let mut a = vec![self.cmd(name), key];
        for _ in 0..self.rng.gen_range(0..=3) {
            match self.rng.gen_range(0..10) {
                0..=4 => {
                    let w = self.s(&["CAPACITY", "c", "cap"]);
                    a.push(w);
                    let v = match self.rng.gen_range(0..10) {
                        0..=6 => self.int_in(4, 200),
                        7 => self.s(&["0", "3", "-1", "1073741825"]),
                        _ => self.bad_int(),
                    };
                    a.push(v);
                }
                5..=7 => {
                    let w = self.s(&["NOCREATE", "n", "nx"]);
                    a.push(w)
                }
                _ => {
                    let w = self.s(&["foo", "x", ""]);
                    a.push(w)
                }
            }
        }
        if self.chance(96) {
            let m = self.s(&["ITEMS", "ITEMS", "i", "iTeMz"]);
            a.push(m);
            if self.chance(95) {
                a.extend(self.items(12));
            }
        }
        a
    }

    fn cf_args(&mut self) -> Args {
        let key = self.key();
        let w = self.rng.gen_range(0..100);
        let args = match w {
            0..=11 => vec![self.cmd("CF.ADD"), key, self.item()],
            12..=18 => vec![self.cmd("CF.ADDNX"), key, self.item()],
            19..=27 => self.cf_insert(key, false),
            28..=34 => self.cf_insert(key, true),
            35..=39 => vec![self.cmd("CF.EXISTS"), key, self.item()],
            40..=44 => {
                let mut a = vec![self.cmd("CF.MEXISTS"), key];
                a.extend(self.items(12));
                a
            }
            45..=50 => vec![self.cmd("CF.COUNT"), key, self.item()],
            51..=61 => vec![self.cmd("CF.DEL"), key, self.item()],
            62..=64 => vec![self.cmd("CF.COMPACT"), key],
            65..=72 => {
                let a = self.cf_reserve(key.clone());
                return self.maybe_fresh(key, a);
            }
            73..=76 => vec![self.cmd("CF.INFO"), key],
            77..=79 => vec![self.cmd("CF.DEBUG"), key],
            80..=85 => vec![self.cmd("CF.SCANDUMP"), key, self.position()],
            86..=96 => return self.loadchunk(key),
            97 => {
                // Burst: many items at once (kick-outs, growth, `Filter is
                // full`, `Maximum expansions reached`).
                let name = self.pick(&["CF.INSERT", "CF.INSERTNX", "CF.MEXISTS"]);
                let mut a = vec![self.cmd(name), key];
                if name != "CF.MEXISTS" {
                    a.push(b"ITEMS".to_vec());
                }
                let n = self.rng.gen_range(30..200);
                a.extend(
                    (0..n)
                        .map(|_| format!("i{}", self.rng.gen_range(0..self.universe)).into_bytes()),
                );
                a
            }
            _ => vec![b"DEL".to_vec(), self.pick(&self.keys.clone())],
        };
        self.mangle_arity(args, Self::item)
    }

    /// LOADCHUNK from the stream's own SCANDUMPs: verbatim, corrupted, or a
    /// whole replay of a complete dump onto a freshly deleted key.
    fn loadchunk(&mut self, key: Vec<u8>) -> Args {
        let name = self.cmd(&format!("{}.LOADCHUNK", self.fam.prefix()));
        if self.chance(8) && !self.dumps.is_empty() {
            // Full replay (queued; the first command is returned now).
            let dump = self.pick(&self.dumps.clone());
            let target = self.pick(&self.keys.clone());
            for (it, data) in dump {
                let a = vec![
                    name.clone(),
                    target.clone(),
                    it.to_string().into_bytes(),
                    data,
                ];
                let op = self.finish(a);
                self.queue.push_back(op);
            }
            return vec![b"DEL".to_vec(), target];
        }
        if self.chunks.is_empty() || self.chance(8) {
            let p = self.position();
            let d = self.item();
            return vec![name, key, p, d];
        }
        let (mut it, mut data, header) = self.pick(&self.chunks.clone());
        let key = if header && self.chance(70) {
            self.pick(&self.keys.clone())
        } else {
            key
        };
        match self.rng.gen_range(0..100) {
            0..=59 => {}
            60..=71 if !data.is_empty() => {
                if header {
                    // Only length changes: field corruption of genuine
                    // headers can crash 2.8.2 (docs/differences.md §1 items 4, 5, 8, 10, 11).
                    if self.rng.gen() {
                        let n = self.rng.gen_range(0..data.len());
                        data.truncate(n);
                    } else {
                        data.push(self.rng.gen());
                    }
                } else {
                    let i = self.rng.gen_range(0..data.len());
                    data[i] ^= 1 << self.rng.gen_range(0..8);
                }
            }
            72..=79 if header && self.fam == Fam::Cf && data.len() == 38 => {
                // Header fields both versions reject.
                match self.rng.gen_range(0..4) {
                    0 => data[32..34].copy_from_slice(&0u16.to_le_bytes()),
                    1 => data[8..16].copy_from_slice(&3u64.to_le_bytes()),
                    2 => data[24..32].copy_from_slice(&0u64.to_le_bytes()),
                    _ => data[34..36].copy_from_slice(&0u16.to_le_bytes()),
                }
            }
            80..=91 => it += self.rng.gen_range(-40..=40),
            92..=95 => {
                let n = self.rng.gen_range(0..=data.len());
                data.truncate(n);
            }
            _ => it = self.rng.gen_range(-2..400),
        }
        vec![name, key, it.to_string().into_bytes(), data]
    }

    /// Safety rules (inputs that would make the reference allocate gigabytes
    /// or crash are redirected) and isolation flags.
    fn finish(&mut self, mut args: Args) -> Op {
        let cmd = upper(&args[0]);
        let mut isolate = false;
        let mut reset = None;
        let big = |v: &[u8], lim: i64| redis_ll(v).is_some_and(|x| x > lim);
        match cmd.as_str() {
            "BF.RESERVE" if args.len() >= 4 => {
                // Huge capacity / expansion only for the pinned (existing) key.
                let exp_big = option_value(&args, "EXPANSION").is_some_and(|v| big(v, 16));
                if big(&args[3], 200_000) || exp_big {
                    args[1] = self.pinned.clone();
                }
                let exp = option_value(&args, "EXPANSION").map(|v| v.to_vec());
                if big(&args[3], ONE_GIB)
                    || exp.as_deref().is_some_and(|v| v == b"0" || big(v, 32768))
                {
                    isolate = true;
                }
                if redis_double(&args[2]).is_some_and(|e| e > 0.25 && e < 1.0) {
                    reset = Some(ERROR_RATE_CAP);
                }
            }
            "BF.INSERT" => {
                // 1–2 character `n` tokens read past the argument in
                // RedisBloom (docs/differences.md §1 item 13); 1-character ones are
                // not deterministic there.
                for i in insert_options(&args) {
                    if args[i].eq_ignore_ascii_case(b"n") {
                        args[i] = b"nx".to_vec();
                    }
                }
                // A capped error rate (docs/differences.md §3) changes the created filter and
                // so the replies of this very command (false positives): such
                // error rates only go with NOCREATE.
                let capped = insert_values(&args, b'e', Some(true))
                    .iter()
                    .any(|v| redis_double(v).is_some_and(|e| e > 0.25 && e < 1.0));
                let risky = capped
                    || insert_values(&args, b'c', None)
                        .iter()
                        .any(|v| big(v, 200_000))
                    || insert_values(&args, b'e', Some(false))
                        .iter()
                        .any(|v| big(v, 16));
                if risky && !has_nocreate_token(&args, true) {
                    args.insert(2, b"NOCREATE".to_vec());
                }
                match bf_insert_scan(&args) {
                    BfInsertScan::Range(_) | BfInsertScan::Ok { expansion: Some(0) } => {
                        isolate = true
                    }
                    _ => {}
                }
                if insert_values(&args, b'c', None)
                    .iter()
                    .any(|v| big(v, ONE_GIB))
                    || insert_values(&args, b'e', Some(false))
                        .iter()
                        .any(|v| big(v, 32768))
                {
                    isolate = true;
                }
            }
            "CF.RESERVE" => {
                // An option word as the last argument crashes RedisBloom
                // (docs/differences.md §1 item 1).
                let n = args.len();
                if n >= 5 && n % 2 == 1 {
                    let last = upper(&args[n - 1]);
                    if ["MAXITERATIONS", "BUCKETSIZE", "EXPANSION"].contains(&last.as_str()) {
                        args[n - 1] = b"x".to_vec();
                    }
                }
                let exp_big = option_value(&args, "EXPANSION").is_some_and(|v| big(v, 4));
                if args.len() >= 3 && (big(&args[2], 100_000) || exp_big) {
                    args[1] = self.pinned.clone();
                }
                if args.len() >= 3 && big(&args[2], ONE_GIB) {
                    isolate = true;
                }
            }
            "CF.INSERT" | "CF.INSERTNX" => {
                let caps = insert_values(&args, b'c', None);
                if caps.iter().any(|v| big(v, 100_000)) && !has_nocreate_token(&args, false) {
                    args.insert(2, b"NOCREATE".to_vec());
                }
                if caps
                    .iter()
                    .any(|v| redis_ll(v).is_none_or(|c| !(4..=ONE_GIB).contains(&c)))
                {
                    isolate = true;
                }
            }
            "CF.LOADCHUNK" => isolate = true,
            _ => {}
        }
        Op {
            args,
            isolate,
            reset,
            kind: (),
        }
    }
}

// ---------------------------------------------------------------------------
// The family
// ---------------------------------------------------------------------------

impl Family for Gen {
    type Kind = ();
    type Action = Infallible;
    const RULES: &'static [Rule] = RULES;
    const CASE_KEPT: u32 = 80;

    fn rng(&mut self) -> &mut SmallRng {
        &mut self.rng
    }

    /// The default pipeline, then [`CF_COUNT_AHEAD`]: an isolated
    /// CF.LOADCHUNK ends its batch, so its key is as the chunk left it.
    fn exchange(&mut self, d: &mut Pair, ops: Vec<Op>, resp3: bool) -> Vec<(Op, Reply, Reply)> {
        let cmds: Vec<Args> = ops.iter().map(|o| o.args.clone()).collect();
        let (ra, rb) = pipeline2(d.rs.conn(resp3), d.rf.conn(resp3), &cmds);
        let mut out: Vec<(Op, Reply, Reply)> = ops
            .into_iter()
            .zip(ra)
            .zip(rb)
            .map(|((o, a), b)| (o, a, b))
            .collect();
        if let Some((op, a, b)) = out.last_mut() {
            let loaded = |o: &Op| upper(&o.args[0]) == "CF.LOADCHUNK";
            if let (true, Some(key)) = (loaded(op) && *a == ok() && *b == ok(), op.args.get(1)) {
                // A whole replay is judged once its last chunk is in.
                let replay_goes_on = self
                    .queue
                    .front()
                    .is_some_and(|next| loaded(next) && next.args.get(1) == Some(key));
                if op.reset.is_none() && !replay_goes_on && count_ahead(d, key) {
                    op.reset = Some(CF_COUNT_AHEAD);
                }
            }
        }
        out
    }

    fn setup(&mut self, d: &mut Pair) {
        for key in std::iter::once(self.pinned.clone()).chain(self.other.clone()) {
            self.recreate(d, &key);
        }
    }

    fn recreate(&mut self, d: &mut Pair, key: &[u8]) {
        if let Some(c) = self.fixed_setup(key) {
            d.both(&c);
        }
    }

    fn next(&mut self) -> Step<(), Infallible> {
        Step::Cmd(self.next_op())
    }

    fn outcomes(&self, reply: &Reply) -> Vec<String> {
        reply_outcomes(reply, |x| match x {
            Reply::Int(-1) => Some("[-1]".into()),
            Reply::Bool(false) => Some("[#f]".into()),
            _ => None,
        })
    }

    /// Remembers SCANDUMP chunks for later LOADCHUNKs.
    fn agreed(&mut self, args: &[Vec<u8>], reply: &Reply) {
        if !upper(&args[0]).ends_with(".SCANDUMP") {
            return;
        }
        if let Reply::Array(v) = reply {
            if let [Reply::Int(it), Reply::Bulk(d)] = v.as_slice() {
                if *it != 0 {
                    let header = args.get(2).is_some_and(|p| p.as_slice() == b"0");
                    keep(
                        &mut self.rng,
                        &mut self.chunks,
                        400,
                        (*it, d.clone(), header),
                    );
                }
            }
        }
    }

    fn check_keys(&mut self) -> Vec<Vec<u8>> {
        let mut v = self.keys.clone();
        v.push(self.pinned.clone());
        v.extend(self.other.iter().cloned());
        v
    }

    /// The full SCANDUMP (its chunks, or the reply that ended it) and DUMP.
    fn observe(&mut self, side: &mut Side, key: &[u8]) -> Vec<Reply> {
        let scan = match filters::try_scandump(side.conn(false), self.fam, key) {
            Ok(chunks) => Reply::Array(
                chunks
                    .into_iter()
                    .map(|(it, data)| arr(vec![int(it), bulk(data)]))
                    .collect(),
            ),
            Err(end) => Reply::Error(format!("SCANDUMP ended with {end:?}")),
        };
        vec![scan, side.cmd(&[b"DUMP".to_vec(), key.to_vec()])]
    }

    /// Keeps complete dumps for whole LOADCHUNK replays.
    fn checked(&mut self, seen: &[Reply]) {
        let Reply::Array(chunks) = &seen[0] else {
            return;
        };
        self.chunks_checked += chunks.len();
        let pairs: Vec<(i64, Vec<u8>)> = chunks
            .iter()
            .map(|c| {
                (
                    c.as_array()[0].as_int(),
                    c.as_array()[1].as_bytes().to_vec(),
                )
            })
            .collect();
        if !pairs.is_empty() && pairs.iter().map(|p| p.1.len()).sum::<usize>() < 4 << 20 {
            keep(&mut self.rng, &mut self.dumps, 30, pairs);
        }
    }

    fn report(&self) -> String {
        format!("  SCANDUMP chunks checked: {}\n", self.chunks_checked)
    }
}

/// Whether the Cuckoo key on rsbloom's side counts more items (its SCANDUMP
/// header's numItems) than it holds fingerprints (non-zero slots).
fn count_ahead(d: &mut Pair, key: &[u8]) -> bool {
    let Ok(dump) = filters::try_scandump(d.rs.conn(false), Fam::Cf, key) else {
        return false;
    };
    let Some(((_, header), chunks)) = dump.split_first() else {
        return false;
    };
    let items = header
        .first_chunk::<8>()
        .map_or(0, |b| u64::from_le_bytes(*b));
    let held = chunks
        .iter()
        .flat_map(|(_, d)| d)
        .filter(|&&b| b != 0)
        .count() as u64;
    items > held
}

#[test]
fn bf_random_stream_matches_reference() {
    run_family("BF", |seed| Gen::new(Fam::Bf, seed), |_, _, _| {});
}

#[test]
fn cf_random_stream_matches_reference() {
    run_family("CF", |seed| Gen::new(Fam::Cf, seed), |_, _, _| {});
}

/// The allowlist must not hide an ordinary difference: a reply pair that no
/// rule describes is rejected, and each rule accepts its documented pair.
#[test]
fn allowlist_rules_are_narrow() {
    let find = |args: &[&str], rs, rf| rule_name(RULES, args, rs, rf);
    assert_eq!(
        find(
            &["BF.RESERVE", "k", "2", "10"],
            err("ERR error rate must be in the range (0.000000, 1.000000)"),
            err("ERR (0 < error rate range < 1) ")
        ),
        Some("bf-reserve-range-texts")
    );
    assert_eq!(
        find(
            &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "0"],
            ok(),
            err("ERR expansion should be greater or equal to 1")
        ),
        Some("bf-reserve-expansion-0")
    );
    // EXPANSION 0 does not excuse any other reply pair.
    assert_eq!(
        find(
            &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "0"],
            ok(),
            err("ERR bad error rate")
        ),
        None
    );
    assert_eq!(
        find(
            &["BF.INSERT", "k", "CAPACITY", "0", "ITEMS", "a"],
            err("Bad capacity"),
            err("Bad argument received")
        ),
        Some("bf-insert-range-errors")
    );
    // A parse error is not a range error: rsbloom must answer like 2.8.2.
    assert_eq!(
        find(
            &["BF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a"],
            err("Bad capacity"),
            err("Bad argument received")
        ),
        None
    );
    // The first failing option decides the 8.x reply.
    assert_eq!(
        find(
            &["BF.INSERT", "k", "foo", "CAPACITY", "0", "ITEMS", "a"],
            err("Bad capacity"),
            err("Unknown argument received")
        ),
        None
    );
    assert_eq!(
        find(
            &["CF.LOADCHUNK", "k", "203", "dd"],
            err("Couldn't load chunk!"),
            ok()
        ),
        Some("cf-loadchunk-refused")
    );
    assert_eq!(find(&["CF.ADD", "k", "a"], int(1), int(0)), None);
    assert_eq!(
        find(
            &["BF.ADD", "k", "a"],
            err("ERR could not create filter"),
            err("ERR Could not create filter")
        ),
        None
    );
    assert_eq!(redis_ll(b"-0"), None);
    assert_eq!(redis_ll(b"01"), None);
    assert_eq!(redis_ll(b"+1"), None);
    assert_eq!(redis_ll(b"-12"), Some(-12));
    assert_eq!(redis_double(b"0x1p-7"), Some(0.0078125));
    assert_eq!(redis_double(b"1e-400"), None);
    assert_eq!(redis_double(b"nan"), None);
    assert_eq!(redis_double(b" 1"), None);
}
