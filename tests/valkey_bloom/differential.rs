//! Seeded random command streams sent to rsbloom (valkey-bloom flavour) and
//! to the valkey-bloom 1.0.1 oracle on the same server binary (Valkey 9.1,
//! and Valkey 8.0 with the oracle's 8.0 build), every reply compared byte for
//! byte, in batches over RESP2 or RESP3 at random:
//! BF.ADD/MADD/EXISTS/MEXISTS/CARD/INFO (every field, bad fields, Unicode
//! keyword forms), BF.RESERVE and BF.INSERT with every option and odd numbers
//! (`+10`, `010`, `.5`, `inf`, `1e-310`, …), wrong arities, keys of other
//! types, missing keys, CONFIG SET of the seven configs (valid and invalid),
//! BF.LOAD of blobs built from one side's DUMP (exact and damaged), RESTORE
//! of its genuine DUMPs (with and without REPLACE), COPY, DEL; the keyspace
//! notifications of each batch (`bloom.add`, `bloom.reserve` and the
//! server's own), compared as one sequence; at the start the seven configs
//! and COMMAND INFO of the nine commands; and every `CHECK_EVERY` commands
//! the key lists, TYPE, BF.INFO, DUMP, DEBUG DIGEST-VALUE, MEMORY USAGE and
//! OBJECT ENCODING of every key and INFO's `bf_bloom_core_metrics` and
//! `bf_bloom_defrag_metrics`.
//!
//! Creations are never random: both servers run with
//! `bf.bloom-use-random-seed no` (a stream's `yes` is always followed by
//! `no`), SEED is given or FIXED_SEED used. Inputs where rsbloom departs on
//! purpose (COMPAT-VALKEY-BLOOM.md §8, "instead" column: BF.LOAD blobs with
//! n = 0, capacities ≤ 0, huge k or a fixed-seed flag with another seed;
//! RESTORE of values whose error rate is at most MIN_POSITIVE, which
//! valkey-bloom cannot load back;
//! memory limits that let a crash-sized allocation through; RESTORE of
//! malformed payloads) are not generated; nothing else is allowlisted.
//! Nor are capacities near 2^63 − 1: with a small error rate (≤ 4.6e-4) the
//! oracle's size projection overflows and valkey-bloom aborts (e.g.
//! `BF.RESERVE k 0.0001 9223372036854775807`, or `bf.bloom-capacity` at
//! 2^63 − 1 with `bf.bloom-fp-rate 1e-310` and an auto-creating BF.ADD),
//! where rsbloom answers `ERR operation exceeds bloom object memory limit`;
//! the largest capacity sent, 9·10^16, sizes below 2^64 bytes at any rate.
//!
//! `RSBLOOM_DIFF_OPS` (default 20 000), `RSBLOOM_DIFF_SEED`,
//! `RSBLOOM_DIFF_SELF=1` (oracle against oracle: checks the machinery).

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::vb;
use common::diff::{show_args, show_reply};
use common::dump::{parse, Prim};
use common::{wait, Conn, Flavor, Module, Reply, Server};

type Args = Vec<Vec<u8>>;

const BATCH: usize = 100;
const CHECK_EVERY: usize = 1_000;
const MAX_PRINTED: usize = 15;
/// The memory limit both servers start with, small enough that no stream
/// makes either allocate much (the largest limit a stream sets is 8 MB).
const BASE_LIMIT: &str = "4000000";

pub const FIXED_SEED: [u8; 32] = [
    0x59, 0x0f, 0xf5, 0x22, 0xea, 0x78, 0x11, 0xda, 0xa7, 0x14, 0xd8, 0x09, 0x3b, 0x3e, 0x7b, 0xd9,
    0x1d, 0x89, 0x8a, 0x73, 0x3e, 0x98, 0x88, 0x87, 0x30, 0x7f, 0x97, 0xcd, 0x28, 0x07, 0x33, 0x83,
];

const KEYS: [&str; 8] = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "{k}7"];
const OTHER_TYPES: [&str; 2] = ["str", "lst"];

fn s(x: &str) -> Vec<u8> {
    x.as_bytes().to_vec()
}

fn pick<'a>(r: &mut SmallRng, xs: &[&'a str]) -> &'a str {
    xs.choose(r).unwrap()
}

/// A keyword as a client might type it: upper, lower, mixed case, or a
/// Unicode form whose upper case is the keyword (the keyword rule, §0).
fn keyword(r: &mut SmallRng, kw: &str) -> Vec<u8> {
    let unicode: &[&str] = match kw {
        "NONSCALING" => &["nonſcaling", "NONſCALING"],
        "SEED" => &["ſeed"],
        "ITEMS" => &["ıtems", "ITEMſ"],
        "CAPACITY" => &["capacıty"],
        "EXPANSION" => &["expanſıon"],
        "TIGHTENING" => &["tıghtenıng"],
        "VALIDATESCALETO" => &["validateſcaleto"],
        "FILTERS" => &["ﬁlters", "FILTERſ"],
        "SIZE" => &["ſize"],
        "MAXSCALEDCAPACITY" => &["maxſcaledcapacıty"],
        "NOCREATE" => &["nocreate"],
        _ => &[],
    };
    match r.gen_range(0..10) {
        0..=4 => s(kw),
        5 => s(&kw.to_lowercase()),
        6 | 7 => kw
            .chars()
            .map(|c| {
                if r.gen_bool(0.5) {
                    c.to_ascii_lowercase()
                } else {
                    c
                }
            })
            .collect::<String>()
            .into_bytes(),
        _ if !unicode.is_empty() => s(pick(r, unicode)),
        _ => s(kw),
    }
}

