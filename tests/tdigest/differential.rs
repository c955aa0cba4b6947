//! Differential test of the T-Digest family: a seeded random stream of
//! TDIGEST.* commands — valid and invalid, reads interleaved with writes (so
//! compressions happen at random moments), MERGE in every variant, DUMP and
//! RESTORE both ways, extreme values, ±0.0, duplicates, one-observation
//! digests — goes to rsbloom and to the reference RedisBloom 2.8.2 (two
//! redis-server 7.0 processes, same binary, so doubles print alike),
//! pipelined, and every reply must be identical (types included, RESP2 and
//! RESP3). Every 10 000 commands the INFO and DUMP of every key are compared
//! too (a DUMP compresses in both modules alike).
//!
//! The allowlist (`RULES`) holds the 2.8.2 → 8.x differences of
//! docs/tdigest.md §11 and the defects rsbloom chose not to reproduce
//! (§7.3: the observation of a one-observation digest survives a reload;
//! docs/differences.md §1 item 17: a digest whose centroids fill every slot
//! takes further observations).
//!
//! The driver and its environment variables: `common::diff::driver`
//! (`make test-long` runs 1 000 000 commands).

use std::collections::VecDeque;
use std::convert::Infallible;

use common::diff::driver::*;
use common::diff::*;
use common::*;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------
// Allowlist: (args, rsbloom reply, reference reply) pairs that differ by
// design. Only a full digest taking more leaves the two digests different
// (its key is reset).
// ---------------------------------------------------------------------------

/// The fields of an INFO reply, RESP2 (flat) or RESP3 (map).
fn info_fields(r: &Reply) -> Option<Vec<(String, Reply)>> {
    match r {
        Reply::Map(m) => Some(
            m.iter()
                .map(|(k, v)| {
                    (
                        String::from_utf8_lossy(k.as_bytes()).into_owned(),
                        v.clone(),
                    )
                })
                .collect(),
        ),
        Reply::Array(a) if a.len() == 18 => Some(
            a.chunks(2)
                .map(|p| {
                    (
                        String::from_utf8_lossy(p[0].as_bytes()).into_owned(),
                        p[1].clone(),
                    )
                })
                .collect(),
        ),
        _ => None,
    }
}

const RULES: &[Rule] = &[
    Rule {
        // Merged centroids fill every slot (self-merges of a small
        // compression build it): RedisBloom answers overflow to an
        // observation, rsbloom merges the lightest pair and adds (a MERGE
        // fails in both). rsbloom's own overflows (weights near 2^63) come
        // before RedisBloom's, never after.
        name: "full-digest-takes-more",
        cite: "docs/differences.md §1 item 17 (issue 30)",
        diverges: Some(1),
        applies: |args, rs, rf| {
            upper(&args[0]) == "TDIGEST.ADD"
                && *rs == ok()
                && *rf == err("ERR T-Digest: overflow detected")
        },
    },
    Rule {
        // 8.x counts the 80-byte record, 2.8.2 the size of a pointer.
        name: "info-memory-usage",
        cite: "docs/tdigest.md §11 item 1 (RedisBloom #946)",
        diverges: None,
        applies: |args, rs, rf| {
            upper(&args[0]) == "TDIGEST.INFO" && match (info_fields(rs), info_fields(rf)) {
                (Some(a), Some(b)) => {
                    a.len() == 9 && a.iter().zip(&b).all(|((ka, va), (kb, vb))| {
                        ka == kb
                            && if ka == "Memory usage" {
                                matches!((va, vb), (Reply::Int(x), Reply::Int(y)) if *x == y + 72)
                            } else {
                                va == vb
                            }
                    })
                }
                _ => false,
            }
        },
    },
];

// ---------------------------------------------------------------------------
// Generator
// ---------------------------------------------------------------------------

const DIGESTS: &[&str] = &[
    "t0",
    "t1",
    "t2",
    "t3",
    "t4",
    "t5",
    "t6",
    "COMPRESSION",
    "OVERRIDE",
];
const STRING_KEY: &str = "str";
const OTHER_TYPE: &str = "bfkey";

/// RedisBloom 2.8.2 aborts when a digest's node arrays cannot be allocated
/// (docs/tdigest.md §10); a value appended after a trailing
/// COMPRESSION can be such a size. rsbloom's answer is in tdigest_commands.
fn allocation_crashes_reference(args: &Args) -> bool {
    let [.., keyword, value] = args.as_slice() else {
        return false;
    };
    keyword.eq_ignore_ascii_case(b"COMPRESSION")
        && std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|c| c > 100_000)
}

