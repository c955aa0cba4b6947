//! Copying one key. Every value is built under a private key on the target
//! (`TmpKeys`), verified there against what was read from the source, and
//! only then renamed into place: RENAMENX unless `--replace`, so a key that
//! exists on the target is never overwritten by accident, and a failed or
//! interrupted copy leaves no half-written key (the private key expires).
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

use redis::{Connection, ConnectionLike, RedisResult};

use crate::endpoint::Target;
use crate::family::pieces;
use crate::payload::{Payload, PayloadError};
use crate::report::{Log, Outcome};
use rsbloom_core::dump::crc64;
use rsbloom_core::module_type::Chunked;
use rsbloom_core::ModuleType;

/// The private key expires by itself if the copy stops half-way.
const TMP_TTL_MS: u64 = 3_600_000;
/// Attempts at reading a chunked value that keeps changing.
const ATTEMPTS: usize = 3;

pub struct Settings {
    pub replace: bool,
    pub dry_run: bool,
    /// Values of chunked families larger than this (MEMORY USAGE) go in chunks.
    pub chunk_above: u64,
}

fn q<T: redis::FromRedisValue>(
    cmd: &mut redis::Cmd,
    conn: &mut dyn ConnectionLike,
) -> RedisResult<T> {
    cmd.query(conn)
}

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
        s,
        src,
        t,
        log,
        key,
        family,
        exists: false,
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

/// `what` is too large: why it cannot be sent in smaller commands.
fn too_large(why: &str, bytes: u64, limit: u64) -> String {
    format!(
        "too large for one command ({why}): {bytes} bytes, the target accepts {limit} \
         (raise proto-max-bulk-len on the target, or --max-command, and re-run)"
    )
}

/// One key on its way.
struct Job<'a, 'w> {
    s: &'a Settings,
    src: &'a mut Connection,
    t: &'a mut Target,
    log: &'a mut Log<'w>,
    key: &'a [u8],
    family: &'static ModuleType,
    /// The key exists on the target.
    exists: bool,
}

impl Job<'_, '_> {
    fn run(&mut self) -> RedisResult<Outcome> {
        if let Some(why) = self.t.lacks(self.family) {
            return Ok(Outcome::Skipped(why));
        }
        self.exists = q(redis::cmd("EXISTS").arg(self.key), &mut *self.t.conn)?;
        // The size decides the way for chunked families, and is what a dry run reports.
        let size = if self.s.dry_run || self.family.chunked.is_some() {
            let usage = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(self.key)
                .arg("SAMPLES")
                .arg(0)
                .query(self.src);
            usage.ok().flatten()
        } else {
            None
        };
        if self.s.dry_run {
            return Ok(self.dry_run(size.unwrap_or(0)));
        }
        match self.family.chunked {
            Some(c) if size.is_some_and(|n: u64| n > self.s.chunk_above) => self.chunked(c, true),
            _ => self.dumped(true),
        }
    }

    fn dry_run(&self, bytes: u64) -> Outcome {
        if self.family.chunked.is_none() && bytes > self.t.max_bulk {
            return Outcome::Skipped(too_large("no chunked form", bytes, self.t.max_bulk));
        }
        Outcome::WouldCopy {
            family: self.family.family,
            bytes,
            exists: self.exists,
        }
    }

    /// The key exists on the target: nothing to write if it holds the same
    /// value; skipped if not, unless `--replace` (`None`: go on and write).
    fn existing(&self, same: bool) -> Option<Outcome> {
        if same {
            Some(Outcome::Identical {
                family: self.family.family,
            })
        } else if self.s.replace {
            None
        } else {
            Some(Outcome::Skipped(
                "exists on the target with other content (--replace overwrites it)".into(),
            ))
        }
    }

