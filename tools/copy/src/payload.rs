//! `DUMP` payloads of module values (the codec: `rsbloom_core::dump`),
//! checked, moved to another RDB version, an older encoding, and compared
//! whatever their string encoding.

use rsbloom_core::dump::{self, read_prim, DumpError, FOOTER};
pub use rsbloom_core::dump::{primitives, Prim};
use rsbloom_core::module_type::AddedField;
use rsbloom_core::ModuleType;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    Dump(DumpError),
    /// The value needs its newer encoding: `what` is `value`, the older
    /// encoding only holds `legacy`.
    NoOlderForm {
        what: &'static str,
        value: u64,
        legacy: u64,
    },
}

impl From<DumpError> for PayloadError {
    fn from(e: DumpError) -> Self {
        PayloadError::Dump(e)
    }
}

impl std::fmt::Display for PayloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PayloadError::Dump(e) => e.fmt(f),
            PayloadError::NoOlderForm {
                what,
                value,
                legacy,
            } => write!(
                f,
                "{what} {value}: the encoding the target reads holds {what} {legacy} only"
            ),
        }
    }
}

/// A checked payload: its body and the RDB version it carries.
pub struct Payload {
    bytes: Vec<u8>,
}

impl Payload {
    /// Checks the footer's CRC64 and that the body is a module value.
    pub fn new(bytes: Vec<u8>) -> Result<Payload, PayloadError> {
        dump::checked_version(&bytes)?;
        match bytes[0] {
            dump::RDB_TYPE_MODULE_2 => Ok(Payload { bytes }),
            t => Err(DumpError::NotModule(t).into()),
        }
    }

    pub fn body(&self) -> &[u8] {
        &self.bytes[..self.bytes.len() - FOOTER]
    }

    pub fn rdb_version(&self) -> u16 {
        let n = self.bytes.len() - FOOTER;
        u16::from_le_bytes([self.bytes[n], self.bytes[n + 1]])
    }

    /// The module type of the value: its name and encoding version.
    pub fn module_type(&self) -> Result<(String, u16), PayloadError> {
        let id = dump::module_header(&mut self.body())?;
        Ok(rsbloom_core::module_type::decode_id(id))
    }

    /// Rewrites the footer for `rdb_version` with a fresh CRC64: the form a
    /// server of that version verifies and restores (in place: values can
    /// be hundreds of MiB).
    pub fn set_version(&mut self, rdb_version: u16) {
        // A checked payload is longer than its footer.
        let _ = dump::set_footer(&mut self.bytes, rdb_version);
    }

    /// The whole payload, footer included.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Rewrites a value of `added`'s encoding (or later) in the encoding
    /// before it: the field dropped, the module id's encoding version one
    /// below, a fresh footer. Refused (`NoOlderForm`) unless the field holds
    /// its legacy value; a value already older is left as it is. In place:
    /// a Count-Min Sketch can be hundreds of MiB.
    pub fn downgrade(&mut self, added: &AddedField) -> Result<(), PayloadError> {
        let (id, span, value) = locate(self.body(), added.prim)?;
        if id & 1023 < u64::from(added.since) {
            return Ok(());
        }
        match value {
            Some(v) if v == added.legacy => {}
            Some(value) => {
                return Err(PayloadError::NoOlderForm {
                    what: added.what,
                    value,
                    legacy: added.legacy,
                })
            }
            None => return Err(DumpError::Malformed("the added field is not an integer").into()),
        }
        // Module ids are above 2^32: always the 9-byte RDB length form.
        if self.bytes.get(1) != Some(&0x81) {
            return Err(DumpError::Malformed("module id not in 8 bytes").into());
        }
        let older = (id & !1023) | u64::from(added.since - 1);
        self.bytes[2..10].copy_from_slice(&older.to_be_bytes());
        self.bytes.drain(span);
        self.set_version(self.rdb_version());
        Ok(())
    }

