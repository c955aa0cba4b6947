//! The heap of a Top-K (docs/topk.md §3.3): an array-based min-heap on
//! count with RedisBloom's exact sift-down, and the item lookup.

use std::alloc::{alloc_zeroed, Layout};

use crate::alloc::{try_copy, AllocError, Block};

/// One heap record. The item is held as its bytes plus a terminating 0 byte
/// (RedisBloom's allocation, so memory matches; the RDB form up to the first
/// NUL is a prefix of it). `None` is a record without item.
///
/// 24 bytes, like RedisBloom's record; an all-zero value is an empty record.
#[derive(Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct HeapEntry {
    pub(super) fp: u32,
    pub(super) count: u32,
    pub(super) item: Option<Box<[u8]>>,
}

impl HeapEntry {
    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn fp(&self) -> u32 {
        self.fp
    }

    /// The item as replies show it: a C string, up to its first NUL byte
    /// (docs/topk.md §4.2); `None` for a record without item.
    pub fn item_cstr(&self) -> Option<&[u8]> {
        self.item.as_deref().map(cstr)
    }

    /// The item's full bytes; `None` for a record without item.
    pub fn item(&self) -> Option<&[u8]> {
        self.item
            .as_deref()
            .and_then(|b| b.split_last())
            .map(|(_, bytes)| bytes)
    }

    /// The item's full bytes; a record without item compares as empty.
    pub(super) fn bytes(&self) -> &[u8] {
        self.item().unwrap_or_default()
    }

    fn try_clone(&self) -> Result<Self, AllocError> {
        let item = match &self.item {
            Some(b) => Some(try_copy(b)?),
            None => None,
        };
        Ok(HeapEntry {
            fp: self.fp,
            count: self.count,
            item,
        })
    }
}

/// `bytes` up to (not including) the first NUL byte.
pub fn cstr(bytes: &[u8]) -> &[u8] {
    bytes.get(..first_nul(bytes)).unwrap_or(bytes)
}

/// Position of the first 0 byte (or the length), by the C library's
/// memchr: one or two cache lines on a TOPK.ADD that expels an item, where
/// a word-at-a-time loop of our own took five.
fn first_nul(bytes: &[u8]) -> usize {
    // SAFETY: memchr reads at most `bytes.len()` bytes from `bytes`.
    let at = unsafe { libc::memchr(bytes.as_ptr().cast(), 0, bytes.len()) };
    if at.is_null() {
        bytes.len()
    } else {
        at as usize - bytes.as_ptr() as usize
    }
}

/// The heap array: exactly k records.
#[derive(Debug, PartialEq, Eq)]
pub struct Heap(Box<[HeapEntry]>);

impl Heap {
    /// `k` empty records, lazily zeroed like RedisBloom's calloc.
    pub(super) fn empty(k: u32) -> Result<Self, AllocError> {
        let k = usize::try_from(k).map_err(|_| AllocError)?;
        let layout = Layout::array::<HeapEntry>(k).map_err(|_| AllocError)?;
        if layout.size() == 0 {
            return Ok(Heap(Box::default()));
        }
        // SAFETY: the layout has a non-zero size; all-zero bytes are a valid
        // HeapEntry (zero integers, `None` as the null pointer), so the block
        // holds `k` initialised records allocated by the global allocator
        // with HeapEntry's layout, as Box<[HeapEntry]> expects.
        unsafe {
            let ptr = alloc_zeroed(layout).cast::<HeapEntry>();
            if ptr.is_null() {
                return Err(AllocError);
            }
            Ok(Heap(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                ptr, k,
            ))))
        }
    }

    pub(super) fn try_clone(&self) -> Result<Self, AllocError> {
        let mut copy = Heap::empty(u32::try_from(self.0.len()).map_err(|_| AllocError)?)?;
        for (to, from) in copy.0.iter_mut().zip(self.0.iter()) {
            *to = from.try_clone()?;
        }
        Ok(copy)
    }

    pub fn entries(&self) -> &[HeapEntry] {
        &self.0
    }

    pub(super) fn entries_mut(&mut self) -> &mut [HeapEntry] {
        &mut self.0
    }

    /// The root's count: the minimum as far as RedisBloom tracks it.
    pub(super) fn min(&self) -> u32 {
        self.0.first().map_or(0, |e| e.count)
    }

    /// Index of the record holding `item` (fingerprint, length and bytes
    /// equal), scanning from the last record to the root (docs/topk.md §3.3).
    pub(super) fn find(&self, fp: u32, item: &[u8]) -> Option<usize> {
        self.0.iter().rposition(|e| e.fp == fp && e.bytes() == item)
    }

    /// RedisBloom's sift-down from `s`: a child that ties moves up at the
    /// first level, deeper levels move only on strictly smaller counts.
    pub(super) fn sift_down(&mut self, mut s: usize) {
        let h = &mut self.0;
        let n = h.len();
        if n < 2 || s > (n - 2) / 2 {
            return;
        }
        let count = |h: &[HeapEntry], i: usize| h.get(i).map_or(0, |e| e.count);
        let smaller_child = |h: &[HeapEntry], c: usize| {
            if c + 1 < n && count(h, c) > count(h, c + 1) {
                c + 1
            } else {
                c
            }
        };
        let mut c = smaller_child(h, 2 * s + 1);
        let saved = count(h, s);
        if count(h, c) > saved {
            return;
        }
        loop {
            // Swapping carries the saved record down with each move.
            h.swap(s, c);
            s = c;
            if c > (n - 2) / 2 {
                break;
            }
            c = smaller_child(h, 2 * c + 1);
            if count(h, c) >= saved {
                break;
            }
        }
    }

    /// Replaces the root by a new record and sifts it down; returns the
    /// item the root held.
    pub(super) fn replace_root(&mut self, entry: HeapEntry) -> Option<Box<[u8]>> {
        let root = self.0.first_mut()?;
        let old = std::mem::replace(root, entry);
        self.sift_down(0);
        old.item
    }

    /// The item storage blocks (plain bytes).
    pub(super) fn items_mut(&mut self) -> impl Iterator<Item = &mut Box<[u8]>> {
        self.0.iter_mut().filter_map(|e| e.item.as_mut())
    }
}

impl Block for Heap {
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = std::mem::size_of_val::<[HeapEntry]>(&self.0);
        // SAFETY: HeapEntry is repr(C) without padding (u32, u32, a 16-byte
        // pointer pair), so the records are `len` initialised bytes. The
        // view is only used for the block's address and length (active
        // defragmentation), never written through.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<u8>(), len) }
    }

    unsafe fn adopt(&mut self, moved: std::ptr::NonNull<u8>) {
        let k = self.0.len();
        // SAFETY: per the contract, `moved` is a byte copy of the records
        // (same length, global allocator) and the old block is already
        // freed: the records, pointers included, now live at `moved`.
        let new = unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                moved.as_ptr().cast::<HeapEntry>(),
                k,
            ))
        };
        std::mem::forget(std::mem::replace(&mut self.0, new));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_nul_at_every_position() {
        for len in 0..40 {
            let plain = vec![0xffu8; len];
            assert_eq!(first_nul(&plain), len);
            for at in 0..len {
                let mut b = plain.clone();
                b[at] = 0;
                // Bytes 0x01 and 0x80 next to it must not look like zeros.
                if at + 1 < len {
                    b[at + 1] = 0x01;
                }
                if at > 0 {
                    b[at - 1] = 0x80;
                }
                assert_eq!(first_nul(&b), at, "{b:?}");
            }
        }
    }
}
