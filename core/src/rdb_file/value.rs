//! The value types of RDB versions 1 to 13 and 80, and how far each
//! extends: enough to skip or copy a value exactly, nothing decoded.
//! Sources: `rdbLoadObject` of Redis 8.6.3 and Valkey 9.1.2 (`src/rdb.c`).

use super::source::Source;
use super::RdbErrorKind;
use crate::dump::{Input, Len};
use std::io::Read;

/// Where Redis and Valkey part: Valkey 9 (RDB 80) gave type 22 another
/// meaning than Redis 7.4+, and opcode 243.
pub(super) const FIRST_VALKEY_VERSION: u32 = 80;

/// How a value type is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// One string (also the blobs: zipmap, ziplist, intset, listpack).
    String,
    /// A count of strings (`LIST`, `SET`, `LIST_QUICKLIST`).
    Strings,
    /// A count of (member, score as text) (`ZSET`).
    ZsetText,
    /// A count of (member, binary double) (`ZSET_2`).
    Zset2,
    /// A count of (field, value) (`HASH`).
    Hash,
    /// Valkey's `HASH_2`: a count of (field, value, expiry ms).
    HashValkey,
    /// Redis' `HASH_METADATA(_PRE_GA)`: [min expiry,] a count of (ttl, field, value).
    HashTtl { min_expire: bool },
    /// Redis' `HASH_LISTPACK_EX(_PRE_GA)`: [min expiry,] a listpack.
    ListpackTtl { min_expire: bool },
    /// A count of (container, listpack) (`LIST_QUICKLIST_2`).
    Quicklist2,
    /// `STREAM_LISTPACKS` 1 to 4.
    Stream(u8),
    /// `MODULE_2`, after its module id: primitives until opcode EOF.
    Module,
}

/// The layout of `type_byte`, `None` for an unknown type; `Err` for a
/// type known but not readable.
pub(super) fn kind(type_byte: u8, version: u32) -> Result<Option<Kind>> {
    let valkey = version >= FIRST_VALKEY_VERSION;
    Ok(Some(match type_byte {
        0 | 9..=13 | 16 | 17 | 20 => Kind::String,
        1 | 2 | 14 => Kind::Strings,
        3 => Kind::ZsetText,
        4 => Kind::Hash,
        5 => Kind::Zset2,
        6 => {
            return Err(RdbErrorKind::Unsupported(
                "module value of the 4.0 release candidates (type 6)",
            ))
        }
        7 => Kind::Module,
        15 => Kind::Stream(1),
        18 => Kind::Quicklist2,
        19 => Kind::Stream(2),
        21 => Kind::Stream(3),
        22 if valkey => Kind::HashValkey,
        22 => Kind::HashTtl { min_expire: false },
        23 if !valkey => Kind::ListpackTtl { min_expire: false },
        24 if !valkey => Kind::HashTtl { min_expire: true },
        25 if !valkey => Kind::ListpackTtl { min_expire: true },
        26 if !valkey => Kind::Stream(4),
        _ => return Ok(None),
    }))
}

/// A name for reports: the `TYPE` reply of such a key, or `"unknown"`.
pub fn type_name(type_byte: u8, version: u32) -> &'static str {
    match kind(type_byte, version) {
        Err(_) | Ok(Some(Kind::Module)) => "module",
        Ok(None) => "unknown",
        Ok(Some(k)) => match (type_byte, k) {
            (0, _) => "string",
            (1 | 10 | 14 | 18, _) => "list",
            (2 | 11 | 20, _) => "set",
            (3 | 5 | 12 | 17, _) => "zset",
            (_, Kind::Stream(_)) => "stream",
            _ => "hash",
        },
    }
}

type Result<T> = std::result::Result<T, RdbErrorKind>;

pub(super) fn len<R: Read>(src: &mut Source<R>) -> Result<u64> {
    let l = Len::read(src).map_err(|e| src.lift(e))?;
    match l {
        Len::Plain(n) => Ok(n),
        Len::Encoded(_) => Err(RdbErrorKind::Malformed("encoding where a length belongs")),
    }
}

