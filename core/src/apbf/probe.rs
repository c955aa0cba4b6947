//! The hot paths' arithmetic: a slice's bit index without a division, and
//! the search for `k` consecutive slices holding an item.

use std::hint::select_unpredictable as select;

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

/// A search for `k` consecutive ages among `lo..live` that all hold an
/// item, one probe at a time, so that the searches of a batch interleave.
///
/// Windows of `k` are tried from the youngest, each tested from its oldest
/// age down: a miss at age `a` rules out every window containing `a` (and
/// those below were ruled out before), so the next window starts at
/// `a + 1`, and the ages tested above `a` are known to hold the item and
/// are not tested again. On a filter at fill 1/2 a negative costs about two
/// probes per `k` slices.
#[derive(Clone, Copy)]
pub(super) struct Run {
    /// The age to probe next.
    pub age: u64,
    /// Ages from the current window's bottom up to here hold the item.
    known_to: u64,
    /// The current window's end (exclusive).
    top: u64,
    end: End,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Searching,
    Absent,
    Present,
}

impl Run {
    /// A placeholder, before [`Run::new`].
    pub const EMPTY: Run = Run {
        age: 0,
        known_to: 0,
        top: 0,
        end: End::Absent,
    };

    pub fn new(k: u64, lo: u64, live: u64) -> Run {
        let top = lo.saturating_add(k);
        Run {
            age: top.wrapping_sub(1),
            known_to: lo,
            top,
            end: if top > live {
                End::Absent
            } else {
                End::Searching
            },
        }
    }

    pub fn searching(&self) -> bool {
        self.end == End::Searching
    }

    pub fn present(&self) -> bool {
        self.end == End::Present
    }

    /// Takes the answer of the probe of `age`. Selects, not branches: a
    /// probe's answer is a coin toss the CPU would mispredict half the time.
    #[inline(always)]
    pub fn step(&mut self, have: bool, k: u64, live: u64) {
        let (age, top) = (self.age, self.top);
        // A miss rules out the windows holding `age`: the next starts above.
        // (Ages and k are below 100: no sum overflows.)
        let next_top = select(have, top, age.wrapping_add(1).wrapping_add(k));
        // A hit down to the ages known: the whole window holds the item.
        let present = have & (age <= self.known_to);
        self.known_to = select(have, self.known_to, top);
        self.age = select(have, age, next_top).wrapping_sub(1);
        self.top = next_top;
        let end = select(next_top > live, End::Absent, End::Searching);
        self.end = select(present, End::Present, end);
    }
}

/// Whether `k` consecutive ages among `lo..live` all `have` the item: the
/// search of [`Run`], with branches. Alone, a search is faster speculated:
/// the CPU runs ahead on its guess of each answer, and the probes it
/// guessed right overlap; a chain of selects waits for every probe. In a
/// batch, [`Run`]'s selects let the searches of a block interleave.
#[inline(always)]
pub(super) fn run_of(k: u64, lo: u64, live: u64, mut have: impl FnMut(u64) -> bool) -> bool {
    let mut bottom = lo;
    // Ages [bottom, known_to) hold the item.
    let mut known_to = lo;
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
