//! Differential test of the CMS.* family: a seeded random stream of
//! commands — valid and invalid, on sketches of several shapes, on keys of
//! other types (string, Bloom, Cuckoo), MERGE with WEIGHTS and overflow,
//! INITBYPROB edge values, COPY, MEMORY USAGE, DUMP/RESTORE both ways and
//! DEBUG RELOAD — goes to rsbloom and to the reference RedisBloom 2.8.2
//! (two redis-server 7.0 processes), pipelined in batches mixing RESP2 and
//! RESP3, and every reply is compared exactly. Periodically the DUMP and
//! CMS.INFO of every key are compared as well.
//!
//! rsbloom targets RedisBloom 8.x; the 2.8.2 → 8.x differences and
//! rsbloom's additions that show in replies are mapped by `RULES` (each
//! cites docs/cms.md); where one leaves the two keyspaces different, the
//! key is reset on both sides and the reset counted.
//!
//! Environment: `RSBLOOM_DIFF_SEED` (seed, printed), `RSBLOOM_DIFF_OPS`
//! (commands, default 100 000), `RSBLOOM_DIFF_SELF=1` (reference against
//! reference), `RSBLOOM_DIFF_COVERAGE=1` (print the reply outcomes).
mod common;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;

use common::diff::*;
use common::*;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

const BATCH: usize = 200;
const CHECK_EVERY: usize = 10_000;
const MAX_PRINTED_MISMATCHES: usize = 12;
const HISTORY: usize = 200;

fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|s| {
        s.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an integer"))
    })
}

fn upper(a: &[u8]) -> String {
    String::from_utf8_lossy(a).to_ascii_uppercase()
}

fn err_is(r: &Reply, text: &str) -> bool {
    matches!(r, Reply::Error(e) if e == text)
}

// ---------------------------------------------------------------------------
// The allowlist: each rule maps an rsbloom (8.x) reply to the reference
// (2.8.2) reply for one documented difference; `reset` names the argument
// whose key may differ afterwards (it is then deleted on both sides).
// ---------------------------------------------------------------------------

struct Rule {
    name: &'static str,
    cite: &'static str,
    reset: Option<usize>,
    /// (args, rsbloom reply, reference reply)
    applies: fn(&[Vec<u8>], &Reply, &Reply) -> bool,
}

const RULES: &[Rule] = &[Rule {
    // rsbloom copies every value type; RedisBloom registers no copy
    // callback and the server refuses.
    name: "copy-supported",
    cite: "docs/cms.md §7.3 (COPY); RedisBloom: `ERR not supported for this module key`",
    reset: Some(2),
    applies: |args, rs, rf| {
        upper(&args[0]) == "COPY"
            && *rs == int(1)
            && err_is(rf, "ERR not supported for this module key")
    },
}];

/// MEMORY USAGE: RedisBloom 8.x reports `32 + 4·w·d` for a sketch, 2.8.2
/// `8 + 8·w·d` (docs/cms.md §7.4); the server adds the same overhead to
/// both. Checked against the key's CMS.INFO (the command runs last in its
/// batch, so the sketch is still as measured).
const MEMORY_RULE: &str = "memory-usage-8x-formula";
const MEMORY_CITE: &str = "docs/cms.md §6.4, §7.4 (MEMORY USAGE 32 + 4wd vs 8 + 8wd)";

// ---------------------------------------------------------------------------
// Generator
// ---------------------------------------------------------------------------

/// Sketch keys (`WEIGHTS` can be created but never merged as a source).
const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "k4", "k5", "WEIGHTS"];
/// Keys of other types, and one that never exists.
const OTHER: &[&str] = &["str", "bf", "cf", "nokey"];

