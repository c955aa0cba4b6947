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
//! key is reset on both sides and the reset counted. What Redis 8.12
//! changed on purpose (no saturation, decrements, CMS.INFO's cell size,
//! the CELL_SIZE option) is allowlisted the same way and its keys reset;
//! everything else must still agree. rsbloom runs with
//! `bf.cms-rdb-encoding 0`, so DUMPs compare byte for byte and move both
//! ways (docs/cms.md §6.5).
//!
//! The driver and its environment variables: `common::diff::driver`.

use std::collections::VecDeque;
use std::convert::Infallible;

use common::diff::driver::*;
use common::diff::*;
use common::*;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------
// The allowlist: each rule maps an rsbloom (8.x) reply to the reference
// (2.8.2) reply for one documented difference; `diverges` names the argument
// whose key may differ afterwards (it is then deleted on both sides).
// ---------------------------------------------------------------------------

const RULES: &[Rule] = &[
    Rule {
        // rsbloom copies every value type; RedisBloom registers no copy
        // callback and the server refuses.
        name: "copy-supported",
        cite: "docs/cms.md §7.3 (COPY); RedisBloom: `ERR not supported for this module key`",
        diverges: Some(2),
        applies: |args, rs, rf| {
            upper(&args[0]) == "COPY"
                && *rs == int(1)
                && err_is(rf, "ERR not supported for this module key")
        },
    },
    Rule {
        // 8.12 refuses an increment that does not fit (cell or total) and
        // changes nothing; 2.8.2 saturates, wraps the total and reports a
        // minimum of exactly 2^32 − 1 as an overflow.
        name: "812-incrby-no-saturation",
        cite: "docs/cms.md §4.1, docs/differences.md (Redis 8.12 CMS)",
        diverges: Some(1),
        applies: |args, rs, rf| {
            upper(&args[0]) == "CMS.INCRBY"
                && matches!((rs, rf), (Reply::Array(a), Reply::Array(b))
                    if a.len() == b.len() && (saw_limit(a) || saw_limit(b)))
        },
    },
    Rule {
        // 8.12 applies negative increments (2.8.2 refuses the command);
        // after one, a later bad increment or −2^63 answers instead.
        name: "812-incrby-negative",
        cite: "docs/cms.md §5.4, docs/differences.md (Redis 8.12 CMS)",
        diverges: Some(1),
        applies: |args, rs, rf| {
            upper(&args[0]) == "CMS.INCRBY"
                && err_is(rf, "CMS: Number cannot be negative")
                && (matches!(rs, Reply::Array(_))
                    || err_is(rs, "CMS: invalid increment")
                    || err_is(rs, "CMS: Cannot parse number"))
        },
    },
    Rule {
        // 8.12's CMS.INFO has a fourth pair; every sketch here has
        // 4-byte cells (the legacy encoding allows no other).
        name: "812-info-cell-size",
        cite: "docs/cms.md §5.7",
        diverges: None,
        applies: |args, rs, rf| upper(&args[0]) == "CMS.INFO" && without_cell_size(rs) == *rf,
    },
    Rule {
        // Six arguments: 8.12's `CELL_SIZE size` (any other fifth argument
        // is an unknown option); 2.8.2 has only four.
        name: "812-init-options",
        cite: "docs/cms.md §5.2",
        diverges: Some(1),
        applies: |args, rs, rf| {
            upper(&args[0]).starts_with("CMS.INIT")
                && args.len() == 6
                && *rf == arity(&upper(&args[0]).to_lowercase())
                && !(*rs == arity(&upper(&args[0]).to_lowercase()))
        },
    },
];

/// Whether an INCRBY reply shows a counter at its limit: an overflow or
/// underflow element, or 2^32 − 1 itself.
fn saw_limit(elements: &[Reply]) -> bool {
    elements.iter().any(|e| {
        *e == int(4294967295)
            || err_is(e, "CMS: INCRBY overflow")
            || err_is(e, "CMS: INCRBY underflow")
    })
}