    fn dumped(&mut self, may_chunk: bool) -> RedisResult<Outcome> {
        let key = self.key;
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
            Ok((name, _)) if name == self.family.name() => {}
            Ok((name, _)) => {
                return Ok(Outcome::Skipped(format!(
                    "changed type during the copy (now {name})"
                )))
            }
            Err(e) => return Ok(Outcome::Failed(format!("source DUMP payload refused: {e}"))),
        }
        if let Some(refused) = self.older_encoding(&mut payload) {
            return Ok(refused);
        }
        let len = payload.bytes().len() as u64;
        if len > self.t.max_bulk {
            return match self.family.chunked {
                Some(c) if may_chunk => self.chunked(c, false),
                _ => Ok(Outcome::Skipped(too_large(
                    "no chunked form",
                    len,
                    self.t.max_bulk,
                ))),
            };
        }
        if self.exists {
            let same = same_dump(self.t, key, &payload, self.family)?;
            if let Some(o) = self.existing(same) {
                return Ok(o);
            }
        }
        let tmp = self.t.tmp.for_key(key);
        payload.set_version(self.t.rdb_version);
        let restore = redis::cmd("RESTORE")
            .arg(&tmp)
            .arg(TMP_TTL_MS)
            .arg(payload.bytes())
            .arg("REPLACE")
            .exec(&mut *self.t.conn);
        if let Err(e) = restore {
            return Ok(Outcome::Failed(format!("the target refused RESTORE: {e}")));
        }
        self.log.tick(len);
        if !same_dump(self.t, &tmp, &payload, self.family)? {
            q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.t.conn)?;
            return Ok(Outcome::Failed(
                "verification failed: the target's DUMP differs from the source's".into(),
            ));
        }
        self.publish(&tmp, pttl, len)
    }

    /// Rewrites `payload` in the encoding the target's module reads, if the
    /// family has a newer one that it does not: the refusal if the value
    /// has no older form.
    fn older_encoding(&self, payload: &mut Payload) -> Option<Outcome> {
        let added = self.family.added.filter(|a| !self.t.reads(a))?;
        match payload.downgrade(&added) {
            Ok(()) => None,
            Err(e @ PayloadError::NoOlderForm { .. }) => Some(Outcome::Skipped(format!(
                "the target's module (bf {}) reads only {} encoding {}: {e}",
                self.t
                    .module_version
                    .map_or("of unknown version".into(), |v| format!("ver {v}")),
                self.family.family,
                added.since - 1
            ))),
            Err(e) => Some(Outcome::Failed(format!("source DUMP payload refused: {e}"))),
        }
    }

    /// Gives the verified private key the source's TTL and renames it into place.
    fn publish(&mut self, tmp: &[u8], pttl: i64, bytes: u64) -> RedisResult<Outcome> {
        let conn = &mut *self.t.conn;
        if pttl == 0 {
            q::<()>(redis::cmd("DEL").arg(tmp), conn)?;
            return Ok(Outcome::Skipped("expired during the copy".into()));
        }
        if pttl > 0 {
            q::<()>(redis::cmd("PEXPIRE").arg(tmp).arg(pttl), conn)?;
        } else {
            q::<()>(redis::cmd("PERSIST").arg(tmp), conn)?;
        }
        let placed = if self.s.replace {
            q::<()>(redis::cmd("RENAME").arg(tmp).arg(self.key), conn)?;
            true
        } else {
            q::<bool>(redis::cmd("RENAMENX").arg(tmp).arg(self.key), conn)?
        };
        if !placed {
            q::<()>(redis::cmd("DEL").arg(tmp), conn)?;
            return Ok(Outcome::Skipped(
                "created on the target during the copy (not overwritten)".into(),
            ));
        }
        Ok(Outcome::Copied {
            family: self.family.family,
            bytes,
        })
    }

    fn chunked(&mut self, c: Chunked, may_dump: bool) -> RedisResult<Outcome> {
        let key = self.key;
        let tmp = self.t.tmp.for_key(key);
        let max = usize::try_from(self.t.max_bulk).unwrap_or(usize::MAX);
        for _ in 0..ATTEMPTS {
            if self.exists {
                match read_watched(self.src, c, key, |_, _| Ok(()))? {
                    Read::Changed => continue,
                    Read::NoChunks => return self.no_chunks(may_dump),
                    Read::Done(read, _) => {
                        let same = same_chunks(self.t, c, key, &read)?;
                        if let Some(o) = self.existing(same) {
                            return Ok(o);
                        }
                    }
                }
            }
            let (t, log) = (&mut *self.t, &mut *self.log);
            q::<()>(redis::cmd("DEL").arg(&tmp), &mut *t.conn)?;
            // A chunk that does not split and exceeds the limit (its length).
            let mut oversized = None;
            let read = read_watched(self.src, c, key, |next, data| {
                if next == 1 {
                    q::<()>(
                        redis::cmd(c.loadchunk).arg(&tmp).arg(1).arg(data),
                        &mut *t.conn,
                    )?;
                    return q(
                        redis::cmd("PEXPIRE").arg(&tmp).arg(TMP_TTL_MS),
                        &mut *t.conn,
                    );
                }
                if !c.splits && data.len() > max {
                    oversized = Some(data.len());
                    return Err((redis::ErrorKind::Client, "chunk too large").into());
                }
                for (end, range) in pieces(c, next, data.len(), max) {
                    q::<()>(
                        redis::cmd(c.loadchunk).arg(&tmp).arg(end).arg(&data[range]),
                        &mut *t.conn,
                    )?;
                }
                log.tick(data.len() as u64);
                Ok(())
            });
            if let Some(len) = oversized {
                q::<()>(&mut redis::cmd("UNWATCH"), self.src)?;
                q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.t.conn)?;
                let why = format!("{} chunks do not split", self.family.family);
                return Ok(Outcome::Skipped(too_large(
                    &why,
                    len as u64,
                    self.t.max_bulk,
                )));
            }
            match read? {
                Read::Changed => {}
                Read::NoChunks => {
                    q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.t.conn)?;
                    return self.no_chunks(may_dump);
                }
                Read::Done(read, pttl) => {
                    if !same_chunks(self.t, c, &tmp, &read)? {
                        q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.t.conn)?;
                        return Ok(Outcome::Failed(
                            "verification failed: the target's SCANDUMP differs from the source's"
                                .into(),
                        ));
                    }
                    return self.publish(&tmp, pttl, read.bytes());
                }
            }
        }
        q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.t.conn)?;
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