const BAD_INTS: &[&str] = &[
    "1e",
    "-0",
    "+1",
    " 1",
    "1 ",
    "0x10",
    "inf",
    "nan",
    "",
    "abc",
    "1.5",
    "01",
    "1e3",
    "9223372036854775808",
    "-",
    "99999999999999999999",
];
const BAD_DOUBLES: &[&str] = &[
    "0", "1", "-0.1", "1.5", "inf", "-inf", "nan", "1e", "abc", "", " 0.1", "0.1 ", "1e-400", "2",
    "1e400", "-0",
];

enum Kind {
    Plain,
    /// DUMP `src` on both sides (payloads compared), then RESTORE each
    /// side's payload into `dst` on the *other* side.
    CrossRestore {
        src: Vec<u8>,
        dst: Vec<u8>,
    },
    /// `MEMORY USAGE key`, checked with [`MEMORY_RULE`].
    Memory,
}

struct Op {
    args: Args,
    kind: Kind,
    /// Flush the batch right after this command.
    isolate: bool,
}

impl Op {
    fn plain(args: Args) -> Op {
        Op {
            args,
            kind: Kind::Plain,
            isolate: false,
        }
    }
}

struct Gen {
    rng: SmallRng,
    queue: VecDeque<Op>,
}

impl Gen {
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs.choose(&mut self.rng).unwrap().clone()
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.gen_range(0..100) < percent
    }

    fn s(&mut self, xs: &[&str]) -> Vec<u8> {
        self.pick(xs).as_bytes().to_vec()
    }

    fn num(&mut self, lo: i64, hi: i64) -> Vec<u8> {
        self.rng.gen_range(lo..=hi).to_string().into_bytes()
    }

    /// Mostly the first sketch keys (so they accumulate), sometimes a key
    /// of another type or a missing one.
    fn key(&mut self) -> Vec<u8> {
        if self.chance(8) {
            return self.s(OTHER);
        }
        let n = KEYS.len();
        let i = self.rng.gen_range(0..n).min(self.rng.gen_range(0..n));
        KEYS[i].as_bytes().to_vec()
    }

    fn cmd(&mut self, name: &str) -> Vec<u8> {
        if self.chance(85) {
            return name.as_bytes().to_vec();
        }
        name.bytes()
            .map(|b| {
                if self.rng.gen() {
                    b.to_ascii_lowercase()
                } else {
                    b
                }
            })
            .collect()
    }

    fn item(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=79 => format!("i{}", self.rng.gen_range(0..60)).into_bytes(),
            80..=89 => {
                let n = self.rng.gen_range(1..9);
                (0..n).map(|_| self.rng.gen()).collect()
            }
            90..=94 => Vec::new(),
            95..=97 => self.s(&["WEIGHTS", "-1", "0", "x"]),
            _ => (0..self.rng.gen_range(64..300))
                .map(|_| self.rng.gen())
                .collect(),
        }
    }

    fn increment(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=69 => self.num(0, 20),
            70..=79 => self.num(1000, 1_000_000),
            80..=89 => self.s(&[
                "2147483647",
                "4294967294",
                "4294967295",
                "4294967296",
                "9223372036854775807",
                "1099511627776",
            ]),
            90..=94 => self.s(&["-1", "-5", "-9223372036854775808"]),
            _ => self.s(BAD_INTS),
        }
    }

    fn weight(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=64 => self.num(-2, 3),
            65..=79 => self.s(&["0", "1"]),
            80..=91 => self.s(&[
                "1000000000",
                "-1000000000",
                "4294967295",
                "9223372036854775807",
                "-9223372036854775808",
                "8589934592",
            ]),
            _ => self.s(&["1.5", "x", "", "+1", "-0", "1e2"]),
        }
    }

    /// Width/depth pairs: mostly the shared shape (merges succeed), a few
    /// others, invalid and overflowing ones. Never an allocatable huge
    /// sketch: RedisBloom on Redis 7.0 would abort on the failed calloc.
    fn dims(&mut self) -> (Vec<u8>, Vec<u8>) {
        match self.rng.gen_range(0..100) {
            0..=59 => (b"20".to_vec(), b"5".to_vec()),
            60..=69 => (b"7".to_vec(), b"3".to_vec()),
            70..=74 => (b"1".to_vec(), b"1".to_vec()),
            75..=84 => (self.num(1, 64), self.num(1, 8)),
            85..=87 => (self.num(1000, 100_000), self.num(1, 4)),
            88..=91 => {
                let (w, d) = self.pick(&[
                    ("4611686018427387904", "2"),
                    ("2", "4611686018427387904"),
                    ("9223372036854775807", "1"),
                    ("2147483648", "2147483648"),
                    ("3074457345618258603", "3"),
                ]);
                (w.as_bytes().to_vec(), d.as_bytes().to_vec())
            }
            92..=95 => (self.s(&["0", "-1"]), self.num(1, 5)),
            _ => (self.num(1, 10), self.s(BAD_INTS)),
        }
    }

    fn error_prob(&mut self) -> (Vec<u8>, Vec<u8>) {
        let e = match self.rng.gen_range(0..100) {
            0..=69 => self.s(&["0.1", "0.05", "0.01", "0.3", "0.7", "0.001", "0.9999"]),
            70..=79 => self.s(&["1e-19", "1.5e-19", "2e-19", "3e-19", "5e-324"]),
            _ => self.s(BAD_DOUBLES),
        };
        let p = match self.rng.gen_range(0..100) {
            0..=59 => self.s(&["0.01", "0.1", "0.5", "0.25", "0.125", "0.001", "0.9"]),
            60..=84 => self.s(&[
                "0.4999999",
                "0.5000001",
                "0.24999997019767761",
                "0.0078124990686774254",
                "0.00097656238358467817",
                "9.5367431640625e-07",
                "1e-40",
                "1e-45",
                "1e-46",
                "0.99999999",
                "0.999999",
            ]),
            _ => self.s(BAD_DOUBLES),
        };
        (e, p)
    }

    fn pairs(&mut self, max: usize) -> Args {
        let n = self.rng.gen_range(1..=max);
        (0..n)
            .flat_map(|_| [self.item(), self.increment()])
            .collect()
    }

    fn items(&mut self, max: usize) -> Args {
        let n = self.rng.gen_range(1..=max);
        (0..n).map(|_| self.item()).collect()
    }

    /// A merge source: a sketch key, rarely another type or `WEIGHTS`.
    fn source(&mut self) -> Vec<u8> {
        if self.chance(5) {
            return self.s(&["str", "bf", "nokey", "k9"]);
        }
        let n = KEYS.len() - 1;
        KEYS[self.rng.gen_range(0..n)].as_bytes().to_vec()
    }

    fn merge(&mut self) -> Args {
        let dest = self.key();
        let mut a = vec![self.cmd("CMS.MERGE"), dest];
        let n = self.rng.gen_range(1..=3usize);
        let weighted = self.chance(60);
        match self.rng.gen_range(0..100) {
            0..=84 => {
                a.push(n.to_string().into_bytes());
                for _ in 0..n {
                    let src = self.source();
                    a.push(src);
                }
                if weighted {
                    a.push(self.s(&["WEIGHTS", "weights", "Weights"]));
                    for _ in 0..n {
                        let w = self.weight();
                        a.push(w);
                    }
                }
            }
            85..=89 => {
                a.push(self.s(&["0", "-1", "-9223372036854775808", "x", "1.0", ""]));
                a.push(self.source());
            }
            _ => {
                // Counts that do not match, WEIGHTS misplaced or a source.
                let count = self.rng.gen_range(1..=4usize);
                a.push(count.to_string().into_bytes());
                for _ in 0..self.rng.gen_range(0..=4) {
                    let src = if self.chance(20) {
                        b"WEIGHTS".to_vec()
                    } else {
                        self.source()
                    };
                    a.push(src);
                }
                if self.chance(50) {
                    a.push(b"WEIGHTS".to_vec());
                    for _ in 0..self.rng.gen_range(0..=4) {
                        let w = self.weight();
                        a.push(w);
                    }
                }
            }
        }
        a
    }

    fn mangle_arity(&mut self, mut args: Args) -> Args {
        if self.chance(3) {
            if self.rng.gen() && args.len() > 1 {
                let n = self.rng.gen_range(1..args.len());
                args.truncate(n);
            } else {
                for _ in 0..self.rng.gen_range(1..3) {
                    let extra = self.item();
                    args.push(extra);
                }
            }
        }
        args
    }

    fn next_op(&mut self) -> Op {
        if let Some(op) = self.queue.pop_front() {
            return op;
        }
        let key = self.key();
        let args = match self.rng.gen_range(0..1000) {
            0..=79 => {
                let (w, d) = self.dims();
                vec![self.cmd("CMS.INITBYDIM"), key.clone(), w, d]
            }
            80..=119 => {
                let (e, p) = self.error_prob();
                vec![self.cmd("CMS.INITBYPROB"), key.clone(), e, p]
            }
            120..=469 => {
                let mut a = vec![self.cmd("CMS.INCRBY"), key.clone()];
                let n = if self.chance(10) { 60 } else { 6 };
                a.extend(self.pairs(n));
                a
            }
            470..=699 => {
                let mut a = vec![self.cmd("CMS.QUERY"), key.clone()];
                let n = if self.chance(10) { 80 } else { 8 };
                a.extend(self.items(n));
                a
            }
            700..=829 => self.merge(),
            830..=879 => vec![self.cmd("CMS.INFO"), key.clone()],
            880..=919 => return self.special(key),
            920..=969 => sargs(&["TYPE", std::str::from_utf8(&key).unwrap_or("k0")]),
            _ => vec![b"DEL".to_vec(), key.clone()],
        };
        let args = self.mangle_arity(args);
        if KEYS.iter().any(|k| k.as_bytes() == key) && upper(&args[0]).starts_with("CMS.INIT") {
            // Often start over, so that creation really creates.
            if self.chance(25) {
                self.queue.push_back(Op::plain(args));
                return Op::plain(vec![b"DEL".to_vec(), key]);
            }
        }
        Op::plain(args)
    }

    /// DUMP/RESTORE across, COPY, MEMORY USAGE, DEBUG RELOAD.
    fn special(&mut self, key: Vec<u8>) -> Op {
        let other = self.pick(KEYS).as_bytes().to_vec();
        match self.rng.gen_range(0..100) {
            0..=44 => Op {
                args: vec![b"DUMP/RESTORE".to_vec(), key.clone()],
                kind: Kind::CrossRestore {
                    src: key,
                    dst: other,
                },
                isolate: true,
            },
            45..=69 => {
                let mut args = vec![b"COPY".to_vec(), key, other];
                if self.chance(50) {
                    args.push(b"REPLACE".to_vec());
                }
                Op {
                    args,
                    kind: Kind::Plain,
                    isolate: true,
                }
            }
            70..=97 => Op {
                args: vec![b"MEMORY".to_vec(), b"USAGE".to_vec(), key],
                kind: Kind::Memory,
                isolate: true,
            },
            _ => Op {
                args: sargs(&["DEBUG", "RELOAD"]),
                kind: Kind::Plain,
                isolate: true,
            },
        }
    }
}