const ERROR_RATES: &[&str] = &[
    "0.01",
    "0.01",
    "0.001",
    "0.1",
    "0.5",
    ".5",
    "+0.1",
    "1e-2",
    "1E-3",
    "5.",
    "0.999999",
    "0.3",
    "1e-310",
    "5e-324",
    "1e-300",
    "0",
    "1",
    "-0.1",
    "inf",
    "nan",
    "NaN",
    "infinity",
    "abc",
    "",
    "0x1p-3",
    " 0.1",
    "0.1 ",
    "1e-400",
    "2",
    "0.0000001",
];
const CAPACITIES: &[&str] = &[
    "1",
    "2",
    "3",
    "5",
    "5",
    "10",
    "10",
    "20",
    "50",
    "100",
    "+10",
    "010",
    "00",
    "-0",
    "0",
    "-1",
    "abc",
    "1.5",
    "1e3",
    "",
    "+",
    "90000000000000000",
    "9223372036854775808",
    "1000000000000",
    "18446744073709551616",
    " 5",
];
const EXPANSIONS: &[&str] = &[
    "1",
    "2",
    "2",
    "3",
    "4",
    "+2",
    "02",
    "10",
    "1000",
    "4294967295",
    "4294967296",
    "0",
    "-1",
    "abc",
    "2.0",
    "",
    "-0",
];
const TIGHTENINGS: &[&str] = &[
    "0.5", "0.3", ".9", "0.99", "1e-3", "0.999999", "0", "1", "-0.5", "abc", "nan", "inf",
    "1e-310", "+0.5",
];
const SCALETO: &[&str] = &[
    "1",
    "10",
    "100",
    "102",
    "103",
    "1000",
    "1000000",
    "100000000000000",
    "0",
    "-1",
    "abc",
    "+5",
    "010",
    "9223372036854775807",
];
const INFO_FIELDS: &[&str] = &[
    "CAPACITY",
    "SIZE",
    "FILTERS",
    "ITEMS",
    "EXPANSION",
    "ERROR",
    "TIGHTENING",
    "MAXSCALEDCAPACITY",
];
const BAD_FIELDS: &[&str] = &[
    "foo",
    "",
    "CAPACITYX",
    "ITEM",
    "EXPANSIONS",
    "size ",
    "Error rate",
    "capacity\0",
];

/// The seven configs with values to set (valid and not); `BASE` first.
const CONFIGS: &[(&str, &[&str])] = &[
    (
        "bloom-capacity",
        &[
            "100",
            "1",
            "5",
            "20",
            "+5",
            " 5",
            "1e3",
            "1k",
            "0",
            "-1",
            "abc",
            "",
            "90000000000000000",
            "9223372036854775808",
        ],
    ),
    (
        "bloom-expansion",
        &[
            "2",
            "0",
            "1",
            "4",
            "4294967295",
            "4294967296",
            "-1",
            "x",
            "+2",
            "02",
        ],
    ),
    (
        "bloom-fp-rate",
        &[
            "0.01", ".5", "1e-3", "+0.25", "5e-324", "1e-310", "0", "1", "abc", "nan", "inf",
            "0.999", "", "0.01 ",
        ],
    ),
    (
        "bloom-tightening-ratio",
        &[
            "0.5", "0.3", ".9", "1e-3", "0", "1", "x", "nan", "1e-300", "-0.5",
        ],
    ),
    (
        "bloom-use-random-seed",
        &["no", "NO", "No", "maybe", "1", "", "0"],
    ),
    ("bloom-defrag-enabled", &["yes", "no", "YES", "nope", "1"]),
    (
        "bloom-memory-usage-limit",
        &[
            BASE_LIMIT,
            "100000",
            "384",
            "383",
            "481",
            "0",
            "-1",
            "abc",
            "1e3",
            "8000000",
            "9223372036854775808",
        ],
    ),
];

