//! The command line: `rsbloom-copy --from URL|--from-rdb PATH --to URL [options]`.

use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

use clap::{value_parser, Arg, ArgAction, ArgGroup, ArgMatches, Command};

use crate::Options;

fn command() -> Command {
    Command::new("rsbloom-copy")
        .about(
            "Copies Bloom (RedisBloom's and valkey-bloom's), Cuckoo, Count-Min Sketch, Top-K, \
             T-Digest and sliding-window keys between two servers (Redis 7/8, Valkey 8/9; \
             rsbloom, RedisBloom or valkey-bloom), live, whatever their RDB versions; every \
             copied key is verified on the target; or restores them from an RDB file \
             (docs/copy.md).",
        )
        .arg(
            Arg::new("from")
                .long("from")
                .value_name("URL")
                .help("source, e.g. redis://host:6379 (a cluster node: the whole cluster)"),
        )
        .arg(
            Arg::new("from-rdb")
                .long("from-rdb")
                .value_name("PATH")
                .help("source: an RDB file (- for standard input), read once, front to back"),
        )
        .group(
            ArgGroup::new("source")
                .args(["from", "from-rdb"])
                .required(true),
        )
        .arg(
            Arg::new("to")
                .long("to")
                .required_unless_present_all(["from-rdb", "dry-run"])
                .value_name("URL")
                .help("target, e.g. redis://user:pass@host:6380"),
        )
        .arg(
            Arg::new("db")
                .long("db")
                .value_name("N")
                .value_parser(value_parser!(i64))
                .help("source database [default: 0; from a file: every database]"),
        )
        .arg(
            Arg::new("target-db")
                .long("target-db")
                .value_name("N")
                .value_parser(value_parser!(i64))
                .help("target database [default: the source key's]"),
        )
        .arg(
            Arg::new("all-types")
                .long("all-types")
                .action(ArgAction::SetTrue)
                .conflicts_with("from")
                .help("from a file: keys of other types too, where the target reads their type"),
        )
        .arg(
            Arg::new("match")
                .long("match")
                .value_name("PATTERN")
                .default_value("*")
                .help("copy the keys of this SCAN MATCH pattern"),
        )
        .arg(
            Arg::new("replace")
                .long("replace")
                .action(ArgAction::SetTrue)
                .help("overwrite target keys that exist with other content"),
        )
        .arg(
            Arg::new("dry-run")
                .long("dry-run")
                .action(ArgAction::SetTrue)
                .help("write nothing: list what would be copied"),
        )
        .arg(
            Arg::new("verbose")
                .long("verbose")
                .short('v')
                .action(ArgAction::SetTrue)
                .help("one line per key, copied ones too"),
        )
        .arg(
            Arg::new("scan-count")
                .long("scan-count")
                .value_name("N")
                .default_value("1000")
                .value_parser(value_parser!(u64)),
        )
        .arg(
            Arg::new("max-command")
                .long("max-command")
                .value_name("BYTES")
                .value_parser(parse_size)
                .help("largest argument to send [default: the target's proto-max-bulk-len]"),
        )
        .arg(
            Arg::new("chunk-above")
                .long("chunk-above")
                .value_name("BYTES")
                .default_value("16mb")
                .value_parser(parse_size)
                .help("Bloom, Cuckoo and sliding-window values larger than this move in chunks"),
        )
        .arg(
            Arg::new("progress")
                .long("progress")
                .value_name("SECONDS")
                .default_value("5")
                .value_parser(value_parser!(u64))
                .help("progress line interval (0: none)"),
        )
}