/// Skips an RDB string in any encoding.
pub(super) fn string<R: Read>(src: &mut Source<R>) -> Result<()> {
    let l = Len::read(src).map_err(|e| src.lift(e))?;
    match l {
        Len::Plain(n) => src.skip(n),
        Len::Encoded(0) => src.skip(1),
        Len::Encoded(1) => src.skip(2),
        Len::Encoded(2) => src.skip(4),
        Len::Encoded(3) => {
            let packed = len(src)?;
            len(src)?;
            src.skip(packed)
        }
        Len::Encoded(_) => Err(RdbErrorKind::Malformed("unknown string encoding")),
    }
}

/// Calls `each` as many times as the count that comes first. Each call
/// consumes a byte at least, so a huge count ends at the end of the file.
fn each<R: Read>(
    src: &mut Source<R>,
    mut f: impl FnMut(&mut Source<R>) -> Result<()>,
) -> Result<()> {
    let n = len(src)?;
    for _ in 0..n {
        f(src)?;
    }
    Ok(())
}

/// Module primitives (a module value, module aux data, key metadata),
/// each after its opcode, until opcode EOF.
pub(super) fn primitives<R: Read>(src: &mut Source<R>) -> Result<()> {
    loop {
        match len(src)? {
            0 => return Ok(()),
            1 | 2 => len(src).map(drop)?,
            3 => src.skip(4)?,
            4 => src.skip(8)?,
            5 => string(src)?,
            _ => return Err(RdbErrorKind::Malformed("unknown module opcode")),
        }
    }
}

/// Skips a value of `kind` (a module value after its id).
pub(super) fn skip<R: Read>(src: &mut Source<R>, kind: Kind) -> Result<()> {
    match kind {
        Kind::String => string(src),
        Kind::Strings => each(src, string),
        Kind::ZsetText => each(src, |s| {
            string(s)?;
            match s.byte().map_err(|e| s.lift(e))? {
                // NaN, +inf, -inf.
                253..=255 => Ok(()),
                n => s.skip(u64::from(n)),
            }
        }),
        Kind::Zset2 => each(src, |s| {
            string(s)?;
            s.skip(8)
        }),
        Kind::Hash => each(src, |s| {
            string(s)?;
            string(s)
        }),
        Kind::HashValkey => each(src, |s| {
            string(s)?;
            string(s)?;
            s.skip(8)
        }),
        Kind::HashTtl { min_expire } => {
            if min_expire {
                src.skip(8)?;
            }
            each(src, |s| {
                len(s)?;
                string(s)?;
                string(s)
            })
        }
        Kind::ListpackTtl { min_expire } => {
            if min_expire {
                src.skip(8)?;
            }
            string(src)
        }
        Kind::Quicklist2 => each(src, |s| {
            len(s)?;
            string(s)
        }),
        Kind::Stream(level) => stream(src, level),
        Kind::Module => primitives(src),
    }
}

fn lens<R: Read>(src: &mut Source<R>, n: usize) -> Result<()> {
    for _ in 0..n {
        len(src)?;
    }
    Ok(())
}

/// `STREAM_LISTPACKS` (1), `_2` (7.0), `_3` (7.2), `_4` (Redis 8.6).
fn stream<R: Read>(src: &mut Source<R>, level: u8) -> Result<()> {
    // Listpacks, each after its master ID.
    each(src, |s| {
        string(s)?;
        string(s)
    })?;
    // Length, last ID; then first ID, max deleted ID, entries added.
    lens(src, if level >= 2 { 8 } else { 3 })?;
    each(src, |s| {
        // Name, last delivered ID, [offset].
        string(s)?;
        lens(s, if level >= 2 { 3 } else { 2 })?;
        // Pending entries: raw ID, delivery time, delivery count.
        each(s, |s| {
            s.skip(16 + 8)?;
            len(s).map(drop)
        })?;
        // Consumers: name, seen time, [active time], own pending IDs.
        each(s, |s| {
            string(s)?;
            s.skip(if level >= 3 { 16 } else { 8 })?;
            each(s, |s| s.skip(16))
        })
    })?;
    if level >= 4 {
        // Idempotency: duration, max entries, producers (id, entries of
        // (iid, stream ID)), iids added, duplicates.
        lens(src, 2)?;
        each(src, |s| {
            string(s)?;
            each(s, |s| {
                string(s)?;
                lens(s, 2)
            })
        })?;
        lens(src, 2)?;
    }
    Ok(())
}
