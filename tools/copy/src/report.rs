//! What happened to each key, the running totals, progress lines on long
//! runs and the final report.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// The end of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Written to the target and verified there; `bytes` moved.
    Copied { family: &'static str, bytes: u64 },
    /// Already on the target with the same content: nothing written.
    Identical { family: &'static str },
    /// Dry run: would be copied (`bytes`: the source's MEMORY USAGE).
    WouldCopy {
        family: &'static str,
        bytes: u64,
        exists: bool,
    },
    /// Not copied, on purpose: why.
    Skipped(String),
    /// In a file, with an expiry already past: not written.
    Expired,
    /// A key of another type (`--all-types`), RESTOREd and its type checked.
    Restored { name: String, bytes: u64 },
    /// Dry run: would be RESTOREd (`--all-types`).
    WouldRestore { name: String, bytes: u64 },
    /// Not copied because something went wrong: what.
    Failed(String),
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    pub keys: u64,
    pub bytes: u64,
}

/// The totals of a run.
#[derive(Debug, Default)]
pub struct Report {
    pub scanned: u64,
    /// Per family.
    pub copied: BTreeMap<&'static str, Counts>,
    pub identical: BTreeMap<&'static str, u64>,
    pub would_copy: BTreeMap<&'static str, Counts>,
    /// Keys of other types, per type: not the tool's to copy.
    pub other_types: BTreeMap<String, u64>,
    /// Keys of other types restored (`--all-types`), per type.
    pub restored: BTreeMap<String, Counts>,
    pub would_restore: BTreeMap<String, Counts>,
    /// Keys of a file whose expiry had passed.
    pub expired: u64,
    /// Why a file could not be read to its end (the keys before were done).
    pub aborted: Option<String>,
    pub skipped: Vec<(Vec<u8>, String)>,
    pub failed: Vec<(Vec<u8>, String)>,
    pub elapsed: Duration,
}

impl Report {
    pub fn copied_keys(&self) -> u64 {
        self.copied.values().map(|c| c.keys).sum()
    }

    pub fn copied_bytes(&self) -> u64 {
        self.copied.values().map(|c| c.bytes).sum()
    }

    pub fn ok(&self) -> bool {
        self.failed.is_empty() && self.aborted.is_none()
    }

    fn add(&mut self, key: &[u8], outcome: Outcome) {
        match outcome {
            Outcome::Copied { family, bytes } => {
                let c = self.copied.entry(family).or_default();
                c.keys += 1;
                c.bytes += bytes;
            }
            Outcome::Identical { family } => *self.identical.entry(family).or_default() += 1,
            Outcome::WouldCopy { family, bytes, .. } => {
                let c = self.would_copy.entry(family).or_default();
                c.keys += 1;
                c.bytes += bytes;
            }
            Outcome::Skipped(why) => self.skipped.push((key.to_vec(), why)),
            Outcome::Failed(why) => self.failed.push((key.to_vec(), why)),
            Outcome::Expired => self.expired += 1,
            Outcome::Restored { name, bytes } => add(&mut self.restored, name, bytes),
            Outcome::WouldRestore { name, bytes } => add(&mut self.would_restore, name, bytes),
        }
    }
}

fn add(to: &mut BTreeMap<String, Counts>, name: String, bytes: u64) {
    let c = to.entry(name).or_default();
    c.keys += 1;
    c.bytes += bytes;
}

/// A key as printed: printable ASCII as is, other bytes escaped.
pub fn show(key: &[u8]) -> String {
    key.escape_ascii().to_string()
}

/// Records outcomes, prints one line per key that was not simply copied
/// (every line with `verbose`), and a progress line every `every`.
pub struct Log<'a> {
    pub report: Report,
    out: &'a mut dyn Write,
    verbose: bool,
    every: Option<Duration>,
    started: Instant,
    last: Instant,
    /// Bytes of the key being copied, counted as chunks move.
    partial: u64,
}

impl<'a> Log<'a> {
    pub fn new(out: &'a mut dyn Write, verbose: bool, every: Option<Duration>) -> Self {
        let now = Instant::now();
        Log {
            report: Report::default(),
            out,
            verbose,
            every,
            started: now,
            last: now,
            partial: 0,
        }
    }

    pub fn other_type(&mut self, type_name: &str) {
        self.report.scanned += 1;
        *self
            .report
            .other_types
            .entry(type_name.to_string())
            .or_default() += 1;
    }