/// Commands that (re)create the fixed keys.
fn fixed_setup() -> Vec<Args> {
    let mut v: Vec<Args> = [
        "SET str a-string",
        "BF.ADD bf x",
        "CF.ADD cf x",
        "CMS.INITBYDIM k0 20 5",
        "CMS.INITBYDIM k1 20 5",
        "CMS.INITBYDIM k2 20 5",
        "CMS.INITBYDIM k3 7 3",
        "CMS.INITBYPROB k4 0.1 0.01",
        "CMS.INITBYDIM WEIGHTS 20 5",
    ]
    .iter()
    .map(|l| sargs(&l.split(' ').collect::<Vec<_>>()))
    .collect();
    v.insert(0, sargs(&["FLUSHALL"]));
    v
}

fn fixed_key_setup(key: &[u8]) -> Option<Args> {
    let cmd = match key {
        b"str" => "SET str a-string",
        b"bf" => "BF.ADD bf x",
        b"cf" => "CF.ADD cf x",
        _ => return None,
    };
    Some(sargs(&cmd.split(' ').collect::<Vec<_>>()))
}

// ---------------------------------------------------------------------------
// Runner
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Stats {
    compared: usize,
    identical: usize,
    allowed: BTreeMap<&'static str, usize>,
    resets: usize,
    mismatches: usize,
    full_checks: usize,
    cross_restores: usize,
    resp3_batches: usize,
    batches: usize,
    /// Reference reply outcomes per command (coverage of the stream).
    outcomes: BTreeMap<String, usize>,
}