fn options(m: &ArgMatches) -> Options {
    let s = |name: &str| m.get_one::<String>(name).cloned().unwrap_or_default();
    let mut o = Options::new(&s("from"), &s("to"));
    o.from_rdb = m.get_one::<String>("from-rdb").cloned();
    o.db = m.get_one::<i64>("db").copied();
    o.target_db = m.get_one::<i64>("target-db").copied();
    o.all_types = m.get_flag("all-types");
    o.pattern = s("match");
    o.replace = m.get_flag("replace");
    o.dry_run = m.get_flag("dry-run");
    o.verbose = m.get_flag("verbose");
    o.scan_count = m.get_one::<u64>("scan-count").copied().unwrap_or(1000);
    o.max_command = m.get_one::<u64>("max-command").copied();
    o.chunk_above = m
        .get_one::<u64>("chunk-above")
        .copied()
        .unwrap_or(o.chunk_above);
    o.progress = m
        .get_one::<u64>("progress")
        .copied()
        .filter(|&s| s > 0)
        .map(Duration::from_secs);
    o
}

/// Bytes with an optional `k`/`kb`/`m`/`mb`/`g`/`gb` suffix (powers of 1024, as in redis.conf).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let shift = match &lower[digits.len()..] {
        "" | "b" => 0,
        "k" | "kb" => 10,
        "m" | "mb" => 20,
        "g" | "gb" => 30,
        other => return Err(format!("unknown size unit {other:?}")),
    };
    let n: u64 = digits.parse().map_err(|_| format!("not a size: {s:?}"))?;
    n.checked_mul(1 << shift)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("size out of range: {s:?}"))
}

/// Runs the tool on `args`; the exit code: 0 all copied or skipped, 1 some
/// key failed, 2 usage or connection error, 3 the file could not be read to
/// its end (the keys before were done).
pub fn main_with(
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    out: &mut dyn Write,
) -> i32 {
    let m = match command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match crate::run(&options(&m), out) {
        Ok(report) if report.ok() => 0,
        Ok(report) if report.aborted.is_some() => {
            eprintln!("rsbloom-copy: {}", report.aborted.unwrap_or_default());
            3
        }
        Ok(_) => 1,
        Err(e) => {
            eprintln!("rsbloom-copy: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("16mb"), Ok(16 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12tb").is_err());
        assert!(parse_size("mb").is_err());
        assert!(parse_size("99999999999999999999g").is_err());
    }

    #[test]
    fn options_from_the_command_line() {
        let m = command()
            .try_get_matches_from([
                "rsbloom-copy",
                "--from",
                "redis://a",
                "--to",
                "redis://b",
                "--db",
                "3",
                "--replace",
                "--max-command",
                "1mb",
                "--progress",
                "0",
            ])
            .unwrap();
        let o = options(&m);
        assert_eq!(
            (o.from.as_str(), o.to.as_str(), o.db, o.target_db),
            ("redis://a", "redis://b", Some(3), None)
        );
        assert!(o.replace && !o.dry_run);
        assert_eq!(
            (o.max_command, o.progress, o.chunk_above),
            (Some(1 << 20), None, 16 << 20)
        );
        assert!(command()
            .try_get_matches_from(["rsbloom-copy", "--from", "redis://a"])
            .is_err());
    }

    #[test]
    fn a_file_as_the_source() {
        let parse = |args: &[&str]| {
            command()
                .try_get_matches_from([&["rsbloom-copy"], args].concat())
                .map(|m| options(&m))
        };
        let o = parse(&["--from-rdb", "-", "--to", "redis://b", "--all-types"]).unwrap();
        assert_eq!(o.from_rdb.as_deref(), Some("-"));
        assert!(o.all_types && o.db.is_none() && o.target_db.is_none());
        // A dry run lists a file without a target.
        let o = parse(&["--from-rdb", "dump.rdb", "--dry-run"]).unwrap();
        assert_eq!(o.to, "");
        assert!(parse(&["--from-rdb", "dump.rdb"]).is_err());
        assert!(parse(&[
            "--from-rdb",
            "x",
            "--from",
            "redis://a",
            "--to",
            "redis://b"
        ])
        .is_err());
        assert!(parse(&["--from", "redis://a", "--to", "redis://b", "--all-types"]).is_err());
        assert!(parse(&["--to", "redis://b"]).is_err());
    }
}
