//! The copy tool restoring RDB files (`--from-rdb`, docs/copy.md "From an
//! RDB file", issue 29): files SAVEd by every server of the matrix with
//! rsbloom and with RedisBloom 2.8.2 restored into every server running
//! rsbloom; a large filter in chunks; truncated and bit-flipped files;
//! dry runs, --match, --replace, --all-types, standard input.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::server::{all_flavors, flavors, Flavor, Module, Server};
use common::{Conn, Reply};
use rsbloom_copy::{Options, Report};

use crate::copy::{fill, same, url};

/// SAVEs `server` and gives its RDB file's path.
fn save(c: &mut Conn) -> PathBuf {
    assert_eq!(c.cmd(&["SAVE"]), common::ok());
    let get = |c: &mut Conn, name: &str| {
        let r = c.cmd(&["CONFIG", "GET", name]);
        String::from_utf8_lossy(r.as_array()[1].as_bytes()).into_owned()
    };
    Path::new(&get(c, "dir")).join(get(c, "dbfilename"))
}

/// Restores `file` into the server on `to` (0: no target), `tweak`ing the options.
fn restore(file: &Path, to: u16, tweak: impl FnOnce(&mut Options)) -> (Report, String) {
    let target = if to == 0 { String::new() } else { url(to) };
    let mut o = Options::from_rdb(file.to_str().expect("utf-8 path"), &target);
    o.progress = None;
    tweak(&mut o);
    let mut out = Vec::new();
    let report = rsbloom_copy::run(&o, &mut out)
        .unwrap_or_else(|e| panic!("restore {} -> {to}: {e}", file.display()));
    (report, String::from_utf8_lossy(&out).into_owned())
}

/// The keys on `c` (KEYS: test databases are small).
fn all_keys(c: &mut Conn) -> Vec<Vec<u8>> {
    let mut k: Vec<Vec<u8>> = c
        .cmd(&["KEYS", "*"])
        .as_array()
        .iter()
        .map(|r| r.as_bytes().to_vec())
        .collect();
    k.sort();
    k
}

/// The writers of the matrix: rsbloom on every server, RedisBloom 2.8.2
/// where it loads, each with a key of every family it serves (a TTL on
/// the Bloom filter) and a string, the file SAVEd.
fn writers() -> Vec<(String, Server, Vec<String>, PathBuf)> {
    let mut out = Vec::new();
    for f in all_flavors() {
        for m in [Module::Rsbloom, Module::Reference] {
            // RedisBloom 2.8.2 where it loads (as `reference_loads`, the
            // server kept).
            let Ok(s) = std::panic::catch_unwind(|| Server::start(f, m)) else {
                continue;
            };
            let mut c = s.conn();
            let keys = fill(&mut c, "", m);
            assert!(!c.cmd(&["PEXPIRE", "td", "900000"]).is_error());
            assert_eq!(c.cmd(&["SET", "plain", "string"]), common::ok());
            let file = save(&mut c);
            let name = format!(
                "{}{}",
                f.name(),
                if m == Module::Reference {
                    "/RedisBloom"
                } else {
                    ""
                }
            );
            out.push((name, s, keys, file));
        }
    }
    out
}

