//! The Docker image (Dockerfile) in real containers, started by
//! testcontainers and reached through published ports with the `redis`
//! crate: Bloom and Cuckoo filters written in one container are read back
//! byte-identical by a new container on the same data directory (RDB written
//! at stop, and AOF), and a second container as a replica of the first ends
//! identical (DEBUG DIGEST-VALUE). The images run the newest servers of the
//! test matrix, the very builds the rest of the suite runs on.
//!
//! `make test` builds the images `rsbloom:redis` (Redis 8.6) and
//! `rsbloom:valkey` (Valkey 9; scripts/docker.sh, from the module just
//! built) and sets DOCKER_HOST. By
//! hand: `export DOCKER_HOST=$(scripts/docker.sh host)`, `scripts/docker.sh
//! build redis`, `RSBLOOM_IMAGES=rsbloom:redis cargo test --test container`.
//! Without a Docker daemon the tests fail under CI (`CI` set) and elsewhere
//! say loudly that they did not run.

use common::Flavor;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use redis::Connection;
use testcontainers::core::{IntoContainerPort, Mount, WaitFor};
use testcontainers::runners::SyncRunner;
use testcontainers::{Container, GenericImage, ImageExt};

/// The server's port inside the container.
const PORT: u16 = 6379;

/// `RSBLOOM_IMAGES` (comma-separated `name:tag`), or both images `make test` builds.
fn images() -> Vec<String> {
    std::env::var("RSBLOOM_IMAGES")
        .unwrap_or_else(|_| "rsbloom:redis,rsbloom:valkey".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The images to test, or none (after saying why, loudly) when no Docker
/// daemon answers outside CI. Under CI that is a failure.
fn ready_images() -> Vec<String> {
    let out = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output();
    let why = match out {
        Ok(o) if o.status.success() => {
            let images = images();
            for image in &images {
                let inspect = Command::new("docker")
                    .args(["image", "inspect", "--format", "{{.Id}}", image])
                    .output()
                    .expect("run docker image inspect");
                assert!(
                    inspect.status.success(),
                    "image {image} not found: build it with `scripts/docker.sh build` \
                     (`make test` does; its output above says why it failed)"
                );
            }
            return images;
        }
        Ok(o) => format!(
            "`docker version` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("cannot run `docker`: {e}"),
    };
    let msg = format!(
        "NO DOCKER DAEMON (DOCKER_HOST={:?}): {why}; the container tests did NOT run. \
         `scripts/docker.sh host` (as root) starts one.",
        std::env::var("DOCKER_HOST").unwrap_or_default()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{msg}");
    }
    // Straight to stderr: the test harness captures eprintln! of passing tests.
    let bar = "!".repeat(72);
    let _ = writeln!(std::io::stderr(), "\n{bar}\n{msg}\n{bar}\n");
    Vec::new()
}

/// A host directory the container's server user may write (it is not root).
fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("rsbloom-container-")
        .tempdir()
        .expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
        .expect("chmod data dir");
    dir
}

/// Starts `image` with `args` appended to its server command line, `data`
/// mounted on /data, on the Docker network `network`, once the server says
/// it is ready.
fn start(image: &str, data: &Path, network: &str, args: &[&str]) -> Container<GenericImage> {
    let (name, tag) = image.split_once(':').expect("image is name:tag");
    let container = GenericImage::new(name, tag)
        .with_exposed_port(PORT.tcp())
        .with_wait_for(WaitFor::message_on_stdout("Ready to accept connections"))
        .with_mount(Mount::bind_mount(
            data.to_str().expect("utf-8 path"),
            "/data",
        ))
        .with_network(network)
        .with_cmd(args.iter().copied())
        .with_startup_timeout(Duration::from_secs(60))
        .start()
        .unwrap_or_else(|e| panic!("cannot start {image} {args:?}: {e}"));
    let log = stdout(&container);
    let loaded = format!("rsbloom {} loaded", env!("CARGO_PKG_VERSION"));
    assert!(
        log.contains(&loaded),
        "{image}: no `{loaded}` in the log:\n{log}"
    );
    container
}

fn stdout(c: &Container<GenericImage>) -> String {
    String::from_utf8_lossy(&c.stdout_to_vec().expect("container log")).into_owned()
}

fn connect(c: &Container<GenericImage>) -> Connection {
    let port = c.get_host_port_ipv4(PORT).expect("published port");
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|client| client.get_connection_with_timeout(Duration::from_secs(10)))
        .unwrap_or_else(|e| panic!("connect to 127.0.0.1:{port}: {e}"))
}

fn run<T: redis::FromRedisValue>(c: &mut Connection, args: &[&str]) -> T {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Filters of every shape persistence must carry: a scaling Bloom chain of
/// several links, a non-scaling one, a Cuckoo filter of several sub-filters
/// with deletions, and one of a larger bucket size.
fn write_filters(c: &mut Connection, tag: &str) {
    let _: () = run(c, &["BF.RESERVE", "bf", "0.01", "100"]);
    let _: () = run(
        c,
        &["BF.RESERVE", "bf-fixed", "0.001", "1000", "NONSCALING"],
    );
    let _: () = run(c, &["CF.RESERVE", "cf", "64", "EXPANSION", "2"]);
    let _: () = run(c, &["CF.RESERVE", "cf-wide", "1000", "BUCKETSIZE", "4"]);
    let names = items(tag, 600);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    for key in ["bf", "bf-fixed"] {
        let _: Vec<i64> = run(c, &[&["BF.MADD", key], &refs[..]].concat());
    }
    for key in ["cf", "cf-wide"] {
        let _: Vec<i64> = run(c, &[&["CF.INSERT", key, "ITEMS"], &refs[..300]].concat());
        for item in &refs[..50] {
            let _: i64 = run(c, &["CF.DEL", key, item]);
        }
    }
    let links: Vec<i64> = run(c, &["BF.INFO", "bf", "FILTERS"]);
    assert!(links[0] > 2, "the chain should have grown: {links:?} links");
}

/// Every key with its DUMP payload, sorted by key.
fn dumps(c: &mut Connection) -> Vec<(String, Vec<u8>)> {
    let mut keys: Vec<String> = run(c, &["KEYS", "*"]);
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let dump: Vec<u8> = run(c, &["DUMP", &k]);
            (k, dump)
        })
        .collect()
}

