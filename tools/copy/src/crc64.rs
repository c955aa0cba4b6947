//! Redis' CRC64 (Jones polynomial, reflected, init 0, no final xor): the
//! checksum of a `DUMP` payload. Hand-written because the footer must match
//! the server's bytes exactly; slice-by-8 so that hundreds of MiB (a large
//! Count-Min Sketch) are checksummed at memory speed.

const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const fn tables() -> [[u64; 256]; 8] {
    let mut t = [[0u64; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

static T: [[u64; 256]; 8] = tables();

/// Continues `crc` over `data` (start with 0).
pub fn update(mut crc: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let x = crc ^ u64::from_le_bytes(b);
        crc = T[7][(x & 0xff) as usize]
            ^ T[6][((x >> 8) & 0xff) as usize]
            ^ T[5][((x >> 16) & 0xff) as usize]
            ^ T[4][((x >> 24) & 0xff) as usize]
            ^ T[3][((x >> 32) & 0xff) as usize]
            ^ T[2][((x >> 40) & 0xff) as usize]
            ^ T[1][((x >> 48) & 0xff) as usize]
            ^ T[0][(x >> 56) as usize];
    }
    for &b in words.remainder() {
        crc = T[0][((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

pub fn crc64(data: &[u8]) -> u64 {
    update(0, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte at a time through the first table (itself checked by the
    /// check value): what slice-by-8 must agree with.
    fn bytewise(data: &[u8]) -> u64 {
        data.iter().fold(0, |crc, &b| {
            T[0][((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8)
        })
    }

    #[test]
    fn redis_check_value() {
        // Redis' crc64.c self-test: crc64(0, "123456789") = e9c6d914c4b8d9ca.
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        assert_eq!(bytewise(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn slice_by_8_matches_bytewise_on_every_length_and_split() {
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for n in 0..data.len() {
            assert_eq!(crc64(&data[..n]), bytewise(&data[..n]), "length {n}");
        }
        for split in [0, 1, 7, 8, 9, 150, 299] {
            let (a, b) = data.split_at(split);
            assert_eq!(update(update(0, a), b), crc64(&data));
        }
    }
}