fn outcome_keys(r: &Reply) -> Vec<String> {
    match r {
        Reply::Error(e) => vec![format!("-{e}")],
        Reply::Array(v) => {
            let mut out: Vec<String> = v
                .iter()
                .filter_map(|x| match x {
                    Reply::Error(e) => Some(format!("[-{e}]")),
                    Reply::Int(4294967294) => Some("[4294967294]".into()),
                    _ => None,
                })
                .collect();
            out.sort();
            out.dedup();
            if out.is_empty() {
                out.push("array".into());
            }
            out
        }
        Reply::Map(_) => vec!["map".into()],
        Reply::Simple(s) => vec![format!("+{s}")],
        Reply::Int(_) => vec![":n".into()],
        other => vec![format!("{other:?}").chars().take(12).collect()],
    }
}

struct Runner {
    seed: u64,
    rs: Side,
    rf: Side,
    gen: Gen,
    stats: Stats,
    history: HashMap<Vec<u8>, VecDeque<(Args, Reply)>>,
    log: Vec<String>,
}

impl Runner {
    fn new(flavor: Flavor, seed: u64) -> Runner {
        let mut r = Runner {
            seed,
            rs: Side::start(flavor, subject_module()),
            rf: Side::start(flavor, Module::Reference),
            gen: Gen {
                rng: SmallRng::seed_from_u64(seed),
                queue: VecDeque::new(),
            },
            stats: Stats::default(),
            history: HashMap::new(),
            log: Vec::new(),
        };
        for c in fixed_setup() {
            let (a, b) = (r.rs.cmd(&c), r.rf.cmd(&c));
            assert_eq!(a, b, "setup {}", show_args(&c));
        }
        r
    }