struct Gen {
    r: SmallRng,
    items: Vec<Vec<u8>>,
    seeds: Vec<Vec<u8>>,
    /// BF.LOAD blobs built from DUMPs of one side.
    blobs: Vec<Vec<u8>>,
    /// DUMP payloads of one side, for RESTORE.
    dumps: Vec<Vec<u8>>,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        let mut r = SmallRng::seed_from_u64(seed);
        let mut items: Vec<Vec<u8>> = (0..48).map(|i| format!("i{i}").into_bytes()).collect();
        items.push(Vec::new());
        items.push(vec![0, 255, 13, 10]);
        items.push("ü".as_bytes().to_vec());
        for _ in 0..5 {
            let n = r.gen_range(1..12);
            items.push((0..n).map(|_| r.gen()).collect());
        }
        // Lengths around SipHash's 8-byte blocks (the hashed message is the
        // 8-byte length and the item), and long ones.
        for n in [7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 1000, 4096] {
            items.push((0..n).map(|_| r.gen()).collect());
        }
        let mut seeds = vec![FIXED_SEED.to_vec(), s("0123456789abcdefghijklmnopqrstuv")];
        seeds.push((0..32).map(|_| r.gen()).collect());
        Gen {
            r,
            items,
            seeds,
            blobs: Vec::new(),
            dumps: Vec::new(),
        }
    }

    fn key(&mut self) -> Vec<u8> {
        match self.r.gen_range(0..24) {
            0 => s(pick(&mut self.r, &OTHER_TYPES)),
            1 => s("missing"),
            // BF.LOAD's and RESTORE's own targets.
            2 | 3 => format!("L{}", self.r.gen_range(0..4)).into_bytes(),
            4 => format!("R{}", self.r.gen_range(0..4)).into_bytes(),
            _ => s(pick(&mut self.r, &KEYS)),
        }
    }

    fn item(&mut self) -> Vec<u8> {
        // Mostly the first items, so that adds repeat and EXISTS finds them.
        let n = self.items.len();
        let i = if self.r.gen_bool(0.7) {
            self.r.gen_range(0..24)
        } else {
            self.r.gen_range(0..n)
        };
        self.items[i].clone()
    }

    fn items(&mut self, max: usize) -> Vec<Vec<u8>> {
        let n = self.r.gen_range(1..=max);
        (0..n).map(|_| self.item()).collect()
    }

    fn seed(&mut self) -> Vec<u8> {
        match self.r.gen_range(0..12) {
            0 => s("short"),
            1 => {
                let mut x = FIXED_SEED.to_vec();
                x.push(0);
                x
            }
            2 => Vec::new(),
            _ => self.seeds.choose(&mut self.r).unwrap().clone(),
        }
    }

    /// The next command, or a short sequence that must stay together.
    fn next(&mut self) -> Vec<Args> {
        let w = self.r.gen_range(0..112);
        let one = |a: Args| vec![a];
        match w {
            0..=13 => {
                let k = self.key();
                let i = self.item();
                one(vec![keyword(&mut self.r, "BF.ADD"), k, i])
            }
            14..=25 => {
                let mut a = vec![keyword(&mut self.r, "BF.MADD"), self.key()];
                let n = if self.r.gen_bool(0.1) { 40 } else { 8 };
                a.extend(self.items(n));
                one(a)
            }
            26..=32 => {
                let k = self.key();
                let i = self.item();
                one(vec![keyword(&mut self.r, "BF.EXISTS"), k, i])
            }
            33..=38 => {
                let mut a = vec![keyword(&mut self.r, "BF.MEXISTS"), self.key()];
                a.extend(self.items(10));
                one(a)
            }
            39..=41 => one(vec![keyword(&mut self.r, "BF.CARD"), self.key()]),
            42..=49 => one(self.info()),
            50..=58 => one(self.reserve()),
            59..=70 => one(self.insert()),
            71..=75 => one(self.arity()),
            76..=81 => self.config(),
            82..=85 => one(self.load()),
            86..=89 => {
                let k = if self.r.gen_bool(0.3) {
                    format!("L{}", self.r.gen_range(0..4)).into_bytes()
                } else {
                    s(pick(&mut self.r, &KEYS))
                };
                let del = if self.r.gen_bool(0.3) {
                    "UNLINK"
                } else {
                    "DEL"
                };
                if self.r.gen_bool(0.01) {
                    // Everything at once; the keys of other types come back.
                    let flush = if self.r.gen_bool(0.5) {
                        "FLUSHALL"
                    } else {
                        "FLUSHDB"
                    };
                    return vec![
                        vec![s(flush)],
                        vec![s("SET"), s("str"), s("v")],
                        vec![s("RPUSH"), s("lst"), s("a")],
                    ];
                }
                one(vec![s(del), k])
            }
            100..=103 => one(self.restore()),
            108..=111 => self.corner(),
            104..=107 => {
                let (src, dst) = (self.key(), self.bloom_target());
                let mut a = vec![s("COPY"), src, dst];
                if self.r.gen_bool(0.5) {
                    a.push(s("REPLACE"));
                }
                one(a)
            }
            _ => {
                // Fill a key past its capacity: scale-outs and full filters.
                let mut a = vec![s("BF.MADD"), s(pick(&mut self.r, &KEYS))];
                let base = self.r.gen_range(0..1000);
                let n = self.r.gen_range(10..60);
                a.extend((0..n).map(|i| format!("f{}", base + i).into_bytes()));
                one(a)
            }
        }
    }

    fn info(&mut self) -> Args {
        let mut a = vec![keyword(&mut self.r, "BF.INFO"), self.key()];
        match self.r.gen_range(0..10) {
            0..=2 => {}
            3..=8 => {
                let f = pick(&mut self.r, INFO_FIELDS);
                a.push(keyword(&mut self.r, f));
            }
            _ => a.push(s(pick(&mut self.r, BAD_FIELDS))),
        }
        a
    }

    fn num(&mut self, good: &[&str], all: &[&str]) -> Vec<u8> {
        if self.r.gen_bool(0.75) {
            s(pick(&mut self.r, good))
        } else {
            s(pick(&mut self.r, all))
        }
    }

    fn error_rate(&mut self) -> Vec<u8> {
        self.num(&["0.01", "0.001", "0.1", "0.05", ".5", "0.3"], ERROR_RATES)
    }
    fn capacity(&mut self) -> Vec<u8> {
        self.num(&["1", "2", "5", "10", "20", "50", "100"], CAPACITIES)
    }
    fn expansion(&mut self) -> Vec<u8> {
        self.num(&["1", "2", "3", "4"], EXPANSIONS)
    }
    fn tightening(&mut self) -> Vec<u8> {
        self.num(&["0.5", "0.3", "0.9"], TIGHTENINGS)
    }

    fn reserve(&mut self) -> Args {
        let mut a = vec![keyword(&mut self.r, "BF.RESERVE"), self.key()];
        a.push(self.error_rate());
        a.push(self.capacity());
        match self.r.gen_range(0..12) {
            0..=4 => {}
            5 | 6 => a.push(keyword(&mut self.r, "NONSCALING")),
            7..=9 => {
                a.push(keyword(&mut self.r, "EXPANSION"));
                a.push(self.expansion());
            }
            10 => a.push(s(pick(
                &mut self.r,
                &["EXPANSION", "FOO", "NONSCALINGX", "2"],
            ))),
            _ => {
                a.push(keyword(&mut self.r, "NONSCALING"));
                a.push(s("x"));
            }
        }
        a
    }

    fn insert(&mut self) -> Args {
        let mut a = vec![keyword(&mut self.r, "BF.INSERT"), self.key()];
        let n = self.r.gen_range(0..5);
        let bad = self.r.gen_bool(0.15);
        for _ in 0..n {
            match self.r.gen_range(0..9) {
                0 => {
                    a.push(keyword(&mut self.r, "ERROR"));
                    a.push(if bad {
                        s(pick(&mut self.r, ERROR_RATES))
                    } else {
                        self.error_rate()
                    });
                }
                1 => {
                    a.push(keyword(&mut self.r, "CAPACITY"));
                    a.push(if bad {
                        s(pick(&mut self.r, CAPACITIES))
                    } else {
                        self.capacity()
                    });
                }
                2 => {
                    a.push(keyword(&mut self.r, "EXPANSION"));
                    a.push(self.expansion());
                }
                3 => a.push(keyword(&mut self.r, "NONSCALING")),
                4 => {
                    a.push(keyword(&mut self.r, "TIGHTENING"));
                    a.push(self.tightening());
                }
                5 | 6 => {
                    a.push(keyword(&mut self.r, "SEED"));
                    a.push(self.seed());
                }
                7 => a.push(keyword(&mut self.r, "NOCREATE")),
                _ => {
                    a.push(keyword(&mut self.r, "VALIDATESCALETO"));
                    a.push(s(pick(&mut self.r, SCALETO)));
                }
            }
        }
        if bad && self.r.gen_bool(0.3) {
            a.push(s(pick(&mut self.r, &["FOO", "ITEM", "CAPACITY"])));
        }
        match self.r.gen_range(0..10) {
            0 => {}
            1 => a.push(keyword(&mut self.r, "ITEMS")),
            _ => {
                a.push(keyword(&mut self.r, "ITEMS"));
                if self.r.gen_bool(0.05) {
                    a.push(s("ITEMS"));
                }
                a.extend(self.items(10));
            }
        }
        a
    }

    fn arity(&mut self) -> Args {
        let (cmd, counts): (&str, &[usize]) = *[
            ("BF.ADD", &[1, 2, 4][..]),
            ("BF.MADD", &[1, 2][..]),
            ("BF.EXISTS", &[1, 2, 4][..]),
            ("BF.MEXISTS", &[1, 2][..]),
            ("BF.CARD", &[1, 3][..]),
            ("BF.INFO", &[1, 4][..]),
            ("BF.RESERVE", &[1, 2, 3, 7, 8][..]),
            ("BF.INSERT", &[1][..]),
            ("BF.LOAD", &[1, 2, 4][..]),
        ]
        .choose(&mut self.r)
        .unwrap();
        let n = *counts.choose(&mut self.r).unwrap();
        let mut a = vec![keyword(&mut self.r, cmd)];
        let fill = ["k1", "0.01", "10", "EXPANSION", "2", "x", "y", "z"];
        a.extend(fill.iter().take(n - 1).map(|x| s(x)));
        if cmd == "BF.INSERT" && self.r.gen_bool(0.5) {
            // An option without its value, or ITEMS last: also arity errors.
            a = vec![s("BF.INSERT"), s("k1")];
            a.push(s(pick(
                &mut self.r,
                &[
                    "CAPACITY",
                    "ERROR",
                    "EXPANSION",
                    "TIGHTENING",
                    "SEED",
                    "VALIDATESCALETO",
                    "ITEMS",
                ],
            )));
        }
        a
    }

    fn config(&mut self) -> Vec<Args> {
        let (name, values) = *CONFIGS.choose(&mut self.r).unwrap();
        let n = format!("bf.{name}").into_bytes();
        if name == "bloom-use-random-seed" && self.r.gen_bool(0.2) {
            // `yes` is valid but makes creations random: back to `no` at once.
            return vec![
                vec![s("CONFIG"), s("SET"), n.clone(), s("yes")],
                vec![s("CONFIG"), s("GET"), n.clone()],
                vec![s("CONFIG"), s("SET"), n, s("no")],
            ];
        }
        let v = s(pick(&mut self.r, values));
        let mut out = vec![vec![s("CONFIG"), s("SET"), n.clone(), v]];
        if self.r.gen_bool(0.3) {
            out.push(vec![s("CONFIG"), s("GET"), n]);
        }
        out
    }

    /// Creations at the corners of §4 (reference values of §4.7, §2.1's
    /// full non-scaling MADD, many sub-filters, k near its maximum), then
    /// their BF.INFO.
    fn corner(&mut self) -> Vec<Args> {
        let k = pick(&mut self.r, &KEYS);
        let line = *[
            "BF.INSERT K CAPACITY 1 ERROR 0.999999 TIGHTENING 0.9999999 EXPANSION 4294967295 ITEMS a b c",
            "BF.INSERT K CAPACITY 1 ERROR 0.01 TIGHTENING 0.001 EXPANSION 1 VALIDATESCALETO 102 ITEMS a",
            "BF.INSERT K CAPACITY 1 ERROR 0.01 TIGHTENING 0.001 EXPANSION 1 VALIDATESCALETO 103 ITEMS a",
            "BF.RESERVE K 0.5 1",
            "BF.RESERVE K 0.01 2 NONSCALING",
            "BF.MADD K a b c d",
            "BF.RESERVE K 1e-300 10",
            "BF.INSERT K CAPACITY 1 ERROR 5e-324 ITEMS a b",
            "BF.INSERT K CAPACITY 1 ERROR 0.9 TIGHTENING 0.9 EXPANSION 1 ITEMS a b c d e f g h i j k l m n o p",
            "BF.INSERT K CAPACITY 1 EXPANSION 1000 ITEMS x y z",
            "BF.INSERT K CAPACITY 10 ERROR 0.01 ITEMS 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39",
        ]
        .choose(&mut self.r)
        .unwrap();
        let cmd: Args = line
            .split(' ')
            .map(|w| s(if w == "K" { k } else { w }))
            .collect();
        vec![
            cmd,
            vec![s("BF.INFO"), s(k)],
            vec![s("BF.ADD"), s(k), s("new")],
        ]
    }

    /// A key for RESTORE and COPY targets (never the keys of other types).
    fn bloom_target(&mut self) -> Vec<u8> {
        if self.r.gen_bool(0.5) {
            format!("R{}", self.r.gen_range(0..4)).into_bytes()
        } else {
            s(pick(&mut self.r, &KEYS))
        }
    }

    /// RESTORE of a genuine DUMP of the oracle's, to an existing or a new key.
    fn restore(&mut self) -> Args {
        let key = self.bloom_target();
        let payload = match self.dumps.choose(&mut self.r) {
            Some(p) => p.clone(),
            None => return vec![s("RESTORE"), key, s("0"), s("x")],
        };
        let mut a = vec![s("RESTORE"), key, s("0"), payload];
        if self.r.gen_bool(0.5) {
            a.push(s("REPLACE"));
        }
        a
    }

    /// BF.LOAD of a blob built from a DUMP, exact or damaged in ways both
    /// modules must refuse alike (§5.4), to an existing or a new key.
    fn load(&mut self) -> Args {
        let key = if self.r.gen_bool(0.4) {
            self.key()
        } else {
            format!("L{}", self.r.gen_range(0..4)).into_bytes()
        };
        let mut blob = match self.blobs.choose(&mut self.r) {
            Some(b) => b.clone(),
            None => return vec![s("BF.LOAD"), key, s("")],
        };
        match self.r.gen_range(0..15) {
            0..=5 => {}
            6 => {
                // Cut inside the header or the first sub-filter: a blob cut
                // after a whole sub-filter makes valkey-bloom 1.0.1 subtract
                // the sub-filters it decoded from its INFO metrics (which
                // wrap below 0) although nothing was stored; rsbloom leaves
                // them alone (a defect of the oracle, not in the spec).
                let first =
                    30 + 8 + u64::from_le_bytes(blob[30..38].try_into().unwrap()) as usize + 16;
                blob.truncate(self.r.gen_range(1..first.min(blob.len())));
            }
            7 => blob[0] = 2,
            8 => blob.clear(),
            9 => blob[21] = 2, // is_seed_random: not a bool
            10 => blob.extend_from_slice(b"trailing"),
            11 => {
                let fp: f64 = *[1.5, 0.0, f64::NAN, 1.0, -0.5].choose(&mut self.r).unwrap();
                blob[5..13].copy_from_slice(&fp.to_le_bytes());
            }
            12 => {
                let t: f64 = *[0.0, 1.0, 2.0, f64::NAN].choose(&mut self.r).unwrap();
                blob[13..21].copy_from_slice(&t.to_le_bytes());
            }
            13 => {
                let x: u32 = *[0, 1, 3, 7].choose(&mut self.r).unwrap();
                blob[1..5].copy_from_slice(&x.to_le_bytes());
            }
            _ => {
                // The last sub-filter full at a capacity far beyond its
                // bitmap (accepted, §8): its scale-out overflows the
                // capacity (expansion 2^32 − 1: `ERR bad capacity`) or
                // exceeds the memory limit; RESTOREs of its DUMP are refused.
                let n = blob.len();
                let cap: i64 = *[3_000_000_000i64, 1 << 40].choose(&mut self.r).unwrap();
                blob[n - 16..n - 8].copy_from_slice(&cap.to_le_bytes());
                blob[n - 8..].copy_from_slice(&cap.to_le_bytes());
                let x: u32 = *[2, 4_294_967_295].choose(&mut self.r).unwrap();
                blob[1..5].copy_from_slice(&x.to_le_bytes());
            }
        }
        vec![s("BF.LOAD"), key, blob]
    }
}

