//! Copying one key from a live source (the target side: put.rs).
//!
//! Two ways to move a value:
//! * DUMP/RESTORE: the source's payload, its footer rewritten for the
//!   target's RDB version with a fresh CRC64 (the module value inside is the
//!   same bytes on every server; a Count-Min Sketch may be rewritten in the
//!   older encoding the target reads). One atomic read on the source.
//! * SCANDUMP/LOADCHUNK (Bloom, Cuckoo, sliding window): large values, in
//!   chunks (split to the target's size limit where they split), the key
//!   WATCHed on the source so that a write to it during the read is noticed
//!   and the copy redone.

use redis::{Connection, RedisResult};

use crate::endpoint::Target;
use crate::payload::Payload;
use crate::put::{q, read_chunks, same_chunks, too_large, Chunks, Put, Settings};
use crate::report::{Log, Outcome};
use rsbloom_core::module_type::Chunked;
use rsbloom_core::ModuleType;

/// Attempts at reading a chunked value that keeps changing.
const ATTEMPTS: usize = 3;

/// Copies `key` (of `family`) from the source connection `src`.
pub fn copy_key(
    s: &Settings,
    src: &mut Connection,
    t: &mut Target,
    log: &mut Log,
    key: &[u8],
    family: &'static ModuleType,
) -> Outcome {
    let mut job = Job {
        src,
        put: Put::new(s, t, log, key, family),
    };
    let result = job.run();
    if result.is_err() {
        // A chunked read may have left its WATCH on the connection.
        let _ = q::<()>(&mut redis::cmd("UNWATCH"), job.src);
    }
    match result {
        Ok(o) => o,
        Err(e) if e.redirect_node().is_some() => Outcome::Skipped(format!(
            "moved to another source node during the copy (slot migration): {e}; re-run"
        )),
        Err(e) => Outcome::Failed(format!("{e}")),
    }
}

/// One key on its way.
struct Job<'a, 'w> {
    src: &'a mut Connection,
    put: Put<'a, 'w>,
}

impl Job<'_, '_> {
    fn run(&mut self) -> RedisResult<Outcome> {
        if let Some(o) = self.put.open()? {
            return Ok(o);
        }
        let (s, family) = (self.put.s, self.put.family);
        // The size decides the way for chunked families, and is what a dry run reports.
        let size = if s.dry_run || family.chunked.is_some() {
            let usage = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(self.put.key)
                .arg("SAMPLES")
                .arg(0)
                .query(self.src);
            usage.ok().flatten()
        } else {
            None
        };
        if s.dry_run {
            return Ok(self.put.dry_run(size.unwrap_or(0)));
        }
        match family.chunked {
            Some(c) if size.is_some_and(|n: u64| n > s.chunk_above) => self.chunked(c, true),
            _ => self.dumped(true),
        }
    }

    fn dumped(&mut self, may_chunk: bool) -> RedisResult<Outcome> {
        let key = self.put.key;
        let read: Option<(Option<Vec<u8>>, i64)> = redis::pipe()
            .atomic()
            .cmd("DUMP")
            .arg(key)
            .cmd("PTTL")
            .arg(key)
            .query(self.src)?;
        let Some((Some(bytes), pttl)) = read.filter(|r| r.1 != -2) else {
            return Ok(Outcome::Skipped(
                "deleted on the source during the copy".into(),
            ));
        };
        let mut payload = match Payload::new(bytes) {
            Ok(p) => p,
            Err(e) => return Ok(Outcome::Failed(format!("source DUMP payload refused: {e}"))),
        };
        match payload.module_type() {
            Ok((name, _)) if name == self.put.family.name() => {}
            Ok((name, _)) => {
                return Ok(Outcome::Skipped(format!(
                    "changed type during the copy (now {name})"
                )))
            }
            Err(e) => return Ok(Outcome::Failed(format!("source DUMP payload refused: {e}"))),
        }
        if let Some(refused) = self.put.older_encoding(&mut payload) {
            return Ok(refused);
        }
        let len = payload.bytes().len() as u64;
        let max_bulk = self.put.t.max_bulk;
        if len > max_bulk {
            return match self.put.family.chunked {
                Some(c) if may_chunk => self.chunked(c, false),
                _ => Ok(Outcome::Skipped(too_large(
                    "no chunked form",
                    len,
                    max_bulk,
                ))),
            };
        }
        self.put.restore(&mut payload, &|| pttl)
    }

    fn chunked(&mut self, c: Chunked, may_dump: bool) -> RedisResult<Outcome> {
        let key = self.put.key;
        for _ in 0..ATTEMPTS {
            if self.put.exists {
                match read_watched(self.src, c, key, |_, _| Ok(()))? {
                    Read::Changed => continue,
                    Read::NoChunks => return self.no_chunks(may_dump),
                    Read::Done(read, _) => {
                        let same = same_chunks(self.put.t, c, key, &read)?;
                        if let Some(o) = self.put.existing(same) {
                            return Ok(o);
                        }
                    }
                }
            }
            let tmp = self.put.start_chunks()?;
            let put = &mut self.put;
            let read = read_watched(self.src, c, key, |next, data| {
                put.load_chunk(c, &tmp, next, data)
            });
            if let Some(o) = self.put.oversized(&tmp)? {
                q::<()>(&mut redis::cmd("UNWATCH"), self.src)?;
                return Ok(o);
            }
            match read? {
                Read::Changed => {}
                Read::NoChunks => {
                    q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.put.t.conn)?;
                    return self.no_chunks(may_dump);
                }
                Read::Done(read, pttl) => return self.put.finish_chunks(c, &tmp, &read, pttl),
            }
        }
        let tmp = self.put.t.tmp.for_key(key);
        q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.put.t.conn)?;
        Ok(Outcome::Skipped(format!(
            "written on the source during each of {ATTEMPTS} attempts: re-run"
        )))
    }

    /// A value without a chunked form (an empty Cuckoo filter, or a key
    /// deleted meanwhile): through DUMP, unless it came from there.
    fn no_chunks(&mut self, may_dump: bool) -> RedisResult<Outcome> {
        if may_dump {
            self.dumped(false)
        } else {
            Ok(Outcome::Skipped(
                "no chunked form (an empty Cuckoo filter) and too large for one command".into(),
            ))
        }
    }
}

/// A chunked read under WATCH.
enum Read {
    Done(Chunks, i64),
    /// Written on the source meanwhile (EXEC refused).
    Changed,
    /// No chunked form (an empty Cuckoo filter) or no key.
    NoChunks,
}

/// Reads `key` from the source, the key WATCHed, passing each chunk to
/// `sink`; then its PTTL in a transaction that fails if it was written.
/// A key written meanwhile is `Changed` even if a chunk was refused: chunks
/// read after a write may hold more fingerprints than the header counts,
/// which the target refuses (docs/cuckoo.md §14).
fn read_watched(
    src: &mut Connection,
    c: Chunked,
    key: &[u8],
    sink: impl FnMut(i64, &[u8]) -> RedisResult<()>,
) -> RedisResult<Read> {
    q::<()>(redis::cmd("WATCH").arg(key), src)?;
    let read = read_chunks(src, c, key, sink);
    let ttl: Option<(i64,)> = redis::pipe().atomic().cmd("PTTL").arg(key).query(src)?;
    let Some((pttl,)) = ttl else {
        return Ok(Read::Changed);
    };
    Ok(match read? {
        Some(read) if pttl != -2 => Read::Done(read, pttl),
        _ => Read::NoChunks,
    })
}