/// Issue 29's matrix: the file of every writer restored into every server
/// running rsbloom (one target per server, FLUSHALL between files): every
/// key identical to the writer's (the family's content check), its TTL
/// kept, the string counted and not written — Redis 8.6 and Valkey 9.1
/// files into Redis 7.0 and Valkey 8.0 included.
#[test]
fn every_family_restores_from_every_server_into_every_server() {
    let started = Instant::now();
    let writers = writers();
    let targets: Vec<Server> = all_flavors()
        .into_iter()
        .map(|f| Server::start(f, Module::Rsbloom))
        .collect();
    let mut table = String::from("| file → target |");
    for t in &targets {
        table += &format!(" {} |", t.flavor().name());
    }
    let mut failures = Vec::new();
    for (name, src, keys, file) in &writers {
        table += &format!("\n| {name} |");
        for t in &targets {
            let mut d = t.conn();
            assert_eq!(d.cmd(&["FLUSHALL"]), common::ok());
            let (r, out) = restore(file, t.port, |_| {});
            let ok = keys
                .iter()
                .filter(|k| same(&mut src.conn(), &mut d, k))
                .count();
            table += &format!(" {ok}/{} |", keys.len());
            let only_ours = keys.len() == d.cmd(&["DBSIZE"]).as_int() as usize;
            if ok != keys.len()
                || r.copied_keys() != keys.len() as u64
                || !r.ok()
                || r.other_types.get("string") != Some(&1)
                || !only_ours
            {
                failures.push(format!("{name} -> {}:\n{out}", t.flavor().name()));
            }
        }
    }
    println!("{table}\n{:.1} s", started.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{table}\n{}", failures.join("\n"));
}

/// A 64 MiB Bloom filter (uncompressed file) restores in chunks
/// (BF.LOADCHUNK on the target), identical; so do a Cuckoo and a
/// sliding-window filter made to go in chunks by `--chunk-above`.
#[test]
fn a_large_filter_restores_in_chunks() {
    let fl = flavors();
    let src = Server::builder(fl[fl.len() - 1], Module::Rsbloom)
        .uncompressed_rdb()
        .start();
    let mut c = src.conn();
    for cmd in [
        vec!["BF.RESERVE", "big:bf", "0.01", "56000000"],
        vec!["BF.MADD", "big:bf", "a", "b", "c"],
        vec!["PEXPIRE", "big:bf", "900000"],
        vec!["CF.RESERVE", "cf", "100000"],
        vec!["CF.ADD", "cf", "a"],
        vec!["APBF.RESERVE", "apbf", "COUNT", "0.01", "100000"],
        vec!["APBF.ADD", "apbf", "a"],
    ] {
        assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
    }
    let file = save(&mut c);
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size > 64 << 20, "the file has {size} bytes");
    let dst = Server::builder(fl[0], Module::Rsbloom)
        .uncompressed_rdb()
        .start();
    let started = Instant::now();
    let (r, out) = restore(&file, dst.port, |o| o.chunk_above = 1 << 10);
    let secs = started.elapsed().as_secs_f64();
    assert!(r.ok() && r.copied_keys() == 3, "{out}");
    let mut d = dst.conn();
    for k in ["big:bf", "cf", "apbf"] {
        assert!(same(&mut c, &mut d, k), "{k}\n{out}");
    }
    let stats = String::from_utf8_lossy(d.cmd(&["INFO", "commandstats"]).as_bytes()).to_lowercase();
    for chunked in ["bf.loadchunk", "cf.loadchunk", "apbf.loadchunk"] {
        assert!(
            stats.contains(&format!("cmdstat_{chunked}:calls=")),
            "{stats}"
        );
    }
    println!(
        "{} MiB file restored in {secs:.2} s ({:.0} MiB/s)",
        size >> 20,
        size as f64 / 1048576.0 / secs
    );
}

/// A file made of `n` keys of each family plus a string, for the
/// truncation and bit-flip tests.
fn small_file(c: &mut Conn, n: usize) -> (PathBuf, Vec<String>) {
    let mut keys = Vec::new();
    for i in 0..n {
        keys.extend(fill(c, &format!("k{i}:"), Module::Rsbloom));
    }
    assert_eq!(c.cmd(&["SET", "plain", "string"]), common::ok());
    (save(c), keys)
}

