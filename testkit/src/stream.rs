//! A seeded random stream of every write command of both families, for the
//! production-operations tests (replication, AOF): filters that scale, grow,
//! fill up and hit `cf-max-expansions`, auto-creation, deletes and
//! compaction, LOADCHUNK replays (header and data chunks) of the stream's
//! own SCANDUMPs, and invalid commands (wrong type, wrong arity, bad
//! arguments, missing keys). Servers running it should load the module with
//! `CF_MAX_EXPANSIONS 4` so that the expansion limit is reached.
//!
//! `cross` mode keeps to commands whose effect is the same in RedisBloom
//! 2.8.2 and rsbloom (no docs/differences.md §3 differences, no CF.LOADCHUNK data chunks,
//! which 2.8.2 does not replicate — docs/differences.md §1 item 14).
//!
//! Also: per-key snapshots of a whole keyspace (TYPE, DUMP, full SCANDUMP,
//! DEBUG DIGEST-VALUE) to compare two servers.

use std::collections::{BTreeMap, VecDeque};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::diff::{sargs, show_args, Args};
use super::filters::{try_scandump, Fam};
use super::{Conn, Reply};

/// Seed from `RSBLOOM_OPS_SEED`, else from the clock; the caller prints it.
pub fn seed() -> u64 {
    std::env::var("RSBLOOM_OPS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
}

/// Module arguments every server running the stream gets.
pub const MODULE_ARGS: [&str; 2] = ["CF_MAX_EXPANSIONS", "4"];

const BF_KEYS: &[&str] = &["b0", "b1", "b2", "b3", "b4", "b5"];
const CF_KEYS: &[&str] = &["c0", "c1", "c2", "c3", "c4", "c5"];
const STRING_KEY: &str = "str";

pub struct Stream {
    rng: SmallRng,
    cross: bool,
    queue: VecDeque<Args>,
    targets: u32,
    /// Outcome counts: error texts, `OK <CMD>`, ... (see [`Stream::observe`]).
    pub stats: BTreeMap<String, usize>,
}

impl Stream {
    pub fn new(seed: u64, cross: bool) -> Stream {
        Stream {
            rng: SmallRng::seed_from_u64(seed),
            cross,
            queue: VecDeque::from([
                sargs(&["SET", STRING_KEY, "not a filter"]),
                // Filters that scaled / grew and stay (LOADCHUNK sources).
                sargs(&["BF.RESERVE", "bgrow", "0.01", "10", "EXPANSION", "2"]),
                sargs(&[
                    "CF.RESERVE",
                    "cgrow",
                    "8",
                    "BUCKETSIZE",
                    "1",
                    "EXPANSION",
                    "2",
                ]),
                grow("BF.INSERT", "bgrow"),
                grow("CF.INSERT", "cgrow"),
                // One insert may grow past cf-max-expansions; the next fails.
                sargs(&["CF.RESERVE", "cmax", "4", "BUCKETSIZE", "1"]),
                grow("CF.INSERT", "cmax"),
                sargs(&["CF.ADD", "cmax", "x"]),
                // Non-scaling filters that fill up whatever the seed.
                sargs(&["BF.RESERVE", "bfull", "0.01", "4", "NONSCALING"]),
                grow("BF.INSERT", "bfull"),
                sargs(&[
                    "CF.RESERVE",
                    "cfull",
                    "2",
                    "BUCKETSIZE",
                    "1",
                    "EXPANSION",
                    "0",
                ]),
                grow("CF.INSERT", "cfull"),
                sargs(&["CF.ADD", "cfull", "x"]),
            ]),
            targets: 0,
            stats: BTreeMap::new(),
        }
    }

    /// The next `n` commands. `reads` is a connection to a server whose
    /// state is that after every command returned so far (used only for
    /// SCANDUMPs feeding LOADCHUNK replays).
    pub fn batch(&mut self, reads: &mut Conn, n: usize) -> Vec<Args> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if let Some(a) = self.queue.pop_front() {
                out.push(a);
                continue;
            }
            let a = if self.rng.gen_bool(0.45) {
                self.bf(reads)
            } else {
                self.cf(reads)
            };
            out.extend(a);
        }
        out
    }

    /// Generates `n` commands, executing them on `c` as it goes; returns
    /// the commands and their replies.
    pub fn run(&mut self, c: &mut Conn, n: usize, batch: usize) -> (Vec<Args>, Vec<Reply>) {
        let (mut cmds, mut replies) = (Vec::new(), Vec::new());
        while cmds.len() < n {
            let b = self.batch(c, batch.min(n - cmds.len()));
            let r = c.pipeline(&b);
            for (a, r) in b.iter().zip(&r) {
                self.observe(a, r);
            }
            cmds.extend(b);
            replies.extend(r);
        }
        (cmds, replies)
    }

    /// Counts the outcome of one command (for coverage assertions).
    pub fn observe(&mut self, args: &Args, r: &Reply) {
        let name = String::from_utf8_lossy(&args[0]).to_uppercase();
        let mut note = |k: String| *self.stats.entry(k).or_default() += 1;
        match r {
            Reply::Error(e) => note(normalise(e)),
            Reply::Simple(s) if s == "OK" => note(format!("OK {name}")),
            Reply::Array(a) => {
                for e in a {
                    if let Reply::Error(e) = e {
                        note(normalise(e));
                    } else if *e == Reply::Int(-1) {
                        note(format!("-1 {name}"));
                    }
                }
            }
            _ => {}
        }
    }

    pub fn count(&self, key: &str) -> usize {
        self.stats.get(key).copied().unwrap_or(0)
    }

    fn pick(&mut self, xs: &[&str]) -> Vec<u8> {
        xs.choose(&mut self.rng).unwrap().as_bytes().to_vec()
    }

    /// Skewed towards the first keys, so some filters get many items.
    fn key(&mut self, keys: &[&str]) -> Vec<u8> {
        let n = keys.len();
        let i = self.rng.gen_range(0..n).min(self.rng.gen_range(0..n));
        keys[i].as_bytes().to_vec()
    }

    fn item(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=89 => format!("i{}", self.rng.gen_range(0..1500)).into_bytes(),
            90..=96 => {
                let n = self.rng.gen_range(1..12);
                (0..n).map(|_| self.rng.gen()).collect()
            }
            _ => Vec::new(),
        }
    }

    fn items(&mut self, max: usize) -> Vec<Vec<u8>> {
        let n = self.rng.gen_range(1..=max);
        (0..n).map(|_| self.item()).collect()
    }

    fn num(&mut self, lo: u64, hi: u64) -> Vec<u8> {
        self.rng.gen_range(lo..=hi).to_string().into_bytes()
    }

    fn bf(&mut self, reads: &mut Conn) -> Vec<Args> {
        let key = self.key(BF_KEYS);
        let v = |a: Vec<Vec<u8>>| vec![a];
        match self.rng.gen_range(0..100) {
            0..=7 => {
                let reserve = self.bf_reserve(key.clone());
                vec![vec![b"DEL".to_vec(), key], reserve]
            }
            8..=9 => {
                // A BF.RESERVE on an existing key: `ERR item exists` (or
                // creation when the key is gone).
                let r = self.bf_reserve(key);
                v(r)
            }
            10..=39 => {
                let item = self.item();
                v(vec![b"BF.ADD".to_vec(), key, item])
            }
            40..=59 => {
                let mut a = vec![b"BF.MADD".to_vec(), key];
                a.extend(self.items(20));
                v(a)
            }
            60..=79 => self.bf_insert(key),
            80..=87 => self.loadchunk(reads, "BF", BF_KEYS),
            _ => self.invalid("BF"),
        }
    }

    fn error_rate(&mut self) -> Vec<u8> {
        if !self.cross && self.rng.gen_bool(0.1) {
            // Above the 0.25 cap (8.x), or invalid.
            return self.pick(&["0.5", "0", "1", "abc", "-0.1"]);
        }
        self.pick(&["0.01", "0.001", "0.1", "0.05", "0.2"])
    }

    fn bf_reserve(&mut self, key: Vec<u8>) -> Args {
        let mut a = vec![
            b"BF.RESERVE".to_vec(),
            key,
            self.error_rate(),
            self.num(1, 150),
        ];
        if !self.cross && self.rng.gen_bool(0.05) {
            a[3] = self.pick(&["0", "-5", "1073741825", "x"]);
        }
        match self.rng.gen_range(0..10) {
            0..=1 => a.push(b"NONSCALING".to_vec()),
            2..=6 => {
                a.push(b"EXPANSION".to_vec());
                let x = if self.cross {
                    self.num(1, 4)
                } else {
                    self.pick(&["0", "1", "2", "3", "4", "4", "40000"])
                };
                a.push(x);
            }
            _ => {}
        }
        a
    }

    fn bf_insert(&mut self, key: Vec<u8>) -> Vec<Args> {
        let mut a = vec![b"BF.INSERT".to_vec(), key];
        if self.rng.gen_bool(0.5) {
            a.push(b"CAPACITY".to_vec());
            a.push(self.num(1, 150));
        }
        if self.rng.gen_bool(0.3) {
            a.push(b"ERROR".to_vec());
            a.push(self.error_rate());
        }
        if self.rng.gen_bool(0.3) {
            a.push(b"EXPANSION".to_vec());
            let x = if self.cross {
                self.num(1, 4)
            } else {
                self.num(0, 4)
            };
            a.push(x);
        } else if self.rng.gen_bool(0.15) {
            a.push(b"NONSCALING".to_vec());
        }
        if self.rng.gen_bool(0.1) {
            a.push(b"NOCREATE".to_vec());
        }
        a.push(b"ITEMS".to_vec());
        a.extend(self.items(20));
        vec![a]
    }

    fn cf(&mut self, reads: &mut Conn) -> Vec<Args> {
        let key = self.key(CF_KEYS);
        let v = |a: Vec<Vec<u8>>| vec![a];
        match self.rng.gen_range(0..100) {
            0..=3 => {
                let reserve = self.cf_reserve(key.clone());
                vec![vec![b"DEL".to_vec(), key], reserve]
            }
            4..=7 => {
                let r = self.cf_reserve(key);
                v(r)
            }
            8..=32 => {
                let item = self.item();
                v(vec![b"CF.ADD".to_vec(), key, item])
            }
            33..=42 => {
                let item = self.item();
                v(vec![b"CF.ADDNX".to_vec(), key, item])
            }
            43..=54 => self.cf_insert(key, b"CF.INSERT"),
            55..=62 => self.cf_insert(key, b"CF.INSERTNX"),
            63..=79 => {
                let item = self.item();
                v(vec![b"CF.DEL".to_vec(), key, item])
            }
            80..=83 => v(vec![b"CF.COMPACT".to_vec(), key]),
            84..=91 => self.loadchunk(reads, "CF", CF_KEYS),
            _ => self.invalid("CF"),
        }
    }

    fn cf_reserve(&mut self, key: Vec<u8>) -> Args {
        let bs = self.rng.gen_range(1..=4u64);
        let cap = self.rng.gen_range(2 * bs..=64);
        let mut a = vec![b"CF.RESERVE".to_vec(), key, cap.to_string().into_bytes()];
        if self.rng.gen_bool(0.7) {
            a.extend([b"BUCKETSIZE".to_vec(), bs.to_string().into_bytes()]);
        }
        if self.rng.gen_bool(0.5) {
            a.push(b"MAXITERATIONS".to_vec());
            a.push(self.num(1, 30));
        }
        if self.rng.gen_bool(0.6) {
            a.push(b"EXPANSION".to_vec());
            a.push(self.pick(&["0", "1", "1", "2", "4"]));
        }
        a
    }

    fn cf_insert(&mut self, key: Vec<u8>, name: &[u8]) -> Vec<Args> {
        let mut a = vec![name.to_vec(), key];
        if self.rng.gen_bool(0.4) {
            a.push(b"CAPACITY".to_vec());
            a.push(self.num(4, 300));
        }
        if self.rng.gen_bool(0.1) {
            a.push(b"NOCREATE".to_vec());
        }
        a.push(b"ITEMS".to_vec());
        a.extend(self.items(25));
        vec![a]
    }

    /// A SCANDUMP of one of the family's filters (as it is now), replayed
    /// with LOADCHUNK into a fresh key; sometimes incomplete, out of order
    /// or onto an existing key (errors the replica must not apply).
    fn loadchunk(&mut self, reads: &mut Conn, fam: &str, keys: &[&str]) -> Vec<Args> {
        let src = if self.rng.gen_bool(0.3) {
            format!("{}grow", &fam.to_lowercase()[..1]).into_bytes()
        } else {
            self.key(keys)
        };
        let family = if fam == "BF" { Fam::Bf } else { Fam::Cf };
        let Ok(mut pairs) = try_scandump(reads, family, &src) else {
            return vec![];
        };
        if pairs.is_empty() {
            return vec![];
        }
        self.targets += 1;
        let target = format!("{}l{}", fam.to_lowercase(), self.targets % 5).into_bytes();
        let cmd = format!("{fam}.LOADCHUNK").into_bytes();
        let mut out = vec![vec![b"DEL".to_vec(), target.clone()]];
        if self.cross && fam == "CF" {
            pairs.truncate(1);
        } else {
            match self.rng.gen_range(0..10) {
                0 if pairs.len() > 2 => {
                    let i = self.rng.gen_range(1..pairs.len());
                    pairs.remove(i);
                }
                1 if pairs.len() > 2 => pairs.swap(1, 2),
                2 => {
                    // Replayed onto an existing filter: the header is refused.
                    let t = self.key(keys);
                    return pairs
                        .into_iter()
                        .map(|(it, d)| vec![cmd.clone(), t.clone(), it.to_string().into_bytes(), d])
                        .collect();
                }
                3 => pairs.truncate(1),
                _ => {}
            }
        }
        out.extend(
            pairs
                .into_iter()
                .map(|(it, d)| vec![cmd.clone(), target.clone(), it.to_string().into_bytes(), d]),
        );
        out
    }

    fn invalid(&mut self, fam: &str) -> Vec<Args> {
        let bf = fam == "BF";
        let k = if bf {
            self.key(BF_KEYS)
        } else {
            self.key(CF_KEYS)
        };
        let other = if bf {
            self.key(CF_KEYS)
        } else {
            self.key(BF_KEYS)
        };
        let s = STRING_KEY.as_bytes().to_vec();
        let a: Args = match (bf, self.rng.gen_range(0..8)) {
            (true, 0) => vec![b"BF.ADD".to_vec(), s, b"x".to_vec()],
            (true, 1) => vec![b"BF.MADD".to_vec(), other, b"x".to_vec()],
            (true, 2) => vec![b"BF.ADD".to_vec(), k],
            (true, 3) => sargs(&["BF.INSERT", "missing-b", "NOCREATE", "ITEMS", "x"]),
            (true, 4) => sargs(&["BF.LOADCHUNK", "missing-b", "5", "data"]),
            (true, 5) => vec![b"BF.LOADCHUNK".to_vec(), k, b"abc".to_vec(), b"x".to_vec()],
            (true, 6) => vec![b"BF.RESERVE".to_vec(), k, b"0.01".to_vec(), b"bad".to_vec()],
            (true, _) => vec![
                b"BF.INSERT".to_vec(),
                k,
                b"BOGUS".to_vec(),
                b"ITEMS".to_vec(),
            ],
            (false, 0) => vec![b"CF.ADD".to_vec(), s, b"x".to_vec()],
            (false, 1) => vec![
                b"CF.INSERT".to_vec(),
                other,
                b"ITEMS".to_vec(),
                b"x".to_vec(),
            ],
            (false, 2) => sargs(&["CF.DEL", "missing-c", "x"]),
            (false, 3) => vec![b"CF.COMPACT".to_vec(), other],
            (false, 4) => vec![b"CF.RESERVE".to_vec(), k, b"1".to_vec()],
            (false, 5) => sargs(&["CF.LOADCHUNK", "missing-c", "1", "short header"]),
            (false, 6) => vec![b"CF.LOADCHUNK".to_vec(), k, b"0".to_vec(), b"x".to_vec()],
            (false, _) => sargs(&["CF.INSERTNX", "missing-c", "NOCREATE", "ITEMS", "x"]),
        };
        vec![a]
    }
}

