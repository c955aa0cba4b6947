use super::*;
use std::collections::BTreeMap;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rdb/");

/// The files of `core/tests/data/rdb/make.sh` and the version each server writes.
const FILES: &[(&str, u32)] = &[
    ("redis-7.0", 10),
    ("valkey-8.0", 11),
    ("redis-8.0", 12),
    ("redis-8.6", 13),
    ("valkey-9.1", 80),
];

fn names() -> impl Iterator<Item = (String, u32)> {
    FILES.iter().flat_map(|&(server, version)| {
        ["on", "off"].map(|mode| (format!("{server}-{mode}"), version))
    })
}

fn file(name: &str) -> Vec<u8> {
    std::fs::read(format!("{DATA}{name}.rdb")).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// What the server said of each key: (db, key) -> (PEXPIRETIME, DUMP).
fn expected(name: &str) -> BTreeMap<(u64, Vec<u8>), (i64, Vec<u8>)> {
    std::fs::read_to_string(format!("{DATA}{name}.keys"))
        .unwrap()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            let key = (f[0].parse().unwrap(), unhex(f[1]));
            (key, (f[2].parse().unwrap(), unhex(f[3])))
        })
        .collect()
}

/// Every entry of a file, values read.
fn read_all(bytes: &[u8]) -> Result<Vec<(KeyHeader, Vec<u8>)>, RdbError> {
    let mut r = RdbReader::new(bytes)?;
    let mut out = Vec::new();
    while let Some(h) = r.next_key()? {
        let v = r.read_value()?;
        out.push((h, v));
    }
    Ok(out)
}

#[test]
fn every_key_of_every_server_is_read_exactly_as_dump_writes_it() {
    for (name, version) in names() {
        let bytes = file(&name);
        assert_eq!(
            RdbReader::new(&bytes[..]).unwrap().version(),
            version,
            "{name}"
        );
        let mut want = expected(&name);
        let entries = read_all(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(entries.len(), want.len(), "{name}");
        let mut offsets = Vec::new();
        for (h, value) in entries {
            let what = format!("{name} db {} key {}", h.db, h.key.escape_ascii());
            let (expire, dump) = want.remove(&(h.db, h.key.clone())).expect(&what);
            assert_eq!(h.expire_ms.unwrap_or(-1), expire, "{what}");
            assert_eq!(value, dump::body(&dump).unwrap(), "{what}");
            assert_eq!(h.type_byte, dump[0], "{what}");
            let name_of = type_name(h.type_byte, version);
            assert_ne!(name_of, "unknown", "{what}");
            match &h.module {
                Some(m) => {
                    let raw = dump::module_header(&mut &dump[..]).unwrap();
                    assert_eq!(m.raw, raw, "{what}");
                    assert!(crate::TYPES.iter().any(|t| t.name() == m.name), "{what}");
                    assert_eq!(name_of, "module");
                }
                None => assert_ne!(h.type_byte, dump::RDB_TYPE_MODULE_2, "{what}"),
            }
            offsets.push(h.offset);
        }
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{name}");
    }
}

#[test]
fn skipping_measures_what_reading_returns() {
    for (name, _) in names() {
        let bytes = file(&name);
        let read: Vec<usize> = read_all(&bytes)
            .unwrap()
            .iter()
            .map(|(_, v)| v.len())
            .collect();
        let mut r = RdbReader::new(&bytes[..]).unwrap();
        let mut skipped = Vec::new();
        while r.next_key().unwrap().is_some() {
            skipped.push(r.skip_value().unwrap() as usize);
        }
        assert_eq!(skipped, read, "{name}");
        assert_eq!(r.offset(), bytes.len() as u64, "{name}");
        // Keys only: next_key skips what was not read.
        let mut r = RdbReader::new(&bytes[..]).unwrap();
        let mut n = 0;
        while r.next_key().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, read.len(), "{name}");
        assert_eq!(r.next_key(), Ok(None));
        assert_eq!(r.read_value().unwrap_err().kind, RdbErrorKind::NoValue);
    }
}

