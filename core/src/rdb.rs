//! The byte-source / byte-sink abstraction RDB values are encoded through.
//!
//! The Redis layer implements these over `RedisModuleIO` (so the decoder that
//! runs in the server is exactly the one unit-tested and fuzzed here); tests and
//! fuzzers implement them over an in-memory list of primitives or raw bytes.

/// A primitive could not be read (I/O error, truncated or malformed stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadError;

/// Why a CMS, Cuckoo or Top-K value could not be loaded (the server fails the
/// load). The variant names are the logged error text (`{:?}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadError {
    /// An encoding version this module cannot read.
    UnsupportedVersion,
    /// Truncated or malformed primitive stream.
    Read,
    /// Fields that would make no sound value.
    Invalid,
}

impl From<ReadError> for LoadError {
    fn from(_: ReadError) -> Self {
        LoadError::Read
    }
}

/// Reads the module I/O primitives of docs/module.md §6 in order.
pub trait RdbSource {
    fn read_unsigned(&mut self) -> Result<u64, ReadError>;
    fn read_double(&mut self) -> Result<f64, ReadError>;
    /// A length-prefixed byte string. The Redis implementation hands over the
    /// server's buffer without copying.
    fn read_buffer(&mut self) -> Result<Box<[u8]>, ReadError>;
}

/// Writes the module I/O primitives of docs/module.md §6.
pub trait RdbSink {
    fn write_unsigned(&mut self, v: u64);
    fn write_double(&mut self, v: f64);
    fn write_buffer(&mut self, b: &[u8]);
}

/// One primitive as written to an RDB value; the in-memory form used by tests.
#[derive(Debug, Clone, PartialEq)]
pub enum Primitive {
    Unsigned(u64),
    Double(f64),
    Buffer(Vec<u8>),
}

/// In-memory sink: records the primitives in order.
impl RdbSink for Vec<Primitive> {
    fn write_unsigned(&mut self, v: u64) {
        self.push(Primitive::Unsigned(v));
    }
    fn write_double(&mut self, v: f64) {
        self.push(Primitive::Double(v));
    }
    fn write_buffer(&mut self, b: &[u8]) {
        self.push(Primitive::Buffer(b.to_vec()));
    }
}

/// In-memory source over recorded primitives; a type mismatch or the end of
/// the list is a read error, as a corrupt stream would be.
pub struct PrimitiveSource<'a> {
    items: std::slice::Iter<'a, Primitive>,
}

impl<'a> PrimitiveSource<'a> {
    pub fn new(items: &'a [Primitive]) -> Self {
        PrimitiveSource {
            items: items.iter(),
        }
    }
}

impl RdbSource for PrimitiveSource<'_> {
    fn read_unsigned(&mut self) -> Result<u64, ReadError> {
        match self.items.next() {
            Some(Primitive::Unsigned(v)) => Ok(*v),
            _ => Err(ReadError),
        }
    }
    fn read_double(&mut self) -> Result<f64, ReadError> {
        match self.items.next() {
            Some(Primitive::Double(v)) => Ok(*v),
            _ => Err(ReadError),
        }
    }
    fn read_buffer(&mut self) -> Result<Box<[u8]>, ReadError> {
        match self.items.next() {
            Some(Primitive::Buffer(b)) => Ok(b.as_slice().into()),
            _ => Err(ReadError),
        }
    }
}

/// Source over raw bytes, for fuzzing: a tag byte picks the primitive kind,
/// then 8 little-endian bytes (unsigned, double) or a u32 length and the bytes.
pub struct ByteSource<'a> {
    data: &'a [u8],
}

impl<'a> ByteSource<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        ByteSource { data }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        if self.data.len() < n {
            return Err(ReadError);
        }
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        Ok(head)
    }

    fn word(&mut self) -> Result<[u8; 8], ReadError> {
        let mut w = [0u8; 8];
        w.copy_from_slice(self.take(8)?);
        Ok(w)
    }
}

impl RdbSource for ByteSource<'_> {
    fn read_unsigned(&mut self) -> Result<u64, ReadError> {
        Ok(u64::from_le_bytes(self.word()?))
    }
    fn read_double(&mut self) -> Result<f64, ReadError> {
        Ok(f64::from_le_bytes(self.word()?))
    }
    fn read_buffer(&mut self) -> Result<Box<[u8]>, ReadError> {
        let mut len = [0u8; 4];
        len.copy_from_slice(self.take(4)?);
        let n = u32::from_le_bytes(len) as usize;
        Ok(self.take(n)?.into())
    }
}
