//! The differential driver shared by the families' streams: a seeded stream
//! of commands goes to rsbloom and to the reference RedisBloom 2.8.2 (both
//! on the same server binary, so replies compare byte for byte), pipelined
//! in batches over RESP2 or RESP3 at random, and every reply pair must be
//! identical or explained by the family's allowlist; periodic full checks
//! compare the state of every key. What differs per family is a [`Family`].
//!
//! Environment: `RSBLOOM_DIFF_SEED` (seed, printed), `RSBLOOM_DIFF_OPS`
//! (commands per stream, default 100 000), `RSBLOOM_DIFF_SELF=1` (reference
//! against reference: checks the machinery itself), `RSBLOOM_DIFF_COVERAGE=1`
//! (also print the reference's reply outcomes).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::Rng;

use super::{pipeline2, sargs, show_args, show_reply, subject_module, upper, Args, Side};
use crate::{flavors, Flavor, Module, Reply, Server};

/// Integer arguments every family's parser must refuse (or, for "-0" and
/// "+1", accept exactly as RedisBloom does).
pub const BAD_INTS: &[&str] = &[
    "1e",
    "-0",
    "+1",
    " 1",
    "1 ",
    "0x10",
    "99999999999999999999",
    "inf",
    "nan",
    "",
    "abc",
    "1.5",
    "01",
    "1e3",
    "-inf",
    "9223372036854775808",
    "-",
];

const BATCH: usize = 200;
const MAX_PRINTED_MISMATCHES: usize = 12;
/// Commands of a key's history kept for a mismatch report.
const HISTORY: usize = 25;
/// Reset reason of a key whose replies or state differed.
const AFTER_MISMATCH: &str = "after a mismatch";
/// Reset reason: a command on a key reset after an earlier one of its batch.
const AFTER_RESET_KEY: &str = "after a reset key in its batch";

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|s| {
        s.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be an integer"))
    })
}

/// An allowlisted difference: rsbloom's (8.x) reply for the reference's
/// (2.8.2) one, for one documented reason.
pub struct Rule {
    pub name: &'static str,
    /// Where the difference is documented.
    pub cite: &'static str,
    /// The argument naming a key the two sides may hold differently
    /// afterwards (unless both replies are errors, which change nothing):
    /// the key is reset.
    pub diverges: Option<usize>,
    /// (args, rsbloom reply, reference reply)
    pub applies: fn(&[Vec<u8>], &Reply, &Reply) -> bool,
}

/// The first rule that explains a reply pair.
fn rule_for(
    rules: &'static [Rule],
    args: &[Vec<u8>],
    rs: &Reply,
    rf: &Reply,
) -> Option<&'static Rule> {
    rules.iter().find(|r| (r.applies)(args, rs, rf))
}

/// The name of the rule that explains a reply pair (allowlist tests).
pub fn rule_name(
    rules: &'static [Rule],
    args: &[&str],
    rs: Reply,
    rf: Reply,
) -> Option<&'static str> {
    rule_for(rules, &sargs(args), &rs, &rf).map(|r| r.name)
}

/// One command of a stream.
pub struct Op<K = ()> {
    pub args: Args,
    /// End the batch with this command (so that a key it may make diverge
    /// is reset before the next commands).
    pub isolate: bool,
    /// Reset the key afterwards whatever the replies, counted under this
    /// name (the command ends its batch).
    pub reset: Option<&'static str>,
    /// What the family does with the command beyond sending it.
    pub kind: K,
}

impl<K: Default> Op<K> {
    pub fn new(args: Args) -> Op<K> {
        Op {
            args,
            isolate: false,
            reset: None,
            kind: K::default(),
        }
    }
}

/// What a generator produces next.
pub enum Step<K, A> {
    Cmd(Op<K>),
    /// Runs after the pending batch, outside any batch ([`Act`]).
    Act(A),
}

/// (what and which key, rsbloom's, the reference's): a state both sides
/// must show alike; on a difference the key (`what[1]`) is reset.
pub type State = (Args, Vec<Reply>, Vec<Reply>);

