//! What went wrong reading an RDB file, and where.

/// An RDB file could not be read further. Displays as
/// `offset N, key 'k': what` (the key when one was being read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdbError {
    /// File offset of the byte that could not be read or made no sense.
    pub offset: u64,
    /// The key whose entry was being read, if any.
    pub key: Option<Vec<u8>>,
    pub kind: RdbErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdbErrorKind {
    /// The source failed (the I/O error's kind and text).
    Io(std::io::ErrorKind, String),
    /// The file ends inside an entry.
    Truncated,
    /// Neither `REDIS` nor `VALKEY` followed by a version.
    NotRdb,
    /// A version this reader does not know.
    Version(u32),
    /// The file's CRC64 (`expected`) is not that of its bytes (`actual`).
    Checksum { expected: u64, actual: u64 },
    /// A type byte or opcode unknown in this RDB version.
    UnknownType(u8),
    /// Known, but not readable here (the reason).
    Unsupported(&'static str),
    /// Bytes that make no sense where they are.
    Malformed(&'static str),
    /// Memory for a value could not be had.
    OutOfMemory,
    /// `read_value`/`skip_value` without a key whose value is next.
    NoValue,
    /// An earlier call failed: the position in the file is lost.
    Failed,
}

impl std::fmt::Display for RdbErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RdbErrorKind::Io(_, text) => write!(f, "read error: {text}"),
            RdbErrorKind::Truncated => write!(f, "file truncated"),
            RdbErrorKind::NotRdb => write!(f, "not an RDB file (no REDIS or VALKEY signature)"),
            RdbErrorKind::Version(v) => write!(
                f,
                "RDB version {v} not supported (1 to 13 with the REDIS signature, 80 with VALKEY)"
            ),
            RdbErrorKind::Checksum { expected, actual } => write!(
                f,
                "file checksum wrong (CRC64 {expected:016x} stored, {actual:016x} computed)"
            ),
            RdbErrorKind::UnknownType(t) => write!(f, "unknown type or opcode {t}"),
            RdbErrorKind::Unsupported(what) => write!(f, "unsupported: {what}"),
            RdbErrorKind::Malformed(what) => write!(f, "malformed: {what}"),
            RdbErrorKind::OutOfMemory => write!(f, "out of memory for the value"),
            RdbErrorKind::NoValue => write!(f, "no value to read: call next_key first"),
            RdbErrorKind::Failed => write!(f, "an earlier error stopped the reader"),
        }
    }
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "offset {}", self.offset)?;
        if let Some(key) = &self.key {
            write!(f, ", key '{}'", key.escape_ascii())?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for RdbError {}