/// CMS.INFO without a trailing `cell_size 4` pair (RESP2 or RESP3).
fn without_cell_size(info: &Reply) -> Reply {
    let four = (simple("cell_size"), int(4));
    match info {
        Reply::Array(a) if a.len() == 8 && (a[6].clone(), a[7].clone()) == four => {
            Reply::Array(a[..6].to_vec())
        }
        Reply::Map(m) if m.len() == 4 && m[3] == four => Reply::Map(m[..3].to_vec()),
        other => other.clone(),
    }
}

/// MEMORY USAGE: RedisBloom 8.12 reports `40 + 4·w·d` for a 4-byte
/// sketch, 2.8.2 `8 + 8·w·d` (docs/cms.md §7.4); the server adds the same
/// overhead to both. Checked against the key's CMS.INFO (the command runs
/// last in its batch, so the sketch is still as measured).
const MEMORY_RULE: &str = "memory-usage-8x-formula";
const MEMORY_CITE: &str = "docs/cms.md §6.4, §7.4 (MEMORY USAGE 40 + 4wd vs 8 + 8wd)";
/// MEMORY USAGE of the stream's Bloom filter (`bf`, a key of another type):
/// what the key takes, no longer RedisBloom's figure (issue 40).
const BLOOM_MEMORY_RULE: &str = "bloom-memory-usage-own";
const BLOOM_MEMORY_CITE: &str = "docs/bloom.md §1 \"Memory\" (one block per small chain)";

// ---------------------------------------------------------------------------
// Generator
// ---------------------------------------------------------------------------

/// Sketch keys (`WEIGHTS` can be created but never merged as a source).
const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "k4", "k5", "WEIGHTS"];
/// Keys of other types, and one that never exists.
const OTHER: &[&str] = &["str", "bf", "cf", "nokey"];

const BAD_DOUBLES: &[&str] = &[
    "0", "1", "-0.1", "1.5", "inf", "-inf", "nan", "1e", "abc", "", " 0.1", "0.1 ", "1e-400", "2",
    "1e400", "-0",
];

#[derive(Default)]
enum Kind {
    #[default]
    Plain,
    /// DUMP `src` on both sides (payloads compared), then RESTORE each
    /// side's payload into `dst` on the *other* side.
    CrossRestore { src: Vec<u8>, dst: Vec<u8> },
    /// `MEMORY USAGE key`, checked with [`MEMORY_RULE`].
    Memory,
}

struct Gen {
    rng: SmallRng,
    queue: VecDeque<Op<Kind>>,
    cross_restores: usize,
}

impl Gen {
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs.choose(&mut self.rng).unwrap().clone()
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
        KEYS[self.skewed(KEYS.len())].as_bytes().to_vec()
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

