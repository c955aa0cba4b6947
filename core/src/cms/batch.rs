//! Where an item's counters are (docs/cms.md §2), and the batch loop that
//! prefetches them a block of items ahead (§8).

use crate::hash::murmur2;

/// Counter positions held for one block of items; a block has
/// `BLOCK_CELLS / depth` items, so sketches deeper than that go without
/// prefetching (a deep item's own rows overlap well enough).
const BLOCK_CELLS: usize = 128;

/// Width, depth and the reciprocal that replaces `h mod width`.
#[derive(Clone, Copy)]
pub(super) struct Geometry {
    width: usize,
    depth: usize,
    /// `ceil(2^64 / width)` (wrapped) when width < 2^32, else unused: a
    /// 32-bit hash is its own remainder by a larger width (§2).
    reciprocal: u64,
}

impl Geometry {
    /// `width · depth` counters are allocated, so both fit in `usize`.
    pub(super) fn new(width: u64, depth: u64) -> Geometry {
        let width = usize::try_from(width).unwrap_or(usize::MAX).max(1);
        Geometry {
            width,
            depth: usize::try_from(depth).unwrap_or(0),
            reciprocal: (u64::MAX / width as u64).wrapping_add(1),
        }
    }

    /// `h mod width` without a division (Lemire, Kaser and Kurz, "Faster
    /// remainder by direct computation", 2019: exact for 32-bit `h` and
    /// width): the fractional part of h / width, scaled back up.
    #[inline]
    fn column(self, h: u32) -> usize {
        if self.width > u32::MAX as usize {
            return h as usize;
        }
        let fraction = self.reciprocal.wrapping_mul(u64::from(h));
        ((u128::from(fraction) * self.width as u128) >> 64) as usize
    }

    /// Counter index of `item` in `row`: hashed with seed `row mod 2^32`
    /// (sketches deeper than that reuse seeds, like RedisBloom's).
    #[inline]
    pub(super) fn cell(self, item: &[u8], row: usize) -> usize {
        row.wrapping_mul(self.width)
            .wrapping_add(self.column(murmur2(item, row as u32)))
    }

    /// Counter indices of `item`, row 0 first.
    #[inline]
    pub(super) fn cells(self, item: &[u8]) -> impl Iterator<Item = usize> + '_ {
        (0..self.depth).map(move |row| self.cell(item, row))
    }

    /// The blocks a batch of `n` items goes by, unless the sketch is too deep
    /// for one item's rows to fit a block. A single item is worth it too:
    /// its rows' misses (and page walks) then start together, before the
    /// first update waits on one.
    pub(super) fn blocks(self, n: usize) -> Option<Blocks> {
        let per_block = BLOCK_CELLS / self.depth.max(1);
        (n >= 1 && per_block >= 1).then_some(Blocks { g: self, per_block })
    }
}

/// A geometry whose items fit `per_block` (≥ 1) to a block of cells.
#[derive(Clone, Copy)]
pub(super) struct Blocks {
    g: Geometry,
    per_block: usize,
}

/// Runs `each` on every item in order with the counter indices of its
/// rows. The indices of the next block of items are computed and
/// prefetched before the current block is processed, so the cache misses
/// (and TLB walks) of a batch on a large sketch overlap; indices wait on
/// the stack, nothing is allocated.
///
/// `state` is the sketch (`&mut` when `each` writes); `prefetch` reads it
/// between calls of `each`.
#[inline]
pub(super) fn pipelined<S, T>(
    b: Blocks,
    mut state: S,
    items: &[T],
    item: impl Fn(&T) -> &[u8],
    prefetch: impl Fn(&S, usize),
    mut each: impl FnMut(&mut S, &T, std::iter::Copied<std::slice::Iter<'_, usize>>),
) {
    let d = b.g.depth;
    let load = |state: &S, chunk: &[T], buf: &mut [usize; BLOCK_CELLS]| {
        for (t, slots) in chunk.iter().zip(buf.chunks_exact_mut(d)) {
            for (slot, c) in slots.iter_mut().zip(b.g.cells(item(t))) {
                *slot = c;
            }
        }
        for &c in buf.iter().take(chunk.len() * d) {
            prefetch(state, c);
        }
    };
    let mut chunks = items.chunks(b.per_block);
    let (mut current, mut next) = ([0usize; BLOCK_CELLS], [0usize; BLOCK_CELLS]);
    let mut block = chunks.next();
    if let Some(c) = block {
        load(&state, c, &mut current);
    }
    while let Some(now) = block {
        block = chunks.next();
        if let Some(c) = block {
            load(&state, c, &mut next);
        }
        for (t, cells) in now.iter().zip(current.chunks_exact(d)) {
            each(&mut state, t, cells.iter().copied());
        }
        std::mem::swap(&mut current, &mut next);
    }
}
