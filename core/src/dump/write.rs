//! Writing the RDB encodings of a module value. Strings are written raw,
//! as a server with `rdbcompression no` writes them.

use super::{opcode, Prim, RDB_TYPE_MODULE_2};

/// An RDB length (`rdbSaveLen`).
pub fn write_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// One primitive after its opcode.
pub fn write_prim(out: &mut Vec<u8>, p: &Prim) {
    match p {
        Prim::Int(v) => {
            out.push(opcode::UINT);
            write_len(out, *v);
        }
        Prim::Float(bits) => {
            out.push(opcode::FLOAT);
            out.extend_from_slice(&bits.to_le_bytes());
        }
        Prim::Double(bits) => {
            out.push(opcode::DOUBLE);
            out.extend_from_slice(&bits.to_le_bytes());
        }
        Prim::Str(s) => {
            out.push(opcode::STRING);
            write_len(out, s.len() as u64);
            out.extend_from_slice(s);
        }
    }
}

/// The body of a payload (everything before the footer) of a module value.
pub fn module_value(module_id: u64, prims: &[Prim]) -> Vec<u8> {
    let mut out = vec![RDB_TYPE_MODULE_2];
    write_len(&mut out, module_id);
    for p in prims {
        write_prim(&mut out, p);
    }
    out.push(opcode::EOF);
    out
}
