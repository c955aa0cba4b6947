//! No acknowledged write is lost (issue 30): one pipelined client writes
//! every family round-robin; a write is acknowledged once its reply was read
//! (with `appendfsync always` the server fsyncs before replying) or, with a
//! replica, once a later `WAIT 1` answered 1. After the fault — SIGKILL
//! mid-stream, SIGKILL during BGREWRITEAOF, failover to the replica — every
//! acknowledged write must be present; the self-check (no WAIT, the replica
//! paused and cut off) must find losses, proving the checks can see one.
//!
//! `RSBLOOM_FAULT_WRITES` sets the acknowledged writes before each fault
//! (default 14,000: 2,000 per family).
use common::info;
use common::resp::{encode_into, read_reply};
use common::*;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Writes per pipelined batch (and per `WAIT` when confirming).
const BATCH: usize = 64;

type Args = Vec<Vec<u8>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Bloom,
    ValkeyBloom,
    Cuckoo,
    Cms,
    Cmsw,
    Topk,
    Topkw,
    Tdigest,
    Tdigestw,
    Apbf,
}

/// Write `i` goes to `FAMILIES[i % n]`, as that family's write `i / n` (`n` families).
const FAMILIES: [Family; 10] = [
    Family::Bloom,
    Family::ValkeyBloom,
    Family::Cuckoo,
    Family::Cms,
    Family::Cmsw,
    Family::Topk,
    Family::Topkw,
    Family::Tdigest,
    Family::Tdigestw,
    Family::Apbf,
];

/// CMS items written (counts per item are then large).
const CMS_ITEMS: usize = 64;

/// How much each scenario writes.
#[derive(Clone, Copy)]
struct Plan {
    /// Acknowledged writes before the fault.
    target: usize,
}

impl Plan {
    fn from_env() -> Plan {
        let target = std::env::var("RSBLOOM_FAULT_WRITES").map_or(14_000, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("RSBLOOM_FAULT_WRITES={v}: not a count"))
        });
        Plan { target }
    }

    /// The writer stops here if the fault is late: the sliding window
    /// (APBF) is sized to remember all of it.
    fn cap(self) -> usize {
        2 * self.target + BATCH
    }

    fn per_family(self) -> usize {
        self.target / FAMILIES.len()
    }
}