/// Whether `key` on the target holds the value of `payload`: the same
/// module value bytes (the footer aside), or the same primitives, the
/// family's volatile bytes aside.
fn same_dump(
    t: &mut Target,
    key: &[u8],
    payload: &Payload,
    family: &ModuleType,
) -> RedisResult<bool> {
    let dump: Option<Vec<u8>> = q(redis::cmd("DUMP").arg(key), &mut *t.conn)?;
    Ok(match dump.map(Payload::new) {
        Some(Ok(there)) => payload.same_value(&there, family).unwrap_or(false),
        _ => false,
    })
}

/// What was read of a chunked value: the header and, per chunk, the
/// position after it, its length and CRC64 — enough to verify a copy
/// without keeping a 1 GiB filter in memory.
#[derive(Debug, PartialEq, Eq)]
struct Chunks {
    header: Vec<u8>,
    chunks: Vec<(i64, usize, u64)>,
}

impl Chunks {
    fn bytes(&self) -> u64 {
        self.header.len() as u64 + self.chunks.iter().map(|c| c.1 as u64).sum::<u64>()
    }
}

/// Reads a chunked value from `conn` into `sink` (called per chunk with the
/// position after it and the bytes). `None`: no chunked form (an empty
/// Cuckoo filter has none) or no key.
fn read_chunks(
    conn: &mut dyn ConnectionLike,
    c: Chunked,
    key: &[u8],
    mut sink: impl FnMut(i64, &[u8]) -> RedisResult<()>,
) -> RedisResult<Option<Chunks>> {
    let (it, header): (i64, Option<Vec<u8>>) = q(redis::cmd(c.scandump).arg(key).arg(0), conn)?;
    let Some(header) = header.filter(|_| it == 1) else {
        return Ok(None);
    };
    sink(1, &header)?;
    let mut out = Chunks {
        header,
        chunks: Vec::new(),
    };
    let mut it = it;
    loop {
        let (next, chunk): (i64, Option<Vec<u8>>) =
            q(redis::cmd(c.scandump).arg(key).arg(it), conn)?;
        let chunk = chunk.unwrap_or_default();
        if next == 0 {
            return Ok(Some(out));
        }
        sink(next, &chunk)?;
        out.chunks.push((next, chunk.len(), crc64(&chunk)));
        it = next;
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
fn read_watched(
    src: &mut Connection,
    c: Chunked,
    key: &[u8],
    sink: impl FnMut(i64, &[u8]) -> RedisResult<()>,
) -> RedisResult<Read> {
    q::<()>(redis::cmd("WATCH").arg(key), src)?;
    let read = read_chunks(src, c, key, sink)?;
    let ttl: Option<(i64,)> = redis::pipe().atomic().cmd("PTTL").arg(key).query(src)?;
    Ok(match (read, ttl) {
        (_, None) => Read::Changed,
        (Some(read), Some((pttl,))) if pttl != -2 => Read::Done(read, pttl),
        _ => Read::NoChunks,
    })
}

/// Whether the SCANDUMP of `key` on the target gives the same header and chunks.
fn same_chunks(t: &mut Target, c: Chunked, key: &[u8], want: &Chunks) -> RedisResult<bool> {
    let there = read_chunks(&mut *t.conn, c, key, |_, _| Ok(()))?;
    Ok(there.as_ref() == Some(want))
}
