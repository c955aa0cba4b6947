//! Redis' CRC64 (Jones polynomial, reflected, init 0, no final xor): the
//! checksum of a `DUMP` payload and of an RDB file. The `crc` crate's
//! slice-by-16 table: as fast as a hand-written slice-by-8 or faster
//! (best of 15 over 64 MiB: 986 against 801 MiB/s).

/// The algorithm, for checksums over a stream (`CRC64.digest()`).
pub const CRC64: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);

/// The checksum of `data`.
pub fn crc64(data: &[u8]) -> u64 {
    CRC64.checksum(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_check_value() {
        // Redis' crc64.c self-test: crc64(0, "123456789") = e9c6d914c4b8d9ca.
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    /// Bit at a time, from the definition: what the table must agree with.
    fn bitwise(data: &[u8]) -> u64 {
        data.iter().fold(0, |mut crc, &b| {
            crc ^= u64::from(b);
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0x95ac_9329_ac4b_c9b5 * (crc & 1));
            }
            crc
        })
    }

    #[test]
    fn table_matches_bitwise_on_every_length_and_split() {
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for n in 0..data.len() {
            assert_eq!(crc64(&data[..n]), bitwise(&data[..n]), "length {n}");
        }
        for split in [0, 1, 7, 8, 9, 150, 299] {
            let (a, b) = data.split_at(split);
            let mut d = CRC64.digest();
            d.update(a);
            d.update(b);
            assert_eq!(d.finalize(), crc64(&data));
        }
    }
}