    pub fn key(&mut self, key: &[u8], outcome: Outcome) {
        self.report.scanned += 1;
        self.partial = 0;
        let line = match &outcome {
            Outcome::Copied { family, bytes } => self
                .verbose
                .then(|| format!("copied    {} ({family}, {bytes} bytes)", show(key))),
            Outcome::Identical { family } => self
                .verbose
                .then(|| format!("identical {} ({family}, already on the target)", show(key))),
            Outcome::WouldCopy {
                family,
                bytes,
                exists,
            } => Some(format!(
                "would copy {} ({family}, about {bytes} bytes){}",
                show(key),
                if *exists {
                    ": exists on the target, compared first"
                } else {
                    ""
                }
            )),
            Outcome::Skipped(why) => Some(format!("skipped   {}: {why}", show(key))),
            Outcome::Expired => self
                .verbose
                .then(|| format!("expired   {} (in the file: not written)", show(key))),
            Outcome::Restored { name, bytes } => self
                .verbose
                .then(|| format!("restored  {} ({name}, {bytes} bytes)", show(key))),
            Outcome::WouldRestore { name, bytes } => Some(format!(
                "would restore {} ({name}, {bytes} bytes)",
                show(key)
            )),
            Outcome::Failed(why) => Some(format!("FAILED    {}: {why}", show(key))),
        };
        if let Some(line) = line {
            let _ = writeln!(self.out, "{line}");
        }
        self.report.add(key, outcome);
        self.tick(0);
    }

    /// Prints `line` as it is.
    pub fn line(&mut self, line: &str) {
        let _ = writeln!(self.out, "{line}");
    }

    /// Counts `bytes` of a key still being copied; prints progress when due.
    pub fn tick(&mut self, bytes: u64) {
        self.partial += bytes;
        let Some(every) = self.every else { return };
        if self.last.elapsed() >= every {
            self.last = Instant::now();
            let secs = self.started.elapsed().as_secs_f64().max(1e-9);
            let (keys, mib) = (
                self.report.copied_keys(),
                (self.report.copied_bytes() + self.partial) as f64 / 1048576.0,
            );
            let _ = writeln!(
                self.out,
                "progress: {} keys scanned, {keys} copied, {mib:.1} MiB ({:.0} keys/s, {:.1} MiB/s)",
                self.report.scanned,
                keys as f64 / secs,
                mib / secs
            );
        }
    }

    pub fn finish(mut self, dry_run: bool) -> Report {
        self.report.elapsed = self.started.elapsed();
        let _ = summary(&self.report, dry_run, self.out);
        self.report
    }
}

fn summary(r: &Report, dry_run: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    writeln!(out, "---- {} keys scanned in {:.1} s", r.scanned, secs)?;
    let families = if dry_run { &r.would_copy } else { &r.copied };
    let verb = if dry_run {
        "would copy"
    } else {
        "copied and verified"
    };
    for (family, c) in families {
        writeln!(out, "{verb}: {family}: {} keys, {} bytes", c.keys, c.bytes)?;
    }
    if !dry_run {
        let mib = r.copied_bytes() as f64 / 1048576.0;
        writeln!(
            out,
            "copied: {} keys, {mib:.1} MiB ({:.0} keys/s, {:.1} MiB/s)",
            r.copied_keys(),
            r.copied_keys() as f64 / secs,
            mib / secs
        )?;
    }
    for (family, n) in &r.identical {
        writeln!(out, "already identical on the target: {family}: {n} keys")?;
    }
    let verb = if dry_run {
        "would restore"
    } else {
        "restored (RESTORE, type checked)"
    };
    let others = if dry_run {
        &r.would_restore
    } else {
        &r.restored
    };
    for (t, c) in others {
        writeln!(out, "{verb}: type {t}: {} keys, {} bytes", c.keys, c.bytes)?;
    }
    if r.expired > 0 {
        writeln!(out, "expired in the file, not written: {} keys", r.expired)?;
    }
    for (t, n) in &r.other_types {
        writeln!(out, "not copied, type {t} (not a module family): {n} keys")?;
    }
    let mut reasons: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, why) in &r.skipped {
        *reasons
            .entry(why.split(':').next().unwrap_or(why))
            .or_default() += 1;
    }
    for (why, n) in reasons {
        writeln!(out, "skipped: {n} keys: {why}")?;
    }
    writeln!(out, "failed: {} keys", r.failed.len())?;
    if let Some(why) = &r.aborted {
        writeln!(out, "ABORTED, the file unreadable from there on: {why}")?;
    }
    Ok(())
}