    /// Deletes `key` on both sides (and recreates a fixed key of another type).
    fn reset_key(&mut self, key: &[u8]) {
        self.stats.resets += 1;
        let del = vec![b"DEL".to_vec(), key.to_vec()];
        self.rs.cmd(&del);
        self.rf.cmd(&del);
        self.history.remove(key);
        if let Some(c) = fixed_key_setup(key) {
            assert_eq!(self.rs.cmd(&c), self.rf.cmd(&c));
        }
    }

    fn record(&mut self, args: &[Vec<u8>], rf: &Reply) {
        let cmd = upper(&args[0]);
        for o in outcome_keys(rf) {
            *self.stats.outcomes.entry(format!("{cmd} {o}")).or_default() += 1;
        }
        let key = args.get(1).cloned().unwrap_or_default();
        let h = self.history.entry(key).or_default();
        if cmd == "DEL" {
            h.clear();
        }
        h.push_back((args.to_vec(), rf.clone()));
        if h.len() > HISTORY {
            h.pop_front();
        }
    }

    /// Compares one reply pair; returns the key to reset, if any.
    fn judge(&mut self, op: &Op, a: &Reply, b: &Reply) -> Option<Vec<u8>> {
        self.stats.compared += 1;
        self.record(&op.args, b);
        if a == b {
            self.stats.identical += 1;
            return None;
        }
        if let Kind::Memory = op.kind {
            if self.memory_formula_holds(&op.args[2], a, b) {
                *self.stats.allowed.entry(MEMORY_RULE).or_default() += 1;
                return None;
            }
        }
        if let Some(rule) = RULES.iter().find(|r| (r.applies)(&op.args, a, b)) {
            *self.stats.allowed.entry(rule.name).or_default() += 1;
            return rule.reset.map(|i| op.args[i].clone());
        }
        self.mismatch(&op.args, a, b);
        op.args.get(1).cloned()
    }

