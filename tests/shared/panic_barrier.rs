//! The panic barrier (`src/ffi/command.rs`): a panicking command answers an
//! error and the server keeps serving. Uses a module built with
//! `--features panic-test` (adds `rsbloom.panic`): `RSBLOOM_PANIC_MODULE`
//! (`make test` builds it beside the test binaries), else the test builds it
//! into `target/panic-test` (cached after the first time).
use common::*;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

fn panic_module() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(so) = std::env::var_os("RSBLOOM_PANIC_MODULE") {
            return PathBuf::from(so);
        }
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let target = repo.join("target/panic-test");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(&repo)
            .args([
                "build",
                "--profile",
                "ci",
                "--lib",
                "--features",
                "panic-test",
            ])
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .expect("run cargo build --features panic-test");
        assert!(status.success(), "building the panic-test module failed");
        let so = target.join("ci/librsbloom.so");
        assert!(so.exists(), "{} missing", so.display());
        so
    })
    .clone()
}

/// A server with the panic-test module (the test's own module path, so the
/// normal module stays in use by every other test binary).
fn start(flavor: Flavor) -> Server {
    let so = panic_module();
    let mut s = Server::builder(flavor, Module::None)
        .arg("--loadmodule")
        .arg(so.to_str().unwrap())
        .start();
    // The log will say "panic caught": that is the point of this test.
    s.allow_crash_markers();
    s
}

#[test]
fn panicking_command_answers_an_error_and_the_server_keeps_serving() {
    for flavor in flavors() {
        let s = start(flavor);
        let mut c = s.conn();
        assert_eq!(c.cmd(&["SET", "plain", "v"]), ok());
        assert_eq!(c.cmd(&["BF.ADD", "bf", "before"]), int(1));
        assert_eq!(c.cmd(&["CF.ADD", "cf", "before"]), int(1));
        let bf_before = c.cmd(&["DUMP", "bf"]);
        for round in 0..3 {
            let r = c.cmd(&["rsbloom.panic"]);
            assert!(r.is_error(), "{flavor:?} round {round}: {r:?}");
            assert!(
                r.error_text().starts_with("ERR rsbloom internal error"),
                "{r:?}"
            );
            // Same connection and a fresh one both still work.
            assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
            assert_eq!(s.conn().cmd(&["PING"]), Reply::Simple("PONG".into()));
        }
        // BF/CF commands still work, old keys are intact.
        assert_eq!(c.cmd(&["BF.EXISTS", "bf", "before"]), int(1));
        assert_eq!(c.cmd(&["BF.ADD", "bf", "after"]), int(1));
        assert_eq!(c.cmd(&["BF.EXISTS", "bf", "after"]), int(1));
        assert_eq!(c.cmd(&["CF.EXISTS", "cf", "before"]), int(1));
        assert_eq!(c.cmd(&["CF.ADD", "cf", "after"]), int(1));
        assert_eq!(c.cmd(&["CF.COUNT", "cf", "after"]), int(1));
        assert_eq!(c.cmd(&["GET", "plain"]), bulk("v"));
        assert_ne!(c.cmd(&["DUMP", "bf"]), bf_before, "BF.ADD after the panic");
        assert_eq!(c.cmd(&["BF.CARD", "bf"]), int(2));
        // The panic was logged by the barrier, and the server did not crash.
        let log = s.log();
        assert_eq!(
            log.matches("panic caught in rsbloom.panic").count(),
            3,
            "{log}"
        );
        assert!(!log.contains("crashed by signal"), "{log}");
        assert!(!log.contains("BUG REPORT"), "{log}");
    }
}

#[test]
fn panic_inside_multi_and_lua_is_contained() {
    for flavor in flavors() {
        let s = start(flavor);
        let mut c = s.conn();
        assert_eq!(c.cmd(&["MULTI"]), ok());
        assert_eq!(c.cmd(&["BF.ADD", "m", "a"]), Reply::Simple("QUEUED".into()));
        assert_eq!(c.cmd(&["rsbloom.panic"]), Reply::Simple("QUEUED".into()));
        assert_eq!(c.cmd(&["BF.ADD", "m", "b"]), Reply::Simple("QUEUED".into()));
        let r = c.cmd(&["EXEC"]);
        let items = r.as_array();
        assert_eq!(items.len(), 3, "{r:?}");
        assert_eq!(items[0], int(1));
        assert!(items[1].is_error(), "{r:?}");
        assert_eq!(items[2], int(1));
        let r = c.cmd(&["EVAL", "return redis.pcall('rsbloom.panic')", "0"]);
        assert!(r.is_error(), "{r:?}");
        assert_eq!(c.cmd(&["BF.CARD", "m"]), int(2));
        assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()));
    }
}

#[test]
fn release_module_has_no_panic_command() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let r = s.conn().cmd(&["rsbloom.panic"]);
        assert!(
            r.is_error() && r.error_text().contains("unknown command"),
            "{r:?}"
        );
    }
}
