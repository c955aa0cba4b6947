//! Estimates (docs/tdigest.md §4.6–§4.9, §5.9, §5.10): the quantile walk,
//! CDF, trimmed mean, ranks. Each compresses first exactly where RedisBloom
//! does, so the digest ends in the same state, and the number of
//! compressions that changed it is reported to the caller (replication).

use super::{c_i64, Compressed, TDigest};

/// The "no data" NaN: positive (RedisBloom returns the `NAN` constant).
const NO_DATA: f64 = f64::NAN;

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

impl TDigest {
    fn mean(&self, i: usize) -> f64 {
        self.nodes.means().get(i).copied().unwrap_or(0.0)
    }

    fn weight(&self, i: usize) -> f64 {
        self.nodes.weights().get(i).copied().unwrap_or(0) as f64
    }

    fn centroids(&self) -> usize {
        (self.merged_nodes.max(0) as usize).min(self.nodes.len() as usize)
    }

    fn new_walk(&self) -> Walk {
        Walk {
            weight_so_far: self.weight(0) / 2.0,
            pos: 0,
        }
    }

    /// The value at `index` (a weight position) for `merged_nodes ≥ 2`.
    fn walk(&self, st: &mut Walk, index: f64) -> f64 {
        let n = self.centroids();
        let w = self.merged_weight;
        let wd = w as f64;
        let lw = self.weight(0);
        let rw = self.weight(n - 1);
        let rm = self.mean(n - 1);
        if lw > 1.0 && index < lw / 2.0 {
            return self.min + ((index - 1.0) / (lw / 2.0 - 1.0)) * (self.mean(0) - self.min);
        }
        if index > w.wrapping_sub(1) as f64 {
            return self.max;
        }
        if rw > 1.0 && (wd - index) <= rw / 2.0 {
            return self.max - ((wd - index - 1.0) / (rw / 2.0 - 1.0)) * (self.max - rm);
        }
        while st.pos < n - 1 {
            let (nw, nwn) = (self.weight(st.pos), self.weight(st.pos + 1));
            let (nm, nmn) = (self.mean(st.pos), self.mean(st.pos + 1));
            let dw = (nw + nwn) / 2.0;
            if st.weight_so_far + dw > index {
                let mut left = 0.0;
                if nw == 1.0 {
                    if index - st.weight_so_far < 0.5 {
                        return nm;
                    }
                    left = 0.5;
                }
                let mut right = 0.0;
                if nwn == 1.0 {
                    if (st.weight_so_far + dw) - index <= 0.5 {
                        return nmn;
                    }
                    right = 0.5;
                }
                let z1 = (index - st.weight_so_far) - left;
                let z2 = ((st.weight_so_far + dw) - index) - right;
                return weighted_average(nm, z2, nmn, z1);
            }
            st.weight_so_far += dw;
            st.pos += 1;
        }
        let z1 = (index - wd) - rw / 2.0;
        let z2 = rw / 2.0 - z1;
        weighted_average(rm, z1, self.max, z2)
    }

    /// TDIGEST.QUANTILE (§4.7): every q in [0, 1]. One compression and one
    /// walk per maximal non-decreasing run of `qs`.
    pub fn quantiles(&mut self, qs: &[f64], out: &mut Vec<f64>, c: &mut Compressions) {
        let mut start = 0;
        while start < qs.len() {
            let mut end = start + 1;
            while end < qs.len() && qs[end - 1] <= qs[end] {
                end += 1;
            }
            c.note(self.compress());
            let run = &qs[start..end];
            match self.centroids() {
                0 => out.extend(run.iter().map(|_| NO_DATA)),
                1 => out.extend(run.iter().map(|_| self.mean(0))),
                _ => {
                    let wd = self.merged_weight as f64;
                    let mut st = self.new_walk();
                    out.extend(run.iter().map(|&q| self.walk(&mut st, q * wd)));
                }
            }
            start = end;
        }
    }

    /// The single quantile of BYRANK / BYREVRANK (§4.7).
    fn quantile(&mut self, q: f64, c: &mut Compressions) -> f64 {
        c.note(self.compress());
        if !(0.0..=1.0).contains(&q) || self.centroids() == 0 {
            return NO_DATA;
        }
        if self.centroids() == 1 {
            return self.mean(0);
        }
        let index = q * self.merged_weight as f64;
        if index < 1.0 {
            return self.min;
        }
        let mut st = self.new_walk();
        self.walk(&mut st, index)
    }

