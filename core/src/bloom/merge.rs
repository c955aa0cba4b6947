//! BF.MERGE of RedisBloom chains (docs/bloom.md §12): the union of chains of
//! one shape, link by link.

use super::{Chain, Link, Links, NO_SCALING};
use crate::bitunion::{estimate, merged_count, ones, or_into, same, MergeError};

impl Chain {
    /// The union of `first` and `others`, of their shape: every bit set in
    /// a source's link is set in the result's, and each link's count is
    /// [`merged_count`]'s. Refused, naming the first field that differs,
    /// unless every source has the first one's shape.
    pub fn merge(first: &Chain, others: &[&Chain]) -> Result<Box<Chain>, MergeError> {
        for other in others {
            first.same_shape(other)?;
        }
        let mut union = first.try_clone().map_err(|_| MergeError::OutOfMemory)?;
        let mut total = 0u64;
        let sources: Vec<Links<'_>> = others.iter().map(|c| c.links()).collect();
        for (i, link) in union.links_mut().iter_mut().enumerate() {
            let theirs: Vec<&Link> = sources.iter().filter_map(|c| c.get(i)).collect();
            let same_bits = theirs.iter().all(|l| l.data() == link.data());
            let mut counts = vec![link.size()];
            for l in &theirs {
                or_into(link.data_mut(), l.data());
                counts.push(l.size());
            }
            let modulus = if link.n2() > 0 {
                1u64 << link.n2()
            } else {
                link.bits()
            };
            let guess = estimate(modulus, link.hashes(), ones(link.data()));
            let count = merged_count(&counts, same_bits, guess, link.entries());
            link.set_size(count);
            // The chain's count, the sum of its links', must fit.
            total = total.checked_add(count).ok_or(MergeError::Overflow)?;
        }
        Ok(union)
    }

    /// Ok when `other` has this chain's options, growth and links' sizing.
    fn same_shape(&self, other: &Chain) -> Result<(), MergeError> {
        let scaling = |c: &Chain| c.options() & NO_SCALING;
        same(scaling(self), scaling(other), None, "NONSCALING")?;
        same(self.options(), other.options(), None, "options")?;
        same(self.growth(), other.growth(), None, "expansion")?;
        same(self.num_links(), other.num_links(), None, "number of links")?;
        for (i, (a, b)) in self.links().iter().zip(other.links().iter()).enumerate() {
            let unit = Some(("link", i + 1));
            same(a.entries(), b.entries(), unit, "capacity")?;
            same(a.error().to_bits(), b.error().to_bits(), unit, "error rate")?;
            same(a.bpe().to_bits(), b.bpe().to_bits(), unit, "bits per entry")?;
            same(a.hashes(), b.hashes(), unit, "hashes")?;
            same(a.bits(), b.bits(), unit, "bits")?;
            same(a.n2(), b.n2(), unit, "index modulus")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::AddOutcome;
    use super::*;

    fn chain(capacity: u64, items: std::ops::Range<u32>) -> Box<Chain> {
        let mut c = Chain::new(capacity, 0.01, 2, false).unwrap();
        for i in items {
            assert_ne!(c.add(&i.to_le_bytes()), AddOutcome::Error);
        }
        c
    }

    #[test]
    fn union_holds_every_source_item_and_counts_agree() {
        let a = chain(1000, 0..300);
        let b = chain(1000, 300..600);
        let u = Chain::merge(&a, &[&b]).unwrap();
        assert!((0..600u32).all(|i| u.contains(&i.to_le_bytes())));
        assert!(u.counts_agree());
        // The estimate of 600 distinct items: within a few percent.
        assert!((570..=600).contains(&u.items()), "{}", u.items());
        assert_eq!(u.size_bytes(), a.size_bytes());
    }

    #[test]
    fn copy_and_self_merge_keep_the_exact_count() {
        let a = chain(100, 0..250);
        assert!(a.num_links() > 1);
        assert_eq!(Chain::merge(&a, &[]).unwrap(), a);
        assert_eq!(Chain::merge(&a, &[&a, &a]).unwrap(), a);
    }

    #[test]
    fn a_full_link_counts_its_capacity() {
        let a = chain(100, 0..250);
        let b = chain(100, 1000..1250);
        let u = Chain::merge(&a, &[&b]).unwrap();
        assert!(u.counts_agree());
        assert_eq!(u.links()[0].size(), 100);
    }

    #[test]
    fn shapes_must_agree() {
        let msg = |a: &Chain, b: &Chain| Chain::merge(a, &[b]).unwrap_err().message();
        let a = chain(100, 0..10);
        assert_eq!(
            msg(&a, &chain(200, 0..10)),
            "ERR BF.MERGE: sources differ in link 1's capacity"
        );
        assert_eq!(
            msg(&a, &chain(100, 0..250)),
            "ERR BF.MERGE: sources differ in number of links"
        );
        let b = Chain::new(100, 0.01, 4, false).unwrap();
        assert_eq!(msg(&a, &b), "ERR BF.MERGE: sources differ in expansion");
        let b = Chain::new(100, 0.01, 2, true).unwrap();
        assert_eq!(msg(&a, &b), "ERR BF.MERGE: sources differ in NONSCALING");
        let b = Chain::new(100, 0.001, 2, false).unwrap();
        assert_eq!(
            msg(&a, &b),
            "ERR BF.MERGE: sources differ in link 1's error rate"
        );
    }
}
