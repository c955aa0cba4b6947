//! `DUMP` / `RESTORE` payloads of module values for tests that need crafted
//! (malformed) RDB values: the codec of `rsbloom_core::dump`, with a short
//! `Prim` to write values in and helpers that panic, as tests may.
//! Strings are written raw (never LZF / integer encoded); the loader
//! accepts that form, and a server with `rdbcompression no` produces it too
//! for binary data.

use rsbloom_core::dump;
pub use rsbloom_core::dump::{crc64, with_footer, write_len as rdb_len};

/// RDB module id of `MBbloom--` with encoding version 4.
pub const BF_MODULE_ID: u64 = rsbloom_core::bloom::TYPE.id(4);
/// RDB module id of `MBbloomCF` with encoding version 4.
pub const CF_MODULE_ID: u64 = rsbloom_core::cuckoo::TYPE.id(4);
/// RDB module id of `CMSk-TYPE` with encoding version 0.
pub const CMS_MODULE_ID: u64 = rsbloom_core::cms::TYPE.id(0);
/// RDB module id of `TopK-TYPE` with encoding version 0.
pub const TOPK_MODULE_ID: u64 = rsbloom_core::topk::TYPE.id(0);

/// One module I/O primitive.
#[derive(Debug, Clone, PartialEq)]
pub enum Prim {
    U(u64),
    D(f64),
    S(Vec<u8>),
}

impl From<&Prim> for dump::Prim {
    fn from(p: &Prim) -> dump::Prim {
        match p {
            Prim::U(v) => dump::Prim::Int(*v),
            Prim::D(v) => dump::Prim::Double(v.to_bits()),
            Prim::S(s) => dump::Prim::Str(s.clone()),
        }
    }
}

/// The payload body (everything before the footer) of a module value.
pub fn module_value(module_id: u64, prims: &[Prim]) -> Vec<u8> {
    let prims: Vec<dump::Prim> = prims.iter().map(Into::into).collect();
    dump::module_value(module_id, &prims)
}

/// A complete RESTORE payload for a module value.
pub fn payload(module_id: u64, prims: &[Prim], rdb_version: u16) -> Vec<u8> {
    with_footer(&module_value(module_id, prims), rdb_version)
}

/// The RDB version in a genuine payload's footer.
pub fn rdb_version(payload: &[u8]) -> u16 {
    let n = payload.len();
    assert!(n >= 10, "payload too short: {n} bytes");
    u16::from_le_bytes([payload[n - 10], payload[n - 9]])
}

/// Whether a payload's CRC64 footer matches its content.
pub fn crc_ok(payload: &[u8]) -> bool {
    dump::checked_version(payload).is_ok()
}

/// Rewrites the CRC64 footer after `payload` was patched in place.
pub fn fix_crc(payload: &mut [u8]) {
    let version = rdb_version(payload);
    dump::set_footer(payload, version).expect("payload longer than its footer");
}

/// The primitives of a module-value payload (footer unchecked), with its
/// module id.
pub fn parse(payload: &[u8]) -> (u64, Vec<Prim>) {
    let body = dump::body(payload).expect("payload longer than its footer");
    let (id, prims) = dump::primitives(body).expect("a module value");
    let prims = prims
        .into_iter()
        .map(|p| match p {
            dump::Prim::Int(v) => Prim::U(v),
            dump::Prim::Double(bits) => Prim::D(f64::from_bits(bits)),
            dump::Prim::Str(s) => Prim::S(s),
            dump::Prim::Float(_) => panic!("no module saves a float"),
        })
        .collect();
    (id, prims)
}
