//! A streaming reader of RDB files (Redis 7.0–8.6, Valkey 8.0–9.1: RDB
//! versions 10 to 13 and 80, and older): key by key, each value either
//! copied out exactly as serialized (a `DUMP` body) or skipped. Memory is
//! a 64 KiB buffer plus the value asked for, whatever the file size; a
//! length the file cannot back is an error, never an allocation.
//!
//! Layouts from `src/rdb.c` and `src/rdb.h` of Redis 8.6.3 and Valkey
//! 9.1.2. Why not the `rdb` crate: docs/decisions.md.

mod error;
mod source;
mod value;

#[cfg(test)]
mod tests;

pub use error::{RdbError, RdbErrorKind};
pub use value::type_name;

use crate::dump::{self, Input};
use source::Source;
use std::io::Read;
use value::{Kind, FIRST_VALKEY_VERSION};

/// RDB opcodes (`RDB_OPCODE_*`).
mod opcode {
    /// Redis 8.6: key metadata before the type. Valkey 9: slot import state.
    pub const KEY_META_OR_SLOT_IMPORT: u8 = 243;
    pub const SLOT_INFO: u8 = 244;
    pub const FUNCTION2: u8 = 245;
    pub const FUNCTION_PRE_GA: u8 = 246;
    pub const MODULE_AUX: u8 = 247;
    pub const IDLE: u8 = 248;
    pub const FREQ: u8 = 249;
    pub const AUX: u8 = 250;
    pub const RESIZEDB: u8 = 251;
    pub const EXPIRETIME_MS: u8 = 252;
    pub const EXPIRETIME: u8 = 253;
    pub const SELECTDB: u8 = 254;
    pub const EOF: u8 = 255;
}

/// The newest version with the `REDIS` signature (Redis 8.6).
const LAST_REDIS_VERSION: u32 = 13;
/// The first version with a checksum after the EOF opcode.
const FIRST_CHECKSUM_VERSION: u32 = 5;

/// The module that wrote a module value, from its 64-bit id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleId {
    /// The type name (9 characters), e.g. `MBbloom--`.
    pub name: String,
    /// The encoding version (the id's low 10 bits).
    pub encver: u16,
    pub raw: u64,
}

/// A key of the file, its value not read yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHeader {
    pub db: u64,
    pub key: Vec<u8>,
    /// Absolute expiry, Unix milliseconds.
    pub expire_ms: Option<i64>,
    /// The RDB object type (`RDB_TYPE_*`; its meaning depends on the version: [`type_name`]).
    pub type_byte: u8,
    /// For module values (type 7): whose, read ahead from the value.
    pub module: Option<ModuleId>,
    /// File offset of the entry (its first opcode: expiry, LRU/LFU or type).
    pub offset: u64,
}

/// The value the last [`KeyHeader`] announced: its layout, its key (for
/// errors), and the bytes of it already consumed (key metadata, type
/// byte, module id).
struct Pending {
    kind: Kind,
    key: Vec<u8>,
    head: Vec<u8>,
}

enum State {
    /// Before an entry.
    Entries,
    Value(Pending),
    Done,
    Failed,
}

/// Reads an RDB file from any byte source (a file, standard input, a
/// socket), front to back; wrap slow sources in nothing, it buffers.
pub struct RdbReader<R: Read> {
    src: Source<R>,
    version: u32,
    db: u64,
    state: State,
}

impl<R: Read> RdbReader<R> {
    /// Reads the signature (`REDIS` and 4 digits, or `VALKEY` and 3) and
    /// the version: 1 to 13 after `REDIS`, 80 after `VALKEY`.
    pub fn new(input: R) -> Result<Self, RdbError> {
        let mut src = Source::new(input);
        let fail = |src: &mut Source<R>, kind| RdbError {
            offset: src.offset(),
            key: None,
            kind,
        };
        let magic: [u8; 9] = match src.array() {
            Ok(m) => m,
            Err(e) => {
                let kind = match src.lift(e) {
                    RdbErrorKind::Truncated => RdbErrorKind::NotRdb,
                    other => other,
                };
                return Err(RdbError {
                    offset: 0,
                    key: None,
                    kind,
                });
            }
        };
        let version = match magic.split_at(5) {
            (b"REDIS", digits) => {
                parse_version(digits).filter(|v| (1..=LAST_REDIS_VERSION).contains(v))
            }
            _ => match magic.split_at(6) {
                (b"VALKEY", digits) => parse_version(digits).filter(|&v| v == FIRST_VALKEY_VERSION),
                _ => return Err(fail(&mut src, RdbErrorKind::NotRdb)),
            },
        };
        let Some(version) = version else {
            let found = magic
                .iter()
                .skip(5)
                .filter(|b| b.is_ascii_digit())
                .fold(0u32, |v, b| {
                    v.saturating_mul(10).saturating_add(u32::from(b - b'0'))
                });
            return Err(fail(&mut src, RdbErrorKind::Version(found)));
        };
        Ok(RdbReader {
            src,
            version,
            db: 0,
            state: State::Entries,
        })
    }

