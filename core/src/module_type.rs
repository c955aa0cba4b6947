//! A module data type as the server knows it: the name `TYPE` replies and
//! that, with the encoding version, makes the module id in an RDB value.

use std::ffi::CStr;

/// One data type of the module (`RedisModule_CreateDataType`).
#[derive(Debug, PartialEq, Eq)]
pub struct ModuleType {
    /// Nine characters of [`CHARSET`].
    pub name: &'static CStr,
    /// The encoding version written; every older one is read too.
    pub encoding_version: i32,
    /// The prefix of the family's commands.
    pub commands: &'static str,
}

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
