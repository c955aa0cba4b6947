//! Client-library compatibility: redis-py's `r.bf()` / `r.cf()` APIs
//! (tests/clients/redis_py.py) and `redis-cli`, against rsbloom on every
//! server flavor and against the reference RedisBloom 2.8.2.
use common::*;
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the redis-py script and returns its transcript (`label\tvalue` lines).
fn redis_py(port: u16, protocol: u8, module: &str, legacy: bool) -> Vec<(String, String)> {
    let python = repo().join(".venv/bin/python");
    let out = Command::new(&python)
        .arg(repo().join("tests/clients/redis_py.py"))
        .args([
            port.to_string(),
            protocol.to_string(),
            module.to_string(),
            (legacy as u8).to_string(),
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "redis_py.py {module} RESP{protocol} legacy={legacy} failed ({}):\n{}\n{stdout}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<(String, String)> = stdout
        .lines()
        .map(|l| {
            let (label, value) = l.split_once('\t').expect("label<TAB>value");
            (label.to_string(), value.to_string())
        })
        .collect();
    assert!(lines.len() >= 45, "short transcript:\n{stdout}");
    lines
}

fn value<'a>(t: &'a [(String, String)], label: &str) -> &'a str {
    &t.iter()
        .find(|(l, _)| l == label)
        .unwrap_or_else(|| panic!("no `{label}` in transcript"))
        .1
}

#[test]
fn redis_py_matches_reference() {
    // Each server against the reference on the same binary.
    let pairs: Vec<(Server, Server)> = flavors()
        .into_iter()
        .map(|f| {
            (
                Server::start(f, Module::Reference),
                Server::start(f, Module::Rsbloom),
            )
        })
        .collect();
    // (protocol, legacy_responses): RESP3 with legacy responses leaves
    // BF.INFO/CF.INFO as maps, without them redis-py parses BFInfo/CFInfo.
    for (protocol, legacy) in [(2, true), (3, true), (3, false)] {
        for (reference, s) in &pairs {
            let want = redis_py(reference.port, protocol, "reference", legacy);
            let got = redis_py(s.port, protocol, "rsbloom", legacy);
            let what = format!("{:?} RESP{protocol} legacy={legacy}", s.flavor());
            assert_eq!(got.len(), want.len(), "{what}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.0, w.0, "{what}");
                if !g.0.starts_with("module:") {
                    assert_eq!(g, w, "{what}: rsbloom differs from RedisBloom 2.8.2");
                }
            }
            assert_eq!(value(&got, "module:version"), "int:81181");
            let info = value(&got, "bf.info bf3");
            let bool_true = if protocol == 3 { "bool:True" } else { "int:1" };
            assert_eq!(value(&got, "bf.exists"), bool_true, "{what}");
            if protocol == 2 || !legacy {
                assert!(info.starts_with("BFInfo{"), "{what}: {info}");
                assert!(info.contains("'expansionRate': NoneType:None"), "{info}");
                assert!(value(&got, "cf.info cf2").starts_with("CFInfo{"), "{what}");
            } else {
                assert!(info.starts_with("{b'Capacity': int:50"), "{what}: {info}");
            }
            assert_eq!(value(&want, "module:version"), "int:20802");
        }
    }
}

fn cli(args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(args)
        .output()
        .expect("run redis-cli");
    assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn redis_cli_output() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let p = s.port.to_string();
        let p = p.as_str();
        assert_eq!(cli(&["-p", p, "BF.ADD", "k", "x"]), "1\n");
        assert_eq!(cli(&["-p", p, "BF.ADD", "k", "x"]), "0\n");
        assert_eq!(
            cli(&["-p", p, "--no-raw", "BF.MADD", "k", "x", "y"]),
            "1) (integer) 0\n2) (integer) 1\n"
        );
        // redis-cli 7.0 spells RESP3 `-3`.
        assert_eq!(
            cli(&["-p", p, "-3", "--no-raw", "BF.EXISTS", "k", "y"]),
            "(true)\n"
        );
        assert_eq!(
            cli(&["-p", p, "-3", "--no-raw", "BF.INFO", "k"]),
            "1# Capacity => (integer) 100\n\
             2# Size => (integer) 240\n\
             3# Number of filters => (integer) 1\n\
             4# Number of items inserted => (integer) 2\n\
             5# Expansion rate => (integer) 2\n"
        );
        assert_eq!(
            cli(&["-p", p, "-3", "BF.INFO", "k"]),
            "Capacity 100\nSize 240\nNumber of filters 1\nNumber of items inserted 2\nExpansion rate 2\n"
        );
        assert_eq!(
            cli(&["-p", p, "--no-raw", "BF.INFO", "k", "ITEMS"]),
            "1) (integer) 2\n"
        );
        assert_eq!(
            cli(&["-p", p, "-3", "--no-raw", "CF.RESERVE", "c", "1000"]),
            "OK\n"
        );
        assert_eq!(
            cli(&["-p", p, "-3", "--no-raw", "CF.INFO", "c"]),
            "1# Size => (integer) 1080\n\
             2# Number of buckets => (integer) 512\n\
             3# Number of filters => (integer) 1\n\
             4# Number of items inserted => (integer) 0\n\
             5# Number of items deleted => (integer) 0\n\
             6# Bucket size => (integer) 2\n\
             7# Expansion rate => (integer) 1\n\
             8# Max iterations => (integer) 20\n"
        );
        assert_eq!(
            cli(&["-p", p, "--no-raw", "BF.INFO", "nope"]),
            "(error) ERR not found\n"
        );
    }
}