    /// rsbloom `32 + 4wd + o`, the reference `8 + 8wd + o`, for the
    /// sketch's current CMS.INFO (the same on both sides).
    fn memory_formula_holds(&mut self, key: &[u8], rs: &Reply, rf: &Reply) -> bool {
        let info = self.rs.cmd(&[b"CMS.INFO".to_vec(), key.to_vec()]);
        let (Reply::Int(rs), Reply::Int(rf), Reply::Array(f)) = (rs, rf, &info) else {
            return false;
        };
        let cells = f[1].as_int() * f[3].as_int();
        rf - rs == 4 * cells - 24
    }

    fn flush(&mut self, batch: &mut Vec<Op>) {
        if batch.is_empty() {
            return;
        }
        let resp3 = self.gen.chance(30);
        self.stats.batches += 1;
        self.stats.resp3_batches += usize::from(resp3);
        let ops = std::mem::take(batch);
        let mut resets = Vec::new();
        let cmds: Vec<Args> = ops
            .iter()
            .filter(|o| matches!(o.kind, Kind::Plain | Kind::Memory))
            .map(|o| o.args.clone())
            .collect();
        let (ra, rb) = pipeline2(self.rs.conn(resp3), self.rf.conn(resp3), &cmds);
        let mut replies = ra.into_iter().zip(rb);
        for op in &ops {
            if let Kind::CrossRestore { src, dst } = &op.kind {
                resets.extend(self.cross_restore(op, src, dst, resp3));
                continue;
            }
            let (a, b) = replies.next().expect("a reply per command");
            resets.extend(self.judge(op, &a, &b));
        }
        for key in resets {
            self.reset_key(&key);
        }
    }

    /// DUMP `src` on both sides; RESTORE rsbloom's payload into the
    /// reference and the reference's into rsbloom.
    fn cross_restore(&mut self, op: &Op, src: &[u8], dst: &[u8], resp3: bool) -> Option<Vec<u8>> {
        self.stats.cross_restores += 1;
        let dump = vec![b"DUMP".to_vec(), src.to_vec()];
        let pa = self.rs.conn(resp3).cmd(&dump);
        let pb = self.rf.conn(resp3).cmd(&dump);
        let dump_op = Op::plain(dump);
        if let Some(k) = self.judge(&dump_op, &pa, &pb) {
            return Some(k);
        }
        let (Reply::Bulk(pa), Reply::Bulk(pb)) = (pa, pb) else {
            return None;
        };
        let restore = |p: Vec<u8>| {
            vec![
                b"RESTORE".to_vec(),
                dst.to_vec(),
                b"0".to_vec(),
                p,
                b"REPLACE".to_vec(),
            ]
        };
        let a = self.rs.conn(resp3).cmd(&restore(pb.clone()));
        let b = self.rf.conn(resp3).cmd(&restore(pa));
        let mut shown = restore(pb);
        shown[3] = format!("<payload of {}>", String::from_utf8_lossy(src)).into_bytes();
        let restore_op = Op {
            args: shown,
            ..Op::plain(op.args.clone())
        };
        self.judge(&restore_op, &a, &b)
    }

