//! The hot paths' arithmetic: a slice's bit index without a division, and
//! the search for `k` consecutive slices holding an item.

/// The two hashes of an item; slice `p` uses bit `(a + p·b) mod 2^64 mod m`
/// (docs/apbf.md §2).
#[derive(Clone, Copy, Default)]
pub(super) struct Hashes(pub u64, pub u64);

/// `m` (bits per slice) with its reciprocal, computed once per command: a
/// bit index then costs a multiplication instead of a 64-bit division.
#[derive(Clone, Copy)]
pub(super) struct Modulus {
    m: u64,
    /// `floor((2^64 - 1) / m)`.
    inv: u64,
}

impl Modulus {
    pub fn of(m: u64) -> Modulus {
        let m = m.max(1);
        Modulus {
            m,
            inv: u64::MAX / m,
        }
    }

    /// `x mod m`. With `inv = (2^64 - 1 - ρ) / m`, `ρ < m`, the quotient
    /// `x·inv / 2^64` is below `x / m` by less than 1: it is the true one
    /// or one less, so one correction suffices.
    #[inline(always)]
    pub fn reduce(self, x: u64) -> u64 {
        let q = ((u128::from(x) * u128::from(self.inv)) >> 64) as u64;
        let r = x.wrapping_sub(q.wrapping_mul(self.m));
        if r >= self.m {
            r.wrapping_sub(self.m)
        } else {
            r
        }
    }

    /// The item's bit in the slice at physical position `pos`.
    #[inline(always)]
    pub fn index(self, h: Hashes, pos: u64) -> u64 {
        self.reduce(h.0.wrapping_add(pos.wrapping_mul(h.1)))
    }
}

/// Whether `k` consecutive ages among `0..live` all `have` the item.
///
/// Windows of `k` are tried from the youngest, each tested from its oldest
/// age down: a miss at age `a` rules out every window containing `a` (and
/// those below were ruled out before), so the next window starts at
/// `a + 1`, and the ages tested above `a` are known to hold the item and
/// are not tested again. On a filter at fill 1/2 a negative costs about two
/// probes per `k` slices.
#[inline(always)]
pub(super) fn run_of(k: u64, live: u64, mut have: impl FnMut(u64) -> bool) -> bool {
    let mut bottom = 0u64;
    // Ages [bottom, known_to) hold the item.
    let mut known_to = 0u64;
    loop {
        let top = bottom.saturating_add(k);
        if top > live {
            return false;
        }
        let mut age = top;
        loop {
            if age <= known_to {
                return true;
            }
            age -= 1;
            if !have(age) {
                bottom = age + 1;
                known_to = top;
                break;
            }
        }
    }
}
