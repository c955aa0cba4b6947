//! The footer of a `DUMP` payload: RDB version and CRC64.

use super::{crc64, DumpError};

/// Bytes of the footer: RDB version (2), CRC64 (8).
pub const FOOTER: usize = 10;

/// The RDB version of a payload, once its CRC64 is checked; the body must
/// not be empty.
pub fn checked_version(bytes: &[u8]) -> Result<u16, DumpError> {
    let n = bytes
        .len()
        .checked_sub(FOOTER)
        .filter(|&n| n > 0)
        .ok_or(DumpError::TooShort)?;
    let (data, crc) = bytes.split_at(n + 2);
    let crc = u64::from_le_bytes(crc.try_into().map_err(|_| DumpError::TooShort)?);
    if crc64(data) != crc {
        return Err(DumpError::Checksum);
    }
    let (_, version) = data.split_at(n);
    Ok(u16::from_le_bytes(
        version.try_into().map_err(|_| DumpError::TooShort)?,
    ))
}

/// The body of a payload: everything before the footer (unchecked).
pub fn body(bytes: &[u8]) -> Result<&[u8], DumpError> {
    let n = bytes.len().checked_sub(FOOTER).ok_or(DumpError::TooShort)?;
    Ok(bytes.split_at(n).0)
}

/// `body` with a footer for `rdb_version`.
pub fn with_footer(body: &[u8], rdb_version: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + FOOTER);
    out.extend_from_slice(body);
    out.extend_from_slice(&[0; FOOTER]);
    // The footer was just made room for.
    let _ = set_footer(&mut out, rdb_version);
    out
}

/// Rewrites the footer of a payload for `rdb_version` with a fresh CRC64,
/// in place (values can be hundreds of MiB).
pub fn set_footer(bytes: &mut [u8], rdb_version: u16) -> Result<(), DumpError> {
    let n = bytes.len().checked_sub(FOOTER).ok_or(DumpError::TooShort)?;
    let (data, crc) = bytes.split_at_mut(n + 2);
    data[n..].copy_from_slice(&rdb_version.to_le_bytes());
    crc.copy_from_slice(&crc64(data).to_le_bytes());
    Ok(())
}
