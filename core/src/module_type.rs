//! A module data type as the server knows it: the name `TYPE` replies and
//! that, with the encoding version, makes the module id in an RDB value;
//! and what module-wide code (the copy tool, the table-driven tests) needs
//! to know of its family, so that a new type is described in one place.

use std::ffi::CStr;

/// One data type of the module (`RedisModule_CreateDataType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleType {
    /// Nine characters of [`CHARSET`].
    pub name: &'static CStr,
    /// The encoding version written; every older one is read too.
    pub encoding_version: i32,
    /// The prefix of the family's commands.
    pub commands: &'static str,
    /// Short name of the family in reports and test keys.
    pub family: &'static str,
    /// A command of the family: a server has the type if it knows it.
    pub probe: &'static str,
    pub chunked: Option<Chunked>,
    pub volatile: Option<Volatile>,
    pub added: Option<AddedField>,
    pub flavour: Option<Flavour>,
    /// `CONFIG SET` pairs a server needs for `tour` to create this type.
    pub config: &'static [(&'static str, &'static str)],
    /// The family's commands on one key, the first creating it: what
    /// module-wide checks (tests, tools) replay for every type. `K` stands
    /// for the key; each command names exactly that key.
    pub tour: &'static [&'static [&'static str]],
}

/// A chunked dump: `SCANDUMP key 0` gives `[1, header]`, `SCANDUMP key it`
/// gives `[next, chunk]` until `[0, …]`, and `LOADCHUNK key next chunk`
/// replays each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunked {
    pub scandump: &'static str,
    pub loadchunk: &'static str,
    /// `next` is the byte position after the chunk and any sub-range of a
    /// chunk loads at the position after it (Bloom, Cuckoo: docs/bloom.md
    /// §10, docs/cuckoo.md §14), so chunks split to the target's size
    /// limit. Otherwise `next` numbers whole chunks (APBF: docs/apbf.md
    /// §5.5), each sent as it is.
    pub splits: bool,
}

/// A field that a later encoding version of the type added: in older
/// encodings primitive `prim` is absent and stands for `legacy`. Module
/// versions below `readers_from` (`MODULE LIST` ver of `bf`) cannot load
/// the newer encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddedField {
    pub since: u16,
    pub prim: usize,
    pub legacy: u64,
    pub readers_from: u64,
    /// What the field is, in reports.
    pub what: &'static str,
}

/// Bytes of a saved value that each writer fills with its own data, left
/// out when two values are compared: in primitive `prim` (a string of
/// `record`-byte records), `bytes` of each record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volatile {
    pub prim: usize,
    pub record: usize,
    pub bytes: std::ops::Range<usize>,
}

/// One of several module types served by the same commands (the two Bloom
/// filter types): a target that knows `shared` but not the family's own
/// `probe` has another flavour of them, and the value is not converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavour {
    /// Whose type it is, in reports ("RedisBloom", "valkey-bloom").
    pub module: &'static str,
    /// A command that every flavour has.
    pub shared: &'static str,
    /// Why a value of one flavour cannot become one of another.
    pub why: &'static str,
}

/// Why the two Bloom types are never converted into each other: a filter
/// keeps bits, not the items, and the two modules hash and size otherwise
/// (COMPAT-VALKEY-BLOOM §7), so no bit of one means anything to the other.
/// Here because neither Bloom family may use the other.
pub const BLOOM_FLAVOURS: &str =
    "valkey-bloom and RedisBloom filters cannot be converted into each other \
     (the items are not stored)";

/// The characters of a type name (Redis `ModuleTypeNameCharSet`), 6 bits each.
pub const CHARSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl ModuleType {
    /// The name as text (what `TYPE` replies).
    pub const fn name(&self) -> &'static str {
        match self.name.to_str() {
            Ok(s) => s,
            Err(_) => "",
        }
    }

    /// The module id of a value at encoding version `encver` (Redis
    /// `moduleTypeEncodeId`: the name's 9 characters of 6 bits, then 10
    /// bits of version).
    pub const fn id(&self, encver: u16) -> u64 {
        let name = self.name.to_bytes();
        let mut id = 0u64;
        let mut i = 0;
        while i < name.len() {
            let mut c = 0;
            while c < CHARSET.len() && CHARSET[c] != name[i] {
                c += 1;
            }
            id = (id << 6) | (c as u64 & 63);
            i += 1;
        }
        (id << 10) | (encver as u64 & 1023)
    }

    /// The module id of a value written now.
    pub const fn current_id(&self) -> u64 {
        self.id(self.encoding_version as u16)
    }
}

/// The type name and encoding version of a module id.
pub fn decode_id(id: u64) -> (String, u16) {
    let name = (0..9)
        .map(|i| char::from(CHARSET[((id >> (10 + 6 * (8 - i))) & 63) as usize]))
        .collect();
    (name, (id & 1023) as u16)
}
