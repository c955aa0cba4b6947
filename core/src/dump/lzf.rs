//! LZF decompression (liblzf `lzf_decompress`), the only compression RDB
//! strings use. Hand-written: the `lzf` crate is marked deprecated by its
//! author, and this is forty lines.

/// The most one input byte can decompress to: a 3-byte back reference
/// yields 7 + 255 + 2 = 264 bytes.
const MAX_RATIO: usize = 88;

/// Decompresses `input` into exactly `out_len` bytes; `None` if the data is
/// malformed or does not decompress to that length. A length the input
/// cannot reach is refused before anything is allocated.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    if out_len > input.len().saturating_mul(MAX_RATIO) {
        return None;
    }
    let mut out = Vec::new();
    out.try_reserve_exact(out_len).ok()?;
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let lit = input.get(i..i + ctrl + 1)?;
            out.extend_from_slice(lit);
            i += ctrl + 1;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(i)?);
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(i)?) + 1;
            i += 1;
            let from = out.len().checked_sub(back)?;
            // Overlapping copies repeat bytes: copy one at a time.
            for k in from..from + len + 2 {
                out.push(*out.get(k)?);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::decompress;

    #[test]
    fn literals_and_back_references() {
        // "hello " literal, then a back reference of 8 bytes at distance 6
        // ("hello he"), then the literal "llo".
        let packed = b"\x05hello \xc0\x05\x02llo";
        assert_eq!(decompress(packed, 17).unwrap(), b"hello hello hello");
        // Long run: "a", then a reference of 7+3+2 = 12 bytes at distance 1.
        assert_eq!(
            decompress(b"\x00a\xe0\x03\x00", 13).unwrap(),
            vec![b'a'; 13]
        );
    }

    #[test]
    fn malformed_input_is_refused() {
        assert_eq!(decompress(b"\x05hel", 6), None); // truncated literal
        assert_eq!(decompress(b"\x20\x00", 2), None); // reference before any output
        assert_eq!(decompress(b"\x01ab", 3), None); // wrong length
        assert_eq!(decompress(b"\x00a\xe0", 13), None); // truncated reference
        assert_eq!(decompress(b"\x00a", usize::MAX), None); // unreachable length
    }
}
