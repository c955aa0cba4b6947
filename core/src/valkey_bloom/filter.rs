//! One sub-filter: a `bloomfilter` 3.0.1 blob (COMPAT-VALKEY-BLOOM.md §5.3), its
//! item count and its capacity. The blob is kept whole (header and bitmap in
//! one block), so RDB saving, the digest and BF.LOAD write it as it is.

use super::sizing::{bytes_for, hash_count};
use super::VbError;
use crate::alloc::try_zeroed;
use siphasher::sip::SipHasher13;
use std::hash::Hasher;
use std::num::NonZeroU64;

/// Length of the blob header: version, bitmap bytes, k, seed (§5.3).
pub(crate) const HEADER: usize = 45;
const VERSION: u8 = 1;
/// Most hashes a loaded blob may ask for. Creation yields at most 1076 (§4.2,
/// p = 5e-324); the bound keeps a crafted blob from making every probe slow (§8).
pub(crate) const MAX_K: u32 = 2048;
/// Modulus of the double hashing (§4.3).
const PRIME: u64 = 0xFFFF_FFFF_FFFF_FFC5;

/// The two SipHash-1-3 values an item is reduced to for one seed (§4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hash {
    pub h0: u64,
    pub h1: u64,
}

/// The four SipHash keys of a seed: two per hash, little-endian words.
pub(crate) fn keys(seed: &[u8; 32]) -> [u64; 4] {
    let mut k = [0u64; 4];
    for (key, word) in k.iter_mut().zip(seed.chunks_exact(8)) {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        *key = u64::from_le_bytes(w);
    }
    k
}

/// SipHash-1-3 pair over `LE64(len) ‖ item` (§4.3).
pub(crate) fn hash(keys: &[u64; 4], item: &[u8]) -> Hash {
    let [a0, a1, b0, b1] = *keys;
    let sip = |k0: u64, k1: u64| {
        let mut h = SipHasher13::new_with_keys(k0, k1);
        h.write(&(item.len() as u64).to_le_bytes());
        h.write(item);
        h.finish()
    };
    Hash {
        h0: sip(a0, a1),
        h1: sip(b0, b1),
    }
}

/// The `k` bit positions of `h` in a bitmap of `bits` bits: h0, h1, then
/// `(h0 + i·h1) mod PRIME` (wrapping 64-bit sum), each reduced mod `bits`.
pub(crate) fn probes(h: Hash, k: u32, bits: NonZeroU64) -> impl Iterator<Item = u64> {
    (0..u64::from(k)).map(move |i| {
        let g = match i {
            0 => h.h0,
            1 => h.h1,
            _ => h.h0.wrapping_add(i.wrapping_mul(h.h1)) % PRIME,
        };
        g % bits
    })
}

/// The header fields of a blob that passes the crate's own checks: length at
/// least the header, version 1, k ≠ 0, exactly `bytes` bitmap bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub bytes: u64,
    pub k: u32,
    pub seed: [u8; 32],
}

impl Header {
    pub(crate) fn read(blob: &[u8]) -> Option<Header> {
        let (head, bitmap) = blob.split_at_checked(HEADER)?;
        let (&version, rest) = head.split_first()?;
        let (bytes, rest) = rest.split_first_chunk::<8>()?;
        let (k, seed) = rest.split_first_chunk::<4>()?;
        let h = Header {
            bytes: u64::from_le_bytes(*bytes),
            k: u32::from_le_bytes(*k),
            seed: seed.try_into().ok()?,
        };
        let exact = u64::try_from(bitmap.len()).ok() == Some(h.bytes);
        (version == VERSION && h.k != 0 && exact).then_some(h)
    }

    /// What valkey-bloom accepts but would crash or stall on (§8): no bitmap
    /// (probes mod 0), or more hashes than any creation makes.
    pub(crate) fn sound(&self) -> bool {
        self.bytes != 0 && self.k <= MAX_K
    }
}

/// A sub-filter. Invariant: the blob has a sound header, so every probe lies
/// inside its bitmap.
#[derive(Debug, PartialEq)]
pub(crate) struct SubFilter {
    blob: Box<[u8]>,
    seed: [u8; 32],
    keys: [u64; 4],
    bits: NonZeroU64,
    k: u32,
    pub num_items: i64,
    pub capacity: i64,
}