    /// Increments 2.8.2 and 8.12 treat alike, mostly; the big and the
    /// negative ones (whose keys are then reset) are rare.
    fn increment(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..1000) {
            0..=719 => self.num(0, 20),
            720..=859 => self.num(1000, 1_000_000),
            860..=889 => self.s(&[
                "2147483647",
                "4294967294",
                "4294967295",
                "4294967296",
                "9223372036854775807",
                "1099511627776",
            ]),
            890..=899 => self.s(&["-1", "-5"]),
            900..=939 => self.s(&["-9223372036854775808"]),
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

    fn next_op(&mut self) -> Op<Kind> {
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
        let args = self.mangle_arity(args, Self::item);
        if upper(&args[0]) == "CMS.INCRBY" {
            // Ends its batch, so that a key it leaves different (8.12 refuses
            // what 2.8.2 saturates) is reset before any later command.
            let reset = changed_in_812(&args).then_some(DIVERGED_812);
            return Op {
                isolate: true,
                reset,
                ..Op::new(args)
            };
        }
        if KEYS.iter().any(|k| k.as_bytes() == key) && upper(&args[0]).starts_with("CMS.INIT") {
            // Often start over, so that creation really creates.
            if self.chance(25) {
                self.queue.push_back(Op::new(args));
                return Op::new(vec![b"DEL".to_vec(), key]);
            }
        }
        Op::new(args)
    }

    /// DUMP/RESTORE across, COPY, MEMORY USAGE, DEBUG RELOAD.
    fn special(&mut self, key: Vec<u8>) -> Op<Kind> {
        let other = self.pick(KEYS).as_bytes().to_vec();
        let (args, kind) = match self.rng.gen_range(0..100) {
            0..=44 => (
                vec![b"DUMP/RESTORE".to_vec(), key.clone()],
                Kind::CrossRestore {
                    src: key,
                    dst: other,
                },
            ),
            45..=69 => {
                let mut args = vec![b"COPY".to_vec(), key, other];
                if self.chance(50) {
                    args.push(b"REPLACE".to_vec());
                }
                (args, Kind::Plain)
            }
            70..=97 => (
                vec![b"MEMORY".to_vec(), b"USAGE".to_vec(), key],
                Kind::Memory,
            ),
            _ => (sargs(&["DEBUG", "RELOAD"]), Kind::Plain),
        };
        Op {
            isolate: true,
            kind,
            ..Op::new(args)
        }
    }
}

/// Sketches the stream starts with.
const SKETCHES: &[&str] = &[
    "CMS.INITBYDIM k0 20 5",
    "CMS.INITBYDIM k1 20 5",
    "CMS.INITBYDIM k2 20 5",
    "CMS.INITBYDIM k3 7 3",
    "CMS.INITBYPROB k4 0.1 0.01",
    "CMS.INITBYDIM WEIGHTS 20 5",
];

/// The command that creates a fixed key of another type.
fn fixed_key_setup(key: &[u8]) -> Option<Args> {
    let cmd = match key {
        b"str" => "SET str a-string",
        b"bf" => "BF.ADD bf x",
        b"cf" => "CF.ADD cf x",
        _ => return None,
    };
    Some(sargs(&cmd.split(' ').collect::<Vec<_>>()))
}

/// rsbloom `40 + 4wd + o`, the reference `8 + 8wd + o`, for the
/// sketch's current CMS.INFO (the same on both sides).
fn memory_formula_holds(rs_side: &mut Side, key: &[u8], rs: &Reply, rf: &Reply) -> bool {
    let info = rs_side.cmd(&[b"CMS.INFO".to_vec(), key.to_vec()]);
    let (Reply::Int(rs), Reply::Int(rf), Reply::Array(f)) = (rs, rf, &info) else {
        return false;
    };
    let cells = f[1].as_int() * f[3].as_int();
    rf - rs == 4 * cells - 32
}

// ---------------------------------------------------------------------------
// The family
// ---------------------------------------------------------------------------

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen {
            rng: SmallRng::seed_from_u64(seed),
            queue: VecDeque::new(),
            cross_restores: 0,
        }
    }

    /// DUMP `src` on both sides; identical payloads are then restored
    /// into `dst` on both sides, so each side loads the other's payload.
    fn cross_restore(
        &mut self,
        d: &mut Pair,
        src: &[u8],
        dst: &[u8],
        resp3: bool,
    ) -> Vec<(Op<Kind>, Reply, Reply)> {
        self.cross_restores += 1;
        let dump = vec![b"DUMP".to_vec(), src.to_vec()];
        let pa = d.rs.conn(resp3).cmd(&dump);
        let pb = d.rf.conn(resp3).cmd(&dump);
        let restore = match &pb {
            Reply::Bulk(p) if pa == pb => Some(vec![
                b"RESTORE".to_vec(),
                dst.to_vec(),
                b"0".to_vec(),
                p.clone(),
                b"REPLACE".to_vec(),
            ]),
            _ => None,
        };
        let mut out = vec![(Op::new(dump), pa, pb)];
        if let Some(restore) = restore {
            let a = d.rs.conn(resp3).cmd(&restore);
            let b = d.rf.conn(resp3).cmd(&restore);
            out.push((Op::new(restore), a, b));
        }
        out
    }
}