/// Truncated at a spread of offsets: the run stops with the offset and the
/// key being read (exit code 3 from the command line) and, the file being
/// read through before anything is written, nothing is on the target. Every
/// single-bit flip of the file is caught (the values', by the file's CRC64
/// at its end) before anything is written, and never panics. From standard
/// input (read once): every key before the cut in place and identical,
/// nothing of the key being read.
#[test]
fn truncated_and_bit_flipped_files() {
    let f = flavors()[0];
    let src = Server::start(f, Module::Rsbloom);
    let mut c = src.conn();
    let (file, _) = small_file(&mut c, 2);
    let bytes = std::fs::read(&file).unwrap();
    let dst = Server::start(f, Module::Rsbloom);
    let mut d = dst.conn();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.rdb");
    let mut cuts: Vec<usize> = (1..20).map(|i| bytes.len() * i / 20).collect();
    cuts.extend([9, 10, bytes.len() - 8, bytes.len() - 1]);
    for n in cuts {
        std::fs::write(&cut, &bytes[..n]).unwrap();
        assert_eq!(d.cmd(&["FLUSHALL"]), common::ok());
        let mut o = Options::from_rdb(cut.to_str().unwrap(), &url(dst.port));
        o.progress = None;
        let mut out = Vec::new();
        let r = rsbloom_copy::run(&o, &mut out);
        let out = String::from_utf8_lossy(&out);
        let why = match r {
            Ok(r) => r
                .aborted
                .unwrap_or_else(|| panic!("cut at {n}: no error\n{out}")),
            Err(e) => e, // no RDB header at all
        };
        assert!(why.contains("offset "), "cut at {n}: {why}");
        assert_eq!(all_keys(&mut d), Vec::<Vec<u8>>::new(), "cut at {n}: {out}");
    }
    // The command line: exit code 3, the error on stderr, the report printed.
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let args = [
        "rsbloom-copy",
        "--from-rdb",
        cut.to_str().unwrap(),
        "--to",
        &url(dst.port),
    ];
    let mut out = Vec::new();
    assert_eq!(rsbloom_copy::main_with(args, &mut out), 3);
    assert!(String::from_utf8_lossy(&out).contains("ABORTED"));

    const FLIPS: usize = 60;
    let flipped = dir.path().join("flipped.rdb");
    let mut caught = 0;
    for i in 0..FLIPS {
        let bit = (i * 7919 + 13) % (bytes.len() * 8);
        let mut b = bytes.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        std::fs::write(&flipped, &b).unwrap();
        assert_eq!(d.cmd(&["FLUSHALL"]), common::ok());
        let mut o = Options::from_rdb(flipped.to_str().unwrap(), &url(dst.port));
        o.progress = None;
        let r = rsbloom_copy::run(&o, &mut Vec::new());
        let failed = match r {
            Ok(r) => r.aborted.is_some(),
            Err(_) => true,
        };
        caught += usize::from(failed);
        assert!(failed, "bit {bit} flipped: not noticed");
        assert_eq!(all_keys(&mut d), Vec::<Vec<u8>>::new(), "bit {bit}");
    }
    println!("{caught}/{FLIPS} bit flips caught");

    // Standard input, read once: the keys before the cut are restored.
    let Some(bin) = copy_binary() else { return };
    for n in [bytes.len() / 3, bytes.len() * 2 / 3] {
        std::fs::write(&cut, &bytes[..n]).unwrap();
        assert_eq!(d.cmd(&["FLUSHALL"]), common::ok());
        let out = std::process::Command::new(&bin)
            .args(["--from-rdb", "-", "--to", &url(dst.port), "--progress", "0"])
            .stdin(std::fs::File::open(&cut).unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "cut at {n}: {err}");
        let restored = all_keys(&mut d);
        assert!(
            !restored.is_empty(),
            "cut at {n}: nothing before it restored"
        );
        for k in restored {
            let k = String::from_utf8(k).unwrap();
            assert!(same(&mut c, &mut d, &k), "cut at {n}: {k} differs");
        }
        // A cut between two keys names none.
        if let Some(key) = err.split("key '").nth(1).and_then(|s| s.split('\'').next()) {
            assert_eq!(
                d.cmd(&["EXISTS", key]).as_int(),
                0,
                "cut at {n}: {key} written"
            );
        }
    }
}

/// The binary `make test` builds (the standard input cases), or `None`
/// with a message when it was not built.
fn copy_binary() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/rsbloom-copy");
    if !bin.exists() {
        eprintln!(
            "{} not built: the standard input cases skipped",
            bin.display()
        );
        return None;
    }
    Some(bin)
}

