//! CF.SCANDUMP / CF.LOADCHUNK format (docs/cuckoo.md §14) and the AOF chunk
//! stream (§15).

use super::{sub_filter_buckets, CuckooFilter, Header};

/// Length of the packed little-endian header.
pub const HEADER_LEN: usize = 38;
/// Largest data chunk (16 MiB).
pub const CHUNK_MAX: u64 = 16 * 1024 * 1024;

/// Why `CuckooFilter::from_header` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// Length is not 38: `Invalid header`.
    InvalidHeader,
    /// Bad parameters or allocation failure: `Couldn't create filter!`.
    CannotCreate,
}

/// A data chunk does not fit the filter, or would leave more fingerprints
/// than the item count: `Couldn't load chunk!`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkError;

/// Sequential little-endian field reader over a header.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn u64(&mut self) -> Option<u64> {
        let (v, rest) = self.0.split_first_chunk::<8>()?;
        self.0 = rest;
        Some(u64::from_le_bytes(*v))
    }

    fn u16(&mut self) -> Option<u16> {
        let (v, rest) = self.0.split_first_chunk::<2>()?;
        self.0 = rest;
        Some(u16::from_le_bytes(*v))
    }
}

impl CuckooFilter {
    /// The reply of `CF.SCANDUMP key 0`.
    pub fn encode_header(&self) -> [u8; HEADER_LEN] {
        let bytes = self
            .num_items
            .to_le_bytes()
            .into_iter()
            .chain(self.num_buckets().to_le_bytes())
            .chain(self.num_deletes.to_le_bytes())
            .chain(u64::from(self.num_filters()).to_le_bytes())
            .chain(self.bucket_size.to_le_bytes())
            .chain(self.max_iterations.to_le_bytes())
            .chain(self.expansion.to_le_bytes());
        let mut out = [0u8; HEADER_LEN];
        out.iter_mut().zip(bytes).for_each(|(o, b)| *o = b);
        out
    }

    /// Builds a zeroed filter from a `CF.LOADCHUNK key 1` header (docs/cuckoo.md §14 step 2).
    /// `max_bucket_size` is the current cf-bucket-size maximum.
    pub fn from_header(data: &[u8], max_bucket_size: u16) -> Result<Self, HeaderError> {
        if data.len() != HEADER_LEN {
            return Err(HeaderError::InvalidHeader);
        }
        Self::parse_header(data, max_bucket_size).ok_or(HeaderError::CannotCreate)
    }

    fn parse_header(data: &[u8], max_bucket_size: u16) -> Option<Self> {
        let mut r = Fields(data);
        // Struct fields are evaluated as written: in header order.
        let h = Header {
            num_items: r.u64()?,
            num_buckets: r.u64()?,
            num_deletes: r.u64()?,
            // The C field is 16 bits wide: the count is taken modulo 2^16.
            num_filters: r.u64()? as u16,
            bucket_size: r.u16()?,
            max_iterations: r.u16()?,
            expansion: r.u16()?,
        };
        let mut cf = h.empty_filter(max_bucket_size)?;
        // Every sub-filter size is checked before anything is allocated: a
        // header whose 55th sub-filter overflows must not first allocate (and,
        // on servers without try-calloc, touch) gigabytes for the earlier ones.
        let mut slots = 0u64;
        for i in 0..h.num_filters {
            let size = sub_filter_buckets(h.num_buckets, h.expansion, i)?
                .checked_mul(u64::from(h.bucket_size))?;
            slots = slots.saturating_add(size);
        }
        // More items than slots: no filter holds that (docs/cuckoo.md §14).
        if h.num_items > slots {
            return None;
        }
        let mut filters = Vec::new();
        filters.try_reserve_exact(usize::from(h.num_filters)).ok()?;
        for i in 0..h.num_filters {
            filters.push(cf.new_sub_filter(usize::from(i)).ok()?);
        }
        cf.filters = filters.into_boxed_slice();
        Some(cf)
    }

    /// `CF.SCANDUMP key pos` for pos ≥ 1: the next position and the chunk, or
    /// None for the end marker. A sub-filter of at most 16 MiB is always sent
    /// whole, whatever the offset inside it (docs/differences.md §2).
    pub fn scandump_chunk(&self, pos: i64) -> Option<(i64, &[u8])> {
        let mut offset = u64::try_from(pos).ok()?.checked_sub(1)?;
        for f in self.filters.iter() {
            let size = f.slots().len() as u64;
            if offset < size {
                let from = if size <= CHUNK_MAX { 0 } else { offset };
                let len = (size - from).min(CHUNK_MAX);
                let chunk = f
                    .slots()
                    .get(usize::try_from(from).ok()?..)?
                    .get(..usize::try_from(len).ok()?)?;
                return Some((pos.checked_add(i64::try_from(len).ok()?)?, chunk));
            }
            offset -= size;
        }
        None
    }

    /// `CF.LOADCHUNK key pos data` for pos ≠ 1: `pos` is the position after the
    /// chunk. The chunk must lie inside one sub-filter (no wrap, docs/differences.md §1 item 7)
    /// and leave at most numItems fingerprints in the filter (docs/cuckoo.md §14):
    /// memory never holds what the RDB loader refuses.
    pub fn load_chunk(&mut self, pos: i64, data: &[u8]) -> Result<(), ChunkError> {
        let len = data.len() as u64;
        let end = u64::try_from(pos).ok().and_then(|p| p.checked_sub(1));
        let mut offset = end.filter(|&e| len != 0 && e >= len).ok_or(ChunkError)? - len;
        let (occupied, num_items) = (self.occupied(), self.num_items);
        for f in self.filters.iter_mut() {
            let size = f.len() as u64;
            if offset < size {
                let start = usize::try_from(offset).map_err(|_| ChunkError)?;
                let elsewhere = occupied.saturating_sub(f.occupied());
                let fits = |after: u64| elsewhere.saturating_add(after) <= num_items;
                return f.load(start, data, fits).then_some(()).ok_or(ChunkError);
            }
            offset -= size;
        }
        Err(ChunkError)
    }

    /// The data chunks of an AOF rewrite (docs/cuckoo.md §15): `(position after chunk, chunk)`
    /// from position 1, also when the filter holds no items. The same chunks
    /// as iterating [`CuckooFilter::scandump_chunk`], in one pass over the
    /// sub-filters (that iteration walks from the first sub-filter at every
    /// step: quadratic for a crafted header with 65535 of them).
    pub fn aof_chunks(&self) -> impl Iterator<Item = (i64, &[u8])> + '_ {
        let mut pos = 1i64;
        self.filters
            .iter()
            .flat_map(|f| f.slots().chunks(CHUNK_MAX as usize))
            .map_while(move |chunk| {
                pos = pos.checked_add(i64::try_from(chunk.len()).ok()?)?;
                Some((pos, chunk))
            })
    }
}