fn args(parts: &[&str]) -> Args {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// The `n`-th write of the stream.
fn write(n: usize) -> Args {
    let f = FAMILIES[n % FAMILIES.len()];
    f.write(n / FAMILIES.len())
}

/// How many of writes `0..n` go to family number `f`.
fn of_family(n: usize, f: usize) -> usize {
    (n + FAMILIES.len() - 1 - f) / FAMILIES.len()
}

impl Family {
    fn name(self) -> &'static str {
        match self {
            Family::Bloom => "bloom",
            Family::ValkeyBloom => "valkey-bloom",
            Family::Cuckoo => "cuckoo",
            Family::Cms => "cms",
            Family::Cmsw => "cmsw",
            Family::Topk => "topk",
            Family::Topkw => "topkw",
            Family::Tdigest => "tdigest",
            Family::Tdigestw => "tdigestw",
            Family::Apbf => "apbf",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Family::Bloom => "bf",
            Family::ValkeyBloom => "vb",
            Family::Cuckoo => "cf",
            Family::Cms => "cms",
            Family::Cmsw => "cmw",
            Family::Topk => "topk",
            Family::Topkw => "tkw",
            Family::Tdigest => "td",
            Family::Tdigestw => "tdw",
            Family::Apbf => "ap",
        }
    }

    /// Commands creating the key. The filters start small so that they
    /// scale during the stream (more links and sub-filters to persist).
    fn create(self, plan: Plan) -> Vec<Args> {
        let k = self.key();
        let small = (plan.per_family() / 4).max(100).to_string();
        match self {
            Family::Bloom => vec![args(&["BF.RESERVE", k, "0.01", &small])],
            // A valkey-bloom filter is made while the flavour says so; its
            // creation replicates (and is logged) in a form that makes one
            // whatever the flavour (docs/valkey-bloom.md §6).
            Family::ValkeyBloom => vec![
                args(&["CONFIG", "SET", "bf.bloom-flavor", "valkey-bloom"]),
                args(&["BF.RESERVE", k, "0.01", &small]),
                args(&["CONFIG", "SET", "bf.bloom-flavor", "redisbloom"]),
            ],
            Family::Cuckoo => vec![args(&["CF.RESERVE", k, &small])],
            Family::Cms => vec![args(&["CMS.INITBYDIM", k, "2000", "5"])],
            // A day: nothing leaves the window during the test.
            Family::Cmsw => vec![args(&[
                "CMS.INITBYDIM",
                k,
                "2000",
                "5",
                "WINDOW",
                "86400000",
            ])],
            Family::Topk => vec![args(&["TOPK.RESERVE", k, "10", "64", "4", "0.9"])],
            // Two buckets of 5 years, the clock started at a fixed time (as
            // the type's tour): a replay makes the same value later.
            Family::Topkw => vec![
                args(&[
                    "TOPK.RESERVE",
                    k,
                    "10",
                    "64",
                    "4",
                    "0.9",
                    "WINDOW",
                    "315360000000",
                    "BUCKETS",
                    "2",
                ]),
                args(&["TOPK.TICK", k, "1700000000000"]),
            ],
            Family::Tdigest => vec![args(&["TDIGEST.CREATE", k, "COMPRESSION", "100"])],
            // A day: nothing leaves the window during the test.
            Family::Tdigestw => vec![args(&["TDIGEST.CREATE", k, "WINDOW", "86400000"])],
            // A count window remembers its last `capacity` items: all of them.
            Family::Apbf => {
                let window = (plan.cap() / FAMILIES.len() + 1).to_string();
                vec![args(&["APBF.RESERVE", k, "COUNT", "0.01", &window])]
            }
        }
    }

    /// The family's `j`-th write.
    fn write(self, j: usize) -> Args {
        let k = self.key();
        match self {
            Family::Bloom | Family::ValkeyBloom => args(&["BF.ADD", k, &format!("{k}{j}")]),
            Family::Cuckoo => args(&["CF.ADD", k, &format!("c{j}")]),
            Family::Cms | Family::Cmsw => args(&[
                "CMS.INCRBY",
                k,
                &format!("m{}", j % CMS_ITEMS),
                &(j % 5 + 1).to_string(),
            ]),
            // A few heavy hitters among many rare items: decays happen.
            Family::Topk | Family::Topkw => {
                let item = if j.is_multiple_of(3) { j % 1000 } else { j % 9 };
                args(&["TOPK.ADD", k, &format!("t{item}")])
            }
            Family::Tdigest | Family::Tdigestw => args(&["TDIGEST.ADD", k, &j.to_string()]),
            Family::Apbf => args(&["APBF.ADD", k, &format!("a{j}")]),
        }
    }

    /// What `c` answers that contradicts the family's acknowledged writes
    /// (`acked`, their replies) having been applied, `sent` writes of it
    /// having been sent. What "present" can assert exactly:
    /// - Bloom (both flavours), Cuckoo, APBF: no false negatives, so every
    ///   acknowledged item answers EXISTS 1 (APBF: the count window holds
    ///   every write); the item counters (BF.CARD: additions answered 1;
    ///   Cuckoo's items inserted; APBF's inserts) are at least the
    ///   acknowledged ones.
    /// - CMS: a count is never under the true one, so every item's query is
    ///   at least its acknowledged increments, and the total count too.
    /// - T-Digest: Observations count every value exactly, and the maximum
    ///   is exact: at least the acknowledged count and the largest
    ///   acknowledged value (the values rise).
    /// - Top-K (plain and windowed): decays make its counts approximate and
    ///   not monotone, but it is deterministic (its generator state is in
    ///   the value; a window's clock is started at a fixed time), so the key
    ///   must be byte-identical (DUMP) to the same writes replayed on
    ///   `oracle`, for some count of them from `acked.len()` to `sent`.
    fn loss(
        self,
        c: &mut Conn,
        acked: &[&Reply],
        sent: usize,
        oracle: &mut Conn,
    ) -> Option<String> {
        let k = self.key();
        let n = acked.len();
        match self {
            Family::Bloom | Family::ValkeyBloom | Family::Cuckoo | Family::Apbf => {
                let exists = match self {
                    Family::Cuckoo => "CF.MEXISTS",
                    Family::Apbf => "APBF.EXISTS",
                    _ => "BF.MEXISTS",
                };
                let absent = absent(c, exists, k, (0..n).map(|j| self.write(j).swap_remove(2)));
                let (count, least) = match self {
                    Family::Cuckoo => (flat_field(c, "CF.INFO", k, "Number of items inserted"), n),
                    Family::Apbf => (flat_field(c, "APBF.INFO", k, "Inserts count"), n),
                    _ => {
                        let added = acked.iter().filter(|r| ***r == int(1)).count();
                        (c.cmd(&["BF.CARD", k]).as_int(), added)
                    }
                };
                let mut out = Vec::new();
                if absent > 0 {
                    out.push(format!(
                        "{absent} of {n} acknowledged items answer EXISTS 0"
                    ));
                }
                if count < least as i64 {
                    out.push(format!("counts {count} items, {least} acknowledged"));
                }
                (!out.is_empty()).then(|| out.join("; "))
            }
            Family::Cms | Family::Cmsw => {
                let mut sums = vec![0i64; CMS_ITEMS];
                for j in 0..n {
                    sums[j % CMS_ITEMS] += (j % 5 + 1) as i64;
                }
                let mut query = args(&["CMS.QUERY", k]);
                query.extend((0..CMS_ITEMS).map(|i| format!("m{i}").into_bytes()));
                let counts = c.cmd(&query);
                let under = counts
                    .as_array()
                    .iter()
                    .zip(&sums)
                    .filter(|(got, sum)| got.as_int() < **sum)
                    .count();
                let total = flat_field(c, "CMS.INFO", k, "count");
                let acked_total: i64 = sums.iter().sum();
                (under > 0 || total < acked_total).then(|| {
                    format!(
                        "{under} items under their acknowledged increments; \
                         count {total}, {acked_total} acknowledged"
                    )
                })
            }
            Family::Tdigest | Family::Tdigestw => {
                let observations = flat_field(c, "TDIGEST.INFO", k, "Observations");
                let max = c.cmd(&["TDIGEST.MAX", k]);
                let max: f64 = String::from_utf8_lossy(max.as_bytes())
                    .parse()
                    .unwrap_or(f64::NAN);
                let top = n.checked_sub(1).map_or(f64::NEG_INFINITY, |t| t as f64);
                // `!(max >= top)`: a NaN maximum (empty digest) is a loss too.
                (observations < n as i64 || !(max >= top || n == 0)).then(|| {
                    format!("{observations} observations, max {max}; {n} acknowledged up to {top}")
                })
            }
            Family::Topk | Family::Topkw => {
                let target = c.cmd(&["DUMP", k]);
                oracle.cmd(&["FLUSHALL"]);
                // Top-K's creation is the same for every plan.
                oracle.pipeline(&self.create(Plan { target: 0 }));
                oracle.pipeline(&(0..n).map(|j| self.write(j)).collect::<Vec<_>>());
                for m in n..=sent {
                    if oracle.cmd(&["DUMP", k]) == target {
                        return None;
                    }
                    if m < sent {
                        oracle.cmd(&self.write(m));
                    }
                }
                Some(format!(
                    "the key is no replay of {n} to {sent} of its writes"
                ))
            }
        }
    }
}