    /// Same module value: identical bytes, or the same primitives once
    /// strings are decoded (the servers' `rdbcompression` may differ), an
    /// older encoding read as the newer one, and the `volatile` bytes that
    /// each writer fills in its own way masked.
    pub fn same_value(&self, other: &Payload, family: &ModuleType) -> Result<bool, PayloadError> {
        if self.body() == other.body() {
            return Ok(true);
        }
        let canonical = |p: &Payload| -> Result<(u64, Vec<Prim>), PayloadError> {
            let (mut id, mut prims) = primitives(p.body())?;
            if let Some(a) = family.added.filter(|a| id & 1023 < u64::from(a.since)) {
                prims.insert(a.prim.min(prims.len()), Prim::Int(a.legacy));
                id = (id & !1023) | u64::from(a.since);
            }
            if let Some(v) = &family.volatile {
                if let Some(Prim::Str(s)) = prims.get_mut(v.prim) {
                    for record in s.chunks_mut(v.record.max(1)) {
                        if let Some(b) = record.get_mut(v.bytes.clone()) {
                            b.fill(0);
                        }
                    }
                }
            }
            Ok((id, prims))
        };
        Ok(canonical(self)? == canonical(other)?)
    }
}

/// The module id of a body, the byte range of its primitive `index` (opcode
/// included; empty at the end of the value) and that primitive's value if
/// it is an integer.
fn locate(
    body: &[u8],
    index: usize,
) -> Result<(u64, std::ops::Range<usize>, Option<u64>), PayloadError> {
    let mut r = body;
    let id = dump::module_header(&mut r)?;
    for _ in 0..index {
        read_prim(&mut r)?;
    }
    let start = body.len() - r.len();
    let value = match read_prim(&mut r)? {
        Some(Prim::Int(n)) => Some(n),
        _ => None,
    };
    Ok((id, start..body.len() - r.len(), value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsbloom_core::module_type::Volatile;

    /// RDB module id of `MBbloom--`, encoding version 4 (testkit/src/dump.rs).
    const BF_ID: u64 = 0x3016e5a289bef804;
    const TOPK_ID: u64 = 0x4e8a4af9360f1000;

    fn body(id: u64, rest: &[u8]) -> Vec<u8> {
        let mut b = vec![7, 0x81];
        b.extend_from_slice(&id.to_be_bytes());
        b.extend_from_slice(rest);
        b
    }

    fn payload(body: &[u8], version: u16) -> Vec<u8> {
        dump::with_footer(body, version)
    }

    #[test]
    fn footer_is_checked_and_rewritten() {
        let b = body(BF_ID, &[2, 5, 0]);
        let mut p = Payload::new(payload(&b, 12)).unwrap();
        assert_eq!((p.rdb_version(), p.body()), (12, &b[..]));
        assert_eq!(p.module_type().unwrap(), ("MBbloom--".into(), 4));
        p.set_version(80);
        assert_eq!(p.bytes(), payload(&b, 80));
        assert_eq!(dump::checked_version(p.bytes()), Ok(80));
        let mut bad = p.bytes().to_vec();
        bad[3] ^= 1;
        assert_eq!(
            Payload::new(bad).err(),
            Some(PayloadError::Dump(DumpError::Checksum))
        );
        assert_eq!(
            Payload::new(vec![0; 10]).err(),
            Some(PayloadError::Dump(DumpError::TooShort))
        );
        assert_eq!(
            Payload::new(payload(b"\x00\x03abc", 10)).err(),
            Some(PayloadError::Dump(DumpError::NotModule(0)))
        );
    }

    #[test]
    fn values_compare_through_string_encodings() {
        // The string "hello hello hello" raw, and LZF-compressed; the
        // string "12" raw and integer-encoded (int8).
        let raw = body(
            TOPK_ID,
            b"\x05\x11hello hello hello\x05\x0212\x04\0\0\0\0\0\0\xf0\x3f\0",
        );
        let lzf = body(
            TOPK_ID,
            b"\x05\xc3\x0d\x11\x05hello \xc0\x05\x02llo\x05\xc0\x0c\x04\0\0\0\0\0\0\xf0\x3f\0",
        );
        let (a, b) = (
            Payload::new(payload(&raw, 10)).unwrap(),
            Payload::new(payload(&lzf, 11)).unwrap(),
        );
        assert_ne!(a.body(), b.body());
        let topk = crate::family::by_type("TopK-TYPE").unwrap();
        let masked = |volatile| ModuleType {
            volatile,
            ..topk.clone()
        };
        assert!(a.same_value(&b, &masked(None)).unwrap());
        let other = body(
            TOPK_ID,
            b"\x05\x11hello hello hellO\x05\x0212\x04\0\0\0\0\0\0\xf0\x3f\0",
        );
        let other = Payload::new(payload(&other, 10)).unwrap();
        assert!(!a.same_value(&other, &masked(None)).unwrap());
        // The difference is byte 16: byte 0 of the third 8-byte record.
        let mask = Volatile {
            prim: 0,
            record: 8,
            bytes: 7..8,
        };
        assert!(!a.same_value(&other, &masked(Some(mask))).unwrap());
        let mask = Volatile {
            prim: 0,
            record: 8,
            bytes: 0..1,
        };
        assert!(a.same_value(&other, &masked(Some(mask))).unwrap());
        assert_eq!(
            primitives(&raw).unwrap().1,
            vec![
                Prim::Str(b"hello hello hello".to_vec()),
                Prim::Str(b"12".to_vec()),
                Prim::Double(1f64.to_bits())
            ]
        );
    }

    /// `CMS.INITBYDIM c 4 2`, `CMS.INCRBY c foo 3 bar 1` in encoding 1
    /// with `cells` (cell size, counters string), as docs/cms.md §6.1.
    fn cms_v1(cells: &[u8]) -> Payload {
        let mut rest = b"\x02\x04\x02\x02\x02\x04".to_vec();
        rest.extend_from_slice(cells);
        rest.push(0);
        Payload::new(payload(&body(CMS_ID | 1, &rest), 10)).unwrap()
    }

    const CMS_ID: u64 = 0x08c4a4f9360f1000;
    const CMS_CELLS: &[u8] = b"\x05\x20\0\0\0\0\x03\0\0\0\0\0\0\0\x01\0\0\0\
        \0\0\0\0\x01\0\0\0\x03\0\0\0\0\0\0\0";

    #[test]
    fn cms_encoding_1_goes_back_to_encoding_0() {
        let cms = crate::family::by_type("CMSk-TYPE").unwrap();
        let added = cms.added.unwrap();
        let mut four = b"\x02\x04".to_vec();
        four.extend_from_slice(CMS_CELLS);
        let v1 = cms_v1(&four);
        let mut p = cms_v1(&four);
        p.downgrade(&added).unwrap();
        // Byte for byte the encoding-0 DUMP of docs/cms.md §6.1.
        let mut want = vec![7, 0x81, 0x08, 0xc4, 0xa4, 0xf9, 0x36, 0x0f, 0x10, 0x00];
        want.extend_from_slice(b"\x02\x04\x02\x02\x02\x04");
        want.extend_from_slice(CMS_CELLS);
        want.extend_from_slice(&[0, 0x0a, 0, 0xd9, 0xc7, 0x79, 0xe5, 0x1e, 0xa2, 0xca, 0x6c]);
        assert_eq!(p.bytes(), want);
        assert_eq!(p.module_type().unwrap(), ("CMSk-TYPE".into(), 0));
        // Already encoding 0: unchanged.
        p.downgrade(&added).unwrap();
        assert_eq!(p.bytes(), want);
        // The two encodings hold the same value; another total differs.
        assert!(p.same_value(&v1, cms).unwrap() && v1.same_value(&p, cms).unwrap());
        let mut other = want.clone();
        other[15] = 5;
        let other = Payload::new(payload(&other[..other.len() - 10], 10)).unwrap();
        assert!(!other.same_value(&v1, cms).unwrap());
    }

    #[test]
    fn cms_cells_other_than_4_bytes_have_no_encoding_0() {
        let added = crate::family::by_type("CMSk-TYPE").unwrap().added.unwrap();
        let mut p = cms_v1(b"\x02\x01\x05\x08\x00\x03\x00\x01\x00\x01\x03\x00");
        let before = p.bytes().to_vec();
        let e = p.downgrade(&added).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cell size 1: the encoding the target reads holds cell size 4 only"
        );
        assert_eq!(p.bytes(), before);
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        let good = body(BF_ID, b"\x02\x40\x01\x05\x03abc\x00");
        assert!(primitives(&good).is_ok());
        for n in 0..good.len() {
            assert!(primitives(&good[..n]).is_err(), "prefix {n}");
            assert!(locate(&good[..n], 2).is_err(), "prefix {n}");
        }
    }
}
