//! The command line: `rsbloom-copy --from URL --to URL [options]`.

use std::ffi::OsString;
use std::io::Write;
use std::time::Duration;

use clap::{value_parser, Arg, ArgAction, ArgMatches, Command};

use crate::Options;

fn command() -> Command {
    Command::new("rsbloom-copy")
        .about(
            "Copies Bloom (RedisBloom's and valkey-bloom's), Cuckoo, Count-Min Sketch, Top-K, \
             T-Digest and sliding-window keys between two servers (Redis 7/8, Valkey 8/9; \
             rsbloom, RedisBloom or valkey-bloom), live, whatever their RDB versions; every \
             copied key is verified on the target (docs/copy.md).",
        )
        .arg(
            Arg::new("from")
                .long("from")
                .required(true)
                .value_name("URL")
                .help("source, e.g. redis://host:6379 (a cluster node: the whole cluster)"),
        )
        .arg(
            Arg::new("to")
                .long("to")
                .required(true)
                .value_name("URL")
                .help("target, e.g. redis://user:pass@host:6380"),
        )
        .arg(
            Arg::new("db")
                .long("db")
                .value_name("N")
                .default_value("0")
                .value_parser(value_parser!(i64))
                .help("source database"),
        )
        .arg(
            Arg::new("target-db")
                .long("target-db")
                .value_name("N")
                .value_parser(value_parser!(i64))
                .help("target database [default: --db]"),
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
    o.db = m.get_one::<i64>("db").copied().unwrap_or(0);
    o.target_db = m.get_one::<i64>("target-db").copied().unwrap_or(o.db);
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
/// key failed, 2 usage or connection error.
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
            ("redis://a", "redis://b", 3, 3)
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
}
