//! Cuckoo RDB value (`MBbloomCF`, docs/cuckoo.md §13).

use super::{next_pow2, sub_filter_buckets, CuckooFilter, Header, SubFilter};
use crate::rdb::{LoadError, RdbSink, RdbSource};

/// Encoding version written; also the first one carrying the per-filter
/// parameters and per-sub-filter bucket counts.
pub const ENCODING_VERSION: i32 = 4;

/// Parameters for encodings < 4, which did not store them: the current
/// cf-bucket-size, cf-max-iterations and cf-expansion-factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyDefaults {
    pub bucket_size: u16,
    pub max_iterations: u16,
    pub expansion: u16,
}

impl CuckooFilter {
    /// Writes the value in encoding version 4.
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        sink.write_unsigned(u64::from(self.num_filters()));
        sink.write_unsigned(self.num_buckets());
        sink.write_unsigned(self.num_items);
        sink.write_unsigned(self.num_deletes);
        sink.write_unsigned(u64::from(self.bucket_size));
        sink.write_unsigned(u64::from(self.max_iterations));
        sink.write_unsigned(u64::from(self.expansion));
        for f in &self.filters {
            sink.write_unsigned(f.num_buckets());
            sink.write_buffer(f.slots());
        }
    }

    /// Reads a value of encoding `encver`, validated like a LOADCHUNK header:
    /// every sub-filter must have exactly the bucket count growth would give
    /// it (encoding 4) or the base count (older encodings, which grew without
    /// expansion), and a buffer of that many buckets; numItems must lie
    /// between the fingerprints held and the slots. Buffers are adopted.
    ///
    /// `max_bucket_size` bounds the bucket size; passing 255 keeps filters
    /// created before cf-initial-size was lowered loadable.
    pub fn rdb_load<S: RdbSource>(
        src: &mut S,
        encver: i32,
        legacy: LegacyDefaults,
        max_bucket_size: u16,
    ) -> Result<Self, LoadError> {
        if encver > ENCODING_VERSION {
            return Err(LoadError::UnsupportedVersion);
        }
        let current = encver >= ENCODING_VERSION;
        // 16-bit C fields: the stored values are truncated like RedisBloom does.
        let num_filters = src.read_unsigned()? as u16;
        let num_buckets = src.read_unsigned()?;
        let num_items = src.read_unsigned()?;
        let (num_deletes, bucket_size, max_iterations, expansion) = if current {
            let num_deletes = src.read_unsigned()?;
            let bucket_size = src.read_unsigned()? as u16;
            (
                num_deletes,
                bucket_size,
                src.read_unsigned()? as u16,
                src.read_unsigned()? as u16,
            )
        } else if num_filters > 1 {
            // Legacy sub-filters all have numBuckets buckets: they grew by a
            // factor of 1, and any other expansion would contradict them (a
            // v4 save of it would not load again).
            (0, legacy.bucket_size, legacy.max_iterations, 1)
        } else {
            // Legacy expansion comes from the configuration: round it as creation does.
            let expansion =
                next_pow2(u64::from(legacy.expansion)).and_then(|x| u16::try_from(x).ok());
            (
                0,
                legacy.bucket_size,
                legacy.max_iterations,
                expansion.ok_or(LoadError::Invalid)?,
            )
        };
        let header = Header {
            num_items,
            num_buckets,
            num_deletes,
            num_filters,
            bucket_size,
            max_iterations,
            expansion,
        };
        let mut cf = header
            .empty_filter(max_bucket_size)
            .ok_or(LoadError::Invalid)?;
        let mut filters = Vec::new();
        filters
            .try_reserve_exact(usize::from(num_filters))
            .map_err(|_| LoadError::Invalid)?;
        for i in 0..num_filters {
            let stored = if current {
                Some(src.read_unsigned()?)
            } else {
                None
            };
            let data = src.read_buffer()?;
            let expected = if current {
                sub_filter_buckets(num_buckets, expansion, i)
            } else {
                Some(num_buckets)
            };
            let n = expected
                .filter(|&n| stored.unwrap_or(n) == n)
                .ok_or(LoadError::Invalid)?;
            filters.push(SubFilter::new(n, bucket_size, data).ok_or(LoadError::Invalid)?);
        }
        cf.filters = filters.into_boxed_slice();
        // Counts that lie about the slots (docs/cuckoo.md §13, issue 30).
        if !cf.counts_agree() {
            return Err(LoadError::Invalid);
        }
        Ok(cf)
    }
}
