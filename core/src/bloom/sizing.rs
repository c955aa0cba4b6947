//! Link sizing (docs/bloom.md §3), separate from allocation so huge sizes can be computed
//! and tested without allocating them.

use super::{CreateError, ENTS_IS_BITS, LN2C, LN2SQC, NOROUND};

/// The fields of a link about to be created.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sizing {
    pub entries: u64,
    pub error: f64,
    pub bpe: f64,
    pub hashes: u32,
    pub bits: u64,
    pub bytes: u64,
    pub n2: u8,
}

/// Sizes a link of `entries` capacity and `error` rate under chain `options`.
///
/// Sizes whose bit count does not fit in 64 bits report `OutOfMemory`: they
/// are well-formed requests that no allocation could satisfy.
pub fn size_link(entries: u64, error: f64, options: u32) -> Result<Sizing, CreateError> {
    if entries < 1 || !(error > 0.0 && error < 1.0) {
        return Err(CreateError::Invalid);
    }
    let bpe = bits_per_entry(error);
    let (entries, n2, bits0) = if options & ENTS_IS_BITS != 0 {
        ents_is_bits(entries, bpe)?
    } else if options & NOROUND != 0 {
        no_round(entries, bpe)
    } else {
        power_of_two(entries, bpe)?
    };
    let bytes = whole_words_bytes(bits0);
    let bits = bytes.checked_mul(8).ok_or(CreateError::OutOfMemory)?;
    Ok(Sizing {
        entries,
        error,
        bpe,
        hashes: hash_count(bpe) as u32,
        bits,
        bytes,
        n2,
    })
}

/// Bits per entry for `error` in (0, 1); positive because ln(error) < 0.
pub(crate) fn bits_per_entry(error: f64) -> f64 {
    -(error.ln() / LN2SQC)
}

/// Number of hash probes for `bpe` (saturating for absurd loaded values,
/// which validation then rejects).
pub(crate) fn hash_count(bpe: f64) -> u64 {
    (LN2C * bpe).ceil() as u64
}

/// NOROUND: exactly trunc(E·bpe) bits, at least one.
fn no_round(entries: u64, bpe: f64) -> (u64, u8, u64) {
    let bits0 = (entries as f64 * bpe) as u64;
    (entries, 0, bits0.max(1))
}

/// ENTS_IS_BITS: E is log2 of the bit count; capacity follows from bpe.
fn ents_is_bits(entries: u64, bpe: f64) -> Result<(u64, u8, u64), CreateError> {
    let n2 = u8::try_from(entries)
        .ok()
        .filter(|&n| n <= 63)
        .ok_or(CreateError::Invalid)?;
    let bits0 = 1u64 << n2;
    Ok(((bits0 as f64 / bpe) as u64, n2, bits0))
}

/// Legacy power of two: round E·bpe up to 2^n2 and spend the spare bits on
/// extra capacity.
fn power_of_two(entries: u64, bpe: f64) -> Result<(u64, u8, u64), CreateError> {
    let x = entries as f64 * bpe;
    // C logb for a positive double; infinity and NaN land far above 62. Genuine
    // links never have x < 1 (their error is < 0.5, so bpe > 1.44), and C would
    // then compute a meaningless n2, so those are rejected.
    let exponent = ((x.to_bits() >> 52) & 0x7ff) as i64 - 1023;
    if !(0..=62).contains(&exponent) {
        return Err(CreateError::Invalid);
    }
    let n2 = exponent as u8 + 1;
    let bits0 = 1u64 << n2;
    let extra = (bits0 as f64 - x) as u64;
    let bonus = (extra as f64 / bpe) as u64;
    Ok((entries.wrapping_add(bonus), n2, bits0))
}

