//! The BF.LOAD blob (COMPAT-VALKEY-BLOOM.md §5.4): a version byte, then the
//! object in bincode 1.x (little-endian, fixed-width integers, u64 lengths).

use super::filter::{Header, SubFilter};
use super::sizing::{object_size, rate, MAX_FILTERS};
use super::{Object, VbError, FIXED_SEED, MIN_POSITIVE};
use crate::alloc::AllocError;

const VERSION: u8 = 1;
const FAILED: &str = "ERR bloom object decoding failed";
const UNSUPPORTED: &str = "ERR bloom object decoding failed. Unsupported version";
/// Also the answer for a tightening out of range (sic, §5.4 step 5).
const RATE_RANGE: &str = "ERR (0 < error rate range < 1)";
/// Bytes before the sub-filters: version, expansion, fp, tightening, flag, count.
const FIXED_PART: usize = 1 + 4 + 8 + 8 + 1 + 8;
/// Bytes of one sub-filter besides its blob: blob length, num_items, capacity.
const PER_FILTER: usize = 24;

/// Little-endian reader over the blob; running out is a decoding failure.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], &'static str> {
        let n = usize::try_from(n).map_err(|_| FAILED)?;
        let (head, tail) = self.0.split_at_checked(n).ok_or(FAILED)?;
        self.0 = tail;
        Ok(head)
    }

    fn word<const N: usize>(&mut self) -> Result<[u8; N], &'static str> {
        let (head, tail) = self.0.split_first_chunk::<N>().ok_or(FAILED)?;
        self.0 = tail;
        Ok(*head)
    }
}

/// One decoded sub-filter, still borrowing the blob.
struct Part<'a> {
    blob: &'a [u8],
    header: Header,
    num_items: i64,
    capacity: i64,
}

impl Object {
    /// Encodes the object as BF.LOAD reads it (every num_items stored).
    pub fn to_load_blob(&self) -> Result<Vec<u8>, AllocError> {
        let len = self.filters.iter().fold(FIXED_PART, |acc, f| {
            acc.saturating_add(PER_FILTER)
                .saturating_add(f.blob().len())
        });
        let mut v = Vec::new();
        v.try_reserve_exact(len).map_err(|_| AllocError)?;
        v.push(VERSION);
        v.extend_from_slice(&self.expansion.to_le_bytes());
        v.extend_from_slice(&self.fp_rate.to_le_bytes());
        v.extend_from_slice(&self.tightening.to_le_bytes());
        v.push(u8::from(self.seed_random));
        v.extend_from_slice(&(self.filters.len() as u64).to_le_bytes());
        for f in &self.filters {
            v.extend_from_slice(&(f.blob().len() as u64).to_le_bytes());
            v.extend_from_slice(f.blob());
            v.extend_from_slice(&f.num_items.to_le_bytes());
            v.extend_from_slice(&f.capacity.to_le_bytes());
        }
        Ok(v)
    }

    /// Decodes a BF.LOAD blob: §5.4 steps 1–7 with their texts, in order, then
    /// the §8 refusals (no sub-filter, capacity ≤ 0, num_items < 0, sums over
    /// i64, unsound blobs, fixed-seed flag with another seed, a rate p_i ≤
    /// MIN_POSITIVE for i ≥ 1, which no RDB reload accepts) as a decoding
    /// failure. Trailing bytes are ignored. `limit`: step 7, on the Size of
    /// the decoded object (L = n).
    pub fn from_load_blob(blob: &[u8], limit: Option<u64>) -> Result<Object, &'static str> {
        let (&version, rest) = blob.split_first().ok_or(FAILED)?;
        if version != VERSION {
            return Err(UNSUPPORTED);
        }
        let mut r = Reader(rest);
        let expansion = u32::from_le_bytes(r.word()?);
        let fp_rate = f64::from_le_bytes(r.word()?);
        let tightening = f64::from_le_bytes(r.word()?);
        let seed_random = match r.word::<1>()? {
            [0] => false,
            [1] => true,
            _ => return Err(FAILED),
        };
        let parts = decode_parts(&mut r)?;
        let in_unit = |v: f64| v > 0.0 && v < 1.0;
        if !in_unit(fp_rate) || !in_unit(tightening) {
            return Err(RATE_RANGE);
        }
        if parts.len() >= MAX_FILTERS as usize {
            return Err(VbError::MaxFilters.message());
        }
        let list_cap = parts.len() as u64;
        let size = object_size(list_cap, parts.iter().map(|p| p.header.bytes));
        if crate::limit::exceeds(limit, size) {
            return Err(VbError::MemoryLimit.message());
        }
        let sound = |p: &Part| {
            p.capacity > 0
                && p.num_items >= 0
                && p.header.sound()
                && (seed_random || p.header.seed == FIXED_SEED)
        };
        // Rates an RDB reload refuses (§5.2 step 3) would make the value
        // impossible to save and restore: refused like a foreign seed (§8).
        let reloads = (1..parts.len())
            .all(|i| i32::try_from(i).is_ok_and(|i| rate(fp_rate, tightening, i) > MIN_POSITIVE));
        if parts.is_empty() || !parts.iter().all(sound) || !reloads {
            return Err(FAILED);
        }
        let mut o = Object {
            expansion,
            fp_rate,
            tightening,
            seed_random,
            filters: Vec::new(),
            list_cap,
        };
        let oom = VbError::MemoryLimit.message();
        o.filters.try_reserve_exact(parts.len()).map_err(|_| oom)?;
        for p in &parts {
            let blob = crate::alloc::try_copy(p.blob).map_err(|_| oom)?;
            let f = SubFilter::from_blob(blob, p.capacity, p.num_items).ok_or(FAILED)?;
            o.filters.push(f);
        }
        o.sums_fit().then_some(o).ok_or(FAILED)
    }
}

/// The sub-filter list (step 3): u64 count, then per sub-filter the blob
/// (which must pass the crate's checks), num_items and capacity.
fn decode_parts<'a>(r: &mut Reader<'a>) -> Result<Vec<Part<'a>>, &'static str> {
    let n = u64::from_le_bytes(r.word()?);
    let mut parts = Vec::new();
    for _ in 0..n {
        let len = u64::from_le_bytes(r.word()?);
        let blob = r.take(len)?;
        let header = Header::read(blob).ok_or(FAILED)?;
        let num_items = i64::from_le_bytes(r.word()?);
        let capacity = i64::from_le_bytes(r.word()?);
        parts
            .try_reserve(1)
            .map_err(|_| VbError::MemoryLimit.message())?;
        parts.push(Part {
            blob,
            header,
            num_items,
            capacity,
        });
    }
    Ok(parts)
}
