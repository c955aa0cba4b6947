//! Restoring from an RDB file (`--from-rdb PATH|-`): the file is read once,
//! front to back (`rsbloom_core::rdb_file`), one value in memory at a time,
//! and each key goes to the target the way the live copy writes it
//! (put.rs): under a private key, verified, then renamed into place.
//!
//! * Module families: the value is a DUMP payload body; with the target's
//!   footer it is RESTOREd, or, above `--chunk-above` or the target's
//!   limit, turned by the core into the family's SCANDUMP chunks and
//!   LOADCHUNKed (scan.rs).
//! * TTLs: the file's absolute expiry; a key expired by the time it is
//!   written is not written (counted).
//! * Other types: counted per type; `--all-types` RESTOREs them where the
//!   target's RDB version reads their type (types.rs).
//! * A file that cannot be read further (truncated, corrupt) stops the run
//!   with the offset and key: every key before it is in place, the one
//!   being read was not written at all. A file (not standard input) is
//!   first read through once, without holding its values, so that damage
//!   the checksum at its end reveals stops the run before anything is
//!   written.

use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use redis::RedisResult;

use crate::endpoint::Target;
use crate::family::by_type;
use crate::payload::Payload;
use crate::put::{publish, q, same_chunks, too_large, Chunks, Put, Settings, TMP_TTL_MS};
use crate::report::{Log, Outcome, Report};
use crate::scan::Scan;
use crate::{pattern, types, Options};
use rsbloom_core::dump::{set_footer, FOOTER};
use rsbloom_core::module_type::Chunked;
use rsbloom_core::rdb_file::{type_name, KeyHeader, RdbError, RdbReader};

/// Reads of standard input or a file in pieces this large.
const READ_BUFFER: usize = 1 << 20;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The TTL left of an absolute expiry (-1: none; 0: expired).
fn pttl(expire_ms: Option<i64>) -> i64 {
    expire_ms.map_or(-1, |at| (at - now_ms()).max(0))
}

/// The file at `path` (`-`: standard input).
fn open(path: &str) -> Result<Box<dyn Read>, String> {
    if path == "-" {
        return Ok(Box::new(std::io::stdin().lock()));
    }
    let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(Box::new(f))
}

/// The targets, one per database, opened when a key of it comes.
struct Targets<'o> {
    opts: &'o Options,
    open: HashMap<i64, Result<Target, String>>,
}

impl Targets<'_> {
    /// The target for a key of the file's database `db`; `Ok(None)` for a
    /// dry run without `--to`.
    fn get(&mut self, db: u64) -> Result<Option<&mut Target>, String> {
        if self.opts.to.is_empty() {
            return Ok(None);
        }
        let db = self
            .opts
            .target_db
            .unwrap_or_else(|| i64::try_from(db).unwrap_or(i64::MAX));
        let opts = self.opts;
        let t = self.open.entry(db).or_insert_with(|| {
            let mut t = Target::open(&opts.to, db, opts.max_command)?;
            if !opts.dry_run {
                t.probe_rdb_version()?;
            }
            Ok(t)
        });
        t.as_mut()
            .map(Some)
            .map_err(|e| format!("target database {db}: {e}"))
    }
}

/// Reads the file at `path` to its end without holding a value: an error
/// names where it is damaged, the checksum included.
fn check(path: &str) -> Result<Result<(), RdbError>, String> {
    let input = BufReader::with_capacity(READ_BUFFER, open(path)?);
    let mut reader = RdbReader::new(input).map_err(|e| format!("{path}: {e}"))?;
    Ok((|| {
        while reader.next_key()?.is_some() {
            reader.skip_value()?;
        }
        Ok(())
    })())
}

/// Restores every key of the file at `path` that `opts` selects.
pub fn run(opts: &Options, path: &str, out: &mut dyn Write) -> Result<Report, String> {
    if path != "-" && !opts.dry_run {
        if let Err(e) = check(path)? {
            let mut log = Log::new(out, opts.verbose, opts.progress);
            log.report.aborted = Some(format!("{path}: {e} (nothing restored)"));
            return Ok(log.finish(opts.dry_run));
        }
    }
    let input = BufReader::with_capacity(READ_BUFFER, open(path)?);
    let mut reader = RdbReader::new(input).map_err(|e| format!("{path}: {e}"))?;
    let mut targets = Targets {
        opts,
        open: HashMap::new(),
    };
    if !opts.to.is_empty() {
        // An unreachable target is told before the file is read.
        targets.get(u64::try_from(opts.db.unwrap_or(0)).unwrap_or(0))?;
    }
    let settings = Settings {
        replace: opts.replace,
        dry_run: opts.dry_run,
        chunk_above: opts.chunk_above,
    };
    let mut log = Log::new(out, opts.verbose, opts.progress);
    let mut job = File {
        opts,
        s: &settings,
        reader: &mut reader,
        targets: &mut targets,
    };
    loop {
        match job.next(&mut log) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                log.report.aborted = Some(format!("{path}: {e}"));
                break;
            }
        }
    }
    Ok(log.finish(opts.dry_run))
}

