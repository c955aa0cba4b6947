//! The `bloomfltr` RDB value (COMPAT-VALKEY-BLOOM.md §5.1, loaded per §5.2
//! plus the §8 refusals) and the digest sequence (§5.7).

use super::filter::{Header, SubFilter};
use super::sizing::{bytes_for, object_size, rate, FILTER, MAX_FILTERS};
use super::{Object, ENCODING_VERSION, FIXED_SEED, MIN_POSITIVE};
use crate::rdb::{LoadError, RdbSink, RdbSource};

/// Object fields read before the sub-filters, and what the §4.8 check of
/// each sub-filter adds up.
struct Loading {
    count: u64,
    limit: Option<u64>,
    /// Σ (208 + bytes(cap_j, p_j)) over the sub-filters read so far.
    planned: u64,
}

impl Object {
    /// Writes the value (§5.1): num_items only for the newest sub-filter, the
    /// others being full by construction.
    pub fn rdb_save<S: RdbSink>(&self, s: &mut S) {
        s.write_unsigned(self.filters.len() as u64);
        s.write_unsigned(u64::from(self.expansion));
        s.write_double(self.fp_rate);
        s.write_double(self.tightening);
        s.write_unsigned(u64::from(self.seed_random));
        let last = self.filters.len().saturating_sub(1);
        for (i, f) in self.filters.iter().enumerate() {
            s.write_unsigned(f.capacity as u64);
            if i == last {
                s.write_unsigned(f.num_items as u64);
            }
            s.write_buffer(f.blob());
        }
    }

    /// Reads a value of encoding `encver` (0 or 1): §5.2's checks in order,
    /// plus refusals of what valkey-bloom would crash on (§8): no sub-filter,
    /// fp ≥ 1 or any p_i ≥ 1, capacity ≤ 0, unsound blobs (no bitmap, k >
    /// 2048), a negative num_items, sums overflowing i64; and of a tightening
    /// outside (0, 1), which BF.LOAD would refuse. p_0 need only be > 0 (§8:
    /// objects made with a subnormal rate reload). `limit`: the §4.8 check.
    pub fn rdb_load<R: RdbSource>(
        src: &mut R,
        encver: i32,
        limit: Option<u64>,
    ) -> Result<Object, LoadError> {
        if !(0..=ENCODING_VERSION).contains(&encver) {
            return Err(LoadError::UnsupportedVersion);
        }
        let count = src.read_unsigned()?;
        // Truncated to 32 bits, as valkey-bloom reads it.
        let expansion = src.read_unsigned()? as u32;
        let fp_rate = src.read_double()?;
        let tightening = src.read_double()?;
        let seed_random = src.read_unsigned()? == 1;
        // A tightening outside (0, 1) never comes from valkey-bloom, and BF.LOAD
        // refuses it: such a value would not survive an AOF rewrite.
        let sound_tightening = tightening > 0.0 && tightening < 1.0;
        if count == 0 || count >= MAX_FILTERS as u64 || !sound_tightening {
            return Err(LoadError::Invalid);
        }
        let mut o = Object {
            expansion,
            fp_rate,
            tightening,
            seed_random,
            filters: Vec::new(),
            list_cap: 1,
        };
        let mut l = Loading {
            count,
            limit,
            planned: 0,
        };
        for i in 0..count {
            let i = i32::try_from(i).map_err(|_| LoadError::Invalid)?;
            let f = o.load_filter(src, i, &mut l)?;
            o.push(f).map_err(|_| LoadError::Invalid)?;
        }
        o.sums_fit().then_some(o).ok_or(LoadError::Invalid)
    }

    /// Reads sub-filter `i` (§5.2 step 3).
    fn load_filter<R: RdbSource>(
        &self,
        src: &mut R,
        i: i32,
        l: &mut Loading,
    ) -> Result<SubFilter, LoadError> {
        let capacity = i64::try_from(src.read_unsigned()?)
            .ok()
            .filter(|&c| c > 0)
            .ok_or(LoadError::Invalid)?;
        let p = rate(self.fp_rate, self.tightening, i);
        let floor = if i == 0 { 0.0 } else { MIN_POSITIVE };
        if !(p > floor && p < 1.0) {
            return Err(LoadError::Invalid);
        }
        let this = FILTER.saturating_add(bytes_for(capacity, p));
        let projected = object_size(self.list_cap, std::iter::empty())
            .saturating_add(l.planned)
            .saturating_add(this);
        if crate::limit::exceeds(l.limit, projected) {
            return Err(LoadError::Invalid);
        }
        l.planned = l.planned.saturating_add(this);
        let last = i64::from(i).checked_add(1) == i64::try_from(l.count).ok();
        let num_items = if last {
            i64::try_from(src.read_unsigned()?).map_err(|_| LoadError::Invalid)?
        } else {
            capacity
        };
        let blob = src.read_buffer()?;
        if !self.seed_random && Header::read(&blob).is_some_and(|h| h.seed != FIXED_SEED) {
            return Err(LoadError::Invalid);
        }
        SubFilter::from_blob(blob, capacity, num_items).ok_or(LoadError::Invalid)
    }

    /// Whether Σ capacities and Σ num_items fit an i64 (and no count is
    /// negative), so CARD and Capacity never wrap; also after an RDB reload,
    /// which takes the older sub-filters' num_items as their capacity.
    pub(crate) fn sums_fit(&self) -> bool {
        let last = self.filters.len().saturating_sub(1);
        let fits = |field: &dyn Fn(usize, &SubFilter) -> i64| {
            let mut all = self.filters.iter().enumerate();
            all.try_fold(0i64, |a, (i, f)| {
                let v = field(i, f);
                (v >= 0).then(|| a.checked_add(v)).flatten()
            })
            .is_some()
        };
        fits(&|_, f| f.capacity)
            && fits(&|_, f| f.num_items)
            && fits(&|i, f| if i < last { f.capacity } else { f.num_items })
    }

    /// The digest sequence (§5.7), without the closing EndSequence:
    /// AddLongLong as `write_unsigned`, AddStringBuffer as `write_buffer`.
    pub fn digest<S: RdbSink>(&self, s: &mut S) {
        s.write_unsigned(u64::from(self.expansion));
        s.write_buffer(&self.fp_rate.to_le_bytes());
        s.write_buffer(&self.tightening.to_le_bytes());
        s.write_unsigned(u64::from(self.seed_random));
        for f in &self.filters {
            s.write_buffer(f.blob());
            s.write_unsigned(f.num_items as u64);
            s.write_unsigned(f.capacity as u64);
        }
    }
}