fn grow(cmd: &str, key: &str) -> Args {
    let mut a = sargs(&[cmd, key, "ITEMS"]);
    a.extend((0..60).map(|i| format!("g{i}").into_bytes()));
    a
}

/// Error texts with the key-specific parts removed, for counting.
fn normalise(e: &str) -> String {
    if e.starts_with("WRONGTYPE") {
        "WRONGTYPE".into()
    } else if e.starts_with("ERR wrong number of arguments") {
        "ERR wrong number of arguments".into()
    } else {
        e.to_string()
    }
}

/// A full SCANDUMP: (cursor, chunk) pairs, or the error that stopped it.
pub type Scandump = Result<Vec<(i64, Vec<u8>)>, Reply>;

/// Everything a test compares about one key.
#[derive(Debug, PartialEq)]
pub struct KeySnap {
    pub kind: String,
    pub dump: Reply,
    /// Full SCANDUMP (BF / CF keys only).
    pub scandump: Option<Scandump>,
    /// DEBUG DIGEST-VALUE (when asked for).
    pub digest: Option<Reply>,
}

/// Every key of database 0 with its snapshot. `digests`: also take DEBUG
/// DIGEST-VALUE (rsbloom only; RedisBloom has no digest callback).
pub fn snapshot(c: &mut Conn, digests: bool) -> BTreeMap<Vec<u8>, KeySnap> {
    let keys = c.cmd(&["KEYS", "*"]);
    let mut out = BTreeMap::new();
    for k in keys.as_array() {
        let key = k.as_bytes().to_vec();
        let kind = String::from_utf8_lossy(c.cmd(&[&b"TYPE"[..], &key]).as_bytes()).into_owned();
        let dump = c.cmd(&[&b"DUMP"[..], &key]);
        let scandump = match kind.as_str() {
            "MBbloom--" => Some(try_scandump(c, Fam::Bf, &key)),
            "MBbloomCF" => Some(try_scandump(c, Fam::Cf, &key)),
            _ => None,
        };
        let digest = digests.then(|| c.cmd(&[&b"DEBUG"[..], b"DIGEST-VALUE", &key]));
        out.insert(
            key,
            KeySnap {
                kind,
                dump,
                scandump,
                digest,
            },
        );
    }
    out
}