/// How many of `items` answer other than 1 to `exists` (a multi-item
/// EXISTS), asked 1,000 at a time.
fn absent(c: &mut Conn, exists: &str, key: &str, items: impl Iterator<Item = Vec<u8>>) -> usize {
    let items: Vec<Vec<u8>> = items.collect();
    items
        .chunks(1000)
        .map(|chunk| {
            let mut cmd = args(&[exists, key]);
            cmd.extend(chunk.iter().cloned());
            c.cmd(&cmd)
                .as_array()
                .iter()
                .filter(|r| **r != int(1))
                .count()
        })
        .sum()
}

/// Integer field `name` of an INFO reply that is a flat name/value array.
fn flat_field(c: &mut Conn, cmd: &str, key: &str, name: &str) -> i64 {
    let r = c.cmd(&[cmd, key]);
    let fields = r.as_array();
    fields
        .chunks(2)
        .find(|p| p[0].as_bytes() == name.as_bytes())
        .unwrap_or_else(|| panic!("{cmd} {key} has no {name}: {r:?}"))[1]
        .as_int()
}

/// What the writer knows when its server went away.
#[derive(Default)]
struct Ledger {
    /// The reply of every write read, in order.
    replies: Vec<Reply>,
    /// Writes `0..acked` are acknowledged.
    acked: usize,
    /// Writes `0..sent` were sent.
    sent: usize,
}