    /// TDIGEST.CDF of one value (§4.8).
    pub fn cdf(&mut self, v: f64, c: &mut Compressions) -> f64 {
        c.note(self.compress());
        let n = self.centroids();
        if n == 0 {
            return NO_DATA;
        }
        if v < self.min {
            return 0.0;
        }
        if v > self.max {
            return 1.0;
        }
        if n == 1 {
            let width = self.max - self.min;
            return if (v - self.min) <= width {
                0.5
            } else {
                (v - self.min) / width
            };
        }
        let wd = self.merged_weight as f64;
        let (lm, lw) = (self.mean(0), self.weight(0));
        if v < lm {
            let width = lm - self.min;
            if width > 0.0 {
                if v == self.min {
                    return 0.5 / wd;
                }
                return (1.0 + ((v - self.min) / width) * (lw / 2.0 - 1.0)) / wd;
            }
            return 0.0;
        }
        let (rm, rw) = (self.mean(n - 1), self.weight(n - 1));
        if v > rm {
            let width = self.max - rm;
            if width > 0.0 {
                if v == self.max {
                    return 1.0 - 0.5 / wd;
                }
                return 1.0 - ((1.0 + ((self.max - v) / width) * (rw / 2.0 - 1.0)) / wd);
            }
            return 1.0;
        }
        self.cdf_inner(v, n, wd)
    }

    /// Step 5 of §4.8: `v` lies within the centroid means.
    fn cdf_inner(&self, v: f64, n: usize, wd: f64) -> f64 {
        let mut weight_so_far = 0.0;
        let mut it = 0;
        while it + 1 < n {
            if self.mean(it) == v {
                let mut dw = 0.0;
                while it < n && self.mean(it) == v {
                    dw += self.weight(it);
                    it += 1;
                }
                return (weight_so_far + dw / 2.0) / wd;
            }
            if self.mean(it) <= v && v < self.mean(it + 1) {
                let (nw, nwn) = (self.weight(it), self.weight(it + 1));
                let (nm, nmn) = (self.mean(it), self.mean(it + 1));
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
            weight_so_far += self.weight(it);
            it += 1;
        }
        1.0 - 0.5 / wd
    }

    /// TDIGEST.TRIMMED_MEAN (§4.9); `lo`, `hi` already validated.
    pub fn trimmed_mean(&mut self, lo: f64, hi: f64, c: &mut Compressions) -> f64 {
        c.note(self.compress());
        let n = self.centroids();
        let unit = 0.0..=1.0;
        if n == 0 || !unit.contains(&lo) || !unit.contains(&hi) {
            return NO_DATA;
        }
        if n == 1 {
            return self.mean(0);
        }
        let wd = self.merged_weight as f64;
        let left = (wd * lo).floor();
        let right = (wd * hi).ceil();
        let (mut done, mut sum, mut count) = (0.0f64, 0.0f64, 0.0f64);
        for i in 0..n {
            let nw = self.weight(i);
            let mut add = nw;
            let mut a = left - done;
            a = if 0.0 > a { 0.0 } else { a };
            a = if a < add { a } else { add };
            add -= a;
            let mut b = right - done;
            b = if 0.0 > b { 0.0 } else { b };
            add = if b < add { b } else { add };
            done += nw;
            sum += self.mean(i) * add;
            count += add;
            if done >= right {
                break;
            }
        }
        // 0/0 here is the hardware's default NaN (sign bit set), as in C.
        sum / count
    }

    /// TDIGEST.RANK (`reverse` false) / REVRANK of each value (§5.9).
    pub fn ranks(
        &mut self,
        values: &[f64],
        reverse: bool,
        out: &mut Vec<i64>,
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
            out.push(c_i64(r));
        }
    }

    /// TDIGEST.BYRANK (`reverse` false) / BYREVRANK of each rank (§5.10).
    pub fn by_ranks(
        &mut self,
        ranks: &[i64],
        reverse: bool,
        out: &mut Vec<f64>,
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
            out.push(v);
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
