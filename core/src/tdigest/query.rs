//! Estimates (docs/tdigest.md §4.6–§4.9, §5.9, §5.10): the quantile walk,
//! CDF, trimmed mean, ranks. Each compresses first exactly where RedisBloom
//! does, so the digest ends in the same state, and the number of
//! compressions that changed it is reported to the caller (replication).

use super::{c_i64, Compressed, TDigest};

/// The "no data" NaN: positive (RedisBloom returns the `NAN` constant).
const NO_DATA: f64 = f64::NAN;

/// Hands each result to a function (a reply) as it is computed.
pub struct Emit<F>(pub F);

impl<T, F: FnMut(T)> Extend<T> for Emit<F> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        items.into_iter().for_each(&mut self.0);
    }
}

/// Counts the compressions of one command that changed the digest.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Compressions(pub usize);

impl Compressions {
    fn note(&mut self, c: Compressed) {
        if c.changed() {
            self.0 += 1;
        }
    }
}

/// Cursor of one walk over the centroids (§4.6).
struct Walk {
    weight_so_far: f64,
    pos: usize,
}

/// `weightedAverage` of §4.6, ternaries kept for NaN.
fn weighted_average(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    let (x1, w1, x2, w2) = if x1 <= x2 {
        (x1, w1, x2, w2)
    } else {
        (x2, w2, x1, w1)
    };
    let x = (x1 * w1 + x2 * w2) / (w1 + w2);
    let t = if x < x2 { x } else { x2 };
    if x1 > t {
        x1
    } else {
        t
    }
}

/// C `modf`-based rounding of §5.9: halves round towards zero.
fn half_round_down(p: f64) -> f64 {
    let int = p.trunc();
    let frac = if p.is_infinite() { 0.0 } else { p - int };
    if frac.abs() <= 0.5 {
        int
    } else if int >= 0.0 {
        int + 1.0
    } else {
        int - 1.0
    }
}

/// The merged centroids and what the estimates read with them. Every
/// index used below is less than `means.len() == weights.len()`.
struct Centroids<'a> {
    means: &'a [f64],
    weights: &'a [i64],
    min: f64,
    max: f64,
    merged_weight: i64,
}

impl<'a> Centroids<'a> {
    fn n(&self) -> usize {
        self.means.len()
    }

    #[inline]
    fn mean(&self, i: usize) -> f64 {
        self.means[i]
    }

    #[inline]
    fn weight(&self, i: usize) -> f64 {
        self.weights[i] as f64
    }

    /// Both arrays with one length the compiler can see (index checks of
    /// the loops go away).
    fn arrays(&self) -> (&'a [f64], &'a [i64]) {
        let n = self.means.len().min(self.weights.len());
        (&self.means[..n], &self.weights[..n])
    }

    /// A cursor at the start (`n ≥ 1`).
    fn new_walk(&self) -> Walk {
        Walk {
            weight_so_far: self.weight(0) / 2.0,
            pos: 0,
        }
    }

    /// The value at `index` (a weight position), `n ≥ 2` (§4.6).
    fn walk(&self, st: &mut Walk, index: f64) -> f64 {
        let n = self.n();
        let w = self.merged_weight;
        let wd = w as f64;
        let (min, max) = (self.min, self.max);
        let lw = self.weight(0);
        let rw = self.weight(n - 1);
        let rm = self.mean(n - 1);
        if lw > 1.0 && index < lw / 2.0 {
            return min + ((index - 1.0) / (lw / 2.0 - 1.0)) * (self.mean(0) - min);
        }
        if index > w.wrapping_sub(1) as f64 {
            return max;
        }
        if rw > 1.0 && (wd - index) <= rw / 2.0 {
            return max - ((wd - index - 1.0) / (rw / 2.0 - 1.0)) * (max - rm);
        }
        let (means, weights) = self.arrays();
        // The scan keeps only the running sum in the loop; the pair found
        // is interpolated below.
        let (mut pos, mut so_far) = (st.pos, st.weight_so_far);
        let mut found = None;
        // Each weight is converted once, and kept for the next pair.
        if let Some(&first) = weights.get(pos) {
            let mut here = first as f64;
            for &next in weights.get(pos + 1..).unwrap_or_default() {
                let next = next as f64;
                let dw = (here + next) / 2.0;
                if so_far + dw > index {
                    found = Some(dw);
                    break;
                }
                so_far += dw;
                pos += 1;
                here = next;
            }
        }
        st.pos = pos;
        st.weight_so_far = so_far;
        if let Some(dw) = found {
            let (nw, nwn) = (weights[pos] as f64, weights[pos + 1] as f64);
            let (nm, nmn) = (means[pos], means[pos + 1]);
            let mut left = 0.0;
            if nw == 1.0 {
                if index - so_far < 0.5 {
                    return nm;
                }
                left = 0.5;
            }
            let mut right = 0.0;
            if nwn == 1.0 {
                if (so_far + dw) - index <= 0.5 {
                    return nmn;
                }
                right = 0.5;
            }
            let z1 = (index - so_far) - left;
            let z2 = ((so_far + dw) - index) - right;
            return weighted_average(nm, z2, nmn, z1);
        }
        let z1 = (index - wd) - rw / 2.0;
        let z2 = rw / 2.0 - z1;
        weighted_average(rm, z1, max, z2)
    }

