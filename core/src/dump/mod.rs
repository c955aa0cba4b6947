//! The bytes of a `DUMP` payload of a module value, and the RDB encodings
//! it is made of: what `RESTORE` reads, what the copy tool and the tests
//! take apart and build. Pure bytes, no server.
//!
//! Layout: object type `RDB_TYPE_MODULE_2` (7), the module id as an RDB
//! length, the module's primitives each after an opcode, opcode EOF (0);
//! then the RDB version (2 bytes LE) and the CRC64 of everything before
//! (8 bytes LE). The body is the same on every server; only the version
//! differs. The primitives ([`Input`], [`read_len`], [`read_string`],
//! [`read_prim`], [`crc64::CRC64`]) are those of an RDB file too.

pub mod crc64;
mod lzf;
mod payload;
mod read;
mod write;

#[cfg(test)]
mod tests;

pub use crc64::crc64;
pub use payload::{body, checked_version, set_footer, with_footer, FOOTER};
pub use read::{module_header, primitives, read_len, read_prim, read_string, Input, Len};
pub use write::{module_value, write_len, write_prim};

/// `RDB_TYPE_MODULE_2`: the object type of a module value.
pub const RDB_TYPE_MODULE_2: u8 = 7;

/// Module value opcodes (`RDB_MODULE_OPCODE_*`).
pub mod opcode {
    pub const EOF: u8 = 0;
    pub const SINT: u8 = 1;
    pub const UINT: u8 = 2;
    pub const FLOAT: u8 = 3;
    pub const DOUBLE: u8 = 4;
    pub const STRING: u8 = 5;
}

/// One primitive of a module value, strings decoded. Floats keep their
/// bits, so that two values compare equal exactly when their bytes would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prim {
    /// Opcode 1 or 2 (signed or unsigned: both an RDB length); written as 2.
    Int(u64),
    Float(u32),
    Double(u64),
    Str(Vec<u8>),
}

/// Why bytes are not a payload of a module value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DumpError {
    TooShort,
    Checksum,
    NotModule(u8),
    Malformed(&'static str),
}

impl std::fmt::Display for DumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DumpError::TooShort => write!(f, "payload shorter than its footer"),
            DumpError::Checksum => write!(f, "payload checksum (CRC64) wrong"),
            DumpError::NotModule(t) => write!(f, "not a module value (RDB object type {t})"),
            DumpError::Malformed(what) => write!(f, "malformed module value: {what}"),
        }
    }
}

impl std::error::Error for DumpError {}
