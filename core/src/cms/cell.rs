//! Cell sizes (docs/cms.md §3.1): every counter of a sketch is an unsigned
//! little-endian integer of 1, 2, 4 or 8 bytes, fixed at creation.

/// Bytes per counter. 4 is the default and the only size before Redis 8.12.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellSize {
    One = 1,
    Two = 2,
    Four = 4,
    Eight = 8,
}

impl CellSize {
    /// The size of `bytes` bytes, if it is one of the four.
    pub fn from_bytes(bytes: u64) -> Option<CellSize> {
        match bytes {
            1 => Some(CellSize::One),
            2 => Some(CellSize::Two),
            4 => Some(CellSize::Four),
            8 => Some(CellSize::Eight),
            _ => None,
        }
    }

    pub fn bytes(self) -> usize {
        self as usize
    }

    /// The largest value a counter holds: 2^(8·size) − 1, except 8-byte
    /// counters stop at 2^63 − 1 so that every one is a RESP integer.
    pub fn max(self) -> u64 {
        match self {
            CellSize::One => u8::MAX.into(),
            CellSize::Two => u16::MAX.into(),
            CellSize::Four => u32::MAX.into(),
            CellSize::Eight => i64::MAX as u64,
        }
    }

    /// Counter `i` of `cells` (0 if out of range, which the geometry never
    /// makes).
    #[inline]
    pub(super) fn load(self, cells: &[u8], i: usize) -> u64 {
        match self {
            CellSize::One => load::<1>(cells, i),
            CellSize::Two => load::<2>(cells, i),
            CellSize::Four => load::<4>(cells, i),
            CellSize::Eight => load::<8>(cells, i),
        }
    }

    /// Stores `v` (at most `max()`) as counter `i`.
    #[inline]
    pub(super) fn store(self, cells: &mut [u8], i: usize, v: u64) {
        match self {
            CellSize::One => store::<1>(cells, i, v),
            CellSize::Two => store::<2>(cells, i, v),
            CellSize::Four => store::<4>(cells, i, v),
            CellSize::Eight => store::<8>(cells, i, v),
        }
    }
}

/// Counter `i` of `N`-byte counters (0 if out of range); fixed-width loads
/// and stores keep the hot loops free of per-cell size dispatch.
#[inline]
pub(super) fn load<const N: usize>(cells: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    if let (Some(w), Some(low)) = (cells.as_chunks::<N>().0.get(i), b.get_mut(..N)) {
        low.copy_from_slice(w);
    }
    u64::from_le_bytes(b)
}

/// Stores the low `N` bytes of `v` as counter `i`.
#[inline]
pub(super) fn store<const N: usize>(cells: &mut [u8], i: usize, v: u64) {
    let b = v.to_le_bytes();
    if let (Some(w), Some(low)) = (cells.as_chunks_mut::<N>().0.get_mut(i), b.get(..N)) {
        w.copy_from_slice(low);
    }
}