struct Gen {
    rng: SmallRng,
    queue: VecDeque<Op>,
    /// DUMP payloads seen (reference replies), with whether they hold the
    /// single observation a reload keeps in rsbloom only.
    dumps: Vec<(Vec<u8>, bool)>,
}

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: SmallRng::seed_from_u64(seed),
            queue: VecDeque::new(),
            dumps: Vec::new(),
        }
    }

    fn pick(&mut self, xs: &[&str]) -> Vec<u8> {
        xs.choose(&mut self.rng).unwrap().as_bytes().to_vec()
    }

    fn key(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=91 => DIGESTS[self.skewed(DIGESTS.len())].as_bytes().to_vec(),
            92..=95 => self.pick(&[STRING_KEY, OTHER_TYPE]),
            _ => b"missing".to_vec(),
        }
    }

    /// A value as sent: mostly numbers with many duplicates, some extremes,
    /// signed zeros and invalid texts.
    fn value(&mut self) -> Vec<u8> {
        let v = match self.rng.gen_range(0..100) {
            0..=29 => format!("{}", self.rng.gen_range(-20..=20)),
            30..=54 => format!("{:.2}", self.rng.gen_range(-1000.0..1000.0)),
            55..=69 => format!("{}", self.rng.gen_range(-1e6..1e6)),
            70..=79 => format!("{:.1}", self.rng.gen_range(0.0f64..5.0)),
            80..=85 => self.pick_str(&["0", "-0", "-0.0", "0.0", "1e-320", "-4.9e-324"]),
            86..=91 => self.pick_str(&[
                "1e300", "-1e300", "1.7e308", "-1.7e308", "1e-300", "0x10", "0x1p-3", "1e308",
                "-2.5e307",
            ]),
            92..=96 => format!("{}", self.rng.gen::<f64>() * 1e15),
            _ => self.pick_str(&["nan", "inf", "-inf", "abc", "", "1e400", " 1", "1,5"]),
        };
        v.into_bytes()
    }

    fn pick_str(&mut self, xs: &[&str]) -> String {
        xs.choose(&mut self.rng).unwrap().to_string()
    }

    fn values(&mut self, max: usize) -> Vec<Vec<u8>> {
        let n = self.rng.gen_range(1..=max);
        (0..n).map(|_| self.value()).collect()
    }

    fn compression(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=39 => self.rng.gen_range(1..=20).to_string(),
            40..=79 => self.rng.gen_range(20..=500).to_string(),
            80..=84 => self.pick_str(&["100", "1000", "5000", "100000"]),
            85..=89 => self.pick_str(&["0", "-1", "-9223372036854775808"]),
            _ => self.pick_str(&["abc", "1.5", "", "1e3", "0x10", "COMPRESSION", "OVERRIDE"]),
        }
        .into_bytes()
    }

    fn quantile(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=59 => format!("{}", self.rng.gen_range(0.0..=1.0)),
            60..=79 => self.pick_str(&["0", "1", "0.5", "0.25", "0.75", "0.99", "0.01", "0.001"]),
            80..=94 => format!("{:.2}", self.rng.gen_range(0.0..=1.0)),
            _ => self.pick_str(&["2", "-0.1", "1.0000001", "abc", "nan", "inf", ""]),
        }
        .into_bytes()
    }

    fn rank(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=49 => self.rng.gen_range(0..20).to_string(),
            50..=89 => self.rng.gen_range(0..3000).to_string(),
            90..=94 => self.pick_str(&["9223372036854775807", "1000000"]),
            _ => self.pick_str(&["-1", "1.5", "abc", "", "-0"]),
        }
        .into_bytes()
    }

    fn next_op(&mut self) -> Op {
        if let Some(op) = self.queue.pop_front() {
            return op;
        }
        self.op()
    }

    fn op(&mut self) -> Op {
        let key = self.key();
        let args = match self.rng.gen_range(0..100) {
            0..=5 => return self.create_fresh(key),
            6..=7 => vec![self.cmd("TDIGEST.RESET"), key],
            8..=29 => {
                let mut a = vec![self.cmd("TDIGEST.ADD"), key];
                a.extend(self.values(20));
                a
            }
            30..=32 => {
                // Bursts fill the buffer: compressions inside the ADD.
                let mut a = vec![self.cmd("TDIGEST.ADD"), key];
                let n = self.rng.gen_range(50..700);
                let dup = self.chance(40);
                for _ in 0..n {
                    let v = if dup {
                        format!("{}", self.rng.gen_range(0..4))
                    } else {
                        format!("{:.3}", self.rng.gen_range(-500.0..500.0))
                    };
                    a.push(v.into_bytes());
                }
                a
            }
            33..=40 => self.merge(key),
            41..=43 => {
                let name = if self.rng.gen() {
                    "TDIGEST.MIN"
                } else {
                    "TDIGEST.MAX"
                };
                vec![self.cmd(name), key]
            }
            44..=48 => vec![self.cmd("TDIGEST.INFO"), key],
            49..=58 => {
                let mut a = vec![self.cmd("TDIGEST.QUANTILE"), key];
                let n = self.rng.gen_range(1..10);
                for _ in 0..n {
                    let q = self.quantile();
                    a.push(q);
                }
                a
            }
            59..=66 => {
                let mut a = vec![self.cmd("TDIGEST.CDF"), key];
                a.extend(self.values(8));
                a
            }
            67..=74 => {
                let name = if self.rng.gen() {
                    "TDIGEST.RANK"
                } else {
                    "TDIGEST.REVRANK"
                };
                let mut a = vec![self.cmd(name), key];
                a.extend(self.values(8));
                a
            }
            75..=82 => {
                let name = if self.rng.gen() {
                    "TDIGEST.BYRANK"
                } else {
                    "TDIGEST.BYREVRANK"
                };
                let mut a = vec![self.cmd(name), key];
                let n = self.rng.gen_range(1..8);
                for _ in 0..n {
                    let r = self.rank();
                    a.push(r);
                }
                a
            }
            83..=87 => {
                let (lo, hi) = (self.quantile(), self.quantile());
                vec![self.cmd("TDIGEST.TRIMMED_MEAN"), key, lo, hi]
            }
            88..=93 => return self.dump_restore(key),
            94..=96 => return self.single_observation(key),
            97 => return self.doubling(key),
            98 => vec![b"DEL".to_vec(), key],
            _ => return self.large(key),
        };
        let args = self.wrong_arity(args);
        Op::new(args)
    }

    /// Now and then (3 %) the wrong arity: cut short, or one value more.
    fn wrong_arity(&mut self, mut args: Args) -> Args {
        if self.chance(3) {
            if self.rng.gen() && args.len() > 1 {
                let n = self.rng.gen_range(1..args.len());
                args.truncate(n);
            } else {
                let v = self.value();
                args.push(v);
            }
        }
        if allocation_crashes_reference(&args) {
            args.pop();
        }
        args
    }

    fn create_args(&mut self, key: Vec<u8>) -> Args {
        let mut a = vec![self.cmd("TDIGEST.CREATE"), key];
        match self.rng.gen_range(0..100) {
            0..=19 => {}
            20..=84 => {
                let w = self.pick(&["COMPRESSION", "compression", "Compression"]);
                a.push(w);
                let c = self.compression();
                a.push(c);
            }
            85..=89 => {
                // The keyword may come last (the value is still argv[3]).
                let c = self.compression();
                a.push(c);
                a.push(b"COMPRESSION".to_vec());
            }
            90..=94 => {
                let w = self.pick(&["COMPRESS", "foo", ""]);
                a.push(w);
                let c = self.compression();
                a.push(c);
            }
            _ => a.push(b"COMPRESSION".to_vec()),
        }
        a
    }

    /// Usually DEL first, so that CREATE really creates.
    fn create_fresh(&mut self, key: Vec<u8>) -> Op {
        let create = self.create_args(key.clone());
        let create = self.wrong_arity(create);
        if self.chance(25) {
            self.queue.push_back(Op::new(create));
            return Op::new(vec![b"DEL".to_vec(), key]);
        }
        Op::new(create)
    }

    fn merge(&mut self, dest: Vec<u8>) -> Args {
        let mut a = vec![self.cmd("TDIGEST.MERGE"), dest.clone()];
        let n = self.rng.gen_range(1..=4usize);
        let numkeys = match self.rng.gen_range(0..100) {
            0..=89 => n.to_string(),
            90..=93 => (n + self.rng.gen_range(1..3)).to_string(),
            _ => self.pick_str(&["0", "-1", "abc", "", "1.0"]),
        };
        a.push(numkeys.into_bytes());
        for _ in 0..n {
            let src = if self.chance(15) {
                dest.clone()
            } else {
                self.key()
            };
            a.push(src);
        }
        for _ in 0..self.rng.gen_range(0..=2) {
            match self.rng.gen_range(0..10) {
                0..=3 => {
                    let w = self.pick(&["COMPRESSION", "compression"]);
                    a.push(w);
                    let c = self.compression();
                    a.push(c);
                }
                4..=7 => {
                    let w = self.pick(&["OVERRIDE", "override"]);
                    a.push(w)
                }
                8 => a.push(b"COMPRESSION".to_vec()),
                _ => {
                    let w = self.pick(&["junk", "OVERRID", ""]);
                    a.push(w)
                }
            }
        }
        a
    }

    /// DUMP of one key, and RESTORE of a dump seen earlier (payloads are
    /// identical on both sides, so each side restores the other's too).
    fn dump_restore(&mut self, key: Vec<u8>) -> Op {
        if self.dumps.is_empty() || self.chance(40) {
            return Op::new(vec![b"DUMP".to_vec(), key]);
        }
        let i = self.rng.gen_range(0..self.dumps.len());
        let (payload, single) = self.dumps[i].clone();
        let target = self.key();
        let mut a = vec![b"RESTORE".to_vec(), target, b"0".to_vec(), payload];
        if self.chance(70) {
            a.push(b"REPLACE".to_vec());
        }
        Op {
            // §7.3: rsbloom keeps a one-observation digest's value.
            reset: single.then_some("single-observation-reload"),
            ..Op::new(a)
        }
    }

    /// A large digest: thousands of values over a few commands.
    fn large(&mut self, key: Vec<u8>) -> Op {
        let c = self.rng.gen_range(20..300).to_string();
        let create = sargs(&["TDIGEST.CREATE", "", "COMPRESSION", &c]);
        let mut create = create;
        create[1] = key.clone();
        self.queue.push_back(Op::new(create));
        for _ in 0..self.rng.gen_range(1..6) {
            let mut a = vec![b"TDIGEST.ADD".to_vec(), key.clone()];
            let n = self.rng.gen_range(500..4000);
            let values: Vec<Vec<u8>> = (0..n).map(|_| self.value()).collect();
            a.extend(
                values
                    .into_iter()
                    .filter(|v| redis_double(v).is_some_and(f64::is_finite)),
            );
            self.queue.push_back(Op::new(a));
        }
        Op::new(vec![b"DEL".to_vec(), key])
    }

    /// MERGE of a digest into itself, twice, until its weight overflows
    /// (`overflow detected`, with the sources compressed all the same).
    fn doubling(&mut self, key: Vec<u8>) -> Op {
        let mut add = vec![b"TDIGEST.ADD".to_vec(), key.clone()];
        add.extend(self.values(6));
        self.queue.push_back(Op::new(add));
        for _ in 0..self.rng.gen_range(30..45) {
            let mut m = vec![
                b"TDIGEST.MERGE".to_vec(),
                key.clone(),
                b"2".to_vec(),
                key.clone(),
                key.clone(),
            ];
            if self.chance(30) {
                m.push(b"OVERRIDE".to_vec());
            }
            self.queue.push_back(Op::new(m));
            if self.chance(20) {
                let r = self.read_of(key.clone());
                self.queue.push_back(Op::new(r));
            }
        }
        let create = vec![
            b"TDIGEST.CREATE".to_vec(),
            key.clone(),
            b"COMPRESSION".to_vec(),
            self.compression(),
        ];
        self.queue.push_front(Op::new(create));
        Op::new(vec![b"DEL".to_vec(), key])
    }

    fn read_of(&mut self, key: Vec<u8>) -> Args {
        let mut a = vec![b"TDIGEST.QUANTILE".to_vec(), key];
        a.push(self.quantile());
        a
    }

    /// A digest with one observation, often dumped right away.
    fn single_observation(&mut self, key: Vec<u8>) -> Op {
        let create = vec![
            b"TDIGEST.CREATE".to_vec(),
            key.clone(),
            b"COMPRESSION".to_vec(),
            self.compression(),
        ];
        let v = self.value();
        self.queue.push_back(Op::new(create));
        self.queue
            .push_back(Op::new(vec![b"TDIGEST.ADD".to_vec(), key.clone(), v]));
        if self.chance(60) {
            self.queue
                .push_back(Op::new(vec![b"DUMP".to_vec(), key.clone()]));
        }
        Op::new(vec![b"DEL".to_vec(), key])
    }
}

