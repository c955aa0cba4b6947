//! Top-K RDB value (`TopK-TYPE`, encoding 0; docs/topk.md §5).

use super::heap::cstr;
use super::{bucket_bytes, Heap, TopK};
use crate::rdb::{LoadError, RdbSink, RdbSource};

/// The only encoding there ever was.
pub const ENCODING_VERSION: i32 = 0;

/// Bytes of one saved heap record: fp, itemlen, item pointer, count, padding.
const RECORD: usize = 24;

impl TopK {
    /// Writes the value. The item-pointer field of heap record 0 carries the
    /// generator state; the other pointer fields are 0 (docs/topk.md §5.2).
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        sink.write_unsigned(u64::from(self.k));
        sink.write_unsigned(u64::from(self.width));
        sink.write_unsigned(u64::from(self.depth));
        sink.write_double(self.decay);
        sink.write_buffer(&self.buckets);
        sink.write_buffer(&self.heap_image());
        for e in self.heap.entries() {
            sink.write_buffer(saved_item(e.item.as_deref()));
        }
    }

    /// The heap array as saved (24 bytes per record).
    fn heap_image(&self) -> Vec<u8> {
        let entries = self.heap.entries();
        let mut out = Vec::with_capacity(entries.len() * RECORD);
        for (i, e) in entries.iter().enumerate() {
            let itemlen = e.item.as_ref().map_or(0, |b| b.len() - 1) as u32;
            let pointer = if i == 0 { self.rng } else { 0 };
            out.extend_from_slice(&e.fp.to_le_bytes());
            out.extend_from_slice(&itemlen.to_le_bytes());
            out.extend_from_slice(&pointer.to_le_bytes());
            out.extend_from_slice(&e.count.to_le_bytes());
            out.extend_from_slice(&[0; 4]);
        }
        out
    }

    /// Reads a value, validated as docs/topk.md §5.3 lists: sizes in range
    /// and consistent with the buffers, a decay TOPK.RESERVE accepts, item
    /// strings NUL-terminated C strings. Buffers are adopted (buckets, items).
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Self, LoadError> {
        if encver > ENCODING_VERSION {
            return Err(LoadError::UnsupportedVersion);
        }
        let mut dim = || -> Result<u32, LoadError> {
            let v = src.read_unsigned()?;
            u32::try_from(v)
                .ok()
                .filter(|&v| v != 0)
                .ok_or(LoadError::Invalid)
        };
        let (k, width, depth) = (dim()?, dim()?, dim()?);
        let decay = src.read_double()?;
        // What TOPK.RESERVE accepts: TOPK.INFO never shows another decay.
        if !(decay > 0.0 && decay <= 1.0) {
            return Err(LoadError::Invalid);
        }
        let buckets = src.read_buffer()?;
        if Some(buckets.len() as u64) != bucket_bytes(width, depth) {
            return Err(LoadError::Invalid);
        }
        let image = src.read_buffer()?;
        if image.len() as u64 != u64::from(k) * RECORD as u64 {
            return Err(LoadError::Invalid);
        }
        let mut heap = Heap::empty(k).map_err(|_| LoadError::Invalid)?;
        for (e, record) in heap
            .entries_mut()
            .iter_mut()
            .zip(image.chunks_exact(RECORD))
        {
            e.fp = le_u32(record, 0);
            e.count = le_u32(record, 16);
            let in_use = e.fp != 0 || e.count != 0;
            e.item = loaded_item(src.read_buffer()?, in_use)?;
        }
        let rng = image
            .get(8..16)
            .map_or(0, |p| u64::from_le_bytes(p.try_into().unwrap_or_default()));
        Ok(TopK::from_parts(k, width, depth, decay, buckets, heap, rng))
    }
}

/// The saved form of an item: its C string and the terminating 0; a
/// record without item is the single byte 0.
fn saved_item(item: Option<&[u8]>) -> &[u8] {
    match item {
        // `item` ends with 0, so the C string and its NUL are a prefix.
        Some(b) => b.get(..=cstr(b).len()).unwrap_or(b),
        None => &[0],
    }
}

/// A loaded item string: non-NUL bytes and a terminating 0 (what RedisBloom
/// writes; anything else would be read past its end by RedisBloom). The
/// single 0 byte is both "no item" and the empty item (and an item that
/// starts with NUL, which replies show as empty): in a record in use it is
/// the empty item, so a reload keeps what LIST and expelled replies showed
/// (RedisBloom's reload fix #1053; docs/topk.md §5.2).
fn loaded_item(b: Box<[u8]>, in_use: bool) -> Result<Option<Box<[u8]>>, LoadError> {
    match b.split_last() {
        Some((0, [])) if !in_use => Ok(None),
        Some((0, bytes)) if !bytes.contains(&0) => Ok(Some(b)),
        _ => Err(LoadError::Invalid),
    }
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|w| w.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}
