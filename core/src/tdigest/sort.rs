//! The node sort of docs/tdigest.md §4.2: RedisBloom's quicksort (middle
//! pivot, Lomuto partition with a strict `<`, two-element special case).
//! It is not stable, and which of two equal means ends up first decides
//! what merges with what, so only this exact procedure reproduces
//! RedisBloom's digests.
//!
//! Sub-ranges are disjoint, so any processing order gives the same result:
//! they are taken from an explicit stack, the smaller side first (the stack
//! stays within log2(n) entries; no recursion), and a range whose means are
//! all equal gets the permutation the partition steps would produce in one
//! linear pass instead of a quadratic cascade (docs/tdigest.md §4.2).

/// Sorts `means` (and `weights` along) exactly like RedisBloom.
pub(super) fn sort(means: &mut [f64], weights: &mut [i64]) {
    let n = means.len().min(weights.len());
    let mut s = Slots {
        means: &mut means[..n],
        weights: &mut weights[..n],
    };
    // Half-open ranges [lo, end).
    let mut pending: Vec<(usize, usize)> = Vec::new();
    let mut range = Some((0, n));
    while let Some((lo, end)) = range.or_else(|| pending.pop()) {
        range = None;
        if end <= lo + 1 {
            continue;
        }
        let hi = end - 1;
        if hi - lo == 1 {
            if s.means[lo] > s.means[hi] {
                s.swap(lo, hi);
            }
        } else if s.all_equal(lo, hi) {
            s.rotate_equal(lo, hi);
        } else {
            let k = s.partition(lo, hi);
            let (left, right) = ((lo, k), (k + 1, end));
            let (small, large) = if k - lo <= end - (k + 1) {
                (left, right)
            } else {
                (right, left)
            };
            pending.push(large);
            range = Some(small);
        }
    }
}

struct Slots<'a> {
    means: &'a mut [f64],
    weights: &'a mut [i64],
}

impl Slots<'_> {
    #[inline]
    fn swap(&mut self, i: usize, j: usize) {
        self.means.swap(i, j);
        self.weights.swap(i, j);
    }

    /// Middle pivot moved to `hi`, smaller means to the front, pivot after
    /// them; returns its final index.
    fn partition(&mut self, lo: usize, hi: usize) -> usize {
        let p = lo + (hi - lo) / 2;
        let pivot = self.means[p];
        self.swap(p, hi);
        // `store` is RedisBloom's `i + 1` (i starts one before lo).
        let mut store = lo;
        for j in lo..hi {
            if self.means[j] < pivot {
                self.swap(store, j);
                store += 1;
            }
        }
        self.swap(store, hi);
        store
    }

    /// Whether no mean in `lo..=hi` is smaller than another one, so that no
    /// partition of the range moves anything in front of its pivot: every
    /// mean that is not NaN equals the first such (NaN compares false).
    fn all_equal(&self, lo: usize, hi: usize) -> bool {
        let range = &self.means[lo..=hi];
        match range.iter().find(|m| !m.is_nan()) {
            None => true,
            Some(&x) => range.iter().all(|&m| m.is_nan() || m == x),
        }
    }

    /// What the partition cascade does to a range without any `<` pair:
    /// each level moves slot p → lo, hi → p, lo → hi and continues on
    /// `lo+1..=hi`, until two slots remain (which stay as they are).
    fn rotate_equal(&mut self, mut lo: usize, hi: usize) {
        while hi - lo >= 2 {
            let p = lo + (hi - lo) / 2;
            self.swap(p, hi);
            self.swap(lo, hi);
            lo += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The procedure as written (recursive), for comparison.
    fn reference(m: &mut [f64], w: &mut [i64], lo: usize, hi: usize) {
        if lo >= hi {
            return;
        }
        if hi - lo == 1 {
            if m[lo] > m[hi] {
                m.swap(lo, hi);
                w.swap(lo, hi);
            }
            return;
        }
        let p = (lo + hi) / 2;
        let pivot = m[p];
        m.swap(p, hi);
        w.swap(p, hi);
        let mut i = lo as isize - 1;
        for j in lo..hi {
            if m[j] < pivot {
                i += 1;
                m.swap(i as usize, j);
                w.swap(i as usize, j);
            }
        }
        let k = (i + 1) as usize;
        m.swap(k, hi);
        w.swap(k, hi);
        if k > lo {
            reference(m, w, lo, k - 1);
        }
        reference(m, w, k + 1, hi);
    }

    fn check(means: &[f64]) {
        let mut m1 = means.to_vec();
        let mut w1: Vec<i64> = (0..means.len() as i64).collect();
        let (mut m2, mut w2) = (m1.clone(), w1.clone());
        sort(&mut m1, &mut w1);
        if !means.is_empty() {
            reference(&mut m2, &mut w2, 0, means.len() - 1);
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&m1), bits(&m2), "means of {means:?}");
        assert_eq!(w1, w2, "permutation of {means:?}");
    }

    #[test]
    fn equals_the_recursive_procedure() {
        check(&[]);
        check(&[1.0]);
        check(&[2.0, 1.0]);
        check(&[1.0, 1.0, 1.0]);
        check(&[0.0, -0.0, 0.0, -0.0, 0.0]);
        check(&[3.0, 1.0, 2.0, 1.0, 3.0, 1.0, 0.0]);
        check(&[5.0; 40]);
        check(&[f64::NAN, 1.0, f64::NAN, 0.0, 2.0]);
        check(&[f64::NAN, 1.0, f64::NAN, 2.0]);
        check(&[f64::NAN, 1.0, f64::NAN, 1.0, -0.0, 0.0]);
        check(&[1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 3.0, 2.0]);
    }

    #[test]
    fn all_equal_ranges_are_linear() {
        let n = 200_000;
        let mut m = vec![7.0; n];
        let mut w: Vec<i64> = (0..n as i64).collect();
        let t = std::time::Instant::now();
        sort(&mut m, &mut w);
        assert!(t.elapsed().as_secs() < 5);
        assert_ne!(w[0], 0, "permuted");
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn random_lists_sort_like_the_procedure(
            v in proptest::collection::vec(prop_oneof![
                (0i32..6).prop_map(f64::from),
                Just(-0.0),
                any::<f64>(),
            ], 0..300)
        ) {
            check(&v);
        }
    }
}
