//! Where an item's counters are (docs/cms.md §2), and the batch loop that
//! prefetches them a block of items ahead (§8).

use crate::hash::murmur2;

/// Columns held for one block of items; a block has `BLOCK_CELLS / depth`
/// items, so sketches deeper than that go without prefetching (a deep
/// item's own rows overlap well enough). Small, because the buffers are
/// zeroed on every command, even for a single item.
const BLOCK_CELLS: usize = 64;

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
    /// width): the fractional part of h / width, scaled back up. Below
    /// 2^32 either way.
    #[inline]
    fn column(self, h: u32) -> u32 {
        if self.width > u32::MAX as usize {
            return h;
        }
        let fraction = self.reciprocal.wrapping_mul(u64::from(h));
        ((u128::from(fraction) * self.width as u128) >> 64) as u32
    }

    /// Column of `item` in `row`: hashed with seed `row mod 2^32` (sketches
    /// deeper than that reuse seeds, like RedisBloom's).
    #[inline]
    fn column_of(self, item: &[u8], row: usize) -> u32 {
        self.column(murmur2(item, row as u32))
    }

    /// Counter index of column `col` in `row`.
    #[inline]
    fn index(self, row: usize, col: u32) -> usize {
        row.wrapping_mul(self.width).wrapping_add(col as usize)
    }

    /// Counter index of `item` in `row`.
    #[inline]
    pub(super) fn cell(self, item: &[u8], row: usize) -> usize {
        self.index(row, self.column_of(item, row))
    }

    /// Counter indices of `item`, row 0 first.
    #[inline]
    pub(super) fn cells(self, item: &[u8]) -> impl Iterator<Item = usize> + Clone + '_ {
        (0..self.depth).map(move |row| self.cell(item, row))
    }

    /// Counter indices of an item whose columns are `cols`, row 0 first.
    #[inline]
    pub(super) fn cells_at(self, cols: &[u32]) -> impl Iterator<Item = usize> + Clone + '_ {
        cols.iter()
            .enumerate()
            .map(move |(row, &col)| self.index(row, col))
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

/// A geometry whose items fit `per_block` (≥ 1) to a block of columns.
#[derive(Clone, Copy)]
pub(super) struct Blocks {
    g: Geometry,
    per_block: usize,
}

/// Runs `each` on every item in order with the columns of its rows (see
/// [`Geometry::cells_at`]). The columns of the next block of items are
/// computed and their counters prefetched before the current block is
/// processed, so the cache misses (and TLB walks) of a batch on a large
/// sketch overlap; columns wait on the stack, nothing is allocated.
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
    mut each: impl FnMut(&mut S, &T, &[u32]),
) {
    let (g, d) = (b.g, b.g.depth);
    // Columns first, then the prefetches back to back.
    let load = |state: &S, chunk: &[T], buf: &mut [u32; BLOCK_CELLS]| {
        for (t, cols) in chunk.iter().zip(buf.chunks_exact_mut(d)) {
            let t = item(t);
            for (row, col) in cols.iter_mut().enumerate() {
                *col = g.column_of(t, row);
            }
        }
        for cols in buf.chunks_exact(d).take(chunk.len()) {
            g.cells_at(cols).for_each(|c| prefetch(state, c));
        }
    };
    let mut chunks = items.chunks(b.per_block);
    let mut current = [0u32; BLOCK_CELLS];
    // Zeroed only for a second block: a single item's batch would spend
    // more on zeroing it than on everything else but its hashes.
    let mut next: Option<[u32; BLOCK_CELLS]> = None;
    let mut block = chunks.next();
    if let Some(c) = block {
        load(&state, c, &mut current);
    }
    while let Some(now) = block {
        block = chunks.next();
        let upcoming = block.map(|c| {
            let buf = next.get_or_insert([0; BLOCK_CELLS]);
            load(&state, c, buf);
            buf
        });
        for (t, cols) in now.iter().zip(current.chunks_exact(d)) {
            each(&mut state, t, cols);
        }
        if let Some(buf) = upcoming {
            std::mem::swap(&mut current, buf);
        }
    }
}