impl SubFilter {
    /// An empty sub-filter for `capacity` items at rate `p` (§4.2); the bitmap
    /// is allocated fallibly (failure reads as the memory limit).
    pub(crate) fn create(capacity: i64, p: f64, seed: &[u8; 32]) -> Result<SubFilter, VbError> {
        let bytes = bytes_for(capacity, p);
        let len = bytes
            .checked_add(HEADER as u64)
            .ok_or(VbError::MemoryLimit)?;
        let mut blob = try_zeroed(len).map_err(|_| VbError::MemoryLimit)?;
        let k = hash_count(bytes, capacity);
        let (len_bytes, k_bytes) = (bytes.to_le_bytes(), k.to_le_bytes());
        let fields = [VERSION]
            .iter()
            .chain(&len_bytes)
            .chain(&k_bytes)
            .chain(seed);
        for (b, v) in blob.iter_mut().zip(fields) {
            *b = *v;
        }
        SubFilter::from_blob(blob, capacity, 0).ok_or(VbError::BadCapacity)
    }

    /// Adopts a blob whose header is valid and sound, else `None`.
    pub(crate) fn from_blob(blob: Box<[u8]>, capacity: i64, num_items: i64) -> Option<SubFilter> {
        let h = Header::read(&blob).filter(Header::sound)?;
        let bits = NonZeroU64::new(h.bytes.checked_mul(8)?)?;
        Some(SubFilter {
            blob,
            seed: h.seed,
            keys: keys(&h.seed),
            bits,
            k: h.k,
            num_items,
            capacity,
        })
    }

    pub(crate) fn blob(&self) -> &[u8] {
        &self.blob
    }

    pub(crate) fn blob_mut(&mut self) -> &mut Box<[u8]> {
        &mut self.blob
    }

    pub(crate) fn seed(&self) -> &[u8; 32] {
        &self.seed
    }

    pub(crate) fn keys(&self) -> &[u64; 4] {
        &self.keys
    }

    /// Hash count k.
    pub(crate) fn hashes(&self) -> u32 {
        self.k
    }

    /// The bitmap (the blob after its header), for BF.MERGE.
    pub(crate) fn bitmap(&self) -> &[u8] {
        self.blob().get(HEADER..).unwrap_or_default()
    }

    pub(crate) fn bitmap_mut(&mut self) -> &mut [u8] {
        self.blob_mut().get_mut(HEADER..).unwrap_or_default()
    }

    /// Bitmap length in bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.bits.get() / 8
    }

    /// Blob byte and mask holding bit `b` (least significant bit first).
    fn locate(b: u64) -> (usize, u8) {
        let byte = usize::try_from(b / 8).unwrap_or(usize::MAX);
        (byte.saturating_add(HEADER), 1 << (b % 8))
    }

    /// Whether all probes of `h` are set.
    pub(crate) fn contains(&self, h: Hash) -> bool {
        probes(h, self.k, self.bits).all(|b| {
            let (at, mask) = Self::locate(b);
            self.blob.get(at).is_some_and(|v| v & mask != 0)
        })
    }

    /// Sets the probes of `h`.
    pub(crate) fn insert(&mut self, h: Hash) {
        for b in probes(h, self.k, self.bits) {
            let (at, mask) = Self::locate(b);
            if let Some(v) = self.blob.get_mut(at) {
                *v |= mask;
            }
        }
    }

    /// Prefetches the lines of the first `n` probes of `h`. A hint only.
    pub(crate) fn prefetch(&self, h: Hash, n: u32) {
        for b in probes(h, n.min(self.k), self.bits) {
            if let Some(v) = self.blob.get(Self::locate(b).0) {
                crate::prefetch::prefetch(v);
            }
        }
    }

    /// A deep copy, allocated fallibly.
    pub(crate) fn try_clone(&self) -> Result<SubFilter, crate::alloc::AllocError> {
        Ok(SubFilter {
            blob: crate::alloc::try_copy(&self.blob)?,
            ..*self
        })
    }
}