    fn mismatch(&mut self, args: &[Vec<u8>], a: &Reply, b: &Reply) {
        self.stats.mismatches += 1;
        let key = args.get(1).cloned().unwrap_or_default();
        let mut text = format!(
            "MISMATCH #{} (seed {}):\n  command:   {}\n  rsbloom:   {}\n  reference: {}\n  history of key {:?} (reference replies):\n",
            self.stats.mismatches,
            self.seed,
            show_args(args),
            show_reply(a),
            show_reply(b),
            String::from_utf8_lossy(&key),
        );
        if let Some(h) = self.history.get(&key) {
            for (args, rb) in h.iter().rev().take(25).rev() {
                text += &format!("    {}  →  {}\n", show_args(args), show_reply(rb));
            }
        }
        if self.stats.mismatches <= MAX_PRINTED_MISMATCHES {
            eprintln!("{text}");
        }
        self.log.push(text);
    }

    /// DUMP and CMS.INFO of every key must be identical on both sides.
    fn full_check(&mut self) {
        self.stats.full_checks += 1;
        for key in KEYS.iter().chain(OTHER) {
            for cmd in ["DUMP", "CMS.INFO", "TYPE"] {
                let args = sargs(&[cmd, key]);
                let (a, b) = (self.rs.cmd(&args), self.rf.cmd(&args));
                if a != b {
                    self.mismatch(&args, &a, &b);
                    self.reset_key(key.as_bytes());
                    break;
                }
            }
        }
    }

    fn run(&mut self, n: usize) {
        let mut batch = Vec::with_capacity(BATCH);
        for i in 0..n {
            let op = self.gen.next_op();
            let isolate = op.isolate;
            batch.push(op);
            if isolate || batch.len() >= BATCH {
                self.flush(&mut batch);
            }
            if (i + 1) % CHECK_EVERY == 0 {
                self.flush(&mut batch);
                self.full_check();
            }
        }
        self.flush(&mut batch);
        self.full_check();
    }

    fn summary(&self, elapsed: f64) -> String {
        let s = &self.stats;
        let mut out = format!(
            "=== differential CMS: seed {} ({}) ===\n  commands compared: {} ({} identical) in {} batches ({} RESP3) in {:.1}s\n  DUMP/RESTORE across: {}; full DUMP+INFO checks: {}\n",
            self.seed,
            if subject_module() == Module::Reference { "REFERENCE vs REFERENCE" } else { "rsbloom vs reference" },
            s.compared,
            s.identical,
            s.batches,
            s.resp3_batches,
            elapsed,
            s.cross_restores,
            s.full_checks,
        );
        out += "  allowlisted differences:\n";
        let rules = RULES
            .iter()
            .map(|r| (r.name, r.cite))
            .chain([(MEMORY_RULE, MEMORY_CITE)]);
        for (name, cite) in rules {
            let n = s.allowed.get(name).copied().unwrap_or(0);
            out += &format!("    {name:<28} {n:>7}   ({cite})\n");
        }
        out += &format!("  keys reset: {}\n", s.resets);
        if std::env::var("RSBLOOM_DIFF_COVERAGE").is_ok() {
            out += "  reference reply outcomes:\n";
            for (k, n) in &s.outcomes {
                out += &format!("    {n:>7}  {k}\n");
            }
        }
        out += &format!("  MISMATCHES: {}\n", s.mismatches);
        out
    }
}