    /// §4.8 on compressed centroids.
    fn cdf(&self, v: f64) -> f64 {
        let n = self.n();
        let (min, max) = (self.min, self.max);
        if n == 0 {
            return NO_DATA;
        }
        if v < min {
            return 0.0;
        }
        if v > max {
            return 1.0;
        }
        if n == 1 {
            let width = max - min;
            return if (v - min) <= width {
                0.5
            } else {
                (v - min) / width
            };
        }
        let wd = self.merged_weight as f64;
        let (lm, lw) = (self.mean(0), self.weight(0));
        if v < lm {
            let width = lm - min;
            if width > 0.0 {
                if v == min {
                    return 0.5 / wd;
                }
                return (1.0 + ((v - min) / width) * (lw / 2.0 - 1.0)) / wd;
            }
            return 0.0;
        }
        let (rm, rw) = (self.mean(n - 1), self.weight(n - 1));
        if v > rm {
            let width = max - rm;
            if width > 0.0 {
                if v == max {
                    return 1.0 - 0.5 / wd;
                }
                return 1.0 - ((1.0 + ((max - v) / width) * (rw / 2.0 - 1.0)) / wd);
            }
            return 1.0;
        }
        self.cdf_within(v, wd)
    }

    /// Step 5 of §4.8: `v` lies within the centroid means.
    fn cdf_within(&self, v: f64, wd: f64) -> f64 {
        let (means, weights) = self.arrays();
        let n = means.len();
        let mut weight_so_far = 0.0;
        let mut it = 0;
        while it + 1 < n {
            if means[it] == v {
                let mut dw = 0.0;
                while it < n && means[it] == v {
                    dw += weights[it] as f64;
                    it += 1;
                }
                return (weight_so_far + dw / 2.0) / wd;
            }
            let (nm, nmn) = (means[it], means[it + 1]);
            if nm <= v && v < nmn {
                let (nw, nwn) = (weights[it] as f64, weights[it + 1] as f64);
                if (nmn - nm) > 0.0 {
                    let (mut left, mut right) = (0.0, 0.0);
                    if nw == 1.0 {
                        if nwn == 1.0 {
                            return (weight_so_far + 1.0) / wd;
                        }
                        left = 0.5;
                    } else if nwn == 1.0 {
                        right = 0.5;
                    }
                    let dw = (nw + nwn) / 2.0;
                    let dw_no_singleton = (dw - left) - right;
                    let base = (weight_so_far + nw / 2.0) + left;
                    return (base + ((dw_no_singleton * (v - nm)) / (nmn - nm))) / wd;
                }
                return (weight_so_far + (nw + nwn) / 2.0) / wd;
            }
            weight_so_far += weights[it] as f64;
            it += 1;
        }
        1.0 - 0.5 / wd
    }

    /// §4.9 on compressed centroids, `lo` and `hi` in [0, 1].
    fn trimmed_mean(&self, lo: f64, hi: f64) -> f64 {
        match self.n() {
            0 => return NO_DATA,
            1 => return self.mean(0),
            _ => {}
        }
        let wd = self.merged_weight as f64;
        let left = (wd * lo).floor();
        let right = (wd * hi).ceil();
        let (mut done, mut sum, mut count) = (0.0f64, 0.0f64, 0.0f64);
        for (&mean, &weight) in self.means.iter().zip(self.weights) {
            let nw = weight as f64;
            let mut add = nw;
            let mut a = left - done;
            a = if 0.0 > a { 0.0 } else { a };
            a = if a < add { a } else { add };
            add -= a;
            let mut b = right - done;
            b = if 0.0 > b { 0.0 } else { b };
            add = if b < add { b } else { add };
            done += nw;
            sum += mean * add;
            count += add;
            if done >= right {
                break;
            }
        }
        // 0/0 here is the hardware's default NaN (sign bit set), as in C.
        sum / count
    }
}