/// Bytes of whole 64-bit words holding `bits0` bits.
fn whole_words_bytes(bits0: u64) -> u64 {
    if !bits0.is_multiple_of(64) {
        (bits0 / 64 + 1) * 8
    } else {
        bits0 / 8
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FORCE64, NOROUND};
    use super::*;

    const NEW: u32 = FORCE64 | NOROUND;

    #[test]
    fn table_rows_of_3_2() {
        // (link error, capacity, trunc(E·bpe), bits, bytes, hashes, BF.INFO Size)
        let rows: [(f64, u64, u64, u64, u64, u32, u64); 9] = [
            (0.005, 100, 1102, 1152, 144, 8, 240),
            (0.0005, 100, 1582, 1600, 200, 11, 296),
            (0.005, 10, 110, 128, 16, 8, 112),
            (0.025, 1000, 7677, 7680, 960, 6, 1056),
            (0.05, 5, 31, 64, 8, 5, 104),
            (0.01, 3, 28, 64, 8, 7, 104),
            (0.125, 1, 4, 64, 8, 4, 104),
            (0.125, 10, 43, 64, 8, 4, 104),
            (
                5e-07, 300000000, 9059361051, 9059361088, 1132420136, 21, 1132420232,
            ),
        ];
        for (error, cap, bits0, bits, bytes, hashes, info_size) in rows {
            let s = size_link(cap, error, NEW).unwrap();
            assert_eq!((cap as f64 * s.bpe) as u64, bits0, "{error} {cap}");
            assert_eq!((s.bits, s.bytes, s.hashes), (bits, bytes, hashes));
            assert_eq!((s.entries, s.n2, s.error), (cap, 0, error));
            // One-link chain: 32 + 64 + bytes.
            assert_eq!(32 + 64 + s.bytes, info_size);
        }
        assert_eq!(size_link(100, 0.005, NEW).unwrap().bpe, 11.027753418256411);
        assert_eq!(size_link(100, 0.0005, NEW).unwrap().bpe, 15.820282606940136);
    }

    #[test]
    fn invalid_parameters() {
        for (e, err) in [(0, 0.01), (1, 0.0), (1, 1.0), (1, -0.5), (1, f64::NAN)] {
            assert_eq!(size_link(e, err, NEW), Err(CreateError::Invalid));
        }
        // Error 5e-324 halves to 0.
        assert_eq!(size_link(1, 5e-324 * 0.5, NEW), Err(CreateError::Invalid));
        // Smallest positive error: 1075 hashes, the genuine maximum.
        assert_eq!(size_link(1, 5e-324, NEW).unwrap().hashes, 1075);
    }

    #[test]
    fn legacy_ents_is_bits() {
        let s = size_link(10, 0.005, ENTS_IS_BITS).unwrap();
        assert_eq!((s.n2, s.bits, s.bytes), (10, 1024, 128));
        assert_eq!(s.entries, (1024.0 / s.bpe) as u64);
        assert!(size_link(63, 0.005, ENTS_IS_BITS).is_ok());
        assert_eq!(
            size_link(64, 0.005, ENTS_IS_BITS),
            Err(CreateError::Invalid)
        );
        // ENTS_IS_BITS wins over NOROUND.
        assert_eq!(size_link(10, 0.005, ENTS_IS_BITS | NOROUND).unwrap().n2, 10);
    }

    #[test]
    fn legacy_power_of_two() {
        // x = 1102.775..., logb 10, 2^11 bits, 945 spare bits = 85 more entries.
        let s = size_link(100, 0.005, 0).unwrap();
        assert_eq!((s.n2, s.bits, s.bytes, s.entries), (11, 2048, 256, 185));
        // Tiny: 2^3 bits still take a whole word; bits exceeds 2^n2.
        let s = size_link(1, 0.125, FORCE64).unwrap();
        assert_eq!((s.n2, s.bits, s.bytes), (3, 64, 8));
        // logb 63 does not fit.
        assert_eq!(size_link(u64::MAX, 0.25, 0), Err(CreateError::Invalid));
    }

    #[test]
    fn unrepresentable_bit_count() {
        // trunc saturates at u64::MAX; 2^61 bytes would be 2^64 bits.
        assert_eq!(
            size_link(u64::MAX, 1e-300, NEW),
            Err(CreateError::OutOfMemory)
        );
    }
}
