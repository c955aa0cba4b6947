//! The DUMP payload codec (`rsbloom_core::dump`) over arbitrary bytes.

use rsbloom_core::cms::{CellSize, CountMinSketch, ENCODING_VERSION};
use rsbloom_core::dump::{self, Prim};
use rsbloom_core::rdb::Primitive;
use rsbloom_core::topk::TopK;

/// Decodes the input as a payload and as a module-value body: errors are
/// fine, panics are not; what decodes encodes back to the same primitives
/// under a footer that checks.
pub fn dump_payload(data: &[u8]) {
    let checked = dump::checked_version(data);
    let Ok(body) = dump::body(data) else {
        assert!(checked.is_err());
        return;
    };
    let Ok((id, prims)) = dump::primitives(body) else {
        return;
    };
    let again = dump::with_footer(&dump::module_value(id, &prims), 12);
    assert_eq!(dump::checked_version(&again), Ok(12));
    let back = dump::body(&again).and_then(dump::primitives);
    assert_eq!(back, Ok((id, prims)));
}

fn payload(id: u64, saved: &[Primitive]) -> Vec<u8> {
    let prims: Vec<Prim> = saved
        .iter()
        .map(|p| match p {
            Primitive::Unsigned(v) => Prim::Int(*v),
            Primitive::Double(v) => Prim::Double(v.to_bits()),
            Primitive::Buffer(b) => Prim::Str(b.clone()),
        })
        .collect();
    dump::with_footer(&dump::module_value(id, &prims), 11)
}

/// Payloads as the module writes them, and one with LZF and integer strings.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut t = TopK::new(3, 8, 7, 0.9).unwrap();
    let mut c = CountMinSketch::new(8, 3, CellSize::Four).unwrap();
    for i in 0..50u32 {
        let item = format!("i{}", i % 7);
        t.add(item.as_bytes(), 1).unwrap();
        let _ = c.increment(item.as_bytes(), 2);
    }
    let (mut topk, mut cms) = (Vec::new(), Vec::new());
    t.rdb_save(&mut topk);
    c.rdb_save(&mut cms, ENCODING_VERSION);
    let mut packed = dump::module_value(rsbloom_core::topk::TYPE.current_id(), &[]);
    packed.pop();
    packed.extend_from_slice(b"\x05\xc3\x0d\x11\x05hello \xc0\x05\x02llo\x05\xc0\x0c\0");
    vec![
        (
            "dump_payload",
            payload(rsbloom_core::topk::TYPE.current_id(), &topk),
        ),
        (
            "dump_payload",
            payload(rsbloom_core::cms::TYPE.current_id(), &cms),
        ),
        ("dump_payload", dump::with_footer(&packed, 10)),
    ]
}
