//! BF.SCANDUMP / BF.LOADCHUNK: the packed header and the data chunks (docs/bloom.md §10).

use super::link::{LinkMeta, LooseLink};
use super::{Chain, LoadError, CHUNK_MAX, OPTIONS_MASK};
use crate::alloc::try_zeroed;

const HEADER_FIXED: usize = 20;
const HEADER_PER_LINK: usize = 53;

/// Most links a loaded chain may have. Each link halves the error of the
/// previous one, and the first error is below 1, so after about 1075 links
/// (2^-1075 underflows below the smallest subnormal) the next link's error is
/// 0 and creation fails: a genuine chain never gets near 1100 links.
pub(crate) const MAX_LINKS: u64 = 1100;

/// A rejected BF.LOADCHUNK data chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkError {
    BadData,
    InvalidOffset,
    TooBig,
}

impl ChunkError {
    /// The error reply, exactly as RedisBloom sends it.
    pub fn message(&self) -> &'static str {
        match self {
            ChunkError::BadData => "ERR received bad data",
            ChunkError::InvalidOffset => "ERR invalid offset - no link found",
            ChunkError::TooBig => "ERR invalid chunk - Too big for current filter",
        }
    }
}

/// Little-endian field reader over a header; `None` past the end.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, tail) = self.0.split_first_chunk::<N>()?;
        self.0 = tail;
        Some(*head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|[b]| b)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
    fn f64(&mut self) -> Option<f64> {
        self.take().map(f64::from_le_bytes)
    }

    /// One link record: the metadata and its `bytes` field.
    fn link(&mut self) -> Option<(LinkMeta, u64)> {
        let bytes = self.u64()?;
        // Struct fields are evaluated as written: in record order.
        let meta = LinkMeta {
            bits: self.u64()?,
            size: self.u64()?,
            error: self.f64()?,
            bpe: self.f64()?,
            hashes: u64::from(self.u32()?),
            entries: self.u64()?,
            n2: u64::from(self.u8()?),
        };
        Some((meta, bytes))
    }
}

impl Chain {
    /// The SCANDUMP header: 20 + 53n bytes (docs/bloom.md §10).
    pub fn encode_header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_FIXED + HEADER_PER_LINK * self.num_links());
        out.extend_from_slice(&self.items().to_le_bytes());
        // At most MAX_LINKS links exist (see there), far below u32::MAX.
        let n = u32::try_from(self.num_links()).unwrap_or(u32::MAX);
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&self.options().to_le_bytes());
        out.extend_from_slice(&self.growth().to_le_bytes());
        for l in self.links().iter() {
            out.extend_from_slice(&l.bytes().to_le_bytes());
            out.extend_from_slice(&l.bits().to_le_bytes());
            out.extend_from_slice(&l.size().to_le_bytes());
            out.extend_from_slice(&l.error().to_le_bytes());
            out.extend_from_slice(&l.bpe().to_le_bytes());
            out.extend_from_slice(&l.hashes().to_le_bytes());
            out.extend_from_slice(&l.entries().to_le_bytes());
            out.push(l.n2());
        }
        out
    }

    /// A chain with zeroed bit arrays from a SCANDUMP header (docs/bloom.md §10 step 2).
    /// Everything is validated before any bit array is allocated.
    pub fn from_header(data: &[u8]) -> Result<Box<Chain>, LoadError> {
        let truncated = LoadError::Invalid("header length");
        let mut f = Fields(data);
        let size = f.u64().ok_or(truncated)?;
        let n = f.u32().ok_or(truncated)?;
        let options = f.u32().ok_or(truncated)?;
        let growth = f.u32().ok_or(truncated)?;
        if n == 0 || u64::from(n) > MAX_LINKS {
            return Err(LoadError::Invalid("number of links"));
        }
        if data.len() != HEADER_FIXED + HEADER_PER_LINK * n as usize {
            return Err(truncated);
        }
        if options & !OPTIONS_MASK != 0 {
            return Err(LoadError::Invalid("unknown option bits"));
        }
        let mut metas = Vec::new();
        metas
            .try_reserve_exact(n as usize)
            .map_err(|_| LoadError::OutOfMemory)?;
        let mut sizes = 0u64;
        while let Some((meta, bytes)) = f.link() {
            meta.check()?;
            meta.check_exact_bpe()?;
            meta.check_bytes(bytes)?;
            sizes = sizes
                .checked_add(meta.size)
                .ok_or(LoadError::Invalid("link sizes overflow"))?;
            metas.push((meta, bytes));
        }
        if sizes != size {
            return Err(LoadError::Invalid("link sizes differ from chain size"));
        }
        let mut links = Vec::new();
        links
            .try_reserve_exact(metas.len())
            .map_err(|_| LoadError::OutOfMemory)?;
        for (meta, bytes) in &metas {
            let storage = try_zeroed(*bytes).map_err(|_| LoadError::OutOfMemory)?;
            links.push(LooseLink::from_meta(meta, storage)?);
        }
        Chain::from_parts(options, growth, links).map_err(|_| LoadError::OutOfMemory)
    }

    /// Link index and offset within it of byte `offset` of the data space
    /// (all bit arrays concatenated, oldest first).
    fn locate(&self, offset: u64) -> Option<(usize, usize)> {
        let mut start = 0u64;
        for (i, l) in self.links().iter().enumerate() {
            let end = start.checked_add(l.bytes())?;
            if offset < end {
                // Below the link's length, which is a usize.
                return Some((i, (offset - start) as usize));
            }
            start = end;
        }
        None
    }

    /// The SCANDUMP data chunk at iterator `iter` (≠ 0) and the next iterator;
    /// `None` means the end marker `[0, ""]`. Chunks never cross links.
    pub fn scandump_chunk(&self, iter: i64) -> Option<(i64, &[u8])> {
        let offset = u64::try_from(iter.checked_sub(1)?).ok()?;
        let (i, within) = self.locate(offset)?;
        let rest = self.link_data(i)?.get(within..)?;
        let chunk = rest.get(..rest.len().min(CHUNK_MAX as usize))?;
        Some((iter.checked_add(i64::try_from(chunk.len()).ok()?)?, chunk))
    }

    /// Copies a LOADCHUNK data chunk that ends at iterator `iter` (docs/bloom.md §10 step 4).
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), ChunkError> {
        let len = i64::try_from(data.len()).map_err(|_| ChunkError::BadData)?;
        if iter <= 0 || iter < len {
            return Err(ChunkError::BadData);
        }
        // iter >= len >= 0, so start is in 0..=iter and offset in -1..iter.
        let offset = u64::try_from(iter - len - 1).map_err(|_| ChunkError::InvalidOffset)?;
        let (i, within) = self.locate(offset).ok_or(ChunkError::InvalidOffset)?;
        let mut links = self.links_mut();
        let dest = links
            .get_mut(i)
            .and_then(|l| l.data_mut().get_mut(within..))
            .and_then(|rest| rest.get_mut(..data.len()))
            .ok_or(ChunkError::TooBig)?;
        dest.copy_from_slice(data);
        Ok(())
    }
}