/// Outcomes a stream of 100 000 commands must have produced (the
/// generator's reach), as `command reference-outcome` keys.
const MUST_SEE: &[&str] = &[
    "CMS.INITBYDIM +OK",
    "CMS.INITBYDIM -CMS: key already exists",
    "CMS.INITBYDIM -CMS: invalid width",
    "CMS.INITBYDIM -CMS: invalid depth",
    "CMS.INITBYDIM -CMS: invalid init arguments",
    "CMS.INITBYDIM -CMS: Insufficient memory to create the key",
    "CMS.INITBYPROB +OK",
    "CMS.INITBYPROB -CMS: invalid overestimation value",
    "CMS.INITBYPROB -CMS: invalid prob value",
    "CMS.INITBYPROB -CMS: invalid init arguments",
    "CMS.INITBYPROB -CMS: Insufficient memory to create the key",
    "CMS.INCRBY array",
    "CMS.INCRBY [-CMS: INCRBY overflow]",
    "CMS.INCRBY [4294967294]",
    "CMS.INCRBY -CMS: Cannot parse number",
    "CMS.INCRBY -CMS: Number cannot be negative",
    "CMS.INCRBY -CMS: key does not exist",
    "CMS.INCRBY -WRONGTYPE Operation against a key holding the wrong kind of value",
    "CMS.INCRBY -ERR wrong number of arguments for 'cms.incrby' command",
    "CMS.QUERY array",
    "CMS.MERGE +OK",
    "CMS.MERGE -CMS: MERGE overflow",
    "CMS.MERGE -CMS: width/depth is not equal",
    "CMS.MERGE -CMS: invalid numkeys",
    "CMS.MERGE -CMS: Number of keys must be positive",
    "CMS.MERGE -CMS: wrong number of keys",
    "CMS.MERGE -CMS: wrong number of keys/weights",
    "CMS.MERGE -CMS: invalid weight value",
    "CMS.MERGE -CMS: key does not exist",
    "CMS.INFO map",
    "RESTORE +OK",
    "DEBUG +OK",
    "COPY -ERR not supported for this module key",
    "MEMORY :n",
];

#[test]
fn cms_random_stream_matches_reference() {
    let seed = env_num("RSBLOOM_DIFF_SEED").unwrap_or_else(|| u64::from(rand::random::<u32>()));
    let n = env_num("RSBLOOM_DIFF_OPS").unwrap_or(100_000) as usize;
    for flavor in flavors() {
        run_on(flavor, seed, n);
    }
}

fn run_on(flavor: Flavor, seed: u64, n: usize) {
    eprintln!(
        "differential CMS on {flavor:?}: seed {seed} (RSBLOOM_DIFF_SEED={seed} to reproduce), {n} commands"
    );
    let start = Instant::now();
    let mut r = Runner::new(flavor, seed);
    r.run(n);
    eprintln!("{}", r.summary(start.elapsed().as_secs_f64()));
    if r.stats.mismatches > 0 {
        let path = std::env::temp_dir().join(format!("rsbloom-diff-cms-{flavor:?}-{seed}.log"));
        let _ = std::fs::write(&path, r.log.join("\n"));
        eprintln!("all mismatches written to {}", path.display());
    }
    assert!(
        r.stats.compared >= n,
        "fewer commands compared than generated"
    );
    assert_eq!(
        r.stats.mismatches, 0,
        "{} mismatches (seed {seed})",
        r.stats.mismatches
    );
    if n >= 100_000 {
        let missing: Vec<&&str> = MUST_SEE
            .iter()
            .filter(|k| !r.stats.outcomes.contains_key(**k))
            .collect();
        assert!(missing.is_empty(), "never produced: {missing:?}");
    }
}

/// The allowlist must not hide an ordinary difference.
#[test]
fn allowlist_rules_are_narrow() {
    let find = |args: &[&str], rs: Reply, rf: Reply| {
        RULES
            .iter()
            .find(|r| (r.applies)(&sargs(args), &rs, &rf))
            .map(|r| r.name)
    };
    let e = |s: &str| Reply::Error(s.into());
    assert_eq!(
        find(
            &["COPY", "k0", "k1"],
            int(1),
            e("ERR not supported for this module key")
        ),
        Some("copy-supported")
    );
    assert_eq!(
        find(
            &["COPY", "k0", "k1"],
            int(0),
            e("ERR not supported for this module key")
        ),
        None
    );
    assert_eq!(find(&["COPY", "k0", "k1"], int(1), int(0)), None);
    assert_eq!(
        find(
            &["CMS.QUERY", "k0", "a"],
            int(1),
            e("ERR not supported for this module key")
        ),
        None
    );
}