/// Writes filters, stops the container (which persists them the way `args`
/// configure), and reads them back in a new container on the same data.
fn survives_restart(image: &str, args: &[&str], expect_file: &str) {
    let data = data_dir();
    let before = {
        let first = start(image, data.path(), "bridge", args);
        let mut c = connect(&first);
        write_filters(&mut c, "restart-");
        let before = dumps(&mut c);
        first.stop().expect("stop container");
        before
    };
    assert_eq!(before.len(), 4);
    assert!(
        data.path().join(expect_file).exists(),
        "{image} {args:?}: no {expect_file} in the data directory after stop"
    );
    let second = start(image, data.path(), "bridge", args);
    let after = dumps(&mut connect(&second));
    assert!(
        before == after,
        "{image} {args:?}: filters differ after the restart"
    );
}

/// Users get the newest servers of the test matrix: `rsbloom:redis` runs the
/// same Redis 8.6 build the suite tests, `rsbloom:valkey` the same Valkey 9.
#[test]
fn images_run_the_newest_servers() {
    for image in ready_images() {
        let (flavor, field) = match image.rsplit_once(':').map(|(_, tag)| tag) {
            Some("redis") => (Flavor::Redis86, "redis_version"),
            Some("valkey") => (Flavor::Valkey9, "valkey_version"),
            _ => continue, // another tag: no expectation
        };
        // "Redis server v=8.6.3 sha=…"
        let version = flavor.version();
        let want = version
            .split("v=")
            .nth(1)
            .and_then(|v| v.split(' ').next())
            .unwrap_or_else(|| panic!("no version in {version:?}"));
        let data = data_dir();
        let container = start(&image, data.path(), "bridge", &[]);
        let text: String = run(&mut connect(&container), &["INFO", "server"]);
        let got = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .map(str::trim);
        assert_eq!(
            got,
            Some(want),
            "{image}: {field} (the matrix has {version})"
        );
    }
}

#[test]
fn filters_survive_restart_from_rdb() {
    for image in ready_images() {
        // The image's config snapshots on stop.
        survives_restart(&image, &[], "dump.rdb");
    }
}

#[test]
fn filters_survive_restart_from_aof() {
    for image in ready_images() {
        // AOF only: the restart replays the BF/CF commands.
        survives_restart(
            &image,
            &["--appendonly", "yes", "--save", ""],
            "appendonlydir",
        );
    }
}

/// Polls `INFO replication` of the replica until the initial sync is done.
fn wait_synced(c: &mut Connection) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info: String = run(c, &["INFO", "replication"]);
        if info.contains("master_link_status:up") && info.contains("master_sync_in_progress:0") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "replica not synced after 30 s:\n{info}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn replica_container_ends_identical() {
    // DEBUG from outside the container's own host.
    let debug = ["--enable-debug-command", "yes"];
    for image in ready_images() {
        // A network of their own (created and removed by testcontainers):
        // it can name the primary's address, the default bridge cannot.
        let network = format!(
            "rsbloom-test-{}-{}",
            std::process::id(),
            image.replace(':', "-")
        );
        let primary_dir = data_dir();
        let replica_dir = data_dir();
        let primary = start(&image, primary_dir.path(), &network, &debug);
        let mut p = connect(&primary);
        write_filters(&mut p, "before-sync-"); // carried by the full sync (RDB)
        let ip = primary
            .get_bridge_ip_address()
            .expect("primary's bridge IP")
            .to_string();
        let replica = start(
            &image,
            replica_dir.path(),
            &network,
            &[&debug[..], &["--replicaof", &ip, "6379"]].concat(),
        );
        let mut r = connect(&replica);
        wait_synced(&mut r);
        // Streamed to the replica as commands.
        let names = items("after-sync-", 300);
        for item in &names {
            let _: i64 = run(&mut p, &["BF.ADD", "bf", item]);
            let _: i64 = run(&mut p, &["CF.ADD", "cf", item]);
        }
        let acked: i64 = run(&mut p, &["WAIT", "1", "10000"]);
        assert_eq!(acked, 1, "{image}: the replica did not acknowledge");
        let keys: Vec<String> = run(&mut p, &["KEYS", "*"]);
        assert_eq!(keys.len(), 4);
        for key in &keys {
            let want: Vec<String> = run(&mut p, &["DEBUG", "DIGEST-VALUE", key]);
            let got: Vec<String> = run(&mut r, &["DEBUG", "DIGEST-VALUE", key]);
            assert_eq!(got, want, "{image}: {key} differs on the replica");
            assert_ne!(want, vec!["0".repeat(40)], "{image}: {key} has no digest");
        }
        let want: String = run(&mut p, &["DEBUG", "DIGEST"]);
        let got: String = run(&mut r, &["DEBUG", "DIGEST"]);
        assert_eq!(got, want, "{image}: dataset digest differs on the replica");
        assert_eq!(
            dumps(&mut r),
            dumps(&mut p),
            "{image}: DUMP differs on the replica"
        );
    }
}
