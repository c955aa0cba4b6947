//! The target side of one key, whatever it is read from (a live server:
//! copy.rs; an RDB file: restore.rs). Every value is built under a private
//! key on the target (`TmpKeys`), verified there against what was read, and
//! only then renamed into place: RENAMENX unless `--replace`, so a key that
//! exists on the target is never overwritten by accident, and a failed or
//! interrupted copy leaves no half-written key (the private key expires).

use redis::{ConnectionLike, RedisResult};

use crate::endpoint::Target;
use crate::family::pieces;
use crate::payload::{Payload, PayloadError};
use crate::report::{Log, Outcome};
use rsbloom_core::dump::crc64;
use rsbloom_core::module_type::Chunked;
use rsbloom_core::ModuleType;

/// The private key expires by itself if the copy stops half-way.
pub const TMP_TTL_MS: u64 = 3_600_000;

pub struct Settings {
    pub replace: bool,
    pub dry_run: bool,
    /// Values of chunked families larger than this go in chunks.
    pub chunk_above: u64,
}

pub fn q<T: redis::FromRedisValue>(
    cmd: &mut redis::Cmd,
    conn: &mut dyn ConnectionLike,
) -> RedisResult<T> {
    cmd.query(conn)
}

/// `what` is too large: why it cannot be sent in smaller commands.
pub fn too_large(why: &str, bytes: u64, limit: u64) -> String {
    format!(
        "too large for one command ({why}): {bytes} bytes, the target accepts {limit} \
         (raise proto-max-bulk-len on the target, or --max-command, and re-run)"
    )
}

/// One key on its way to the target.
pub struct Put<'a, 'w> {
    pub s: &'a Settings,
    pub t: &'a mut Target,
    pub log: &'a mut Log<'w>,
    pub key: &'a [u8],
    pub family: &'static ModuleType,
    /// The key exists on the target.
    pub exists: bool,
    /// A chunk that does not split and exceeds the limit (its length).
    oversized: Option<usize>,
}

impl<'a, 'w> Put<'a, 'w> {
    pub fn new(
        s: &'a Settings,
        t: &'a mut Target,
        log: &'a mut Log<'w>,
        key: &'a [u8],
        family: &'static ModuleType,
    ) -> Self {
        Put {
            s,
            t,
            log,
            key,
            family,
            exists: false,
            oversized: None,
        }
    }

    /// Why the key is not written, if the target lacks its type; else
    /// learns whether it exists there.
    pub fn open(&mut self) -> RedisResult<Option<Outcome>> {
        if let Some(why) = self.t.lacks(self.family) {
            return Ok(Some(Outcome::Skipped(why)));
        }
        self.exists = q(redis::cmd("EXISTS").arg(self.key), &mut *self.t.conn)?;
        Ok(None)
    }

