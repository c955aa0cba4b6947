//! MurmurHash64A and MurmurHash2 exactly as RedisBloom computes them (docs/hashing.md §1, §2).
//!
//! Blocks are read little-endian regardless of the host, so stored filters are
//! portable and match RedisBloom's on x86-64.

/// MurmurHash64A, docs/hashing.md §1. All arithmetic wraps modulo 2^64.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4a7935bd1e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut w = [0u8; 8];
        w.copy_from_slice(block);
        let mut k = u64::from_le_bytes(w).wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        // Tail bytes land least-significant first; no multiply for an empty tail.
        h ^= tail
            .iter()
            .enumerate()
            .fold(0u64, |acc, (j, &b)| acc | (u64::from(b) << (8 * j)));
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^ (h >> R)
}

/// MurmurHash2 (32-bit), docs/hashing.md §2. All arithmetic wraps modulo 2^32.
pub fn murmur2(data: &[u8], seed: u32) -> u32 {
    let [h] = murmur2_seeds(data, [seed]);
    h
}

/// MurmurHash2 of `data` under each of `seeds` (Top-K hashes an item with
/// one seed per row): the block words are mixed once for all seeds.
#[inline(always)]
pub fn murmur2_seeds<const N: usize>(data: &[u8], seeds: [u32; N]) -> [u32; N] {
    const M: u32 = 0x5bd1e995;
    const R: u32 = 24;
    // The C code takes the length as a 32-bit int; items never reach 2^32 bytes.
    let mut h = seeds.map(|seed| seed ^ (data.len() as u32));
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let mut w = [0u8; 4];
        w.copy_from_slice(block);
        let mut k = u32::from_le_bytes(w).wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        for h in &mut h {
            *h = h.wrapping_mul(M) ^ k;
        }
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let t = tail
            .iter()
            .enumerate()
            .fold(0u32, |acc, (j, &b)| acc | (u32::from(b) << (8 * j)));
        for h in &mut h {
            *h = (*h ^ t).wrapping_mul(M);
        }
    }
    h.map(|mut h| {
        h ^= h >> 13;
        h = h.wrapping_mul(M);
        h ^ (h >> 15)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOOM_SEED: u64 = 0xc6a4a7935bd1e995;
    const ALPHA: &[u8] = b"abcdefghijklmnopq";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn check64(input: &[u8], seed0: u64, a: u64, b: u64) {
        assert_eq!(murmur64a(input, 0), seed0, "seed 0 of {input:?}");
        assert_eq!(murmur64a(input, BLOOM_SEED), a, "bloom a of {input:?}");
        assert_eq!(murmur64a(input, a), b, "bloom b of {input:?}");
    }

    #[test]
    fn murmur64a_prefix_vectors() {
        let table: [(u64, u64, u64); 18] = [
            (0x0000000000000000, 0x1ab11ea5a7b2c56e, 0xbbddcb5ab56dd547),
            (0x071717d2d36b6b11, 0x4292cee227b9150a, 0x7e9b527031f50c11),
            (0x62be85b2fe53d1f8, 0x2db1bf3a2e66542c, 0x293d5ccc2e02cc02),
            (0x9cc9c33498a95efb, 0xca52f3863690cd7b, 0x492e507dc7ce3d23),
            (0xec1044c45cc5097a, 0xc19f5358d983a6bf, 0xe0cf7f46f508e46e),
            (0x1182974836d6dbb7, 0xf27f6d3730b4f30f, 0x7c733ac54ddf1280),
            (0xb78e3425fc996779, 0x01ddc66cbc7b3e37, 0x1b348e32fa3fef62),
            (0x241aa52b0a62005d, 0x9fa0b24601c1e9a9, 0x593e9b0945664832),
            (0xafdb0257ff41aa98, 0xd435df7a565a8af1, 0xbf3d673c0b1029cf),
            (0xc9b9d84356146ac2, 0xa2c004e44bd0a465, 0x28459a22cef68950),
            (0xa33f0dbf245bcb51, 0x4dda8bb8288b5bbd, 0x361e14fc5e36a65b),
            (0xfeff07a18c726536, 0x0b6930e3a92083b0, 0xdeb9aa8b3d5ec2da),
            (0xa24066d5378b01bb, 0xf0b550d26a298a3c, 0x37665bf0ab8309c9),
            (0xe126e825baaba665, 0x2407060734c8952c, 0x6e49c391e5447ca8),
            (0x9da2538e559887e9, 0x4000a853bc7b875d, 0x62802f454a3ff6e0),
            (0xfdaac8a629dcd46a, 0xc4e6b4f6cdd08966, 0x4dbd74e04e8a2ad3),
            (0xd41a085973d213ba, 0xa2d5453f05c0542c, 0x72b0c3aa939d90ed),
            (0x0f996a806d240427, 0xb84efba0e5917aa7, 0x963f6ccab23b3692),
        ];
        for (len, &(s0, a, b)) in table.iter().enumerate() {
            check64(&ALPHA[..len], s0, a, b);
        }
    }

    #[test]
    fn murmur64a_hex_vectors() {
        let table = [
            (
                "00",
                0x5825f5f3bd962979,
                0x0000000000000000,
                0x5825f5f3bd962979,
            ),
            (
                "ffffffffffffffff",
                0x3a8e59c4e2c576dd,
                0x99edc884b9aca96f,
                0xbe9492f2002ea771,
            ),
            (
                "010203040506070809",
                0x7809ad84418c420a,
                0xcee1e69697f9b770,
                0x109c3221b95b155e,
            ),
            (
                "666f6f",
                0xcdde38358fd25b01,
                0x822b4f99b121f10d,
                0x9d63d52a557f61c2,
            ),
            (
                "68656c6c6f20776f726c64",
                0xd3ba2368a832afce,
                0xbae8fb35317acde1,
                0xa5c3078260d44436,
            ),
        ];
        for (input, s0, a, b) in table {
            check64(&hex(input), s0, a, b);
        }
    }

    #[test]
    fn murmur2_vectors() {
        let table: [(&[u8], u32, u32); 12] = [
            (&ALPHA[..0], 0x106e08d9, 0x456d9087),
            (&ALPHA[..1], 0xa2d0b27c, 0x2e36e8b4),
            (&ALPHA[..2], 0x12d8262a, 0x87ae788a),
            (&ALPHA[..3], 0x1c94221b, 0x08e2b515),
            (&ALPHA[..4], 0xb11ab5f4, 0x7796ea9c),
            (&ALPHA[..5], 0x1b897edd, 0x263bdc4f),
            (&ALPHA[..7], 0xeb595499, 0x3219f5ed),
            (&ALPHA[..8], 0xc70d55dd, 0xd8fd56f3),
            (&ALPHA[..9], 0xdb106fbe, 0x9cc85bc8),
            (&ALPHA[..17], 0x58d19013, 0x608615f8),
            (b"foo", 0x23a256d0, 0x9fbc0655),
            (b"hello world", 0x48d0c363, 0x76aefdba),
        ];
        for (input, a, b) in table {
            assert_eq!(murmur2(input, 0x9747b28c), a, "a32 of {input:?}");
            assert_eq!(murmur2(input, a), b, "b32 of {input:?}");
        }
    }

    /// Top-K's row and fingerprint hashes (seeds 0..6 and 1919).
    #[test]
    fn murmur2_topk_vectors() {
        let table: [(&[u8], [u32; 8]); 6] = [
            (
                b"",
                [
                    0x00000000, 0x5bd15e36, 0xb7a2bc6d, 0x13759a54, 0x6f4778db, 0xcb1819da,
                    0x26eb34a8, 0x4a8566e0,
                ],
            ),
            (
                b"a",
                [
                    0x92685f5e, 0x2550b18c, 0x2cf62649, 0x86b7b9f4, 0xb9b6c23e, 0xf822f206,
                    0x5c22f2fa, 0xf23cf517,
                ],
            ),
            (
                b"foo",
                [
                    0x8fea6375, 0x0bcc2e5a, 0x71b51c90, 0x03f30a09, 0x5fc1bbbb, 0x809592ac,
                    0xd3fd4a99, 0x4064c400,
                ],
            ),
            (
                b"hello world",
                [
                    0x44a81419, 0x83ea5dee, 0xd94a2afb, 0xc1b1edd0, 0x0c154bc6, 0x03aef1a7,
                    0x8596aa75, 0xfba01f39,
                ],
            ),
            (
                b"abcdefghijklmnopq",
                [
                    0x7ad1dc7b, 0x38aee8a3, 0x08660dd1, 0xe018abf6, 0x3e9beff1, 0xed0f3e0a,
                    0xd4d7ac03, 0x48984d31,
                ],
            ),
            (
                b"item-42",
                [
                    0x02b2caf0, 0x4e41d8be, 0x5e6e5691, 0x50d0471f, 0xef408290, 0x71933753,
                    0x02139076, 0x8b641d08,
                ],
            ),
        ];
        let seeds = [0, 1, 2, 3, 4, 5, 6, 1919];
        for (input, want) in table {
            assert_eq!(murmur2_seeds(input, seeds), want, "{input:?}");
            for (seed, w) in seeds.into_iter().zip(want) {
                assert_eq!(murmur2(input, seed), w, "{input:?} seed {seed}");
            }
        }
        assert_eq!(
            murmur2_seeds(b"bar", [0, 1, 1919]),
            [0x27f6e557, 0xfc397da9, 0x2f60f28e]
        );
    }
}
