//! The file's bytes through a fixed buffer: counts the offset, runs the
//! CRC64 over every byte consumed, and copies them out while a value is
//! being recorded. Memory is the buffer plus what is recorded, never what
//! a length in the file claims.

use super::RdbErrorKind;
use crate::dump::{crc64::CRC64, DumpError, Input};
use std::io::Read;

/// The buffer's size; also the longest piece `take` hands out.
const CAP: usize = 64 * 1024;
/// Its size at first: it doubles at each refill, so that a small file
/// (and each fuzz input) does not pay for a large one.
const FIRST: usize = 512;

pub(super) struct Source<R> {
    input: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// `buf[..hashed]` is in `digest` already.
    hashed: usize,
    /// File offset of `buf[0]`.
    base: u64,
    digest: crc::Digest<'static, u64, crc::Table<16>>,
    record: Option<Vec<u8>>,
    /// Why the last read failed, kept for the caller of an [`Input`] method
    /// (whose error type cannot carry it).
    error: Option<RdbErrorKind>,
}

impl<R: Read> Source<R> {
    pub fn new(input: R) -> Self {
        Source {
            input,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            hashed: 0,
            base: 0,
            digest: CRC64.digest(),
            record: None,
            error: None,
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes `need` (at most `CAP`) bytes available at `pos`.
    fn fill(&mut self, need: usize) -> Result<(), RdbErrorKind> {
        if self.end - self.pos >= need {
            return Ok(());
        }
        self.digest.update(&self.buf[self.hashed..self.pos]);
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        self.hashed = 0;
        let size = need.max(self.buf.len() * 2).clamp(FIRST, CAP);
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
        while self.end < need {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(RdbErrorKind::Truncated),
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(RdbErrorKind::Io(e.kind(), e.to_string())),
            }
        }
        Ok(())
    }

    /// Consumes `n` available bytes, recording them if asked.
    fn consume(&mut self, n: usize) -> Result<(), RdbErrorKind> {
        if let Some(out) = &mut self.record {
            let piece = &self.buf[self.pos..self.pos + n];
            out.try_reserve(n).map_err(|_| RdbErrorKind::OutOfMemory)?;
            out.extend_from_slice(piece);
        }
        self.pos += n;
        Ok(())
    }

    /// Consumes the next `n` bytes, `n` at most `CAP`; where they are in `buf`.
    fn advance(&mut self, n: usize) -> Result<usize, RdbErrorKind> {
        if n > CAP {
            return Err(RdbErrorKind::Malformed("piece larger than the buffer"));
        }
        self.fill(n)?;
        let start = self.pos;
        self.consume(n)?;
        Ok(start)
    }

    /// Consumes `n` bytes as they arrive (a length the file cannot back
    /// ends in `Truncated`, having held no more than the buffer).
    pub fn skip(&mut self, mut n: u64) -> Result<(), RdbErrorKind> {
        while n > 0 {
            self.fill(1)?;
            let k = usize::try_from(n).map_or(self.end - self.pos, |n| n.min(self.end - self.pos));
            self.consume(k)?;
            n -= k as u64;
        }
        Ok(())
    }

    /// Starts copying consumed bytes out, after `prefix`.
    pub fn start_record(&mut self, prefix: Vec<u8>) {
        self.record = Some(prefix);
    }

    /// What was copied since `start_record`.
    pub fn stop_record(&mut self) -> Vec<u8> {
        self.record.take().unwrap_or_default()
    }

    /// The CRC64 of every byte consumed so far.
    pub fn checksum(&mut self) -> u64 {
        self.digest.update(&self.buf[self.hashed..self.pos]);
        self.hashed = self.pos;
        // `finalize` consumes the digest; a clone carries on.
        self.digest.clone().finalize()
    }

    /// The error behind a failed [`Input`] call.
    pub fn lift(&mut self, e: DumpError) -> RdbErrorKind {
        self.error.take().unwrap_or(match e {
            DumpError::Malformed(what) => RdbErrorKind::Malformed(what),
            _ => RdbErrorKind::Truncated,
        })
    }
}

impl<R: Read> Input for Source<R> {
    fn take(&mut self, n: usize) -> Result<&[u8], DumpError> {
        match self.advance(n) {
            Ok(start) => Ok(&self.buf[start..start + n]),
            Err(e) => {
                self.error = Some(e);
                Err(DumpError::Malformed("read"))
            }
        }
    }
}