/// The BF.LOAD blob (§5.4) of the value a DUMP (uncompressed) carries
/// (§5.1): the AOF rewrite's form, built without DEBUG or a rewrite.
pub fn blob_from_dump(dump: &[u8]) -> Vec<u8> {
    let (_, prims) = parse(dump);
    let u = |i: usize| match prims[i] {
        Prim::U(v) => v,
        ref p => panic!("field {i}: {p:?}"),
    };
    let d = |i: usize| match prims[i] {
        Prim::D(v) => v,
        ref p => panic!("field {i}: {p:?}"),
    };
    let n = u(0) as usize;
    let mut out = vec![1u8];
    out.extend_from_slice(&(u(1) as u32).to_le_bytes());
    out.extend_from_slice(&d(2).to_le_bytes());
    out.extend_from_slice(&d(3).to_le_bytes());
    out.push(u8::from(u(4) == 1));
    out.extend_from_slice(&(n as u64).to_le_bytes());
    let mut at = 5;
    for i in 0..n {
        let cap = u(at);
        at += 1;
        let items = if i + 1 == n {
            at += 1;
            u(at - 1)
        } else {
            cap
        };
        let Prim::S(ref b) = prims[at] else {
            panic!("blob expected at {at}")
        };
        at += 1;
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
        out.extend_from_slice(&(items as i64).to_le_bytes());
        out.extend_from_slice(&(cap as i64).to_le_bytes());
    }
    out
}