impl Family for Gen {
    type Kind = Kind;
    type Action = Infallible;
    const RULES: &'static [Rule] = RULES;
    const EXPLAINED: &'static [(&'static str, &'static str)] = &[
        (MEMORY_RULE, MEMORY_CITE),
        (BLOOM_MEMORY_RULE, BLOOM_MEMORY_CITE),
    ];
    const CHECK_COMMANDS: &'static [&'static str] = &["DUMP", "CMS.INFO", "TYPE"];
    const SUBJECT_ARGS: &'static [&'static str] = &["--bf.cms-rdb-encoding", "0"];

    fn rng(&mut self) -> &mut SmallRng {
        &mut self.rng
    }

    fn setup(&mut self, d: &mut Pair) {
        for key in OTHER {
            self.recreate(d, key.as_bytes());
        }
        for line in SKETCHES {
            d.both(&sargs(&line.split(' ').collect::<Vec<_>>()));
        }
    }

    fn recreate(&mut self, d: &mut Pair, key: &[u8]) {
        if let Some(c) = fixed_key_setup(key) {
            d.both(&c);
        }
    }

    fn next(&mut self) -> Step<Kind, Infallible> {
        Step::Cmd(self.next_op())
    }

    fn outcomes(&self, reply: &Reply) -> Vec<String> {
        let saturated = Reply::Int(4294967294);
        reply_outcomes(reply, |x| (*x == saturated).then(|| "[4294967294]".into()))
    }

    /// CMS.INFO compared without the cell size ([`without_cell_size`]).
    fn observe(&mut self, side: &mut Side, key: &[u8]) -> Vec<Reply> {
        Self::CHECK_COMMANDS
            .iter()
            .map(|c| without_cell_size(&side.cmd(&[c.as_bytes().to_vec(), key.to_vec()])))
            .collect()
    }

    fn check_keys(&mut self) -> Vec<Vec<u8>> {
        KEYS.iter()
            .chain(OTHER)
            .map(|k| k.as_bytes().to_vec())
            .collect()
    }

    /// Plain and MEMORY USAGE commands pipelined, then a DUMP/RESTORE
    /// across (isolated: the last of its batch).
    fn exchange(
        &mut self,
        d: &mut Pair,
        ops: Vec<Op<Kind>>,
        resp3: bool,
    ) -> Vec<(Op<Kind>, Reply, Reply)> {
        let cmds: Vec<Args> = ops
            .iter()
            .filter(|o| !matches!(o.kind, Kind::CrossRestore { .. }))
            .map(|o| o.args.clone())
            .collect();
        let (ra, rb) = pipeline2(d.rs.conn(resp3), d.rf.conn(resp3), &cmds);
        let mut replies = ra.into_iter().zip(rb);
        let mut out = Vec::new();
        for mut op in ops {
            if let Kind::CrossRestore { src, dst } = &op.kind {
                out.extend(self.cross_restore(d, src, dst, resp3));
            } else {
                let (a, b) = replies.next().expect("a reply per command");
                if op.reset.is_none() && may_diverge_silently(&op.args, &a, &b) {
                    op.reset = Some(DIVERGED_812);
                }
                out.push((op, a, b));
            }
        }
        out
    }

    /// MEMORY USAGE: [`MEMORY_RULE`].
    fn explain(
        &mut self,
        d: &mut Pair,
        op: &Op<Kind>,
        rs: &Reply,
        rf: &Reply,
    ) -> Option<&'static str> {
        if !matches!(op.kind, Kind::Memory) {
            return None;
        }
        let key = &op.args[2];
        if matches!((rs, rf), (Reply::Int(_), Reply::Int(_)))
            && d.rs.cmd(&[b"TYPE".to_vec(), key.clone()]) == simple("MBbloom--")
        {
            return Some(BLOOM_MEMORY_RULE);
        }
        memory_formula_holds(&mut d.rs, key, rs, rf).then_some(MEMORY_RULE)
    }

    fn report(&self) -> String {
        format!("  DUMP/RESTORE across: {}\n", self.cross_restores)
    }
}

/// Reset reason of a key an INCRBY may have left different (counted).
const DIVERGED_812: &str = "812-incrby-may-differ";

/// An INCRBY whose effect 8.12 changed: a negative increment (but −2^63,
/// which both refuse), or one big enough that two overflow a counter (2^30
/// and more; smaller ones only add up to an overflow over many commands,
/// which [`may_diverge_silently`] and the rules catch).
fn changed_in_812(args: &[Vec<u8>]) -> bool {
    args.iter()
        .skip(3)
        .step_by(2)
        .filter_map(|a| redis_ll(a))
        .any(|v| v != i64::MIN && !(0..1 << 30).contains(&v))
}

