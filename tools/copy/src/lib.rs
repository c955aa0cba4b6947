//! rsbloom-copy: copies the module's keys (Bloom filters of RedisBloom's and
//! of valkey-bloom's type, Cuckoo, Count-Min Sketch, Top-K, T-Digest,
//! sliding-window filters) between any two servers, live, whatever their
//! RDB versions; or restores them from an RDB file (docs/copy.md).

mod cli;
mod copy;
mod endpoint;
pub mod family;
pub mod pattern;
pub mod payload;
mod put;
pub mod report;
mod restore;
mod scan;
mod types;

use std::io::Write;
use std::time::Duration;

pub use cli::main_with;
pub use report::{Counts, Outcome, Report};

/// What to copy, from where to where.
#[derive(Debug, Clone)]
pub struct Options {
    /// The source server's URL (empty with `from_rdb`).
    pub from: String,
    /// An RDB file to restore from instead (`-`: standard input).
    pub from_rdb: Option<String>,
    /// The target's URL (empty: none, for a dry run of a file).
    pub to: String,
    /// The source database; default 0 from a server, all from a file.
    pub db: Option<i64>,
    /// The target database; default the source key's.
    pub target_db: Option<i64>,
    pub pattern: String,
    pub replace: bool,
    pub dry_run: bool,
    pub scan_count: u64,
    /// The largest argument to send; default: the target's own limit.
    pub max_command: Option<u64>,
    /// Values of chunked families above this many bytes move in chunks.
    pub chunk_above: u64,
    pub progress: Option<Duration>,
    pub verbose: bool,
    /// From a file: keys of other types too, where the target reads them.
    pub all_types: bool,
}

impl Options {
    pub fn new(from: &str, to: &str) -> Options {
        Options {
            from: from.into(),
            from_rdb: None,
            to: to.into(),
            db: None,
            target_db: None,
            pattern: "*".into(),
            replace: false,
            dry_run: false,
            scan_count: 1000,
            max_command: None,
            chunk_above: 16 << 20,
            progress: Some(Duration::from_secs(5)),
            verbose: false,
            all_types: false,
        }
    }

    /// Restoring the RDB file at `path` (`-`: standard input) into `to`.
    pub fn from_rdb(path: &str, to: &str) -> Options {
        Options {
            from_rdb: Some(path.into()),
            ..Options::new("", to)
        }
    }
}

/// Copies every key of `opts.pattern`, printing to `out`; `Err` when an
/// end cannot be reached at all.
pub fn run(opts: &Options, out: &mut dyn Write) -> Result<Report, String> {
    if let Some(path) = &opts.from_rdb {
        return restore::run(opts, path, out);
    }
    let db = opts.db.unwrap_or(0);
    let mut nodes = endpoint::source_nodes(&opts.from, db)?;
    let target_db = opts.target_db.unwrap_or(db);
    let mut target = endpoint::Target::open(&opts.to, target_db, opts.max_command)?;
    if !opts.dry_run {
        target.probe_rdb_version()?;
    }
    let settings = put::Settings {
        replace: opts.replace,
        dry_run: opts.dry_run,
        chunk_above: opts.chunk_above,
    };
    let mut log = report::Log::new(out, opts.verbose, opts.progress);
    for node in &mut nodes {
        scan_node(opts, &settings, node, &mut target, &mut log)
            .map_err(|e| format!("{}: {e}", node.name))?;
    }
    Ok(log.finish(opts.dry_run))
}

fn scan_node(
    opts: &Options,
    s: &put::Settings,
    node: &mut endpoint::Node,
    t: &mut endpoint::Target,
    log: &mut report::Log,
) -> redis::RedisResult<()> {
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&opts.pattern)
            .arg("COUNT")
            .arg(opts.scan_count)
            .query(&mut node.conn)?;
        let mut types = redis::pipe();
        for k in &keys {
            types.cmd("TYPE").arg(k);
        }
        let types: Vec<String> = if keys.is_empty() {
            Vec::new()
        } else {
            types.query(&mut node.conn)?
        };
        for (key, type_name) in keys.iter().zip(&types) {
            match family::by_type(type_name) {
                Some(f) => {
                    let outcome = copy::copy_key(s, &mut node.conn, t, log, key, f);
                    log.key(key, outcome);
                }
                None if type_name == "none" => {} // deleted since SCAN
                None => log.other_type(type_name),
            }
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}