/// Dry runs (with and without a target), --match, --replace, --db and
/// --target-db, an expired key, keys of other types and --all-types,
/// standard input.
#[test]
fn dry_runs_match_replace_databases_other_types_and_stdin() {
    let fl = all_flavors();
    let (newest, oldest) = (fl[fl.len() - 1], fl[0]);
    let src = Server::start(newest, Module::Rsbloom);
    let mut c = src.conn();
    let keys = fill(&mut c, "", Module::Rsbloom);
    for cmd in [
        vec!["SET", "plain", "string"],
        vec!["HSET", "h", "f", "v"],
        vec!["SADD", "s", "a", "b"],
        vec!["SET", "gone", "soon", "PX", "3000"],
        vec!["SELECT", "3"],
        vec!["CMS.INITBYDIM", "db3:cms", "10", "2"],
        vec!["SELECT", "0"],
    ] {
        assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
    }
    let file = save(&mut c);
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.cmd(&["EXISTS", "gone"]).as_int() == 1 {
        assert!(Instant::now() < deadline, "gone never expired");
        std::thread::sleep(Duration::from_millis(50));
    }
    let n = keys.len() as u64;

    // What the file holds, no target.
    let (r, out) = restore(&file, 0, |o| o.dry_run = true);
    assert_eq!(
        r.would_copy.values().map(|c| c.keys).sum::<u64>(),
        n + 1,
        "{out}"
    );
    for k in &keys {
        assert!(out.contains(&format!("would copy {k} (")), "{k}: {out}");
    }
    assert!(out.contains("not copied h (hash, "), "{out}");
    assert_eq!(r.expired, 1, "{out}");
    assert_eq!(
        (r.other_types.get("string"), r.other_types.get("set")),
        (Some(&1), Some(&1))
    );

    let dst = Server::start(oldest, Module::Rsbloom);
    let mut d = dst.conn();
    // --match, database 0 only.
    let (r, out) = restore(&file, dst.port, |o| {
        o.pattern = "c*".into();
        o.db = Some(0);
    });
    assert_eq!(r.copied_keys(), 3, "{out}");
    assert_eq!(
        all_keys(&mut d),
        [b"cf".to_vec(), b"cms".to_vec(), b"cmsw".to_vec()]
    );
    // Everything: database 3 into 3, identical keys (the three above)
    // recognised.
    let (r, out) = restore(&file, dst.port, |_| {});
    assert!(r.ok(), "{out}");
    assert_eq!(
        (r.copied_keys(), r.identical.values().sum::<u64>()),
        (n - 2, 3),
        "{out}"
    );
    for k in &keys {
        assert!(same(&mut c, &mut d, k), "{k}\n{out}");
    }
    assert_eq!(d.cmd(&["EXISTS", "plain", "h", "gone"]).as_int(), 0);
    assert_eq!(d.cmd(&["SELECT", "3"]), common::ok());
    assert_eq!(all_keys(&mut d), [b"db3:cms".to_vec()]);
    assert_eq!(d.cmd(&["SELECT", "0"]), common::ok());
    // --target-db: every database into 5.
    let (r, out) = restore(&file, dst.port, |o| o.target_db = Some(5));
    assert_eq!(r.copied_keys(), n + 1, "{out}");

    // --replace.
    assert!(!d.cmd(&["CMS.INCRBY", "cms", "z", "1"]).is_error());
    let (r, out) = restore(&file, dst.port, |o| o.db = Some(0));
    assert_eq!(r.skipped.len(), 1, "{out}");
    assert!(r.skipped[0].1.contains("--replace"), "{out}");
    let (r, out) = restore(&file, dst.port, |o| {
        o.db = Some(0);
        o.replace = true;
    });
    assert_eq!(r.copied_keys(), 1, "{out}");
    assert!(same(&mut c, &mut d, "cms"));

    // --all-types: a newer server's string and hash go anywhere; its
    // listpack set (RDB 11) not into Redis 7.0 (RDB 10), with the reason.
    let (r, out) = restore(&file, dst.port, |o| {
        o.all_types = true;
        o.db = Some(0);
    });
    assert_eq!(
        d.cmd(&["GET", "plain"]),
        Reply::Bulk(b"string".to_vec()),
        "{out}"
    );
    assert_eq!(
        d.cmd(&["HGET", "h", "f"]),
        Reply::Bulk(b"v".to_vec()),
        "{out}"
    );
    let set_restored = d.cmd(&["SCARD", "s"]).as_int() == 2;
    if oldest == Flavor::Redis7 {
        assert!(
            !set_restored
                && r.skipped
                    .iter()
                    .any(|(k, why)| k == b"s" && why.contains("needs RDB 11")),
            "{out}"
        );
    } else {
        assert!(set_restored, "{out}");
    }
    println!("--all-types into {}: {out}", oldest.name());

    // Standard input, through the binary `make test` builds.
    let Some(bin) = copy_binary() else { return };
    assert_eq!(d.cmd(&["FLUSHALL"]), common::ok());
    let out = std::process::Command::new(&bin)
        .args(["--from-rdb", "-", "--to", &url(dst.port), "--progress", "0"])
        .stdin(std::fs::File::open(&file).unwrap())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for k in &keys {
        assert!(same(&mut c, &mut d, k), "{k}\n{text}");
    }
}

/// This process's peak resident memory (`VmHWM`), bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}

/// The measurement of docs/copy.md: a 1.05 GiB Bloom filter in an
/// uncompressed file restores in chunks, identical, TTL kept; the peak
/// memory of this process (the tool in-process) against the file size.
/// Minutes and 4 GiB of memory: `cargo test --profile ci --test shared --
/// --ignored a_1gib_filter`.
#[test]
#[ignore]
fn a_1gib_filter_restores_in_chunks() {
    let fl = flavors();
    let src = Server::builder(fl[fl.len() - 1], Module::Rsbloom)
        .uncompressed_rdb()
        .start();
    let mut c = src.conn();
    for cmd in [
        vec!["BF.RESERVE", "huge", "0.000001", "300000000"],
        vec!["BF.MADD", "huge", "a", "b", "c"],
        vec!["PEXPIRE", "huge", "86400000"],
    ] {
        assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
    }
    let file = save(&mut c);
    let size = std::fs::metadata(&file).unwrap().len();
    let dst = Server::start(fl[0], Module::Rsbloom);
    let before = peak_rss();
    let started = Instant::now();
    let (r, out) = restore(&file, dst.port, |_| {});
    let secs = started.elapsed().as_secs_f64();
    assert!(r.ok() && r.copied_keys() == 1, "{out}");
    let mut d = dst.conn();
    assert_eq!(d.cmd(&["BF.EXISTS", "huge", "b"]).as_int(), 1);
    assert!(d.cmd(&["PTTL", "huge"]).as_int() > 0);
    println!(
        "file {size} bytes restored in {secs:.1} s ({:.1} MiB/s); peak RSS {} MiB (before {} MiB)",
        size as f64 / 1048576.0 / secs,
        peak_rss() >> 20,
        before >> 20
    );
}