struct Writer {
    thread: JoinHandle<Ledger>,
    acked: Arc<AtomicUsize>,
    socket: TcpStream,
}

impl Writer {
    /// Writes the stream to `port` in pipelined batches until the server
    /// goes away (or `plan.cap()` writes). `confirm`: each batch is followed
    /// by `WAIT 1`, and only a WAIT answering ≥ 1 acknowledges the writes
    /// before it.
    fn start(port: u16, confirm: bool, plan: Plan) -> Writer {
        let acked = Arc::new(AtomicUsize::new(0));
        let shared = acked.clone();
        let socket = TcpStream::connect(("127.0.0.1", port)).expect("connect the writer");
        socket.set_read_timeout(Some(wait::STATE)).unwrap();
        let mut reader = BufReader::new(socket.try_clone().unwrap());
        let mut out = socket.try_clone().unwrap();
        let thread = std::thread::spawn(move || {
            let mut ledger = Ledger::default();
            while ledger.sent < plan.cap() {
                let end = (ledger.sent + BATCH).min(plan.cap());
                let mut buf = Vec::new();
                for n in ledger.sent..end {
                    encode_into(&mut buf, &write(n));
                }
                if confirm {
                    encode_into(&mut buf, &["WAIT", "1", "60000"]);
                }
                if out.write_all(&buf).is_err() {
                    break;
                }
                let from = ledger.sent;
                ledger.sent = end;
                for _ in from..end {
                    match read_reply(&mut reader) {
                        Ok(r) => ledger.replies.push(r),
                        Err(_) => return ledger,
                    }
                }
                ledger.acked = match confirm.then(|| read_reply(&mut reader)) {
                    None | Some(Ok(Reply::Int(1..))) => end,
                    Some(Ok(_)) => ledger.acked,
                    Some(Err(_)) => return ledger,
                };
                shared.store(ledger.acked, Ordering::SeqCst);
            }
            ledger
        });
        Writer {
            thread,
            acked,
            socket,
        }
    }

    /// Waits until `n` writes are acknowledged.
    fn wait_acked(&self, n: usize) {
        let every = Duration::from_micros(200);
        let done = wait::until_every(
            &format!("{n} acknowledged writes"),
            wait::STATE,
            every,
            || match self.acked.load(Ordering::SeqCst) {
                a if a >= n => Ok(true),
                _ if self.thread.is_finished() => Ok(false),
                a => Err(format!("{a} acknowledged")),
            },
        );
        assert!(
            done,
            "the writer stopped at {} acknowledged writes",
            self.acked.load(Ordering::SeqCst)
        );
    }

    /// What the writer knows once its server is dead. Its connection is
    /// shut here: a rewrite child forked by the killed server still holds
    /// it open.
    fn join(self) -> Ledger {
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
        self.thread.join().expect("writer thread")
    }
}

/// Creates every family's key (a window's tick answers its shifts, 0).
fn create(c: &mut Conn, plan: Plan) {
    for f in FAMILIES {
        for cmd in f.create(plan) {
            let r = c.cmd(&cmd);
            assert!(r == ok() || r == int(0), "{cmd:?}: {r:?}");
        }
    }
}

