//! A seeded random stream of TDIGEST.* commands for the replication and AOF
//! tests: writes (CREATE, ADD including bursts that fill the buffer, MERGE,
//! RESET, DEL) interleaved with reads that compress (QUANTILE, CDF, RANK,
//! REVRANK, BYRANK, BYREVRANK, TRIMMED_MEAN), reads that do not (MIN, MAX,
//! INFO), DUMPs (a save in the serving process compresses too), and
//! invalid commands. Plus helpers to compare whole keyspaces.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::diff::{sargs, Args};
use super::{Conn, Reply};

pub const KEYS: &[&str] = &["d0", "d1", "d2", "d3", "d4", "d5"];

pub struct TdStream {
    rng: SmallRng,
}

impl TdStream {
    pub fn new(seed: u64) -> TdStream {
        TdStream {
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    fn key(&mut self) -> String {
        let n = KEYS.len();
        let i = self.rng.gen_range(0..n).min(self.rng.gen_range(0..n));
        KEYS[i].to_string()
    }

    fn value(&mut self) -> String {
        match self.rng.gen_range(0..10) {
            0..=3 => self.rng.gen_range(-50..50).to_string(),
            4..=7 => format!("{:.3}", self.rng.gen_range(-1e4..1e4)),
            8 => ["0", "-0", "1e300", "-1e-300"]
                .choose(&mut self.rng)
                .unwrap()
                .to_string(),
            _ => format!("{}", self.rng.gen::<f64>()),
        }
    }

    /// One command (or a few, for a fresh digest).
    pub fn next_commands(&mut self) -> Vec<Args> {
        let k = self.key();
        let r = self.rng.gen_range(0..100);
        let one = |a: Args| vec![a];
        match r {
            0..=6 => {
                let c = self.rng.gen_range(1..200).to_string();
                vec![
                    sargs(&["DEL", &k]),
                    sargs(&["TDIGEST.CREATE", &k, "COMPRESSION", &c]),
                ]
            }
            7..=34 => {
                let n = if self.rng.gen_range(0..10) == 0 {
                    self.rng.gen_range(100..1500)
                } else {
                    self.rng.gen_range(1..30)
                };
                let mut a = sargs(&["TDIGEST.ADD", &k]);
                a.extend((0..n).map(|_| self.value().into_bytes()));
                one(a)
            }
            35..=40 => {
                let n = self.rng.gen_range(1..4);
                let mut a = sargs(&["TDIGEST.MERGE", &k, &n.to_string()]);
                for _ in 0..n {
                    a.push(self.key().into_bytes());
                }
                match self.rng.gen_range(0..4) {
                    0 => a.push(b"OVERRIDE".to_vec()),
                    1 => {
                        let c = self.rng.gen_range(1..300).to_string();
                        a.extend([b"COMPRESSION".to_vec(), c.into_bytes()]);
                    }
                    _ => {}
                }
                one(a)
            }
            41..=42 => one(sargs(&["TDIGEST.RESET", &k])),
            43..=70 => one(self.read(&k)),
            71..=75 => {
                let c = ["TDIGEST.MIN", "TDIGEST.MAX", "TDIGEST.INFO"]
                    .choose(&mut self.rng)
                    .unwrap();
                one(sargs(&[c, &k]))
            }
            76..=81 => one(sargs(&["DUMP", &k])),
            82..=84 => one(sargs(&["DEL", &k])),
            _ => one(self.invalid(&k)),
        }
    }

    /// A read that compresses the digest it reads.
    pub fn read(&mut self, k: &str) -> Args {
        let mut a = match self.rng.gen_range(0..7) {
            0 => sargs(&["TDIGEST.QUANTILE", k]),
            1 => sargs(&["TDIGEST.CDF", k]),
            2 => sargs(&["TDIGEST.RANK", k]),
            3 => sargs(&["TDIGEST.REVRANK", k]),
            4 => sargs(&["TDIGEST.BYRANK", k]),
            5 => sargs(&["TDIGEST.BYREVRANK", k]),
            _ => {
                let lo = self.rng.gen_range(0.0..0.5f64);
                let hi = self.rng.gen_range(0.5..1.0f64);
                return sargs(&["TDIGEST.TRIMMED_MEAN", k, &lo.to_string(), &hi.to_string()]);
            }
        };
        let name = String::from_utf8_lossy(&a[0]).into_owned();
        for _ in 0..self.rng.gen_range(1..6) {
            let arg = match name.as_str() {
                "TDIGEST.QUANTILE" => format!("{}", self.rng.gen_range(0.0..=1.0f64)),
                "TDIGEST.BYRANK" | "TDIGEST.BYREVRANK" => self.rng.gen_range(0..2000).to_string(),
                _ => self.value(),
            };
            a.push(arg.into_bytes());
        }
        a
    }

    fn invalid(&mut self, k: &str) -> Args {
        match self.rng.gen_range(0..6) {
            0 => sargs(&["TDIGEST.ADD", k, "abc"]),
            1 => sargs(&["TDIGEST.ADD", "missing", "1"]),
            2 => sargs(&["TDIGEST.MERGE", k, "2", k, "missing"]),
            3 => sargs(&["TDIGEST.CREATE", k, "COMPRESSION", "0"]),
            4 => sargs(&["TDIGEST.QUANTILE", k, "2"]),
            _ => sargs(&["TDIGEST.ADD", "str", "1"]),
        }
    }

    /// `n` commands.
    pub fn batch(&mut self, n: usize) -> Vec<Args> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            out.extend(self.next_commands());
        }
        out
    }
}

/// DEBUG DIGEST-VALUE of every key of database 0: the exact live state of
/// each digest (rsbloom's digest callback; it changes nothing).
pub fn digests(c: &mut Conn) -> BTreeMap<Vec<u8>, Reply> {
    let keys = c.cmd(&["KEYS", "*"]);
    keys.as_array()
        .iter()
        .map(|k| {
            let k = k.as_bytes().to_vec();
            let d = c.cmd(&[&b"DEBUG"[..], b"DIGEST-VALUE", &k]);
            (k, d)
        })
        .collect()
}

/// TDIGEST.INFO of every digest of database 0 (for servers without a
/// digest callback, i.e. RedisBloom); `Memory usage` dropped (it differs
/// between RedisBloom 2.8.2 and 8.x).
pub fn infos(c: &mut Conn) -> BTreeMap<Vec<u8>, Vec<Reply>> {
    let keys = c.cmd(&["KEYS", "*"]);
    let mut out = BTreeMap::new();
    for k in keys.as_array() {
        let k = k.as_bytes().to_vec();
        if c.cmd(&[&b"TYPE"[..], &k]).as_bytes() != b"TDIS-TYPE" {
            continue;
        }
        let info = c.cmd(&[&b"TDIGEST.INFO"[..], &k]);
        let mut fields = info.as_array().to_vec();
        fields.truncate(16);
        out.insert(k, fields);
    }
    out
}