/// A step that works on both servers directly (`Infallible`: none).
pub trait Act<F> {
    fn run(self, fam: &mut F, d: &mut Pair) -> Vec<State>;
}

impl<F> Act<F> for Infallible {
    fn run(self, _: &mut F, _: &mut Pair) -> Vec<State> {
        match self {}
    }
}

/// Adds `x` to a pool of at most `cap` things, in place of a random one
/// when full.
pub fn keep<T>(rng: &mut SmallRng, pool: &mut Vec<T>, cap: usize, x: T) {
    if pool.len() < cap {
        pool.push(x);
    } else {
        pool[rng.gen_range(0..cap)] = x;
    }
}

/// Coverage classes of a reference reply: an error's text; an array's
/// distinct error elements and those `mark` names (else `array`); `map`;
/// `:n` for an integer past -1..=1; else the reply's first characters.
pub fn reply_outcomes(reply: &Reply, mark: impl Fn(&Reply) -> Option<String>) -> Vec<String> {
    match reply {
        Reply::Error(e) => vec![format!("-{e}")],
        Reply::Array(v) => {
            let mut out: Vec<String> = v
                .iter()
                .filter_map(|x| match x {
                    Reply::Error(e) => Some(format!("[-{e}]")),
                    x => mark(x),
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
        Reply::Int(n) if !(-1..=1).contains(n) => vec![":n".into()],
        other => vec![format!("{other:?}").chars().take(12).collect()],
    }
}

/// What a family brings to the driver: its generator (with the random
/// choices all generators make), keys, allowlist and whatever its stream
/// does beyond plain commands.
pub trait Family: Sized {
    /// What the family attaches to a command.
    type Kind: Default;
    type Action: Act<Self>;

    const RULES: &'static [Rule];
    /// Differences [`Family::explain`] allows, (name, citation), listed
    /// with `RULES` in the summary.
    const EXPLAINED: &'static [(&'static str, &'static str)] = &[];
    /// Generated steps between two full checks.
    const CHECK_EVERY: usize = 10_000;
    /// An isolated command also ends the batch before it.
    const ISOLATE_ALONE: bool = false;
    /// What the default [`Family::observe`] compares of every key.
    const CHECK_COMMANDS: &'static [&'static str] = &[];
    /// Full checks send `CHECK_COMMANDS` through the stream instead:
    /// compared like it (counted, allowlisted, seen by `agreed`).
    const CHECK_IN_STREAM: bool = false;
    const SERVER_ARGS: &'static [&'static str] = &[];
    /// Server arguments of rsbloom's side only (its own configs).
    const SUBJECT_ARGS: &'static [&'static str] = &[];
    /// How often (%) a command name keeps the case it is written in.
    const CASE_KEPT: u32 = 85;

    /// The stream's randomness (also draws each batch's protocol).
    fn rng(&mut self) -> &mut SmallRng;
    /// Creates the fixed keys on both fresh servers.
    fn setup(&mut self, d: &mut Pair);
    fn next(&mut self) -> Step<Self::Kind, Self::Action>;
    /// Coverage classes of a reference reply.
    fn outcomes(&self, reply: &Reply) -> Vec<String>;
    /// The keys of a full check (called once per check).
    fn check_keys(&mut self) -> Vec<Vec<u8>>;

    /// Runs a batch on both sides: the reply pairs to compare, in order.
    fn exchange(
        &mut self,
        d: &mut Pair,
        ops: Vec<Op<Self::Kind>>,
        resp3: bool,
    ) -> Vec<(Op<Self::Kind>, Reply, Reply)> {
        let cmds: Vec<Args> = ops.iter().map(|o| o.args.clone()).collect();
        let (ra, rb) = pipeline2(d.rs.conn(resp3), d.rf.conn(resp3), &cmds);
        ops.into_iter()
            .zip(ra)
            .zip(rb)
            .map(|((o, a), b)| (o, a, b))
            .collect()
    }

    /// Recreates `key`, just deleted by a reset, if the family keeps it.
    fn recreate(&mut self, _d: &mut Pair, _key: &[u8]) {}

    /// Both sides gave `reply` to `args`.
    fn agreed(&mut self, _args: &[Vec<u8>], _reply: &Reply) {}

    /// A difference the family allows with the servers' help (its name is
    /// in `EXPLAINED`).
    fn explain(
        &mut self,
        _d: &mut Pair,
        _op: &Op<Self::Kind>,
        _rs: &Reply,
        _rf: &Reply,
    ) -> Option<&'static str> {
        None
    }

    /// What a full check compares of `key` on one side.
    fn observe(&mut self, side: &mut Side, key: &[u8]) -> Vec<Reply> {
        Self::CHECK_COMMANDS
            .iter()
            .map(|c| side.cmd(&[c.as_bytes().to_vec(), key.to_vec()]))
            .collect()
    }

    /// Both sides showed `seen` in a full check.
    fn checked(&mut self, _seen: &[Reply]) {}

    /// The family's lines of the summary.
    fn report(&self) -> String {
        String::new()
    }

    // The random choices all generators make.

    fn chance(&mut self, percent: u32) -> bool {
        self.rng().gen_range(0..100) < percent
    }

    /// An index below `n`, skewed towards 0 (so the first keys get long
    /// histories while others stay small).
    fn skewed(&mut self, n: usize) -> usize {
        let i = self.rng().gen_range(0..n);
        i.min(self.rng().gen_range(0..n))
    }

    /// A command name, sometimes in random case (Redis ignores the case).
    fn cmd(&mut self, name: &str) -> Vec<u8> {
        if self.chance(Self::CASE_KEPT) {
            return name.as_bytes().to_vec();
        }
        let rng = self.rng();
        name.bytes()
            .map(|b| if rng.gen() { b.to_ascii_lowercase() } else { b })
            .collect()
    }

    /// Now and then (3 %) the wrong arity: `args` cut short, or one or two
    /// more from `extra`.
    fn mangle_arity(&mut self, mut args: Args, extra: impl Fn(&mut Self) -> Vec<u8>) -> Args {
        if self.chance(3) {
            if self.rng().gen() && args.len() > 1 {
                let n = self.rng().gen_range(1..args.len());
                args.truncate(n);
            } else {
                for _ in 0..self.rng().gen_range(1..3) {
                    let a = extra(self);
                    args.push(a);
                }
            }
        }
        args
    }
}

