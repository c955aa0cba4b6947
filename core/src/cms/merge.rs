//! CMS.MERGE (docs/cms.md §4.3): weighted sums of sketches, checked in
//! full before anything is written.

use super::CountMinSketch;

/// A sketch being merged: another one, or the destination itself (a key
/// may name the destination among the sources; it is read before written).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Destination,
    Other(&'a CountMinSketch),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeError {
    /// A cell outside [0, the destination's cell maximum], a total below
    /// 0, or an intermediate product or sum outside i64:
    /// `CMS: MERGE overflow`.
    Overflow,
    /// A source of other dimensions (the command checks this first).
    Shape,
    /// A source of another cell size (the command checks this first).
    CellSize,
}

impl CountMinSketch {
    /// Whether `other` has this sketch's width and depth.
    pub fn same_shape(&self, other: &CountMinSketch) -> bool {
        self.width == other.width && self.depth() == other.depth()
    }

    /// How `other` differs from this sketch as a merge source, checked in
    /// the order of §5.6 step 6: dimensions, then cell size.
    pub fn mergeable(&self, other: &CountMinSketch) -> Result<(), MergeError> {
        if !self.same_shape(other) {
            return Err(MergeError::Shape);
        }
        if self.cell_size != other.cell_size {
            return Err(MergeError::CellSize);
        }
        Ok(())
    }

    /// Replaces every counter by the weighted sum of the sources' counters
    /// and the total by the weighted sum of their totals; nothing changes
    /// unless every one of them is valid.
    pub fn merge(&mut self, sources: &[(Source<'_>, i64)]) -> Result<(), MergeError> {
        for s in sources {
            if let Source::Other(o) = s.0 {
                self.mergeable(o)?;
            }
        }
        let total = self.merged_total(sources).ok_or(MergeError::Overflow)?;
        let cells = self.cells.len() / self.cell_size.bytes();
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

    /// Σ weight · counter x, exact in i64, if it lies in [0, the cell
    /// maximum]; partial sums may be negative.
    #[inline]
    fn merged_cell(&self, sources: &[(Source<'_>, i64)], x: usize) -> Option<u64> {
        let mut acc = 0i64;
        for &(s, w) in sources {
            let v = i64::try_from(self.sketch(s).load(x)).ok()?;
            acc = acc.checked_add(v.checked_mul(w)?)?;
        }
        u64::try_from(acc)
            .ok()
            .filter(|&v| v <= self.cell_size.max())
    }

    /// Σ weight · total: each product of the total and the weight exact in
    /// i64, the sum too, and not negative (so within 0 ..= 2^63 − 1).
    fn merged_total(&self, sources: &[(Source<'_>, i64)]) -> Option<u64> {
        let mut acc = 0i64;
        for &(s, w) in sources {
            let p = i128::from(self.sketch(s).counter) * i128::from(w);
            acc = acc.checked_add(i64::try_from(p).ok()?)?;
        }
        u64::try_from(acc).ok()
    }
}