/// Whether a DUMP payload is a digest holding exactly one observation:
/// no merged node, one unmerged (docs/tdigest.md §7.1 layout).
fn is_single_observation(payload: &[u8]) -> bool {
    const TD_ID: [u8; 10] = [7, 0x81, 0x4c, 0x32, 0x12, 0xf9, 0x36, 0x0f, 0x10, 0x00];
    if !payload.starts_with(&TD_ID) {
        return false;
    }
    let (_, prims) = common::dump::parse(payload);
    use common::dump::Prim::U;
    matches!((&prims[4], &prims[5]), (U(0), U(1)))
}

// ---------------------------------------------------------------------------
// The family
// ---------------------------------------------------------------------------

impl Family for Gen {
    type Kind = ();
    type Action = Infallible;
    const RULES: &'static [Rule] = RULES;
    const CHECK_COMMANDS: &'static [&'static str] = &["TYPE", "TDIGEST.INFO", "DUMP"];
    const CHECK_IN_STREAM: bool = true;
    const SERVER_ARGS: &'static [&'static str] = &["--rdbcompression", "no"];

    fn rng(&mut self) -> &mut SmallRng {
        &mut self.rng
    }

    /// Keys of other types (the stream may overwrite or delete them).
    fn setup(&mut self, d: &mut Pair) {
        d.both(&sargs(&["SET", STRING_KEY, "a string"]));
        d.both(&sargs(&["BF.ADD", OTHER_TYPE, "x"]));
    }

    fn next(&mut self) -> Step<(), Infallible> {
        Step::Cmd(self.next_op())
    }

    fn outcomes(&self, reply: &Reply) -> Vec<String> {
        let nan = |x: &Reply| matches!(x, Reply::Double(d) if d.contains("nan"));
        vec![match reply {
            Reply::Error(e) => format!("-{}", e.chars().take(70).collect::<String>()),
            Reply::Array(v) if v.iter().any(nan) => "nan".into(),
            _ => "ok".into(),
        }]
    }

    /// Remembers DUMP payloads for later RESTOREs.
    fn agreed(&mut self, args: &[Vec<u8>], reply: &Reply) {
        if let (true, Reply::Bulk(p)) = (upper(&args[0]) == "DUMP", reply) {
            let entry = (p.clone(), is_single_observation(p));
            keep(&mut self.rng, &mut self.dumps, 64, entry);
        }
    }

    fn check_keys(&mut self) -> Vec<Vec<u8>> {
        DIGESTS
            .iter()
            .chain(&[STRING_KEY, OTHER_TYPE])
            .map(|k| k.as_bytes().to_vec())
            .collect()
    }
}