/// Asserts two snapshots are identical, naming the first differing key
/// (without printing megabytes of filter data).
pub fn assert_same(a: &BTreeMap<Vec<u8>, KeySnap>, b: &BTreeMap<Vec<u8>, KeySnap>, what: &str) {
    let ka: Vec<_> = a
        .keys()
        .map(|k| show_args(std::slice::from_ref(k)))
        .collect();
    let kb: Vec<_> = b
        .keys()
        .map(|k| show_args(std::slice::from_ref(k)))
        .collect();
    assert_eq!(ka, kb, "{what}: different key sets");
    for (key, sa) in a {
        let sb = &b[key];
        let name = show_args(std::slice::from_ref(key));
        assert_eq!(sa.kind, sb.kind, "{what}: TYPE of {name}");
        assert!(sa.dump == sb.dump, "{what}: DUMP of {name} differs");
        assert!(
            sa.scandump == sb.scandump,
            "{what}: SCANDUMP of {name} differs"
        );
        assert_eq!(sa.digest, sb.digest, "{what}: DIGEST-VALUE of {name}");
        if sa.scandump.is_some() {
            assert!(
                matches!(sa.scandump, Some(Ok(_))),
                "{what}: SCANDUMP of {name} failed: {:?}",
                sa.scandump
            );
        }
    }
}

/// The `name:value` field of an INFO reply.
pub fn info_field(c: &mut Conn, section: &str, name: &str) -> Option<String> {
    let info = c.cmd(&["INFO", section]);
    let text = String::from_utf8_lossy(info.as_bytes()).into_owned();
    let prefix = format!("{name}:");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().to_string())
}