/// The losses `c` shows against `ledger`, one line per family with any.
fn losses(c: &mut Conn, ledger: &Ledger, oracle: &mut Conn) -> Vec<(Family, String)> {
    let acked = &ledger.replies[..ledger.acked];
    if let Some((n, r)) = acked.iter().enumerate().find(|(_, r)| r.is_error()) {
        panic!("write {n} {:?} answered {r:?}", write(n));
    }
    FAMILIES
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let mine: Vec<&Reply> = acked.iter().skip(i).step_by(FAMILIES.len()).collect();
            let sent = of_family(ledger.sent, i);
            f.loss(c, &mine, sent, oracle).map(|l| (*f, l))
        })
        .collect()
}

/// Asserts that `c` holds every acknowledged write and reports the run.
fn assert_kept(c: &mut Conn, ledger: &Ledger, oracle: &mut Conn, what: &str, t0: Instant) {
    let lost = losses(c, ledger, oracle);
    assert!(
        lost.is_empty(),
        "{what}: acknowledged writes lost: {lost:#?}"
    );
    println!(
        "{what}: {} acknowledged writes present ({} sent), {:.1}s",
        ledger.acked,
        ledger.sent,
        t0.elapsed().as_secs_f64()
    );
}

fn aof_server(flavor: Flavor, preamble: &str) -> Server {
    Server::builder(flavor, Module::Rsbloom)
        .aof_fsync_always(preamble)
        .start()
}

/// The base file the AOF manifest names.
fn aof_base(dir: &Path) -> String {
    let manifest = dir.join("appendonlydir/appendonly.aof.manifest");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    text.lines()
        .find(|l| l.ends_with(" type b"))
        .unwrap_or_else(|| panic!("no base in {text}"))
        .to_string()
}

/// Scenario A: SIGKILL mid-stream under `appendfsync always`, restart on
/// the same directory.
fn sigkill_mid_stream(flavor: Flavor, oracle: &mut Conn, plan: Plan) {
    let t0 = Instant::now();
    let mut server = aof_server(flavor, "yes");
    create(&mut server.conn(), plan);
    let writer = Writer::start(server.port, false, plan);
    writer.wait_acked(plan.target);
    server.kill9();
    let ledger = writer.join();
    server.restart(false);
    let what = format!("{flavor:?} SIGKILL, appendfsync always");
    assert_kept(&mut server.conn(), &ledger, oracle, &what, t0);
}

/// Scenario B: a first rewrite completes (the base then holds every
/// family, as commands: no RDB preamble), then SIGKILL while a second one
/// runs, slowed by `rdb-key-save-delay` so that it cannot end first.
fn sigkill_during_rewrite(flavor: Flavor, oracle: &mut Conn, plan: Plan) {
    let t0 = Instant::now();
    let mut server = aof_server(flavor, "no");
    let mut admin = server.conn();
    create(&mut admin, plan);
    let writer = Writer::start(server.port, false, plan);
    writer.wait_acked(plan.target / 3);
    assert!(!admin.cmd(&["BGREWRITEAOF"]).is_error());
    info::wait_aof_rewrite(&mut admin);
    assert_eq!(
        info::field(&mut admin, "persistence", "aof_last_bgrewrite_status"),
        "ok"
    );
    let base = aof_base(server.dir());
    writer.wait_acked(2 * plan.target / 3);
    // 1 s per key: the rewrite outlives the test's writes by seconds. The
    // rewrite child outlives its killed server too, and ends by itself.
    let delay = ["CONFIG", "SET", "rdb-key-save-delay", "1000000"];
    assert_eq!(admin.cmd(&delay), ok());
    assert!(!admin.cmd(&["BGREWRITEAOF"]).is_error());
    let running =
        |admin: &mut Conn| info::field(admin, "persistence", "aof_rewrite_in_progress") == "1";
    wait::until("the rewrite to start", wait::STATE, || {
        running(&mut admin)
            .then_some(())
            .ok_or_else(|| "not yet".to_string())
    });
    writer.wait_acked(plan.target);
    assert!(
        running(&mut admin),
        "{flavor:?}: the rewrite ended before the kill"
    );
    server.kill9();
    let ledger = writer.join();
    server.restart(false);
    assert_eq!(
        aof_base(server.dir()),
        base,
        "the killed rewrite replaced the base"
    );
    let what = format!("{flavor:?} SIGKILL during BGREWRITEAOF");
    assert_kept(&mut server.conn(), &ledger, oracle, &what, t0);
}