#[test]
fn tdigest_random_stream_matches_reference() {
    run_family("T-Digest", Gen::new, |_, stats, n| {
        // The stream reached what it is about.
        for what in [
            "TDIGEST.MERGE ok",
            "TDIGEST.QUANTILE nan",
            "TDIGEST.CDF ok",
            "RESTORE ok",
            "TDIGEST.ADD -ERR T-Digest: error parsing val parameter",
            "TDIGEST.MERGE -ERR T-Digest: key does not exist",
            "TDIGEST.CREATE -ERR T-Digest: key already exists",
        ] {
            assert!(
                stats.outcome(what) > 0 || n < 20_000,
                "stream never produced `{what}`"
            );
        }
    });
}

#[test]
fn allowlist_is_narrow() {
    let info = |mem: i64| {
        let mut v = Vec::new();
        for (k, x) in [
            ("Compression", 100),
            ("Capacity", 610),
            ("Merged nodes", 0),
            ("Unmerged nodes", 0),
            ("Merged weight", 0),
            ("Unmerged weight", 0),
            ("Observations", 0),
            ("Total compressions", 0),
            ("Memory usage", mem),
        ] {
            v.push(simple(k));
            v.push(int(x));
        }
        Reply::Array(v)
    };
    let applies = |rs, rf| rule_name(RULES, &["TDIGEST.INFO", "k"], rs, rf).is_some();
    assert!(applies(info(9840), info(9768)));
    assert!(!applies(info(9841), info(9768)));
    assert!(!applies(info(9768), info(9840)));
    let overflow = err("ERR T-Digest: overflow detected");
    let full = |args: &[&str], rs: &Reply, rf: &Reply| {
        rule_name(RULES, args, rs.clone(), rf.clone()) == Some("full-digest-takes-more")
    };
    assert!(full(&["TDIGEST.ADD", "k", "1"], &ok(), &overflow));
    // A merge's centroids find no room in rsbloom either.
    assert!(!full(&["TDIGEST.MERGE", "k", "1", "k"], &ok(), &overflow));
    assert!(!full(&["TDIGEST.ADD", "k", "1"], &overflow, &ok()));
    assert!(!full(&["TDIGEST.ADD", "k", "1"], &ok(), &err("ERR other")));
    assert!(!full(&["TDIGEST.RESET", "k"], &ok(), &overflow));
}
