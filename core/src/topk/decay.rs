//! Decay of foreign buckets (docs/topk.md §3.4, §3.5): the probability
//! table and the per-key generator of the draws.
//!
//! Everything here is IEEE basic arithmetic (no libm), so every host, every
//! replica and every reload computes the same probabilities bit for bit.

/// `table[i] = decay^i`, by repeated multiplication (as RedisBloom 8.x
/// rebuilds it after a load; creation uses the same formula here).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DecayTable([f64; 256]);

impl DecayTable {
    pub(super) fn new(decay: f64) -> Self {
        let mut t = [1.0; 256];
        let mut p = 1.0;
        for slot in t.iter_mut().skip(1) {
            p *= decay;
            *slot = p;
        }
        DecayTable(t)
    }

    /// Probability that one draw decrements a bucket of count `c` ≥ 1:
    /// `decay^c`, for c ≥ 256 as RedisBloom composes it (255, not 256).
    pub(super) fn probability(&self, c: u32) -> f64 {
        let t = &self.0;
        let at = |i: u32| t.get(i as usize).copied().unwrap_or(0.0);
        if c < 256 {
            at(c)
        } else {
            powi(at(255), c / 255) * at(c % 255)
        }
    }
}

/// `x^n` by squaring.
fn powi(mut x: f64, mut n: u32) -> f64 {
    let mut acc = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            acc *= x;
        }
        x *= x;
        n >>= 1;
    }
    acc
}

/// The next draw of the key's generator, uniform in [0, 1) with 53 bits:
/// wyrand (a Weyl sequence and one 64×64→128-bit multiply per draw).
pub(super) fn draw(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0xa076_1d64_78bd_642f);
    let t = u128::from(*state) * u128::from(*state ^ 0xe703_7ed1_a0b4_28db);
    let z = (t >> 64) as u64 ^ t as u64;
    // 53 bits fit an i64, whose conversion is one instruction.
    (z >> 11) as i64 as f64 * (1.0 / (1u64 << 53) as f64)
}

/// What decaying a foreign bucket did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decayed {
    /// The bucket keeps its owner, now with this count.
    Kept(u32),
    /// The count reached 0 and the item took the bucket with the remaining
    /// increment.
    Claimed(u32),
}

/// Up to `inc` decay attempts on a foreign bucket of count `count` ≥ 1,
/// one draw each (docs/topk.md §3.4). Where the outcome needs no draw it
/// takes none: a probability ≥ 1 for every count (decay ≥ 1) always
/// decrements, one ≤ 0 or NaN never does.
pub(super) fn decay_foreign(
    table: &DecayTable,
    certain: bool,
    state: &mut u64,
    mut count: u32,
    inc: u32,
) -> Decayed {
    if certain {
        return match inc.checked_sub(count) {
            Some(rest) => Decayed::Claimed(rest + 1),
            None => Decayed::Kept(count - inc),
        };
    }
    let mut r = inc;
    while r > 0 {
        let p = table.probability(count);
        // 0, negative or NaN (loaded decays): no draw can succeed.
        if p.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            break;
        }
        if draw(state) < p {
            count -= 1;
            if count == 0 {
                return Decayed::Claimed(r);
            }
        }
        r -= 1;
    }
    Decayed::Kept(count)
}