/// What the comparison counted.
#[derive(Default)]
pub struct Stats {
    pub compared: usize,
    /// Commands run on a key an earlier command of their batch diverged.
    pub skipped: usize,
    pub identical: usize,
    /// Error replies of the reference.
    pub errors: usize,
    pub batches: usize,
    pub resp3_batches: usize,
    pub full_checks: usize,
    pub keys_checked: usize,
    pub mismatches: usize,
    /// Allowlisted differences per rule.
    pub allowed: BTreeMap<&'static str, usize>,
    /// Keys reset on both sides, per reason.
    pub resets: BTreeMap<&'static str, usize>,
    /// Reference replies per `COMMAND outcome` (the stream's coverage).
    pub outcomes: BTreeMap<String, usize>,
}

impl Stats {
    /// Reference replies whose `COMMAND outcome` starts with `prefix`.
    pub fn outcome(&self, prefix: &str) -> usize {
        self.outcomes
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    }
}

/// A key's commands since it was last deleted: the last [`HISTORY`] and how
/// many came before them.
#[derive(Default)]
struct History {
    earlier: usize,
    last: VecDeque<(Args, Reply)>,
}

/// The two servers and what the comparison recorded.
pub struct Pair {
    pub rs: Side,
    pub rf: Side,
    pub stats: Stats,
    name: &'static str,
    seed: u64,
    history: HashMap<Vec<u8>, History>,
    log: Vec<String>,
}