/// A master (no persistence) and its replica, in sync, with every key made.
fn replicated(flavor: Flavor, plan: Plan) -> (Server, Server) {
    let master = Server::builder(flavor, Module::Rsbloom)
        // The replica syncs at once instead of after the default 5 s.
        .arg("--repl-diskless-sync-delay")
        .arg("0")
        .start();
    let replica = master.start_replica();
    let mut c = master.conn();
    create(&mut c, plan);
    info::wait_replica_synced(&mut c, &mut replica.conn());
    (master, replica)
}

/// Scenario C: writes acknowledged by `WAIT 1`, master SIGKILLed, replica
/// promoted.
fn failover_after_wait(flavor: Flavor, oracle: &mut Conn, plan: Plan) {
    let t0 = Instant::now();
    let (mut master, replica) = replicated(flavor, plan);
    let writer = Writer::start(master.port, true, plan);
    writer.wait_acked(plan.target);
    master.kill9();
    let ledger = writer.join();
    assert_eq!(replica.conn().cmd(&["REPLICAOF", "NO", "ONE"]), ok());
    let what = format!("{flavor:?} failover after WAIT 1");
    assert_kept(&mut replica.conn(), &ledger, oracle, &what, t0);
}

/// The self-check: as C, but without WAIT, and the replica paused
/// (SIGSTOP) and dropped by its master half-way, so that it cannot catch
/// up before the master dies: every family must show a loss.
fn failover_without_wait_loses(flavor: Flavor, oracle: &mut Conn, plan: Plan) {
    let t0 = Instant::now();
    let (mut master, replica) = replicated(flavor, plan);
    let writer = Writer::start(master.port, false, plan);
    writer.wait_acked(plan.target / 2);
    replica.pause();
    assert_eq!(
        master.conn().cmd(&["CLIENT", "KILL", "TYPE", "replica"]),
        int(1)
    );
    writer.wait_acked(plan.target);
    master.kill9();
    let ledger = writer.join();
    replica.resume();
    assert_eq!(replica.conn().cmd(&["REPLICAOF", "NO", "ONE"]), ok());
    let lost = losses(&mut replica.conn(), &ledger, oracle);
    let missed: Vec<Family> = FAMILIES
        .into_iter()
        .filter(|f| !lost.iter().any(|(l, _)| l == f))
        .collect();
    assert!(
        missed.is_empty(),
        "{flavor:?}: no loss seen for {missed:?}; seen: {lost:#?}"
    );
    println!(
        "{flavor:?} self-check: losses seen in all {} families after {} acknowledged writes, {:.1}s: {lost:?}",
        FAMILIES.len(),
        ledger.acked,
        t0.elapsed().as_secs_f64()
    );
}

/// Runs `scenario` on every selected server, with a Top-K oracle of the same.
fn each_server(scenario: fn(Flavor, &mut Conn, Plan)) {
    let families: Vec<&str> = FAMILIES.iter().map(|f| f.name()).collect();
    let table: Vec<&str> = common::families::TYPES.iter().map(|t| t.family).collect();
    assert_eq!(families, table, "a family of the type table is not written");
    let plan = Plan::from_env();
    for flavor in flavors() {
        let oracle = Server::start(flavor, Module::Rsbloom);
        scenario(flavor, &mut oracle.conn(), plan);
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    each_server(sigkill_mid_stream);
}

#[test]
fn acknowledged_writes_survive_sigkill_during_rewrite() {
    each_server(sigkill_during_rewrite);
}

#[test]
fn writes_acknowledged_by_wait_survive_failover() {
    each_server(failover_after_wait);
}

#[test]
fn self_check_sees_writes_lost_without_wait() {
    each_server(failover_without_wait_loses);
}
