//! The client examples users copy (examples/, README "Client examples"; each
//! uses all five families) run against rsbloom on every server flavor, so
//! they cannot rot: redis-cli (its transcript must equal
//! examples/redis-cli.out), redis-py, node-redis with @redis/bloom, and
//! redis-rs. Each of the last three asserts its own replies and ends with
//! "<client> example: ok".
//!
//! Needs what `make test` provides: `.venv` with redis-py, `npm ci` in
//! examples/node (scripts/ensure-deps.sh), and the redis_rs example binary
//! (`cargo test --workspace` builds it; alone: `cargo build --profile ci
//! --example redis_rs`).
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs an example against `port` and returns its standard output.
fn run(what: &str, program: &Path, args: &[&str], port: u16) -> String {
    assert!(
        program.exists() || program.components().count() == 1,
        "{what}: {} missing (see the header of tests/shared/examples.rs)",
        program.display()
    );
    let out = Command::new(program)
        .args(args)
        .arg(port.to_string())
        .current_dir(repo())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {}: {e}", program.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The example binary `cargo test` built next to this test binary.
fn redis_rs_example() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/examples-<hash> → target/<profile>/examples/redis_rs
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>")
        .join("examples/redis_rs")
}

#[test]
fn client_examples_run() {
    let node_modules = repo().join("examples/node/node_modules/@redis/bloom");
    assert!(
        node_modules.exists(),
        "run `npm ci --prefix examples/node` (scripts/ensure-deps.sh test does)"
    );
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let transcript = run(
            "redis-cli",
            Path::new("sh"),
            &["examples/redis-cli.sh"],
            s.port,
        );
        let want = std::fs::read_to_string(repo().join("examples/redis-cli.out"))
            .expect("examples/redis-cli.out");
        assert_eq!(transcript, want, "{flavor:?}: redis-cli transcript");
        for (client, program, args) in [
            (
                "redis-py",
                repo().join(".venv/bin/python"),
                vec!["examples/python/bloom.py"],
            ),
            (
                "node-redis",
                PathBuf::from("node"),
                vec!["examples/node/bloom.mjs"],
            ),
            ("redis-rs", redis_rs_example(), vec![]),
        ] {
            let out = run(client, &program, &args, s.port);
            assert!(
                out.ends_with(&format!("{client} example: ok\n")),
                "{flavor:?} {client}:\n{out}"
            );
        }
    }
}