#[test]
fn a_wrong_checksum_is_named_and_a_zero_one_is_accepted() {
    let mut bytes = file("valkey-9.1-on");
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    let e = read_all(&bytes).unwrap_err();
    assert!(matches!(e.kind, RdbErrorKind::Checksum { .. }), "{e}");
    assert_eq!(e.offset, n as u64);
    let off = file("valkey-9.1-off");
    assert_eq!(off[off.len() - 8..], [0; 8]);
    read_all(&off).unwrap();
}

/// The files whose every prefix and every bit is tried.
const ABUSED: &[&str] = &["redis-8.6-on", "valkey-9.1-off"];

#[test]
fn every_truncation_is_an_error_naming_an_offset_inside() {
    for name in ABUSED {
        let bytes = file(name);
        for cut in 0..bytes.len() {
            let e = read_all(&bytes[..cut]).expect_err(&format!("{name} cut at {cut}"));
            assert!(e.offset <= cut as u64, "{name} cut at {cut}: {e}");
            assert!(e.to_string().starts_with(&format!("offset {}", e.offset)));
        }
    }
}

/// One bit of every byte (which bit turns with the position; the fuzz
/// target `rdb_file` tries the rest).
#[test]
fn a_bit_flip_in_any_byte_is_read_or_refused_without_panic() {
    for name in ABUSED {
        let bytes = file(name);
        let mut errors = 0;
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 1 << (i % 8);
            if let Err(e) = read_all(&b) {
                assert!(e.offset <= b.len() as u64, "{name} byte {i}: {e}");
                errors += 1;
            }
        }
        assert!(errors > 0, "{name}");
    }
}

#[test]
fn an_error_inside_a_value_names_its_key() {
    let bytes = file("redis-7.0-off");
    let mut r = RdbReader::new(&bytes[..]).unwrap();
    let h = r.next_key().unwrap().unwrap();
    let end = r.offset() + 1;
    let e = read_all(&bytes[..end as usize]).unwrap_err();
    assert_eq!(e.key.as_deref(), Some(&h.key[..]));
    assert_eq!(e.kind, RdbErrorKind::Truncated);
    assert!(
        e.to_string()
            .contains(&format!("key '{}'", h.key.escape_ascii())),
        "{e}"
    );
    // And the reader stays stopped.
    let mut r = RdbReader::new(&bytes[..end as usize]).unwrap();
    r.next_key().unwrap();
    r.read_value().unwrap_err();
    assert_eq!(r.next_key().unwrap_err().kind, RdbErrorKind::Failed);
}

/// A file of `version` holding `entry` (type, key, value), then EOF.
fn synthetic(magic: &str, entry: &[u8]) -> Vec<u8> {
    let mut f = magic.as_bytes().to_vec();
    f.extend_from_slice(entry);
    f.push(opcode::EOF);
    let crc = dump::crc64(&f);
    f.extend_from_slice(&crc.to_le_bytes());
    f
}

#[test]
fn lengths_the_file_cannot_back_are_errors_not_allocations() {
    let huge = [0x81, 0x10, 0, 0, 0, 0, 0, 0, 0];
    // A string of 2^60 bytes, then a list of 2^60 strings (the first
    // string is the EOF opcode: no known string encoding).
    for (ty, kind) in [
        (0u8, RdbErrorKind::Truncated),
        (1, RdbErrorKind::Malformed("unknown string encoding")),
    ] {
        let mut entry = vec![ty, 1, b'k'];
        entry.extend_from_slice(&huge);
        let e = read_all(&synthetic("REDIS0011", &entry)).unwrap_err();
        assert_eq!(e.kind, kind, "{e}");
        assert_eq!(e.key.as_deref(), Some(&b"k"[..]));
    }
    // A key of 2^60 bytes.
    let mut entry = vec![0u8];
    entry.extend_from_slice(&huge);
    assert_eq!(
        read_all(&synthetic("REDIS0011", &entry)).unwrap_err().kind,
        RdbErrorKind::Truncated
    );
}