impl TDigest {
    fn centroids(&self) -> Centroids<'_> {
        let n = (self.merged_nodes.max(0) as usize).min(self.nodes.len() as usize);
        Centroids {
            means: self.nodes.means().get(..n).unwrap_or_default(),
            weights: self.nodes.weights().get(..n).unwrap_or_default(),
            min: self.min,
            max: self.max,
            merged_weight: self.merged_weight,
        }
    }

    /// TDIGEST.QUANTILE (§4.7): every q in [0, 1]. One compression and one
    /// walk per maximal non-decreasing run of `qs`.
    pub fn quantiles(&mut self, qs: &[f64], out: &mut impl Extend<f64>, c: &mut Compressions) {
        let mut start = 0;
        while start < qs.len() {
            let mut end = start + 1;
            while end < qs.len() && qs[end - 1] <= qs[end] {
                end += 1;
            }
            c.note(self.compress());
            let run = &qs[start..end];
            let cs = self.centroids();
            match cs.n() {
                0 => out.extend(run.iter().map(|_| NO_DATA)),
                1 => out.extend(run.iter().map(|_| cs.mean(0))),
                _ => {
                    let wd = cs.merged_weight as f64;
                    let mut st = cs.new_walk();
                    out.extend(run.iter().map(|&q| cs.walk(&mut st, q * wd)));
                }
            }
            start = end;
        }
    }

    /// The single quantile of BYRANK / BYREVRANK (§4.7).
    fn quantile(&mut self, q: f64, c: &mut Compressions) -> f64 {
        c.note(self.compress());
        let cs = self.centroids();
        if !(0.0..=1.0).contains(&q) || cs.n() == 0 {
            return NO_DATA;
        }
        if cs.n() == 1 {
            return cs.mean(0);
        }
        let index = q * cs.merged_weight as f64;
        if index < 1.0 {
            return cs.min;
        }
        let mut st = cs.new_walk();
        cs.walk(&mut st, index)
    }

    /// TDIGEST.CDF of one value (§4.8).
    pub fn cdf(&mut self, v: f64, c: &mut Compressions) -> f64 {
        c.note(self.compress());
        self.centroids().cdf(v)
    }

    /// TDIGEST.TRIMMED_MEAN (§4.9); `lo`, `hi` already validated.
    pub fn trimmed_mean(&mut self, lo: f64, hi: f64, c: &mut Compressions) -> f64 {
        c.note(self.compress());
        let unit = 0.0..=1.0;
        if !unit.contains(&lo) || !unit.contains(&hi) {
            return NO_DATA;
        }
        self.centroids().trimmed_mean(lo, hi)
    }

    /// TDIGEST.RANK (`reverse` false) / REVRANK of each value (§5.9).
    pub fn ranks(
        &mut self,
        values: &[f64],
        reverse: bool,
        out: &mut impl Extend<i64>,
        c: &mut Compressions,
    ) {
        let size = self.size() as f64;
        let (min, max) = (self.min, self.max);
        for &v in values {
            let r = if size == 0.0 {
                -2.0
            } else if v < min {
                if reverse {
                    size
                } else {
                    -1.0
                }
            } else if v > max {
                if reverse {
                    -1.0
                } else {
                    size
                }
            } else {
                let p = self.cdf(v, c) * size;
                if reverse {
                    (size - p.round()).round()
                } else {
                    half_round_down(p)
                }
            };
            out.extend(Some(c_i64(r)));
        }
    }

    /// TDIGEST.BYRANK (`reverse` false) / BYREVRANK of each rank (§5.10).
    pub fn by_ranks(
        &mut self,
        ranks: &[i64],
        reverse: bool,
        out: &mut impl Extend<f64>,
        c: &mut Compressions,
    ) {
        let size = self.size() as f64;
        let (min, max) = (self.min, self.max);
        for &r in ranks {
            let r = r as f64;
            let v = if size == 0.0 {
                NO_DATA
            } else if r == 0.0 {
                if reverse {
                    max
                } else {
                    min
                }
            } else if r >= size {
                if reverse {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            } else {
                let rr = if reverse { (size - r) - 1.0 } else { r };
                self.quantile(rr / size, c)
            };
            out.extend(Some(v));
        }
    }

    /// TDIGEST.MIN / MAX (§5.5): no compression.
    pub fn min_reply(&self) -> f64 {
        if self.size() > 0 {
            self.min
        } else {
            NO_DATA
        }
    }

    pub fn max_reply(&self) -> f64 {
        if self.size() > 0 {
            self.max
        } else {
            NO_DATA
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_round_down_rounds_halves_towards_zero() {
        assert_eq!(half_round_down(2.5), 2.0);
        assert_eq!(half_round_down(2.51), 3.0);
        assert_eq!(half_round_down(-2.5), -2.0);
        assert_eq!(half_round_down(-2.51), -3.0);
        assert!(half_round_down(f64::NAN).is_nan());
        assert_eq!(half_round_down(f64::INFINITY), f64::INFINITY);
    }

    #[test]
    fn weighted_average_orders_its_operands() {
        assert_eq!(weighted_average(1.0, 1.0, 3.0, 1.0), 2.0);
        assert_eq!(weighted_average(3.0, 1.0, 1.0, 1.0), 2.0);
        // Clamped into [x1, x2].
        assert_eq!(weighted_average(1.0, -5.0, 3.0, 1.0), 1.0);
    }
}
