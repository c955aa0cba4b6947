//! Software prefetch: asks the CPU to start loading a cache line that a later
//! probe will read, so the misses of a batch overlap instead of queueing.
//! A hint only: results never depend on it.

/// Starts loading the cache line holding `byte` into all cache levels.
#[inline(always)]
pub fn prefetch(byte: &u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no architectural effect; the
    // address is that of a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(byte).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // Portable fallback: no prefetch (touching the byte would serialise).
        let _ = byte;
    }
}

/// Items hashed ahead of the one being processed in a batch: far enough
/// that its lines arrive in time, near enough that they stay in L1/L2.
pub const DISTANCE: usize = 8;

/// Runs `each` on the hashes of `items` in order, prefetching what item
/// `i + DISTANCE` will read while item `i` is processed, so the cache misses
/// of a batch on a large filter overlap. Hashes wait in a ring on the stack:
/// no allocation per command. `each` returns false to stop early.
///
/// `state` is the filter (`&mut` when `each` writes): `hash` and `prefetch`
/// read it between the calls of `each`.
#[inline]
pub fn pipelined<S, I, H: Copy + Default>(
    mut state: S,
    items: &[I],
    hash: impl Fn(&S, &I) -> H,
    prefetch: impl Fn(&S, H),
    mut each: impl FnMut(&mut S, H) -> bool,
) {
    if let [item] = items {
        // Nothing to overlap with.
        let h = hash(&state, item);
        each(&mut state, h);
        return;
    }
    let mut ring = [H::default(); DISTANCE];
    for (slot, item) in ring.iter_mut().zip(items) {
        *slot = hash(&state, item);
        prefetch(&state, *slot);
    }
    for i in 0..items.len() {
        let Some(h) = ring.get(i % DISTANCE).copied() else {
            return;
        };
        if let Some(ahead) = items.get(i + DISTANCE) {
            let next = hash(&state, ahead);
            prefetch(&state, next);
            if let Some(s) = ring.get_mut(i % DISTANCE) {
                *s = next;
            }
        }
        if !each(&mut state, h) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item is processed once, in order, with its own hash, for batch
    /// sizes around the ring size; stopping early stops.
    #[test]
    fn pipelined_visits_every_item_in_order() {
        for n in [
            0,
            1,
            2,
            DISTANCE - 1,
            DISTANCE,
            DISTANCE + 1,
            3 * DISTANCE + 5,
        ] {
            let items: Vec<u64> = (0..n as u64).collect();
            let mut seen = Vec::new();
            let prefetched = std::cell::RefCell::new(Vec::new());
            pipelined(
                &mut seen,
                &items,
                |_, &i| i * 10,
                |_, h| prefetched.borrow_mut().push(h),
                |s, h| {
                    s.push(h);
                    true
                },
            );
            let want: Vec<u64> = items.iter().map(|i| i * 10).collect();
            assert_eq!(seen, want, "n = {n}");
            let mut p = prefetched.into_inner();
            p.sort_unstable();
            assert_eq!(p, if n > 1 { want } else { vec![] }, "n = {n}");
        }
        let mut count = 0;
        pipelined(
            (),
            &[1u64, 2, 3, 4],
            |_, &i| i,
            |_, _| (),
            |_, _| {
                count += 1;
                count < 2
            },
        );
        assert_eq!(count, 2);
    }
}