#[test]
fn versions_and_signatures() {
    for ok in [
        "REDIS0001",
        "REDIS0009",
        "REDIS0012",
        "REDIS0013",
        "VALKEY080",
    ] {
        assert_eq!(read_all(&synthetic(ok, &[])).unwrap().len(), 0, "{ok}");
    }
    for (bad, kind) in [
        ("REDIS0014", RdbErrorKind::Version(14)),
        ("REDIS0080", RdbErrorKind::Version(80)),
        ("VALKEY011", RdbErrorKind::Version(11)),
        ("VALKEY081", RdbErrorKind::Version(81)),
        ("REDIS00x1", RdbErrorKind::Version(1)),
        ("MEMCACHED", RdbErrorKind::NotRdb),
        ("REDIS", RdbErrorKind::NotRdb),
    ] {
        let e = RdbReader::new(bad.as_bytes()).err().unwrap();
        assert_eq!(e.kind, kind, "{bad}");
    }
    let e = RdbReader::new(&b"REDIS0014"[..]).err().unwrap();
    assert_eq!(
        e.to_string(),
        "offset 9: RDB version 14 not supported (1 to 13 with the REDIS signature, 80 with VALKEY)"
    );
}

#[test]
fn old_and_rare_layouts() {
    // ZSET with text scores (a number, NaN, +inf), LIST of strings, then
    // a type 6 module value, refused.
    let zset = [
        3, 1, b'z', 3, 1, b'a', 3, b'1', b'.', b'5', 1, b'b', 253, 1, b'c', 254,
    ];
    let list = [1, 1, b'l', 2, 1, b'x', 0xc0, 7];
    let mut entries = zset.to_vec();
    entries.extend_from_slice(&list);
    let got = read_all(&synthetic("REDIS0006", &entries)).unwrap();
    assert_eq!(got[0].1, [&zset[..1], &zset[3..]].concat());
    assert_eq!(got[1].1, [&list[..1], &list[3..]].concat());
    let e = read_all(&synthetic("REDIS0011", &[6, 1, b'm', 0])).unwrap_err();
    assert!(matches!(e.kind, RdbErrorKind::Unsupported(_)), "{e}");
    // Redis 8.6's key metadata: part of the value, before its type.
    let meta = [opcode::KEY_META_OR_SLOT_IMPORT, 1, 1, 2, 3, 4, 2, 9, 0];
    let entry = [&meta[..], &[0, 1, b'k', 1, b'v']].concat();
    let got = read_all(&synthetic("REDIS0013", &entry)).unwrap();
    assert_eq!(got[0].0.key, b"k");
    assert_eq!(got[0].0.type_byte, 0);
    assert_eq!(got[0].1, [&meta[..], &[0, 1, b'v']].concat());
    // Opcode 243 is Valkey's slot import state: skipped.
    let import = [243, 2, b'j', b'b', 1, 0, 5];
    let entry = [&import[..], &[0, 1, b'k', 1, b'v']].concat();
    assert_eq!(
        read_all(&synthetic("VALKEY080", &entry)).unwrap()[0].1,
        [0, 1, b'v']
    );
    // Cluster slot sizes and module aux data (id, `when`, primitives) are
    // skipped; aux data without its `when` is refused.
    let slot_info = [opcode::SLOT_INFO, 0x40, 0x10, 3, 1];
    let aux = [opcode::MODULE_AUX, 0x40, 0x10, 2, 1, 5, 2, b'h', b'i', 0];
    let skipped = [&slot_info[..], &aux, &[0, 1, b'k', 1, b'v']].concat();
    for magic in ["REDIS0012", "VALKEY080"] {
        assert_eq!(
            read_all(&synthetic(magic, &skipped)).unwrap()[0].1,
            [0, 1, b'v']
        );
    }
    let no_when = [opcode::MODULE_AUX, 0x40, 0x10, 1, 1, 0];
    let e = read_all(&synthetic("REDIS0012", &no_when)).unwrap_err();
    assert!(matches!(e.kind, RdbErrorKind::Malformed(_)), "{e}");
    // Before version 13 it is no opcode.
    let e = read_all(&synthetic("REDIS0012", &entry)).unwrap_err();
    assert_eq!(e.kind, RdbErrorKind::UnknownType(243));
}

#[test]
fn type_names_follow_the_version() {
    assert_eq!(type_name(22, 12), "hash");
    assert_eq!(type_name(22, 80), "hash");
    assert_eq!(type_name(26, 13), "stream");
    assert_eq!(type_name(26, 80), "unknown");
    assert_eq!(type_name(21, 11), "stream");
    assert_eq!(type_name(11, 11), "set");
    assert_eq!(type_name(6, 11), "module");
    assert_eq!(type_name(8, 11), "unknown");
}
