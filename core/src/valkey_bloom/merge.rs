//! BF.MERGE of valkey-bloom objects (docs/valkey-bloom.md "BF.MERGE"): the
//! union of objects of one shape, sub-filter by sub-filter.

use super::filter::SubFilter;
use super::Object;
use crate::bitunion::{estimate, merged_count, ones, or_into, same, MergeError};

impl Object {
    /// The union of `first` and `others`, of their shape (seeds included):
    /// every bit set in a source's sub-filter is set in the result's, and
    /// each sub-filter's count is [`merged_count`]'s. Refused, naming the
    /// first field that differs, unless every source has the first one's
    /// shape.
    pub fn merge(first: &Object, others: &[&Object]) -> Result<Object, MergeError> {
        for other in others {
            first.same_shape(other)?;
        }
        let mut union = first.try_clone().map_err(|_| MergeError::OutOfMemory)?;
        let count = |f: &SubFilter| u64::try_from(f.num_items).map_err(|_| MergeError::Overflow);
        for (i, f) in union.filters.iter_mut().enumerate() {
            let theirs: Vec<&SubFilter> = others.iter().filter_map(|o| o.filters.get(i)).collect();
            let same_bits = theirs.iter().all(|t| t.bitmap() == f.bitmap());
            let mut counts = vec![count(f)?];
            for t in &theirs {
                or_into(f.bitmap_mut(), t.bitmap());
                counts.push(count(t)?);
            }
            let bits = f.bytes().saturating_mul(8);
            let guess = estimate(bits, f.hashes(), ones(f.bitmap()));
            let capacity = u64::try_from(f.capacity).map_err(|_| MergeError::Overflow)?;
            let merged = merged_count(&counts, same_bits, guess, capacity);
            f.num_items = i64::try_from(merged).map_err(|_| MergeError::Overflow)?;
        }
        // CARD and its RDB form must fit an i64, as on load.
        union
            .sums_fit()
            .then_some(union)
            .ok_or(MergeError::Overflow)
    }

    /// Ok when `other` has this object's parameters, seed and sub-filters'
    /// sizing.
    fn same_shape(&self, other: &Object) -> Result<(), MergeError> {
        same(self.expansion, other.expansion, None, "expansion")?;
        same(
            self.fp_rate.to_bits(),
            other.fp_rate.to_bits(),
            None,
            "error rate",
        )?;
        let t = (self.tightening.to_bits(), other.tightening.to_bits());
        same(t.0, t.1, None, "tightening ratio")?;
        same(self.seed_random, other.seed_random, None, "seed mode")?;
        same(
            self.filters.len(),
            other.filters.len(),
            None,
            "number of sub-filters",
        )?;
        for (i, (a, b)) in self.filters.iter().zip(&other.filters).enumerate() {
            let unit = Some(("sub-filter", i + 1));
            same(a.capacity, b.capacity, unit, "capacity")?;
            same(a.seed(), b.seed(), unit, "seed")?;
            same(a.bytes(), b.bytes(), unit, "size")?;
            same(a.hashes(), b.hashes(), unit, "hashes")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Create, FIXED_SEED};
    use super::*;

    fn create(capacity: i64, expansion: u32, seed: [u8; 32]) -> Create {
        Create {
            capacity,
            fp_rate: 0.01,
            tightening: 0.5,
            expansion,
            seed,
            seed_random: seed != FIXED_SEED,
        }
    }

    fn object(c: &Create, items: std::ops::Range<u32>) -> Object {
        let mut o = Object::new(c, None).unwrap();
        for i in items {
            o.add(&i.to_le_bytes(), None).unwrap();
        }
        o
    }

    #[test]
    fn union_holds_every_source_item() {
        let c = create(1000, 2, FIXED_SEED);
        let (a, b) = (object(&c, 0..300), object(&c, 300..600));
        let u = Object::merge(&a, &[&b]).unwrap();
        assert!((0..600u32).all(|i| u.contains(&i.to_le_bytes())));
        assert!((570..=600).contains(&u.card()), "{}", u.card());
        assert_eq!(u.size(), a.size());
    }

    #[test]
    fn copy_and_self_merge_are_the_source() {
        let a = object(&create(100, 2, FIXED_SEED), 0..250);
        assert!(a.num_filters() > 1);
        assert_eq!(Object::merge(&a, &[]).unwrap(), a);
        assert_eq!(Object::merge(&a, &[&a]).unwrap(), a);
    }

    #[test]
    fn older_sub_filters_stay_full() {
        let c = create(100, 2, FIXED_SEED);
        let (a, b) = (object(&c, 0..250), object(&c, 1000..1250));
        let u = Object::merge(&a, &[&b]).unwrap();
        assert_eq!(u.filters.first().map(|f| f.num_items), Some(100));
    }

    #[test]
    fn shapes_and_seeds_must_agree() {
        let msg = |a: &Object, b: &Object| Object::merge(a, &[b]).unwrap_err().message();
        let a = object(&create(100, 2, FIXED_SEED), 0..10);
        let b = object(&create(200, 2, FIXED_SEED), 0..10);
        assert_eq!(
            msg(&a, &b),
            "ERR BF.MERGE: sources differ in sub-filter 1's capacity"
        );
        let b = object(&create(100, 0, FIXED_SEED), 0..10);
        assert_eq!(msg(&a, &b), "ERR BF.MERGE: sources differ in expansion");
        let b = object(&create(100, 2, [7; 32]), 0..10);
        assert_eq!(msg(&a, &b), "ERR BF.MERGE: sources differ in seed mode");
        let a = object(&create(100, 2, [8; 32]), 0..10);
        assert_eq!(
            msg(&a, &b),
            "ERR BF.MERGE: sources differ in sub-filter 1's seed"
        );
        let b = object(&create(100, 2, [8; 32]), 0..250);
        assert_eq!(
            msg(&a, &b),
            "ERR BF.MERGE: sources differ in number of sub-filters"
        );
    }
}
