use super::*;
use proptest::prelude::*;

/// `MBbloom--` encoding 4 (core/tests/module_types.rs checks the table).
const BF_ID: u64 = 0x3016e5a289bef804;

fn payload(prims: &[Prim], version: u16) -> Vec<u8> {
    with_footer(&module_value(BF_ID, prims), version)
}

#[test]
fn footer_is_checked_and_rewritten() {
    let mut p = payload(&[Prim::Int(5)], 12);
    assert_eq!(checked_version(&p), Ok(12));
    set_footer(&mut p, 80).unwrap();
    assert_eq!(p, payload(&[Prim::Int(5)], 80));
    assert_eq!(checked_version(&p), Ok(80));
    p[3] ^= 1;
    assert_eq!(checked_version(&p), Err(DumpError::Checksum));
    assert_eq!(checked_version(&[0; 10]), Err(DumpError::TooShort));
    assert_eq!(set_footer(&mut [0; 9], 1), Err(DumpError::TooShort));
}

#[test]
fn strings_decode_whatever_their_encoding() {
    // "hello hello hello" raw and LZF; "12" raw and as int8, int16, int32.
    let raw = b"\x05\x11hello hello hello\x05\x0212\0";
    let packed = b"\x05\xc3\x0d\x11\x05hello \xc0\x05\x02llo\x05\xc0\x0c\0";
    let want = vec![
        Prim::Str(b"hello hello hello".to_vec()),
        Prim::Str(b"12".to_vec()),
    ];
    for rest in [&raw[..], &packed[..]] {
        let mut body = module_value(BF_ID, &[]);
        body.pop();
        body.extend_from_slice(rest);
        assert_eq!(primitives(&body), Ok((BF_ID, want.clone())));
    }
    for (enc, text) in [
        (&b"\xc1\x0c\x00"[..], "12"),
        (b"\xc2\xf4\xff\xff\xff", "-12"),
    ] {
        assert_eq!(read_string(&mut &enc[..]), Ok(text.as_bytes().to_vec()));
    }
}

#[test]
fn lengths_use_the_shortest_form() {
    for (n, len) in [(63, 1), (64, 2), (16383, 2), (16384, 5), (1 << 32, 9)] {
        let mut out = Vec::new();
        write_len(&mut out, n);
        assert_eq!(out.len(), len, "{n}");
        assert_eq!(read_len(&mut &out[..]), Ok(n));
    }
}

#[test]
fn malformed_bodies_are_errors() {
    let good = module_value(BF_ID, &[Prim::Int(320), Prim::Str(b"abc".to_vec())]);
    assert!(primitives(&good).is_ok());
    for n in 0..good.len() {
        assert!(primitives(&good[..n]).is_err(), "prefix {n}");
    }
    let bad = |rest: &[u8]| {
        let mut b = module_value(BF_ID, &[]);
        b.pop();
        b.extend_from_slice(rest);
        primitives(&b)
    };
    assert!(bad(b"\x09\x00").is_err()); // unknown opcode
    assert!(bad(b"\x00\x00").is_err()); // bytes after EOF
    assert!(bad(b"\x05\xc3\x05\x09\x00\x00").is_err()); // bad LZF
    assert_eq!(primitives(b"\x00\x03abc"), Err(DumpError::NotModule(0)));
}

fn prim() -> impl Strategy<Value = Prim> {
    prop_oneof![
        any::<u64>().prop_map(Prim::Int),
        any::<u32>().prop_map(Prim::Float),
        any::<u64>().prop_map(Prim::Double),
        proptest::collection::vec(any::<u8>(), 0..100).prop_map(Prim::Str),
    ]
}

proptest! {
    #[test]
    fn payloads_round_trip(
        id in any::<u64>(),
        prims in proptest::collection::vec(prim(), 0..8),
        version in any::<u16>(),
    ) {
        let p = with_footer(&module_value(id, &prims), version);
        prop_assert_eq!(checked_version(&p), Ok(version));
        prop_assert_eq!(primitives(body(&p).unwrap()), Ok((id, prims)));
    }

    /// Any change to a payload is caught by the checksum, and any body,
    /// however corrupt, decodes to an error or to primitives that encode
    /// back to a body decoding to the same.
    #[test]
    fn corrupt_payloads_are_refused_without_panic(
        prims in proptest::collection::vec(prim(), 0..6),
        at in any::<prop::sample::Index>(),
        flip in 1..=255u8,
        cut in any::<prop::sample::Index>(),
    ) {
        let good = with_footer(&module_value(BF_ID, &prims), 11);
        let mut bad = good.clone();
        bad[at.index(good.len())] ^= flip;
        prop_assert!(checked_version(&bad).is_err());
        let body = body(&bad).unwrap();
        let body = &body[..cut.index(body.len() + 1)];
        if let Ok((id, prims)) = primitives(body) {
            prop_assert_eq!(primitives(&module_value(id, &prims)), Ok((id, prims)));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = checked_version(&bytes);
        if let Ok((id, prims)) = primitives(&bytes) {
            prop_assert_eq!(primitives(&module_value(id, &prims)), Ok((id, prims)));
        }
    }
}
