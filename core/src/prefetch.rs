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

/// Items hashed and prefetched together: the prefetches of a block are
/// issued back to back, so their misses (and page walks) overlap.
pub const BLOCK: usize = 16;

/// Runs `each` on the hashes of `items` in order. Items go by blocks: the
/// next block is hashed and its lines prefetched before the current block
/// is processed, so the cache misses of a batch on a large filter overlap.
/// Hashes wait on the stack: no allocation per command. `each` returns
/// false to stop early.
///
/// `state` is the filter (`&mut` when `each` writes): `hash` and `prefetch`
/// read it between the calls of `each`.
///
/// A single item, nothing to overlap with, is run here: the block loop is
/// out of line, so a single-item command keeps neither its frame (two
/// blocks of hashes, up to 768 bytes) nor its code in the caches.
#[inline]
pub fn pipelined<S, I, H: Copy + Default>(
    mut state: S,
    items: &[I],
    hash: impl Fn(&S, &I) -> H,
    prefetch: impl Fn(&S, H),
    mut each: impl FnMut(&mut S, H) -> bool,
) {
    if let [item] = items {
        let h = hash(&state, item);
        each(&mut state, h);
        return;
    }
    in_blocks(state, items, hash, prefetch, each);
}

/// [`pipelined`] of any number of items.
#[inline(never)]
fn in_blocks<S, I, H: Copy + Default>(
    mut state: S,
    items: &[I],
    hash: impl Fn(&S, &I) -> H,
    prefetch: impl Fn(&S, H),
    mut each: impl FnMut(&mut S, H) -> bool,
) {
    // Hashes first, then the prefetches in a tight loop.
    let load = |state: &S, chunk: &[I], block: &mut [H; BLOCK]| {
        for (slot, item) in block.iter_mut().zip(chunk) {
            *slot = hash(state, item);
        }
        for h in block.iter().take(chunk.len()) {
            prefetch(state, *h);
        }
        chunk.len()
    };
    let mut chunks = items.chunks(BLOCK);
    let (mut current, mut next) = ([H::default(); BLOCK], [H::default(); BLOCK]);
    let mut len = chunks.next().map_or(0, |c| load(&state, c, &mut current));
    while len > 0 {
        let next_len = chunks.next().map_or(0, |c| load(&state, c, &mut next));
        for h in current.iter().take(len) {
            if !each(&mut state, *h) {
                return;
            }
        }
        std::mem::swap(&mut current, &mut next);
        len = next_len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item is processed once, in order, with its own hash, for batch
    /// sizes around the block size; stopping early stops.
    #[test]
    fn pipelined_visits_every_item_in_order() {
        for n in [0, 1, 2, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5] {
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
