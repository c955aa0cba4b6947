//! SCANDUMP / LOADCHUNK and the AOF rewrite (docs/apbf.md §6.3): the
//! header, then every slice in pieces of at most `CHUNK_BYTES`, so no
//! command or reply carries more than that.

use std::borrow::Cow;
use std::ops::Range;

use super::{Apbf, Header};

/// Largest piece of a slice in one chunk (as BF.SCANDUMP's).
pub const CHUNK_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkError {
    /// The first chunk is not a valid header.
    Header,
    /// No chunk has this iterator.
    Iterator,
    /// The chunk's length is not the one its iterator stands for.
    Length,
    OutOfMemory,
}

impl Apbf {
    /// Slice and byte range of chunk `index` (slice-major order), when
    /// slices are cut into pieces of `piece` bytes.
    fn chunk_span(&self, index: u64, piece: u64) -> Option<(usize, Range<usize>)> {
        let bytes = self.h.slice_bytes();
        let per_slice = bytes.div_ceil(piece.max(1)).max(1);
        let slice = index / per_slice;
        if slice >= self.slice_count() {
            return None;
        }
        let start = (index % per_slice) * piece;
        let end = (start + piece).min(bytes);
        Some((slice as usize, start as usize..end as usize))
    }

    fn piece(&self, index: u64, piece: u64) -> Option<&[u8]> {
        let (slice, range) = self.chunk_span(index, piece)?;
        self.slices.get(slice)?.get(range)
    }

    /// SCANDUMP at `iter`: the next iterator and its data; `None` past the
    /// end (the reply `0, ""`). Iterator 0 gives the header.
    pub fn scandump(&self, iter: u64) -> Option<(u64, Cow<'_, [u8]>)> {
        self.scandump_in(iter, CHUNK_BYTES)
    }

    fn scandump_in(&self, iter: u64, piece: u64) -> Option<(u64, Cow<'_, [u8]>)> {
        match iter.checked_sub(1) {
            None => Some((1, Cow::Owned(self.h.encode()))),
            Some(index) => {
                let data = self.piece(index, piece)?;
                Some((iter.checked_add(1)?, Cow::Borrowed(data)))
            }
        }
    }

    /// LOADCHUNK at iterator 1: an empty filter with this header.
    pub fn from_header(bytes: &[u8]) -> Result<Apbf, ChunkError> {
        let h = Header::decode(bytes).ok_or(ChunkError::Header)?;
        Apbf::zeroed(h).map_err(|_| ChunkError::OutOfMemory)
    }

    /// LOADCHUNK at iterator ≥ 2: the piece SCANDUMP gave with it. Nothing
    /// changes on error.
    pub fn load_chunk(&mut self, iter: u64, data: &[u8]) -> Result<(), ChunkError> {
        self.load_chunk_in(iter, data, CHUNK_BYTES)
    }

    fn load_chunk_in(&mut self, iter: u64, data: &[u8], piece: u64) -> Result<(), ChunkError> {
        let index = iter.checked_sub(2).ok_or(ChunkError::Iterator)?;
        let (slice, range) = self.chunk_span(index, piece).ok_or(ChunkError::Iterator)?;
        let dst = self
            .slices
            .get_mut(slice)
            .and_then(|s| s.get_mut(range))
            .ok_or(ChunkError::Iterator)?;
        if dst.len() != data.len() {
            return Err(ChunkError::Length);
        }
        dst.copy_from_slice(data);
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod testing {
    use super::*;

    /// Every SCANDUMP chunk with pieces of `piece` bytes, then a filter
    /// rebuilt from them by LOADCHUNK.
    pub fn copy_via_chunks(f: &Apbf, piece: u64) -> (Vec<(u64, Vec<u8>)>, Apbf) {
        let mut chunks = Vec::new();
        let mut iter = 0;
        while let Some((next, data)) = f.scandump_in(iter, piece) {
            chunks.push((next, data.into_owned()));
            iter = next;
        }
        let mut copy = Apbf::from_header(&chunks[0].1).unwrap();
        for (it, data) in &chunks[1..] {
            copy.load_chunk_in(*it, data, piece).unwrap();
        }
        (chunks, copy)
    }
}