    pub fn dry_run(&self, bytes: u64) -> Outcome {
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
    pub fn existing(&self, same: bool) -> Option<Outcome> {
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

    /// Rewrites `payload` in the encoding the target's module reads, if the
    /// family has a newer one that it does not: the refusal if the value
    /// has no older form.
    pub fn older_encoding(&self, payload: &mut Payload) -> Option<Outcome> {
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

    /// Writes a payload that fits one command: compared with the target's
    /// key if it exists, RESTOREd under the private key, verified, and
    /// published with the TTL `pttl` gives at that moment.
    pub fn restore(
        &mut self,
        payload: &mut Payload,
        pttl: &dyn Fn() -> i64,
    ) -> RedisResult<Outcome> {
        if self.exists {
            let same = same_dump(self.t, self.key, payload, self.family)?;
            if let Some(o) = self.existing(same) {
                return Ok(o);
            }
        }
        let len = payload.bytes().len() as u64;
        let tmp = self.t.tmp.for_key(self.key);
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
        if !same_dump(self.t, &tmp, payload, self.family)? {
            q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.t.conn)?;
            return Ok(Outcome::Failed(
                "verification failed: the target's DUMP differs from the source's".into(),
            ));
        }
        self.publish(&tmp, pttl(), len)
    }

    /// Publishes the verified private key `tmp` (`publish`).
    pub fn publish(&mut self, tmp: &[u8], pttl: i64, bytes: u64) -> RedisResult<Outcome> {
        Ok(
            publish(self.s, self.t, self.key, tmp, pttl)?.unwrap_or(Outcome::Copied {
                family: self.family.family,
                bytes,
            }),
        )
    }

    /// A fresh private key for a chunked value.
    pub fn start_chunks(&mut self) -> RedisResult<Vec<u8>> {
        let tmp = self.t.tmp.for_key(self.key);
        self.oversized = None;
        q::<()>(redis::cmd("DEL").arg(&tmp), &mut *self.t.conn)?;
        Ok(tmp)
    }

    /// LOADCHUNKs one SCANDUMP chunk (`next` as SCANDUMP gave it) into
    /// `tmp`, split to the target's limit where chunks split.
    pub fn load_chunk(
        &mut self,
        c: Chunked,
        tmp: &[u8],
        next: i64,
        data: &[u8],
    ) -> RedisResult<()> {
        let conn = &mut *self.t.conn;
        if next == 1 {
            q::<()>(redis::cmd(c.loadchunk).arg(tmp).arg(1).arg(data), conn)?;
            return q(redis::cmd("PEXPIRE").arg(tmp).arg(TMP_TTL_MS), conn);
        }
        let max = usize::try_from(self.t.max_bulk).unwrap_or(usize::MAX);
        if !c.splits && data.len() > max {
            self.oversized = Some(data.len());
            return Err((redis::ErrorKind::Client, "chunk too large").into());
        }
        for (end, range) in pieces(c, next, data.len(), max) {
            q::<()>(
                redis::cmd(c.loadchunk).arg(tmp).arg(end).arg(&data[range]),
                conn,
            )?;
        }
        self.log.tick(data.len() as u64);
        Ok(())
    }

    /// The refusal, `tmp` deleted, if a chunk could not be sent.
    pub fn oversized(&mut self, tmp: &[u8]) -> RedisResult<Option<Outcome>> {
        let Some(len) = self.oversized.take() else {
            return Ok(None);
        };
        q::<()>(redis::cmd("DEL").arg(tmp), &mut *self.t.conn)?;
        let why = format!("{} chunks do not split", self.family.family);
        Ok(Some(Outcome::Skipped(too_large(
            &why,
            len as u64,
            self.t.max_bulk,
        ))))
    }

    /// Verifies the chunks loaded into `tmp` against `read` and publishes them.
    pub fn finish_chunks(
        &mut self,
        c: Chunked,
        tmp: &[u8],
        read: &Chunks,
        pttl: i64,
    ) -> RedisResult<Outcome> {
        if !same_chunks(self.t, c, tmp, read)? {
            q::<()>(redis::cmd("DEL").arg(tmp), &mut *self.t.conn)?;
            return Ok(Outcome::Failed(
                "verification failed: the target's SCANDUMP differs from the source's".into(),
            ));
        }
        self.publish(tmp, pttl, read.bytes())
    }
}

/// Gives the verified private key `tmp` the TTL `pttl` (-1: none) and
/// renames it to `key`: `None` once it is there, else why not.
pub fn publish(
    s: &Settings,
    t: &mut Target,
    key: &[u8],
    tmp: &[u8],
    pttl: i64,
) -> RedisResult<Option<Outcome>> {
    let conn = &mut *t.conn;
    if pttl == 0 {
        q::<()>(redis::cmd("DEL").arg(tmp), conn)?;
        return Ok(Some(Outcome::Skipped("expired during the copy".into())));
    }
    if pttl > 0 {
        q::<()>(redis::cmd("PEXPIRE").arg(tmp).arg(pttl), conn)?;
    } else {
        q::<()>(redis::cmd("PERSIST").arg(tmp), conn)?;
    }
    let placed = if s.replace {
        q::<()>(redis::cmd("RENAME").arg(tmp).arg(key), conn)?;
        true
    } else {
        q::<bool>(redis::cmd("RENAMENX").arg(tmp).arg(key), conn)?
    };
    if !placed {
        q::<()>(redis::cmd("DEL").arg(tmp), conn)?;
        return Ok(Some(Outcome::Skipped(
            "created on the target during the copy (not overwritten)".into(),
        )));
    }
    Ok(None)
}

/// Whether `key` on the target holds the value of `payload`: the same
/// module value bytes (the footer aside), or the same primitives, the
/// family's volatile bytes aside.
pub fn same_dump(
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
pub struct Chunks {
    header: Vec<u8>,
    chunks: Vec<(i64, usize, u64)>,
}

impl Chunks {
    pub fn new(header: Vec<u8>) -> Chunks {
        Chunks {
            header,
            chunks: Vec::new(),
        }
    }

    pub fn push(&mut self, next: i64, chunk: &[u8]) {
        self.chunks.push((next, chunk.len(), crc64(chunk)));
    }

    pub fn bytes(&self) -> u64 {
        self.header.len() as u64 + self.chunks.iter().map(|c| c.1 as u64).sum::<u64>()
    }
}

/// Reads a chunked value from `conn` into `sink` (called per chunk with the
/// position after it and the bytes). `None`: no chunked form (an empty
/// Cuckoo filter has none) or no key.
pub fn read_chunks(
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
    let mut out = Chunks::new(header);
    let mut it = it;
    loop {
        let (next, chunk): (i64, Option<Vec<u8>>) =
            q(redis::cmd(c.scandump).arg(key).arg(it), conn)?;
        let chunk = chunk.unwrap_or_default();
        if next == 0 {
            return Ok(Some(out));
        }
        sink(next, &chunk)?;
        out.push(next, &chunk);
        it = next;
    }
}

/// Whether the SCANDUMP of `key` on the target gives the same header and chunks.
pub fn same_chunks(t: &mut Target, c: Chunked, key: &[u8], want: &Chunks) -> RedisResult<bool> {
    let there = read_chunks(&mut *t.conn, c, key, |_, _| Ok(()))?;
    Ok(there.as_ref() == Some(want))
}