fn section(info: &str, name: &str) -> String {
    let head = format!("# {name}");
    info.lines()
        .skip_while(|l| l.trim() != head)
        .take_while(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

struct Side {
    /// Kept alive for the connections.
    _server: Server,
    c2: Conn,
    c3: Conn,
    /// Subscribed to every keyspace and keyevent notification.
    sub: Conn,
}

impl Side {
    fn start(flavor: Flavor, module: Module) -> Side {
        let server = Server::builder(flavor, module)
            .valkey_bloom_flavor()
            .arg("--bf.bloom-use-random-seed")
            .arg("no")
            .arg("--bf.bloom-memory-usage-limit")
            .arg(BASE_LIMIT)
            .arg("--notify-keyspace-events")
            .arg("KEA")
            .uncompressed_rdb()
            .start();
        let (c2, c3) = (server.conn(), server.conn3());
        let mut sub = server.conn();
        let r = sub.cmd(&["PSUBSCRIBE", "__key*@0__:*"]);
        assert_eq!(r.as_array().len(), 3, "PSUBSCRIBE: {r:?}");
        let mut side = Side {
            _server: server,
            c2,
            c3,
            sub,
        };
        side.c2.cmd(&["SET", "str", "v"]);
        side.c2.cmd(&["RPUSH", "lst", "a"]);
        side
    }
    /// The notifications published since the last call, in order: the
    /// server publishes while it runs each command, so a PING sent after the
    /// replies were read is answered after all of them.
    fn events(&mut self) -> Vec<Reply> {
        self.sub.send(&["PING"]);
        let pong = Reply::Array(vec![Reply::Bulk(b"pong".to_vec()), Reply::Bulk(Vec::new())]);
        let mut out = Vec::new();
        loop {
            let r = self.sub.read();
            if r == pong {
                return out;
            }
            out.push(r);
        }
    }
    fn conn(&mut self, resp3: bool) -> &mut Conn {
        if resp3 {
            &mut self.c3
        } else {
            &mut self.c2
        }
    }
}

#[derive(Default)]
struct Tally {
    compared: usize,
    resp2: usize,
    resp3: usize,
    identical: usize,
    mismatches: Vec<String>,
    checks: usize,
    errors: usize,
    /// Keyspace notifications compared, and how many were bloom.add/reserve.
    events: usize,
    bloom_events: usize,
    /// Outcomes seen (command name → reply kind or error text), printed
    /// with RSBLOOM_DIFF_COVERAGE=1.
    outcomes: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    fn compare(&mut self, what: &str, args: Option<&Args>, a: &Reply, b: &Reply) {
        self.compared += 1;
        let name = args.map_or(what.to_string(), |a| {
            String::from_utf8_lossy(&a[0]).to_uppercase()
        });
        let kind = match b {
            Reply::Error(e) => e.chars().take(70).collect(),
            Reply::Array(x) => match x.last() {
                Some(Reply::Error(e)) => {
                    format!("array ending in {}", e.chars().take(50).collect::<String>())
                }
                _ => "array".into(),
            },
            Reply::Simple(_) => "simple".into(),
            Reply::Int(_) => "integer".into(),
            Reply::Bulk(_) => "bulk".into(),
            Reply::Nil => "nil".into(),
            Reply::Null => "null".into(),
            Reply::Double(_) => "double".into(),
            other => format!("{other:?}"),
        };
        *self
            .outcomes
            .entry(format!("{name:12} {kind}"))
            .or_default() += 1;
        if a == b {
            self.identical += 1;
            if a.is_error() {
                self.errors += 1;
            }
        } else {
            let cmd = args.map(|a| show_args(a)).unwrap_or_default();
            self.mismatches.push(format!(
                "{what} {cmd}\n      rsbloom: {}\n      oracle:  {}",
                show_reply(a),
                show_reply(b)
            ));
        }
    }
}

/// Keys, TYPE, BF.INFO, DUMP, DIGEST of every key and the core metrics
/// section, compared; then blobs for BF.LOAD from the oracle's DUMPs.
fn full_check(rs: &mut Side, or: &mut Side, g: &mut Gen, t: &mut Tally) {
    t.checks += 1;
    let (ka, kb) = (vb::keys(&mut rs.c2), vb::keys(&mut or.c2));
    let show = |k: &[Vec<u8>]| Reply::Array(k.iter().map(|x| Reply::Bulk(x.clone())).collect());
    t.compare("SCAN (key lists)", None, &show(&ka), &show(&kb));
    let mut all = ka.clone();
    all.extend(kb);
    all.sort();
    all.dedup();
    for k in &all {
        for cmd in [
            vec![s("TYPE"), k.clone()],
            vec![s("BF.INFO"), k.clone()],
            vec![s("DUMP"), k.clone()],
            vec![s("DEBUG"), s("DIGEST-VALUE"), k.clone()],
            vec![s("MEMORY"), s("USAGE"), k.clone()],
            vec![s("OBJECT"), s("ENCODING"), k.clone()],
        ] {
            let (a, b) = (rs.c2.cmd(&cmd), or.c2.cmd(&cmd));
            t.compare("check", Some(&cmd), &a, &b);
            if cmd[0] == b"DUMP" {
                if let Reply::Bulk(d) = &b {
                    if d.first() == Some(&7)
                        && g.blobs.len() < 24
                        && !OTHER_TYPES.iter().any(|o| o.as_bytes() == k.as_slice())
                    {
                        let blob = blob_from_dump(d);
                        let fp = f64::from_le_bytes(blob[5..13].try_into().unwrap());
                        if !g.blobs.contains(&blob) {
                            g.blobs.push(blob);
                        }
                        // Not a value whose first rate is at most
                        // MIN_POSITIVE (e.g. `BF.RESERVE k 1e-310 10`): §8,
                        // rsbloom restores it where valkey-bloom answers
                        // `ERR Bad data format`.
                        if fp > f64::MIN_POSITIVE && !g.dumps.contains(d) {
                            g.dumps.push(d.clone());
                        }
                    }
                }
            }
        }
    }
    // A value leaves the metrics when it is freed, which for a large one
    // happens later in the server's lazy-free thread (§1.4): poll a moment.
    let mut last = (String::new(), String::new());
    let _ = wait::poll(
        "equal bf_bloom_core_metrics",
        Duration::from_secs(5),
        Duration::from_millis(10),
        || {
            last = (vb_info(&mut rs.c2), vb_info(&mut or.c2));
            if last.0 == last.1 {
                Ok(())
            } else {
                Err(String::new())
            }
        },
    );
    let (ia, ib) = last;
    t.compare(
        "INFO bf_bloom_core_metrics and bf_bloom_defrag_metrics",
        None,
        &Reply::Bulk(ia.into_bytes()),
        &Reply::Bulk(ib.into_bytes()),
    );
    if g.dumps.len() >= 24 {
        let i = g.r.gen_range(0..g.dumps.len());
        g.dumps.swap_remove(i);
    }
    if g.blobs.len() >= 24 {
        // Keep the pool fresh.
        let i = g.r.gen_range(0..g.blobs.len());
        g.blobs.swap_remove(i);
    }
}

/// INFO's two valkey-bloom sections (rsbloom's own `bf_*` sections beside
/// them have other names, §7).
fn vb_info(c: &mut Conn) -> String {
    let text = String::from_utf8_lossy(c.cmd(&["INFO", "bf"]).as_bytes()).into_owned();
    section(&text, "bf_bloom_core_metrics") + "\n" + &section(&text, "bf_bloom_defrag_metrics")
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an integer"))
    })
}

