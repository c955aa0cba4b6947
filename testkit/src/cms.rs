//! A seeded stream of CMS.* writes — creations, increments (with overflow
//! elements and rejected increments), merges (with weights, overflow and
//! shape errors), deletions — for the replication and AOF tests.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::diff::{sargs, Args};

const KEYS: [&str; 12] = [
    "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11",
];

/// `compat`: only what RedisBloom 2.8.2 and Redis 8.12 do alike (no
/// negative increments, none that could overflow a counter), for streams
/// replicated between the two.
pub fn writes(seed: u64, n: usize, compat: bool) -> Vec<Args> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out: Vec<Args> = KEYS
        .iter()
        .map(|k| sargs(&["CMS.INITBYDIM", k, "20", "5"]))
        .collect();
    while out.len() < n {
        let key = KEYS[rng.gen_range(0..KEYS.len())];
        let cmd = match rng.gen_range(0..100) {
            0..=1 => sargs(&["DEL", key]),
            2..=9 => sargs(&["CMS.INITBYDIM", key, "20", "5"]),
            10..=12 => sargs(&["CMS.INITBYPROB", key, "0.1", "0.01"]),
            13..=69 => {
                let mut a = sargs(&["CMS.INCRBY", key]);
                for _ in 0..rng.gen_range(1..6) {
                    a.push(format!("i{}", rng.gen_range(0..50)).into_bytes());
                    let inc = match rng.gen_range(0..40) {
                        0 | 1 if !compat => "4294967295".to_string(),
                        2 | 3 if !compat => "-1".to_string(),
                        4 if !compat => "-9223372036854775808".to_string(),
                        5 => "x".to_string(),
                        _ => rng.gen_range(0..100).to_string(),
                    };
                    a.push(inc.into_bytes());
                }
                a
            }
            _ => {
                let (a, b) = (KEYS[rng.gen_range(0..12)], KEYS[rng.gen_range(0..12)]);
                let (wa, wb) = (rng.gen_range(-2..4), rng.gen_range(-2..4));
                sargs(&[
                    "CMS.MERGE",
                    key,
                    "2",
                    a,
                    b,
                    "WEIGHTS",
                    &wa.to_string(),
                    &wb.to_string(),
                ])
            }
        };
        out.push(cmd);
    }
    // Every key ends up holding a sketch (the others answer "exists").
    out.extend(KEYS.iter().map(|k| sargs(&["CMS.INITBYDIM", k, "20", "5"])));
    out
}
