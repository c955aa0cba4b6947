//! Building and inspecting `DUMP` / `RESTORE` payloads of module values, for
//! tests that need crafted (malformed) RDB values.
//!
//! Payload layout (Redis `DUMP`): object type byte (`RDB_TYPE_MODULE_2` = 7),
//! the module id as an RDB length, the module's primitives each prefixed by
//! its opcode (2 unsigned as RDB length, 4 double as 8 bytes LE, 5 string as
//! RDB string), the EOF opcode 0, then a 2-byte little-endian RDB version and
//! the CRC64 (Jones, reflected) of everything before, 8 bytes little-endian.
//! Strings are always written raw (never LZF / integer encoded); the loader
//! accepts that form, and a server with `rdbcompression no` produces it too
//! for binary data.

/// RDB module id of `MBbloom--` with encoding version 4.
pub const BF_MODULE_ID: u64 = 0x3016e5a289bef804;
/// RDB module id of `MBbloomCF` with encoding version 4.
pub const CF_MODULE_ID: u64 = 0x3016e5a289821404;
/// RDB module id of `CMSk-TYPE` with encoding version 0.
pub const CMS_MODULE_ID: u64 = 0x08c4a4f9360f1000;
/// RDB module id of `TopK-TYPE` with encoding version 0.
pub const TOPK_MODULE_ID: u64 = 0x4e8a4af9360f1000;

const RDB_TYPE_MODULE_2: u8 = 7;
const OPCODE_EOF: u8 = 0;
const OPCODE_UINT: u8 = 2;
const OPCODE_DOUBLE: u8 = 4;
const OPCODE_STRING: u8 = 5;

/// One module I/O primitive.
#[derive(Debug, Clone, PartialEq)]
pub enum Prim {
    U(u64),
    D(f64),
    S(Vec<u8>),
}

/// Redis' crc64: Jones polynomial, reflected, init 0, no final xor.
pub fn crc64(data: &[u8]) -> u64 {
    const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;
    let mut crc = 0u64;
    for &b in data {
        crc ^= u64::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// RDB length encoding (`rdbSaveLen`).
pub fn rdb_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// The payload body (everything before the footer) of a module value.
pub fn module_value(module_id: u64, prims: &[Prim]) -> Vec<u8> {
    let mut out = vec![RDB_TYPE_MODULE_2];
    rdb_len(&mut out, module_id);
    for p in prims {
        match p {
            Prim::U(v) => {
                out.push(OPCODE_UINT);
                rdb_len(&mut out, *v);
            }
            Prim::D(v) => {
                out.push(OPCODE_DOUBLE);
                out.extend_from_slice(&v.to_le_bytes());
            }
            Prim::S(s) => {
                out.push(OPCODE_STRING);
                rdb_len(&mut out, s.len() as u64);
                out.extend_from_slice(s);
            }
        }
    }
    out.push(OPCODE_EOF);
    out
}

/// Appends the RDB version and CRC64 footer to `body`.
pub fn with_footer(body: &[u8], rdb_version: u16) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&rdb_version.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
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
    let n = payload.len();
    n >= 10 && {
        let (data, crc) = payload.split_at(n - 8);
        crc64(data).to_le_bytes() == crc
    }
}

/// Rewrites the CRC64 footer after `payload` was patched in place.
pub fn fix_crc(payload: &mut [u8]) {
    let n = payload.len();
    assert!(n >= 10, "payload too short: {n} bytes");
    let crc = crc64(&payload[..n - 8]);
    payload[n - 8..].copy_from_slice(&crc.to_le_bytes());
}

/// The primitives of an uncompressed module-value payload, with its module
/// id (panics on LZF / integer-encoded strings: dump with `rdbcompression no`).
pub fn parse(payload: &[u8]) -> (u64, Vec<Prim>) {
    let mut r = Reader(payload);
    assert_eq!(r.byte(), RDB_TYPE_MODULE_2, "not a module value");
    let id = r.len();
    let mut prims = Vec::new();
    loop {
        match r.byte() {
            OPCODE_EOF => break,
            OPCODE_UINT => prims.push(Prim::U(r.len())),
            OPCODE_DOUBLE => {
                let b: [u8; 8] = r.take(8).try_into().unwrap();
                prims.push(Prim::D(f64::from_le_bytes(b)));
            }
            OPCODE_STRING => {
                let first = r.0[0];
                assert!(
                    first >> 6 != 3,
                    "encoded string: dump with rdbcompression no"
                );
                let n = r.len() as usize;
                prims.push(Prim::S(r.take(n).to_vec()));
            }
            op => panic!("unknown module opcode {op}"),
        }
    }
    assert_eq!(r.0.len(), 10, "trailing bytes before the footer");
    (id, prims)
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    fn byte(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn len(&mut self) -> u64 {
        let b = self.byte();
        match b >> 6 {
            0 => u64::from(b & 0x3f),
            1 => (u64::from(b & 0x3f) << 8) | u64::from(self.byte()),
            _ if b == 0x80 => u64::from(u32::from_be_bytes(self.take(4).try_into().unwrap())),
            _ if b == 0x81 => u64::from_be_bytes(self.take(8).try_into().unwrap()),
            _ => panic!("unsupported length byte {b:#x}"),
        }
    }
}