/// Valkey 9.1 (the oracle's main build), and Valkey 8.0 with its
/// `valkey_8_0` build when the matrix has it: same seed, same stream.
#[test]
fn differential_against_the_oracle() {
    let ops = env_u64("RSBLOOM_DIFF_OPS").unwrap_or(20_000) as usize;
    let seed = env_u64("RSBLOOM_DIFF_SEED").unwrap_or_else(|| rand::thread_rng().gen());
    let flavors: Vec<Flavor> = common::all_flavors()
        .into_iter()
        .filter(|f| f.is_valkey())
        .collect();
    if flavors.is_empty() {
        eprintln!("valkey-bloom differential: no Valkey in RSBLOOM_SERVERS, skipped");
    }
    for flavor in flavors {
        if vb::have_oracle(flavor, "the valkey-bloom differential stream") {
            differential(flavor, seed, ops);
        }
    }
}

fn differential(flavor: Flavor, seed: u64, ops: usize) {
    let subject = if std::env::var("RSBLOOM_DIFF_SELF").is_ok_and(|v| v == "1") {
        Module::ValkeyBloom
    } else {
        Module::Rsbloom
    };
    eprintln!(
        "valkey-bloom differential: seed {seed} (RSBLOOM_DIFF_SEED), {ops} commands, {subject:?} vs the oracle on {}",
        flavor.name()
    );
    let start = Instant::now();
    let mut rs = Side::start(flavor, subject);
    let mut or = Side::start(flavor, Module::ValkeyBloom);
    let mut t = Tally::default();
    // What no command changes: the seven configs' defaults (as started) and
    // the registration of the nine commands (COMMAND INFO: arity -1, flags,
    // ACL categories, key specs; §1.2).
    let mut fixed: Vec<Args> = CONFIGS
        .iter()
        .map(|(name, _)| vec![s("CONFIG"), s("GET"), format!("bf.{name}").into_bytes()])
        .collect();
    for cmd in [
        "BF.ADD",
        "BF.MADD",
        "BF.EXISTS",
        "BF.MEXISTS",
        "BF.CARD",
        "BF.INFO",
        "BF.RESERVE",
        "BF.INSERT",
        "BF.LOAD",
    ] {
        fixed.push(vec![s("COMMAND"), s("INFO"), s(cmd)]);
    }
    for args in &fixed {
        for resp3 in [false, true] {
            let (a, b) = (rs.conn(resp3).cmd(args), or.conn(resp3).cmd(args));
            t.compare("registration", Some(args), &a, &b);
        }
    }
    let mut g = Gen::new(seed);
    // RSBLOOM_DIFF_TRACE=1 prints every command before it is sent.
    let trace = std::env::var("RSBLOOM_DIFF_TRACE").is_ok_and(|v| v == "1");
    let mut sent = 0;
    let mut next_check = CHECK_EVERY;
    while sent < ops {
        let mut batch: Vec<Args> = Vec::new();
        while batch.len() < if trace { 1 } else { BATCH } {
            batch.extend(g.next());
        }
        let resp3 = g.r.gen_bool(0.5);
        if trace {
            for a in &batch {
                eprintln!("> {}", show_args(a));
            }
        }
        let (ca, cb) = (rs.conn(resp3), or.conn(resp3));
        ca.send_many(&batch);
        cb.send_many(&batch);
        let ra: Vec<Reply> = batch.iter().map(|_| ca.read()).collect();
        let rb: Vec<Reply> = batch.iter().map(|_| cb.read()).collect();
        for ((args, a), b) in batch.iter().zip(&ra).zip(&rb) {
            if resp3 {
                t.resp3 += 1;
            } else {
                t.resp2 += 1;
            }
            let before = t.mismatches.len();
            t.compare(if resp3 { "RESP3" } else { "RESP2" }, Some(args), a, b);
            if t.mismatches.len() > before {
                // Start the key over on both sides, so one difference is
                // reported once rather than in every later reply.
                if let Some(k) = args.get(1) {
                    rs.c2.cmd(&[b"DEL".as_slice(), k]);
                    or.c2.cmd(&[b"DEL".as_slice(), k]);
                }
            }
        }
        let (ea, eb) = (rs.events(), or.events());
        t.events += eb.len();
        t.bloom_events += eb
            .iter()
            .filter(
                |e| matches!(e.as_array().get(3), Some(Reply::Bulk(m)) if m.starts_with(b"bloom.")),
            )
            .count();
        t.compare(
            "keyspace events of the batch",
            None,
            &Reply::Array(ea),
            &Reply::Array(eb),
        );
        sent += batch.len();
        if trace {
            eprintln!("  < {}", show_reply(&ra[0]));
            let (ia, ib) = (vb_info(&mut rs.c2), vb_info(&mut or.c2));
            if ia != ib {
                eprintln!("INFO differs now:\n{ia}\n{ib}");
                break;
            }
        }
        if sent >= next_check {
            next_check += CHECK_EVERY;
            let t0 = Instant::now();
            full_check(&mut rs, &mut or, &mut g, &mut t);
            if t0.elapsed() > Duration::from_millis(500) {
                eprintln!("slow check at {sent}: {:?}", t0.elapsed());
            }
        }
    }
    full_check(&mut rs, &mut or, &mut g, &mut t);
    for side in [&mut rs, &mut or] {
        assert_eq!(side.c2.cmd(&["PING"]), Reply::Simple("PONG".into()));
    }
    eprintln!(
        "valkey-bloom differential on {} (seed {seed}): {} commands compared ({} RESP2, {} RESP3 stream commands; {} full checks), \
         {} identical ({} of them errors; {} keyspace notifications compared in batches, {} of them bloom.*), {} mismatches, {:.1} s",
        flavor.name(),
        t.compared,
        t.resp2,
        t.resp3,
        t.checks,
        t.identical,
        t.errors,
        t.events,
        t.bloom_events,
        t.mismatches.len(),
        start.elapsed().as_secs_f64()
    );
    if std::env::var("RSBLOOM_DIFF_COVERAGE").is_ok_and(|v| v == "1") {
        for (o, n) in &t.outcomes {
            eprintln!("  {n:6} {o}");
        }
    }
    for m in t.mismatches.iter().take(MAX_PRINTED) {
        eprintln!("  MISMATCH {m}");
    }
    assert!(t.bloom_events > 0, "no bloom.* notification seen");
    assert!(
        t.mismatches.is_empty(),
        "{} mismatches on {} (seed {seed}; rerun with RSBLOOM_DIFF_SEED={seed})",
        t.mismatches.len(),
        flavor.name()
    );
    drop(rs);
    drop(or);
}
