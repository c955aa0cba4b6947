//! Reading the RDB encodings of a module value from any byte source: a
//! slice here, a buffered file for an RDB file reader.

use super::{lzf, opcode, DumpError, Prim, RDB_TYPE_MODULE_2};

const TRUNCATED: DumpError = DumpError::Malformed("truncated");

/// Where encoded bytes come from.
pub trait Input {
    /// The next `n` bytes; an error if fewer remain.
    fn take(&mut self, n: usize) -> Result<&[u8], DumpError>;

    fn byte(&mut self) -> Result<u8, DumpError> {
        self.array::<1>().map(|[b]| b)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DumpError> {
        self.take(N)?.try_into().map_err(|_| TRUNCATED)
    }
}

/// A slice reads from its front; what is left is the slice.
impl Input for &[u8] {
    fn take(&mut self, n: usize) -> Result<&[u8], DumpError> {
        if n > self.len() {
            return Err(TRUNCATED);
        }
        let (a, b) = self.split_at(n);
        *self = b;
        Ok(a)
    }
}

/// What an RDB length byte introduces (`rdbLoadLenByRef`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Len {
    Plain(u64),
    /// A string stored specially (`RDB_ENC_*`: 0..2 integers, 3 LZF).
    Encoded(u8),
}

impl Len {
    pub fn read(r: &mut impl Input) -> Result<Len, DumpError> {
        let b = r.byte()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(r.byte()?)),
            3 => Len::Encoded(b & 0x3f),
            _ if b == 0x80 => Len::Plain(u64::from(u32::from_be_bytes(r.array()?))),
            _ if b == 0x81 => Len::Plain(u64::from_be_bytes(r.array()?)),
            _ => return Err(DumpError::Malformed("unknown length byte")),
        })
    }
}

/// An RDB length (`rdbLoadLen`); an encoded-string marker is an error here.
pub fn read_len(r: &mut impl Input) -> Result<u64, DumpError> {
    match Len::read(r)? {
        Len::Plain(n) => Ok(n),
        Len::Encoded(_) => Err(DumpError::Malformed("encoding where a length belongs")),
    }
}

fn read_usize(r: &mut impl Input) -> Result<usize, DumpError> {
    usize::try_from(read_len(r)?).map_err(|_| DumpError::Malformed("length"))
}

/// An RDB string: raw, integer-encoded (as its decimal text) or LZF.
pub fn read_string(r: &mut impl Input) -> Result<Vec<u8>, DumpError> {
    let n = match Len::read(r)? {
        Len::Plain(n) => usize::try_from(n).map_err(|_| DumpError::Malformed("length"))?,
        Len::Encoded(0) => return Ok((r.byte()? as i8).to_string().into_bytes()),
        Len::Encoded(1) => return Ok(i16::from_le_bytes(r.array()?).to_string().into_bytes()),
        Len::Encoded(2) => return Ok(i32::from_le_bytes(r.array()?).to_string().into_bytes()),
        Len::Encoded(3) => {
            let packed_len = read_usize(r)?;
            let len = read_usize(r)?;
            return lzf::decompress(r.take(packed_len)?, len)
                .ok_or(DumpError::Malformed("bad LZF data"));
        }
        Len::Encoded(_) => return Err(DumpError::Malformed("unknown string encoding")),
    };
    Ok(r.take(n)?.to_vec())
}

/// The next primitive of a module value; `None` at the EOF opcode.
pub fn read_prim(r: &mut impl Input) -> Result<Option<Prim>, DumpError> {
    Ok(Some(match r.byte()? {
        opcode::EOF => return Ok(None),
        opcode::SINT | opcode::UINT => Prim::Int(read_len(r)?),
        opcode::FLOAT => Prim::Float(u32::from_le_bytes(r.array()?)),
        opcode::DOUBLE => Prim::Double(u64::from_le_bytes(r.array()?)),
        opcode::STRING => Prim::Str(read_string(r)?),
        _ => return Err(DumpError::Malformed("unknown module opcode")),
    }))
}

/// The object type and module id at the start of a module value.
pub fn module_header(r: &mut impl Input) -> Result<u64, DumpError> {
    match r.byte()? {
        RDB_TYPE_MODULE_2 => read_len(r),
        t => Err(DumpError::NotModule(t)),
    }
}

/// The module id and primitives of a module-value body (no footer).
pub fn primitives(mut body: &[u8]) -> Result<(u64, Vec<Prim>), DumpError> {
    let id = module_header(&mut body)?;
    let mut out = Vec::new();
    while let Some(p) = read_prim(&mut body)? {
        out.push(p);
    }
    if !body.is_empty() {
        return Err(DumpError::Malformed("bytes after the EOF opcode"));
    }
    Ok((id, out))
}