struct File<'a, 'o, R: Read> {
    opts: &'o Options,
    s: &'a Settings,
    reader: &'a mut RdbReader<R>,
    targets: &'a mut Targets<'o>,
}

impl<R: Read> File<'_, '_, R> {
    /// The next key of the file, restored or passed; `false` at the end.
    fn next(&mut self, log: &mut Log) -> Result<bool, RdbError> {
        let Some(h) = self.reader.next_key()? else {
            return Ok(false);
        };
        let wanted = self.opts.db.is_none_or(|d| i64::try_from(h.db) == Ok(d))
            && pattern::matches(self.opts.pattern.as_bytes(), &h.key);
        if !wanted {
            self.reader.skip_value()?;
            return Ok(true);
        }
        if h.expire_ms.is_some_and(|at| at <= now_ms()) {
            self.reader.skip_value()?;
            log.key(&h.key, Outcome::Expired);
            return Ok(true);
        }
        let family = h.module.as_ref().and_then(|m| by_type(&m.name));
        let outcome = match family {
            Some(f) => self.module_key(log, &h, f)?,
            None => self.other_key(log, &h)?,
        };
        match outcome {
            Some(o) => log.key(&h.key, o),
            None => log.other_type(&self.type_of(&h)),
        }
        Ok(true)
    }

    /// What reports call the key's type: the module type's name for a
    /// module this tool does not know.
    fn type_of(&self, h: &KeyHeader) -> String {
        match &h.module {
            Some(m) => format!("module {}", m.name),
            None => type_name(h.type_byte, self.reader.version()).to_string(),
        }
    }

    fn module_key(
        &mut self,
        log: &mut Log,
        h: &KeyHeader,
        f: &'static rsbloom_core::ModuleType,
    ) -> Result<Option<Outcome>, RdbError> {
        let version = self.reader.version();
        let t = match self.targets.get(h.db) {
            Ok(t) => t,
            Err(e) => {
                self.reader.skip_value()?;
                return Ok(Some(Outcome::Failed(e)));
            }
        };
        let Some(t) = t else {
            let bytes = self.reader.skip_value()? + FOOTER as u64;
            return Ok(Some(Outcome::WouldCopy {
                family: f.family,
                bytes,
                exists: false,
            }));
        };
        let mut put = Put::new(self.s, t, log, &h.key, f);
        match put.open() {
            Ok(None) => {}
            Ok(Some(o)) => {
                self.reader.skip_value()?;
                return Ok(Some(o));
            }
            Err(e) => {
                self.reader.skip_value()?;
                return Ok(Some(Outcome::Failed(e.to_string())));
            }
        }
        if self.s.dry_run {
            let bytes = self.reader.skip_value()? + FOOTER as u64;
            return Ok(Some(put.dry_run(bytes)));
        }
        let value = self.reader.read_value()?;
        Ok(Some(
            write_module(&mut put, value, version, h.expire_ms)
                .unwrap_or_else(|e| Outcome::Failed(e.to_string())),
        ))
    }

    /// A key of another type: `None` (counted by type) unless `--all-types`.
    fn other_key(&mut self, log: &mut Log, h: &KeyHeader) -> Result<Option<Outcome>, RdbError> {
        let name = self.type_of(h);
        if !self.opts.all_types {
            let bytes = self.reader.skip_value()?;
            if self.s.dry_run || self.opts.verbose {
                log.line(&format!(
                    "not copied {} ({name}, {bytes} bytes): not a module family \
                     (--all-types restores it)",
                    crate::report::show(&h.key)
                ));
            }
            return Ok(None);
        }
        let version = self.reader.version();
        let t = match self.targets.get(h.db) {
            Ok(Some(t)) => t,
            Ok(None) => {
                let bytes = self.reader.skip_value()? + FOOTER as u64;
                return Ok(Some(Outcome::WouldRestore { name, bytes }));
            }
            Err(e) => {
                self.reader.skip_value()?;
                return Ok(Some(Outcome::Failed(e)));
            }
        };
        if let Some(why) = types::refused(h.type_byte, &name, version, u32::from(t.rdb_version))
            .filter(|_| !self.s.dry_run)
        {
            self.reader.skip_value()?;
            return Ok(Some(Outcome::Skipped(why)));
        }
        if self.s.dry_run {
            let bytes = self.reader.skip_value()? + FOOTER as u64;
            return Ok(Some(Outcome::WouldRestore { name, bytes }));
        }
        let value = self.reader.read_value()?;
        let key = &h.key;
        Ok(Some(
            write_other(self.s, t, log, key, value, name, h)
                .unwrap_or_else(|e| Outcome::Failed(e.to_string())),
        ))
    }
}