impl Pair {
    /// Sends `args` to both sides, which must reply alike (fixed keys).
    pub fn both(&mut self, args: &[Vec<u8>]) -> Reply {
        let (a, b) = (self.rs.cmd(args), self.rf.cmd(args));
        assert_eq!(a, b, "{}: fixed key setup {}", self.name, show_args(args));
        a
    }

    fn remember(&mut self, args: &[Vec<u8>], reply: &Reply) {
        let key = args.get(1).cloned().unwrap_or_default();
        let h = self.history.entry(key).or_default();
        if args[0].eq_ignore_ascii_case(b"DEL") {
            *h = History::default();
        }
        h.last.push_back((args.to_vec(), reply.clone()));
        if h.last.len() > HISTORY {
            h.last.pop_front();
            h.earlier += 1;
        }
    }

    fn mismatch(&mut self, args: &[Vec<u8>], a: &Reply, b: &Reply, resp3: bool) {
        self.stats.mismatches += 1;
        let key = args.get(1).cloned().unwrap_or_default();
        let mut text = format!(
            "MISMATCH #{} ({}, seed {}, {}):\n  command:   {}\n  rsbloom:   {}\n  reference: {}\n",
            self.stats.mismatches,
            self.name,
            self.seed,
            if resp3 { "RESP3" } else { "RESP2" },
            show_args(args),
            show_reply(a),
            show_reply(b),
        );
        if let (Reply::Array(x), Reply::Array(y)) = (a, b) {
            let differing = x.iter().zip(y).enumerate().filter(|(_, (ex, ey))| ex != ey);
            for (i, (ex, ey)) in differing.take(3) {
                text += &format!(
                    "  element {i}: rsbloom {} / reference {}\n",
                    show_reply(ex),
                    show_reply(ey)
                );
            }
        }
        if let (true, Some(payload)) = (upper(&args[0]) == "RESTORE", args.get(3)) {
            let hex: String = payload.iter().map(|x| format!("{x:02x}")).collect();
            text += &format!("  payload: {hex}\n");
        }
        text += &format!(
            "  history of key {:?} since it was last deleted (oldest first, reference replies):\n",
            String::from_utf8_lossy(&key)
        );
        if let Some(h) = self.history.get(&key) {
            if h.earlier > 0 {
                text += &format!("    … {} earlier commands\n", h.earlier);
            }
            for (args, rb) in &h.last {
                text += &format!("    {}  →  {}\n", show_args(args), show_reply(rb));
            }
        }
        if self.stats.mismatches <= MAX_PRINTED_MISMATCHES {
            eprintln!("{text}");
        }
        self.log.push(text);
    }
}

/// Starts a server for a differential side.
pub fn start_side(flavor: Flavor, module: Module, args: &[&str]) -> Side {
    let builder = args
        .iter()
        .fold(Server::builder(flavor, module), |b, a| b.arg(a));
    Side::from_server(builder.start())
}

struct Runner<F: Family> {
    fam: F,
    d: Pair,
}

impl<F: Family> Runner<F> {
    fn new(flavor: Flavor, name: &'static str, mut fam: F, seed: u64) -> Runner<F> {
        let mut rs_args = F::SERVER_ARGS.to_vec();
        if subject_module() == Module::Rsbloom {
            rs_args.extend(F::SUBJECT_ARGS);
        }
        let mut d = Pair {
            rs: start_side(flavor, subject_module(), &rs_args),
            rf: start_side(flavor, Module::Reference, F::SERVER_ARGS),
            stats: Stats::default(),
            name,
            seed,
            history: HashMap::new(),
            log: Vec::new(),
        };
        fam.setup(&mut d);
        Runner { fam, d }
    }