/// An INCRBY after which the sides may differ even with equal replies:
/// 2.8.2 saturated (or wrapped the total) where 8.12 refused, or 8.12
/// applied what 2.8.2 refused. The key is reset whatever the replies.
fn may_diverge_silently(args: &[Vec<u8>], rs: &Reply, rf: &Reply) -> bool {
    upper(&args[0]) == "CMS.INCRBY"
        && match (rs, rf) {
            (Reply::Array(a), Reply::Array(b)) => saw_limit(a) || saw_limit(b),
            (Reply::Array(_), _) => true,
            _ => false,
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
    run_family("CMS", Gen::new, |_, stats, n| {
        if n >= 100_000 {
            let missing: Vec<&&str> = MUST_SEE
                .iter()
                .filter(|k| !stats.outcomes.contains_key(**k))
                .collect();
            assert!(missing.is_empty(), "never produced: {missing:?}");
        }
    });
}

/// The allowlist must not hide an ordinary difference.
#[test]
fn allowlist_rules_are_narrow() {
    let find = |args: &[&str], rs, rf| rule_name(RULES, args, rs, rf);
    assert_eq!(
        find(
            &["COPY", "k0", "k1"],
            int(1),
            err("ERR not supported for this module key")
        ),
        Some("copy-supported")
    );
    assert_eq!(
        find(
            &["COPY", "k0", "k1"],
            int(0),
            err("ERR not supported for this module key")
        ),
        None
    );
    assert_eq!(find(&["COPY", "k0", "k1"], int(1), int(0)), None);
    let over = || err("CMS: INCRBY overflow");
    assert_eq!(
        find(
            &["CMS.INCRBY", "k0", "a", "4294967296"],
            arr(vec![over()]),
            arr(vec![over()])
        ),
        Some("812-incrby-no-saturation")
    );
    assert_eq!(
        find(
            &["CMS.INCRBY", "k0", "a", "4294967295"],
            arr(vec![int(4294967295)]),
            arr(vec![over()])
        ),
        Some("812-incrby-no-saturation")
    );
    // Other counts, or no counter at its limit: not this rule.
    assert_eq!(
        find(
            &["CMS.INCRBY", "k0", "a", "1"],
            arr(vec![int(2)]),
            arr(vec![int(1)])
        ),
        None
    );
    assert_eq!(
        find(
            &["CMS.INCRBY", "k0", "a", "1", "b", "1"],
            arr(vec![over()]),
            arr(vec![over(), int(1)])
        ),
        None
    );
    assert_eq!(
        find(
            &["CMS.INCRBY", "k0", "a", "-1"],
            arr(vec![int(0)]),
            err("CMS: Number cannot be negative")
        ),
        Some("812-incrby-negative")
    );
    assert_eq!(
        find(
            &["CMS.INCRBY", "k0", "a", "-1"],
            err("CMS: key does not exist"),
            err("CMS: Number cannot be negative")
        ),
        None
    );
    let info3 = arr(vec![
        simple("width"),
        int(20),
        simple("depth"),
        int(5),
        simple("count"),
        int(7),
    ]);
    let mut four = info3.as_array().to_vec();
    four.extend([simple("cell_size"), int(4)]);
    assert_eq!(
        find(&["CMS.INFO", "k0"], arr(four.clone()), info3.clone()),
        Some("812-info-cell-size")
    );
    four[7] = int(2);
    assert_eq!(find(&["CMS.INFO", "k0"], arr(four), info3.clone()), None);
    assert_eq!(
        find(
            &["CMS.INITBYDIM", "k0", "2", "2", "x", "y"],
            err("CMS: unknown argument"),
            arity("cms.initbydim")
        ),
        Some("812-init-options")
    );
    assert_eq!(
        find(
            &["CMS.INITBYDIM", "k0", "2", "2", "x"],
            err("CMS: unknown argument"),
            arity("cms.initbydim")
        ),
        None
    );
    assert_eq!(
        find(
            &["CMS.QUERY", "k0", "a"],
            int(1),
            err("ERR not supported for this module key")
        ),
        None
    );
}