/// Writes a module family's value `body` (a DUMP payload body) read from a
/// file of RDB `version`.
fn write_module(
    put: &mut Put,
    mut body: Vec<u8>,
    version: u32,
    expire_ms: Option<i64>,
) -> RedisResult<Outcome> {
    let len = (body.len() + FOOTER) as u64;
    let max_bulk = put.t.max_bulk;
    if let Some(c) = put.family.chunked {
        if len > put.s.chunk_above || len > max_bulk {
            match Scan::of(put.family, &body) {
                Ok(Some(scan)) => {
                    drop(body);
                    return chunked(put, c, &scan, expire_ms);
                }
                Ok(None) if len > max_bulk => {
                    return Ok(Outcome::Skipped(
                        "no chunked form (an empty Cuckoo filter) and too large for one command"
                            .into(),
                    ))
                }
                Ok(None) => {}
                Err(e) => return Ok(Outcome::Failed(e)),
            }
        }
    }
    body.extend_from_slice(&[0; FOOTER]);
    // The file's own version: RESTORE gets the target's (put.restore).
    let _ = set_footer(&mut body, u16::try_from(version).unwrap_or(u16::MAX));
    let mut payload = match Payload::new(body) {
        Ok(p) => p,
        Err(e) => return Ok(Outcome::Failed(format!("the file's value: {e}"))),
    };
    match payload.module_type() {
        Ok((name, _)) if name == put.family.name() => {}
        Ok((name, _)) => {
            return Ok(Outcome::Failed(format!(
                "the file's value is of module type {name}, its key's header said {}",
                put.family.name()
            )))
        }
        Err(e) => return Ok(Outcome::Failed(format!("the file's value: {e}"))),
    }
    if let Some(refused) = put.older_encoding(&mut payload) {
        return Ok(refused);
    }
    let len = payload.bytes().len() as u64;
    if len > max_bulk {
        return Ok(Outcome::Skipped(too_large(
            "no chunked form",
            len,
            max_bulk,
        )));
    }
    put.restore(&mut payload, &|| pttl(expire_ms))
}

/// Loads `scan`'s chunks under a private key, verifies them, publishes.
fn chunked(put: &mut Put, c: Chunked, scan: &Scan, expire_ms: Option<i64>) -> RedisResult<Outcome> {
    let header = scan.header();
    let mut read = Chunks::new(header.clone());
    for (next, data) in scan.chunks() {
        read.push(next, &data);
    }
    if put.exists {
        let same = same_chunks(put.t, c, put.key, &read)?;
        if let Some(o) = put.existing(same) {
            return Ok(o);
        }
    }
    let tmp = put.start_chunks()?;
    let loaded = std::iter::once((1, header.into()))
        .chain(scan.chunks())
        .try_for_each(|(next, data)| put.load_chunk(c, &tmp, next, &data));
    if let Some(o) = put.oversized(&tmp)? {
        return Ok(o);
    }
    if let Err(e) = loaded {
        let _ = q::<()>(redis::cmd("DEL").arg(&tmp), &mut *put.t.conn);
        return Err(e);
    }
    put.finish_chunks(c, &tmp, &read, pttl(expire_ms))
}

/// RESTOREs a value of another type: the target's TYPE of it checked (a
/// server may re-encode a value: its bytes are not compared), then renamed
/// into place.
fn write_other(
    s: &Settings,
    t: &mut Target,
    log: &mut Log,
    key: &[u8],
    mut body: Vec<u8>,
    name: String,
    h: &KeyHeader,
) -> RedisResult<Outcome> {
    body.extend_from_slice(&[0; FOOTER]);
    let _ = set_footer(&mut body, t.rdb_version);
    let len = body.len() as u64;
    if len > t.max_bulk {
        return Ok(Outcome::Skipped(too_large(
            "no chunked form",
            len,
            t.max_bulk,
        )));
    }
    let exists: bool = q(redis::cmd("EXISTS").arg(key), &mut *t.conn)?;
    if exists {
        let there: Option<Vec<u8>> = q(redis::cmd("DUMP").arg(key), &mut *t.conn)?;
        if there.is_some_and(|d| d == body) {
            return Ok(Outcome::Identical {
                family: "other types",
            });
        }
        if !s.replace {
            return Ok(Outcome::Skipped(
                "exists on the target with other content (--replace overwrites it)".into(),
            ));
        }
    }
    let tmp = t.tmp.for_key(key);
    let restore = redis::cmd("RESTORE")
        .arg(&tmp)
        .arg(TMP_TTL_MS)
        .arg(&body)
        .arg("REPLACE")
        .exec(&mut *t.conn);
    if let Err(e) = restore {
        return Ok(Outcome::Failed(format!("the target refused RESTORE: {e}")));
    }
    log.tick(len);
    let there: String = q(redis::cmd("TYPE").arg(&tmp), &mut *t.conn)?;
    let want = h.module.as_ref().map_or(name.as_str(), |m| m.name.as_str());
    if there != want {
        q::<()>(redis::cmd("DEL").arg(&tmp), &mut *t.conn)?;
        return Ok(Outcome::Failed(format!(
            "verification failed: the target holds a {there}, the file a {want}"
        )));
    }
    Ok(publish(s, t, key, &tmp, pttl(h.expire_ms))?
        .unwrap_or(Outcome::Restored { name, bytes: len }))
}