    /// `n` commands (actions come on top), a full check every
    /// `CHECK_EVERY` steps and at the end.
    fn run(&mut self, n: usize) {
        let mut batch = Vec::with_capacity(BATCH);
        let (mut commands, mut steps) = (0, 0);
        while commands < n {
            steps += 1;
            match self.fam.next() {
                Step::Cmd(op) => {
                    commands += 1;
                    let isolate = op.isolate || op.reset.is_some();
                    if isolate && F::ISOLATE_ALONE {
                        self.flush(&mut batch);
                    }
                    batch.push(op);
                    if isolate || batch.len() >= BATCH {
                        self.flush(&mut batch);
                    }
                }
                Step::Act(action) => {
                    self.flush(&mut batch);
                    let states = action.run(&mut self.fam, &mut self.d);
                    self.compare_states(states);
                }
            }
            if steps % F::CHECK_EVERY == 0 {
                self.flush(&mut batch);
                self.full_check();
            }
        }
        self.flush(&mut batch);
        self.full_check();
    }

    fn flush(&mut self, batch: &mut Vec<Op<F::Kind>>) {
        if batch.is_empty() {
            return;
        }
        let resp3 = self.fam.rng().gen_range(0..100) < 30;
        self.d.stats.batches += 1;
        self.d.stats.resp3_batches += usize::from(resp3);
        let pairs = self.fam.exchange(&mut self.d, std::mem::take(batch), resp3);
        // Resets wait for the whole batch: its commands already ran. A
        // command of the batch naming a key to be reset ran on states that
        // differ by then: not compared, and every key it names is reset too
        // (a failed MERGE still compresses its sources). Deleting an
        // argument that names no key does nothing.
        let mut resets: Vec<(Vec<u8>, &'static str)> = Vec::new();
        for (op, a, b) in &pairs {
            let named = || op.args.iter().skip(1);
            if named().any(|x| resets.iter().any(|(k, _)| k == x)) {
                self.d.stats.skipped += 1;
                for x in named() {
                    if !resets.iter().any(|(k, _)| k == x) {
                        resets.push((x.clone(), AFTER_RESET_KEY));
                    }
                }
                continue;
            }
            resets.extend(self.judge(op, a, b, resp3));
        }
        for (key, why) in resets {
            self.reset(&key, why);
        }
    }

    /// Compares one reply pair: the key to reset afterwards and why, if any.
    fn judge(
        &mut self,
        op: &Op<F::Kind>,
        a: &Reply,
        b: &Reply,
        resp3: bool,
    ) -> Option<(Vec<u8>, &'static str)> {
        let cmd = upper(&op.args[0]);
        for o in self.fam.outcomes(b) {
            *self
                .d
                .stats
                .outcomes
                .entry(format!("{cmd} {o}"))
                .or_default() += 1;
        }
        self.d.stats.compared += 1;
        self.d.stats.errors += usize::from(b.is_error());
        self.d.remember(&op.args, b);
        let key = op.args.get(1).cloned().unwrap_or_default();
        if a == b {
            self.d.stats.identical += 1;
            self.fam.agreed(&op.args, b);
        } else if let Some(name) = self.fam.explain(&mut self.d, op, a, b) {
            *self.d.stats.allowed.entry(name).or_default() += 1;
        } else if let Some(rule) = rule_for(F::RULES, &op.args, a, b) {
            *self.d.stats.allowed.entry(rule.name).or_default() += 1;
            let changed = !(a.is_error() && b.is_error());
            if let (Some(i), true, None) = (rule.diverges, changed, op.reset) {
                return Some((op.args[i].clone(), rule.name));
            }
        } else {
            self.d.mismatch(&op.args, a, b, resp3);
            return Some((key, AFTER_MISMATCH));
        }
        op.reset.map(|why| (key, why))
    }

    fn compare_states(&mut self, states: Vec<State>) {
        for (what, a, b) in states {
            if a != b {
                self.d
                    .mismatch(&what, &Reply::Array(a), &Reply::Array(b), false);
                self.reset(&what[1], AFTER_MISMATCH);
            }
        }
    }

    /// Deletes `key` on both sides (the family may recreate it).
    fn reset(&mut self, key: &[u8], why: &'static str) {
        *self.d.stats.resets.entry(why).or_default() += 1;
        let del = vec![b"DEL".to_vec(), key.to_vec()];
        self.d.rs.cmd(&del);
        self.d.rf.cmd(&del);
        self.d.history.remove(key);
        self.fam.recreate(&mut self.d, key);
    }

    fn full_check(&mut self) {
        self.d.stats.full_checks += 1;
        let keys = self.fam.check_keys();
        self.d.stats.keys_checked += keys.len();
        if F::CHECK_IN_STREAM {
            let mut batch = keys
                .iter()
                .flat_map(|k| {
                    F::CHECK_COMMANDS
                        .iter()
                        .map(|c| Op::new(vec![c.as_bytes().to_vec(), k.clone()]))
                })
                .collect();
            self.flush(&mut batch);
            return;
        }
        for key in keys {
            let a = self.fam.observe(&mut self.d.rs, &key);
            let b = self.fam.observe(&mut self.d.rf, &key);
            if a == b {
                self.fam.checked(&b);
            } else {
                self.compare_states(vec![(vec![b"full check".to_vec(), key], a, b)]);
            }
        }
    }

    fn summary(&self, flavor: Flavor, elapsed: f64) -> String {
        let s = &self.d.stats;
        let mut out = format!(
            "=== differential {} on {flavor:?}: seed {} ({}) ===\n  commands compared: {} ({} identical replies, {} error replies from the reference; {} not compared after a divergence in their batch) in {} batches ({} RESP3) in {elapsed:.1}s\n  full checks: {} rounds, {} keys\n{}",
            self.d.name,
            self.d.seed,
            if subject_module() == Module::Reference { "REFERENCE vs REFERENCE" } else { "rsbloom vs reference" },
            s.compared,
            s.identical,
            s.errors,
            s.skipped,
            s.batches,
            s.resp3_batches,
            s.full_checks,
            s.keys_checked,
            self.fam.report(),
        );
        out += "  allowlisted differences:\n";
        let rules = F::RULES.iter().map(|r| (r.name, r.cite));
        for (name, cite) in rules.chain(F::EXPLAINED.iter().copied()) {
            let n = s.allowed.get(name).copied().unwrap_or(0);
            out += &format!("    {name:<36} {n:>7}   ({cite})\n");
        }
        out += &format!("  keys reset: {}\n", s.resets.values().sum::<usize>());
        for (why, n) in &s.resets {
            out += &format!("    {why:<36} {n:>7}\n");
        }
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

/// Runs the stream of family `name` (`new(seed)`) on every server of
/// [`flavors`]: no reply or state may differ outside the allowlist.
/// `expect` then checks what the stream of `n` commands must have reached.
pub fn run_family<F: Family>(
    name: &'static str,
    new: impl Fn(u64) -> F,
    expect: impl Fn(&F, &Stats, usize),
) {
    let seed = env_number("RSBLOOM_DIFF_SEED").unwrap_or_else(|| rand::random::<u32>().into());
    let n = env_number("RSBLOOM_DIFF_OPS").unwrap_or(100_000) as usize;
    for flavor in flavors() {
        eprintln!(
            "differential {name} on {flavor:?}: seed {seed} (RSBLOOM_DIFF_SEED={seed} to reproduce), {n} commands"
        );
        let start = Instant::now();
        let mut r = Runner::new(flavor, name, new(seed), seed);
        r.run(n);
        eprintln!("{}", r.summary(flavor, start.elapsed().as_secs_f64()));
        let stats = &r.d.stats;
        if stats.mismatches > 0 {
            let file = format!(
                "rsbloom-diff-{}-{}-{seed}.log",
                name.to_lowercase(),
                flavor.name()
            );
            let path = std::env::temp_dir().join(file);
            let _ = std::fs::write(&path, r.d.log.join("\n"));
            eprintln!("all mismatches written to {}", path.display());
        }
        assert!(
            stats.compared + stats.skipped >= n,
            "fewer commands compared than generated"
        );
        assert_eq!(
            stats.mismatches, 0,
            "{name} on {flavor:?}: {} mismatches (seed {seed})",
            stats.mismatches
        );
        expect(&r.fam, stats, n);
    }
}
