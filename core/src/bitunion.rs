//! What BF.MERGE does alike in both Bloom flavours (docs/bloom.md §12): the
//! union of bit arrays of one shape, the item count of a merged sub-filter,
//! and the refusals.

use std::borrow::Cow;

/// ORs `src` into `dest`; both have one length (the shapes were compared).
pub fn or_into(dest: &mut [u8], src: &[u8]) {
    for (d, s) in dest.iter_mut().zip(src) {
        *d |= *s;
    }
}

/// Bits set in `bits`.
pub fn ones(bits: &[u8]) -> u64 {
    bits.iter().map(|b| u64::from(b.count_ones())).sum()
}

/// Items a Bloom filter of `m` bits, `k` hashes and `x` set bits holds, by
/// Swamidass & Baldi: −(m/k)·ln(1 − x/m), rounded down; `u64::MAX` once
/// every bit is set (the formula's infinity).
pub fn estimate(m: u64, k: u32, x: u64) -> u64 {
    if m == 0 || k == 0 || x >= m {
        return u64::MAX;
    }
    let fill = x as f64 / m as f64;
    // ln_1p keeps precision for a sparse array (x ≪ m).
    let n = -(m as f64 / f64::from(k)) * (-fill).ln_1p();
    // `as` saturates and maps NaN to 0.
    n.floor() as u64
}

/// The item count of one merged sub-filter (docs/bloom.md §12). `counts`:
/// the sources' counts of it; `same`: whether every source's bits equal the
/// first's; `estimate`: [`estimate`] of the union's bits.
///
/// Never below the largest source count (the union holds each source's
/// items), so bit-identical sources keep it exactly; otherwise the estimate,
/// at most the capacity and the sum of the counts.
pub fn merged_count(counts: &[u64], same: bool, estimate: u64, capacity: u64) -> u64 {
    let most = counts.iter().copied().max().unwrap_or(0);
    if same {
        return most;
    }
    let sum = counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
    // `most` last: it wins over a cap below it (a loaded count may exceed
    // its capacity) and is valid wherever the sources were.
    estimate.min(capacity).min(sum).max(most)
}

/// The first field in which two sources' shapes differ: the unit (`link`,
/// `sub-filter`) and its number from 1, when the field is one unit's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Difference {
    pub unit: Option<(&'static str, usize)>,
    pub field: &'static str,
}

/// Why BF.MERGE refused its sources (nothing is written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeError {
    /// The shapes differ.
    Differs(Difference),
    /// The counts of the union would not fit their fields.
    Overflow,
    /// The union could not be allocated.
    OutOfMemory,
}

impl MergeError {
    /// The error reply.
    pub fn message(&self) -> Cow<'static, str> {
        match self {
            MergeError::Differs(Difference {
                unit: Some((unit, i)),
                field,
            }) => format!("ERR BF.MERGE: sources differ in {unit} {i}'s {field}").into(),
            MergeError::Differs(Difference { unit: None, field }) => {
                format!("ERR BF.MERGE: sources differ in {field}").into()
            }
            MergeError::Overflow => "ERR BF.MERGE: the merged item count overflows".into(),
            MergeError::OutOfMemory => "ERR BF.MERGE: out of memory".into(),
        }
    }
}

/// `Err` naming `field` of unit `unit` when `a != b`.
pub fn same<T: PartialEq>(
    a: T,
    b: T,
    unit: Option<(&'static str, usize)>,
    field: &'static str,
) -> Result<(), MergeError> {
    if a == b {
        Ok(())
    } else {
        Err(MergeError::Differs(Difference { unit, field }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_follows_the_formula() {
        assert_eq!(estimate(1000, 7, 0), 0);
        assert_eq!(estimate(1000, 7, 1000), u64::MAX);
        assert_eq!(estimate(0, 7, 0), u64::MAX);
        // One item sets k bits of a large array: about 1.
        assert_eq!(estimate(1 << 20, 7, 7), 1);
        // −(1000/7)·ln(0.5) = 99.02
        assert_eq!(estimate(1000, 7, 500), 99);
    }

    #[test]
    fn merged_count_is_bounded_by_the_sources() {
        assert_eq!(merged_count(&[5, 3], true, 100, 10), 5);
        assert_eq!(merged_count(&[5, 3], false, 7, 10), 7);
        assert_eq!(merged_count(&[5, 3], false, 100, 10), 8);
        assert_eq!(merged_count(&[5, 3], false, 100, 6), 6);
        assert_eq!(merged_count(&[5, 3], false, 2, 10), 5);
        assert_eq!(merged_count(&[12, 3], false, 100, 10), 12);
        assert_eq!(merged_count(&[], false, 100, 10), 0);
    }

    #[test]
    fn messages_name_what_differs() {
        let e = MergeError::Differs(Difference {
            unit: Some(("link", 2)),
            field: "capacity",
        });
        assert_eq!(
            e.message(),
            "ERR BF.MERGE: sources differ in link 2's capacity"
        );
        let e = MergeError::Differs(Difference {
            unit: None,
            field: "expansion",
        });
        assert_eq!(e.message(), "ERR BF.MERGE: sources differ in expansion");
        let mut d = [0b0001u8, 0];
        or_into(&mut d, &[0b0100, 0x80]);
        assert_eq!(d, [0b0101, 0x80]);
        assert_eq!(ones(&d), 3);
    }
}
