//! CMS.MERGE (docs/cms.md §4.3): weighted sums of sketches, checked in
//! full before anything is written.

use super::{CountMinSketch, CELL};

/// A sketch being merged: another one, or the destination itself (a key
/// may name the destination among the sources; it is read before written).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Destination,
    Other(&'a CountMinSketch),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeError {
    /// A cell outside [0, 2^32 - 1], a total below 0, or an intermediate
    /// product or sum outside i64: `CMS: MERGE overflow`.
    Overflow,
    /// A source of other dimensions (the command checks this first).
    Shape,
}

impl CountMinSketch {
    /// Whether `other` has this sketch's width and depth.
    pub fn same_shape(&self, other: &CountMinSketch) -> bool {
        self.width == other.width && self.cells.len() == other.cells.len()
    }

    /// Replaces every counter by the weighted sum of the sources' counters
    /// and the total by the weighted sum of their totals; nothing changes
    /// unless every one of them is valid.
    pub fn merge(&mut self, sources: &[(Source<'_>, i64)]) -> Result<(), MergeError> {
        let shaped = |s: &(Source<'_>, i64)| match s.0 {
            Source::Destination => true,
            Source::Other(o) => self.same_shape(o),
        };
        if !sources.iter().all(shaped) {
            return Err(MergeError::Shape);
        }
        let total = self.merged_total(sources).ok_or(MergeError::Overflow)?;
        let cells = self.cells.len() / CELL;
        if !(0..cells).all(|x| self.merged_cell(sources, x).is_some()) {
            return Err(MergeError::Overflow);
        }
        for x in 0..cells {
            // Validated above; every read of cell x precedes its write.
            let v = self.merged_cell(sources, x).unwrap_or(0);
            self.store(x, v);
        }
        self.counter = total;
        Ok(())
    }

    fn sketch<'a>(&'a self, s: Source<'a>) -> &'a CountMinSketch {
        match s {
            Source::Destination => self,
            Source::Other(o) => o,
        }
    }

    /// Σ weight · counter x, exact in i64, if it lies in [0, 2^32 - 1];
    /// partial sums may be negative.
    #[inline]
    fn merged_cell(&self, sources: &[(Source<'_>, i64)], x: usize) -> Option<u32> {
        let mut acc = 0i64;
        for &(s, w) in sources {
            let v = i64::from(self.sketch(s).load(x));
            acc = acc.checked_add(v.checked_mul(w)?)?;
        }
        u32::try_from(acc).ok()
    }

    /// Σ weight · total: each product of the unsigned total and the weight
    /// exact in i64, the sum too, and not negative.
    fn merged_total(&self, sources: &[(Source<'_>, i64)]) -> Option<u64> {
        let mut acc = 0i64;
        for &(s, w) in sources {
            let p = i128::from(self.sketch(s).counter) * i128::from(w);
            acc = acc.checked_add(i64::try_from(p).ok()?)?;
        }
        u64::try_from(acc).ok()
    }
}
