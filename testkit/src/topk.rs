//! Top-K helpers shared by the TOPK.* tests: DUMP payloads with the heap
//! records' pointer fields masked (they hold addresses in RedisBloom's dumps
//! and the generator state in rsbloom's, docs/topk.md §5.2), and a seeded
//! random stream of Top-K commands with decay < 1 for the replication and
//! AOF identity tests.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::diff::{sargs, Args};
use super::dump::{self, Prim, TOPK_MODULE_ID};
use super::{Conn, Reply};

/// Bytes of one saved heap record; the pointer field is at 8..16.
pub const RECORD: usize = 24;

/// The primitives of an uncompressed Top-K DUMP payload with every heap
/// record's pointer field zeroed.
pub fn masked(payload: &[u8]) -> Vec<Prim> {
    let (id, mut prims) = dump::parse(payload);
    assert_eq!(id, TOPK_MODULE_ID, "not a Top-K payload");
    if let Some(Prim::S(heap)) = prims.get_mut(5) {
        for record in heap.chunks_exact_mut(RECORD) {
            record[8..16].fill(0);
        }
    }
    prims
}

/// The generator state rsbloom keeps in heap record 0's pointer field.
pub fn generator_state(payload: &[u8]) -> u64 {
    let (_, prims) = dump::parse(payload);
    match prims.get(5) {
        Some(Prim::S(heap)) => u64::from_le_bytes(heap[8..16].try_into().unwrap()),
        other => panic!("heap blob expected, got {other:?}"),
    }
}

/// What the read commands show of a key: LIST WITHCOUNT and INFO.
pub fn observe(c: &mut Conn, key: &[u8]) -> (Reply, Reply) {
    (
        c.cmd(&[&b"TOPK.LIST"[..], key, b"WITHCOUNT"]),
        c.cmd(&[&b"TOPK.INFO"[..], key]),
    )
}

/// Keys of the stream, a string key in between.
pub const STREAM_KEYS: [&str; 6] = ["tk0", "tk1", "tk2", "tk3", "tk4", "tk5"];

/// A seeded stream of every Top-K write (and some reads and failures) on
/// sketches with decay < 1, whose decay draws a replica or a replay must
/// reproduce: skewed items so that heavy hitters and many collisions occur,
/// increments up to 1000, bad increments part-way, keys deleted and
/// re-created with other parameters.
pub struct TopkStream {
    rng: SmallRng,
}

impl TopkStream {
    pub fn new(seed: u64) -> TopkStream {
        TopkStream {
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Commands creating the stream's keys.
    pub fn setup(&self) -> Vec<Args> {
        let mut v = vec![sargs(&["SET", "tstr", "x"])];
        for (i, k) in STREAM_KEYS.iter().enumerate() {
            v.push(self.reserve(k, i));
        }
        v
    }

    fn reserve(&self, key: &str, i: usize) -> Args {
        let (k, w, d, decay) = [
            ("10", "16", "4", "0.9"),
            ("5", "8", "3", "0.5"),
            ("3", "4", "2", "0.99"),
            ("20", "64", "5", "0.925"),
            ("1", "2", "1", "0.7"),
            ("8", "32", "7", "0.9"),
        ][i % 6];
        if i % 7 == 6 {
            // The defaults: 8 × 7, decay 0.9.
            return sargs(&["TOPK.RESERVE", key, k]);
        }
        sargs(&["TOPK.RESERVE", key, k, w, d, decay])
    }

    /// No item with a NUL byte: a load truncates those (docs/topk.md
    /// §5.2), so a loaded copy would differ from one that was not loaded.
    fn item(&mut self) -> Vec<u8> {
        // Roughly Zipf: item n with weight ~ 1/n over 200 items.
        let n = (200f64.powf(self.rng.gen::<f64>()) as u32).min(199);
        if self.rng.gen_range(0..50) == 0 {
            Vec::new()
        } else {
            format!("i{n}").into_bytes()
        }
    }

    fn key(&mut self) -> String {
        STREAM_KEYS[self.rng.gen_range(0..STREAM_KEYS.len())].to_string()
    }

    pub fn next_commands(&mut self) -> Vec<Args> {
        let key = self.key();
        match self.rng.gen_range(0..100) {
            0..=44 => {
                let mut a = sargs(&["TOPK.ADD", &key]);
                for _ in 0..self.rng.gen_range(1..8) {
                    a.push(self.item());
                }
                vec![a]
            }
            45..=69 => {
                let mut a = sargs(&["TOPK.INCRBY", &key]);
                let pairs = self.rng.gen_range(1..5);
                for p in 0..pairs {
                    a.push(self.item());
                    let inc = match self.rng.gen_range(0..20) {
                        0 if p > 0 => "-1".to_string(),
                        1 => "100001".to_string(),
                        2..=4 => "0".to_string(),
                        5..=7 => self.rng.gen_range(100..1000).to_string(),
                        _ => self.rng.gen_range(1..20).to_string(),
                    };
                    a.push(inc.into_bytes());
                }
                vec![a]
            }
            70..=74 => {
                let mut a = sargs(&["TOPK.COUNT", &key]);
                a.push(self.item());
                vec![a]
            }
            75..=79 => vec![sargs(&["TOPK.LIST", &key, "WITHCOUNT"])],
            80..=82 => {
                let i = self.rng.gen_range(0..12);
                vec![sargs(&["DEL", &key]), self.reserve(&key, i)]
            }
            83..=85 => vec![sargs(&["TOPK.ADD", "tstr", "x"])],
            86..=88 => vec![sargs(&["TOPK.ADD", "missing", "x"])],
            89..=91 => vec![sargs(&["TOPK.RESERVE", &key, "5"])],
            92..=94 => vec![sargs(&["TOPK.INCRBY", &key, "x"])],
            _ => vec![sargs(&["TOPK.QUERY", &key, "i1", "i2", "i3"])],
        }
    }

    /// Sends `n` stream steps (after the setup when `setup`), pipelined.
    /// For RedisBloom without bad increments: it answers one before the
    /// last pair with a short array (docs/topk.md §4.3), which would
    /// desynchronise the pipeline.
    pub fn run(&mut self, c: &mut Conn, n: usize, setup: bool, redisbloom: bool) {
        let mut cmds = if setup { self.setup() } else { Vec::new() };
        for _ in 0..n {
            cmds.extend(self.next_commands());
        }
        let bad = |a: &[u8]| a == b"-1" || a == b"100001";
        cmds.retain(|c| {
            !(redisbloom && c[0] == b"TOPK.INCRBY" && c.iter().skip(3).step_by(2).any(|a| bad(a)))
        });
        for chunk in cmds.chunks(200) {
            c.pipeline(chunk);
        }
    }
}

/// Every stream key: its DUMP and DEBUG DIGEST-VALUE (rsbloom), or its
/// LIST WITHCOUNT only (`digests` false: any module).
pub fn state(c: &mut Conn, digests: bool) -> Vec<(String, Reply, Reply)> {
    STREAM_KEYS
        .iter()
        .map(|k| {
            if digests {
                let digest = c.cmd(&["DEBUG", "DIGEST-VALUE", k]);
                (k.to_string(), c.cmd(&["DUMP", k]), digest)
            } else {
                (
                    k.to_string(),
                    c.cmd(&["TOPK.LIST", k, "WITHCOUNT"]),
                    Reply::Nil,
                )
            }
        })
        .collect()
}