    /// The file's RDB version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.src.offset()
    }

    /// The next key (its value not read yet), or `None` after the EOF
    /// opcode, once the file's CRC64 is checked (a zero checksum means
    /// written without `rdbchecksum`). A value not read is skipped.
    pub fn next_key(&mut self) -> Result<Option<KeyHeader>, RdbError> {
        match self.state {
            State::Failed => return Err(self.error(None, RdbErrorKind::Failed)),
            State::Done => return Ok(None),
            State::Value(_) => {
                self.skip_value()?;
            }
            State::Entries => {}
        }
        match self.entry() {
            Ok(header) => Ok(header),
            Err(kind) => {
                self.state = State::Failed;
                Err(self.error(None, kind))
            }
        }
    }

    /// The value of the key just returned, exactly as serialized, type
    /// byte first (after key metadata, if any): a `DUMP` body, to which
    /// [`dump::with_footer`] adds the footer of a payload.
    pub fn read_value(&mut self) -> Result<Vec<u8>, RdbError> {
        let pending = self.pending()?;
        let Pending { kind, key, head } = pending;
        self.src.start_record(head);
        let walked = value::skip(&mut self.src, kind);
        let bytes = self.src.stop_record();
        self.finish(walked, key)?;
        Ok(bytes)
    }

    /// Skips the value of the key just returned, holding none of it;
    /// returns its length (that of [`read_value`](Self::read_value)).
    pub fn skip_value(&mut self) -> Result<u64, RdbError> {
        let Pending { kind, key, head } = self.pending()?;
        let start = self.src.offset();
        let walked = value::skip(&mut self.src, kind);
        let length = head.len() as u64 + (self.src.offset() - start);
        self.finish(walked, key)?;
        Ok(length)
    }

    fn pending(&mut self) -> Result<Pending, RdbError> {
        match std::mem::replace(&mut self.state, State::Entries) {
            State::Value(p) => Ok(p),
            State::Failed => {
                self.state = State::Failed;
                Err(self.error(None, RdbErrorKind::Failed))
            }
            other => {
                self.state = other;
                Err(self.error(None, RdbErrorKind::NoValue))
            }
        }
    }

    fn finish(&mut self, walked: Result<(), RdbErrorKind>, key: Vec<u8>) -> Result<(), RdbError> {
        walked.map_err(|kind| {
            self.state = State::Failed;
            self.error(Some(key), kind)
        })
    }

    fn error(&self, key: Option<Vec<u8>>, kind: RdbErrorKind) -> RdbError {
        RdbError {
            offset: self.src.offset(),
            key,
            kind,
        }
    }

    /// Reads opcodes up to and including the next key, or the EOF opcode.
    fn entry(&mut self) -> Result<Option<KeyHeader>, RdbErrorKind> {
        let mut expire_ms = None;
        let mut start = None;
        loop {
            let offset = self.src.offset();
            let op = self.byte()?;
            match op {
                opcode::EXPIRETIME_MS => {
                    start.get_or_insert(offset);
                    expire_ms = Some(i64::from_le_bytes(self.array()?));
                }
                opcode::EXPIRETIME => {
                    start.get_or_insert(offset);
                    expire_ms = Some(i64::from(i32::from_le_bytes(self.array()?)) * 1000);
                }
                opcode::FREQ => {
                    start.get_or_insert(offset);
                    self.src.skip(1)?;
                }
                opcode::IDLE => {
                    start.get_or_insert(offset);
                    value::len(&mut self.src)?;
                }
                opcode::SELECTDB => self.db = value::len(&mut self.src)?,
                opcode::RESIZEDB => self.lens(2)?,
                opcode::SLOT_INFO => self.lens(3)?,
                opcode::AUX => {
                    value::string(&mut self.src)?;
                    value::string(&mut self.src)?;
                }
                opcode::MODULE_AUX => {
                    // Module id, `when` as an unsigned primitive, then the data.
                    value::len(&mut self.src)?;
                    if value::len(&mut self.src)? != u64::from(dump::opcode::UINT) {
                        return Err(RdbErrorKind::Malformed(
                            "module aux data without its 'when'",
                        ));
                    }
                    value::len(&mut self.src)?;
                    value::primitives(&mut self.src)?;
                }
                opcode::FUNCTION_PRE_GA => {
                    return Err(RdbErrorKind::Unsupported(
                        "functions of the 7.0 release candidates",
                    ))
                }
                opcode::FUNCTION2 => value::string(&mut self.src)?,
                opcode::KEY_META_OR_SLOT_IMPORT if self.version >= FIRST_VALKEY_VERSION => {
                    // Job name, slot ranges (start, end).
                    value::string(&mut self.src)?;
                    let n = value::len(&mut self.src)?;
                    for _ in 0..n {
                        self.lens(2)?;
                    }
                }
                opcode::KEY_META_OR_SLOT_IMPORT if self.version >= LAST_REDIS_VERSION => {
                    // Classes, each a 4-byte spec and primitives; part of
                    // the value (a `DUMP` body starts with them).
                    self.src.start_record(vec![op]);
                    let meta = self.key_meta();
                    let head = self.src.stop_record();
                    meta?;
                    return self.key(start.unwrap_or(offset), expire_ms, head).map(Some);
                }
                opcode::EOF => {
                    self.end()?;
                    return Ok(None);
                }
                t => {
                    return self
                        .key(start.unwrap_or(offset), expire_ms, vec![t])
                        .map(Some)
                }
            }
        }
    }

    fn key_meta(&mut self) -> Result<(), RdbErrorKind> {
        let n = value::len(&mut self.src)?;
        for _ in 0..n {
            self.src.skip(4)?;
            value::primitives(&mut self.src)?;
        }
        // The type byte.
        self.src.skip(1)
    }

    /// The key after `head` (its last byte the type) and, for a module
    /// value, the module id.
    fn key(
        &mut self,
        offset: u64,
        expire_ms: Option<i64>,
        mut head: Vec<u8>,
    ) -> Result<KeyHeader, RdbErrorKind> {
        let type_byte = head.last().copied().unwrap_or(opcode::EOF);
        let kind =
            value::kind(type_byte, self.version)?.ok_or(RdbErrorKind::UnknownType(type_byte))?;
        let key = self.string()?;
        let mut module = None;
        if kind == Kind::Module {
            self.src.start_record(head);
            let id = value::len(&mut self.src);
            head = self.src.stop_record();
            let raw = id?;
            let (name, encver) = crate::module_type::decode_id(raw);
            module = Some(ModuleId { name, encver, raw });
        }
        self.state = State::Value(Pending {
            kind,
            key: key.clone(),
            head,
        });
        Ok(KeyHeader {
            db: self.db,
            key,
            expire_ms,
            type_byte,
            module,
            offset,
        })
    }

    /// A string decoded (a key): its encoded bytes gathered as they
    /// arrive, then decoded.
    fn string(&mut self) -> Result<Vec<u8>, RdbErrorKind> {
        self.src.start_record(Vec::new());
        let walked = value::string(&mut self.src);
        let raw = self.src.stop_record();
        walked?;
        dump::read_string(&mut raw.as_slice()).map_err(|e| match e {
            dump::DumpError::Malformed(what) => RdbErrorKind::Malformed(what),
            _ => RdbErrorKind::Malformed("string"),
        })
    }

    /// After the EOF opcode: the checksum of everything before it.
    fn end(&mut self) -> Result<(), RdbErrorKind> {
        self.state = State::Done;
        if self.version < FIRST_CHECKSUM_VERSION {
            return Ok(());
        }
        let actual = self.src.checksum();
        let expected = u64::from_le_bytes(self.array()?);
        if expected != 0 && expected != actual {
            return Err(RdbErrorKind::Checksum { expected, actual });
        }
        Ok(())
    }

    fn byte(&mut self) -> Result<u8, RdbErrorKind> {
        self.src.byte().map_err(|e| self.src.lift(e))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbErrorKind> {
        self.src.array().map_err(|e| self.src.lift(e))
    }

    fn lens(&mut self, n: usize) -> Result<(), RdbErrorKind> {
        for _ in 0..n {
            value::len(&mut self.src)?;
        }
        Ok(())
    }
}

/// The version digits after the signature.
fn parse_version(digits: &[u8]) -> Option<u32> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}
