//! AOF persistence: with `appendfsync always` every acknowledged write of a
//! random stream survives a SIGKILL in the middle of the stream (with an
//! AOF rewrite in between, with and without RDB preamble), and an AOF
//! rewrite of filters larger than 16 MiB (multi-chunk `BF.LOADCHUNK` /
//! `CF.LOADCHUNK`, docs/cuckoo.md §15) restores them exactly.
//!
//! The seed is printed; `RSBLOOM_OPS_SEED=<seed>` reproduces a run.
use common::diff::{sargs, Args};
use common::resp::{encode_into, read_reply};
use common::stream::{assert_same, info_field, snapshot, Stream, MODULE_ARGS};
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const STREAM_LEN: usize = 5000;

fn aof_server(flavor: Flavor, preamble: &str, fsync: &str) -> Server {
    Server::builder(flavor, Module::Rsbloom)
        .module_arg(MODULE_ARGS[0])
        .module_arg(MODULE_ARGS[1])
        .arg("--appendonly")
        .arg("yes")
        .arg("--appendfsync")
        .arg(fsync)
        .arg("--aof-use-rdb-preamble")
        .arg(preamble)
        .start()
}

fn plain_server(flavor: Flavor) -> Server {
    Server::builder(flavor, Module::Rsbloom)
        .module_arg(MODULE_ARGS[0])
        .module_arg(MODULE_ARGS[1])
        .start()
}

fn wait_rewrite_done(c: &mut Conn) {
    wait::until("the AOF rewrite to finish", wait::STATE, || {
        let busy = info_field(c, "persistence", "aof_rewrite_in_progress");
        let sched = info_field(c, "persistence", "aof_rewrite_scheduled");
        match (busy.as_deref(), sched.as_deref()) {
            (Some("0"), Some("0")) => Ok(()),
            _ => Err(format!("in progress {busy:?}, scheduled {sched:?}")),
        }
    });
    assert_eq!(
        info_field(c, "persistence", "aof_last_bgrewrite_status").as_deref(),
        Some("ok")
    );
}

/// What the client got before the connection broke.
struct Sent {
    replies: Vec<Reply>,
    /// Commands written to the socket (the server may have seen fewer).
    written: usize,
}

/// Pipelines `cmds` in batches of 20, reading every reply, until the
/// stream ends or the server goes away. A batch starting at or after the
/// index in `hold` waits until `hold` is raised.
fn pipeline_until_dead(
    port: u16,
    cmds: Arc<Vec<Args>>,
    progress: Arc<AtomicUsize>,
    hold: Arc<AtomicUsize>,
) -> Sent {
    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut out = Sent {
        replies: Vec::new(),
        written: 0,
    };
    for (i, batch) in cmds.chunks(20).enumerate() {
        // The test raises `hold` after waits of its own (each up to
        // wait::STATE): this deadline only ends a writer left behind.
        let every = Duration::from_micros(100);
        wait::until_every(
            "the test to release the stream",
            wait::STATE * 3,
            every,
            || match hold.load(Ordering::SeqCst) {
                h if i * 20 < h => Ok(()),
                h => Err(format!("held at {h}, batch starts at {}", i * 20)),
            },
        );
        let mut buf = Vec::new();
        for c in batch {
            encode_into(&mut buf, c);
        }
        if writer.write_all(&buf).is_err() {
            return out;
        }
        out.written += batch.len();
        for _ in batch {
            match read_reply(&mut reader) {
                Ok(r) => {
                    out.replies.push(r);
                    progress.store(out.replies.len(), Ordering::SeqCst);
                }
                Err(_) => return out,
            }
        }
    }
    out
}

/// Items that must answer EXISTS 1, and BF.CARD.
type BloomModel = (BTreeSet<Vec<u8>>, i64);

/// What the replies of a command prefix imply, per key: Bloom items that
/// must answer EXISTS 1 and BF.CARD; Cuckoo "Number of items inserted".
/// Keys touched by LOADCHUNK are unknown (`None`) until recreated.
#[derive(Default)]
struct Model {
    bloom: BTreeMap<Vec<u8>, Option<BloomModel>>,
    cuckoo: BTreeMap<Vec<u8>, Option<i64>>,
}

fn ones(r: &Reply) -> Vec<bool> {
    match r {
        Reply::Array(a) => a.iter().map(|e| *e == int(1)).collect(),
        r => vec![*r == int(1)],
    }
}

impl Model {
    fn apply(&mut self, a: &Args, r: &Reply) {
        let name = String::from_utf8_lossy(&a[0]).to_uppercase();
        let Some(key) = a.get(1).cloned() else { return };
        let is_ok = *r == ok();
        match name.as_str() {
            "DEL" => {
                self.bloom.remove(&key);
                self.cuckoo.remove(&key);
            }
            "BF.RESERVE" if is_ok => {
                self.bloom.insert(key, Some((BTreeSet::new(), 0)));
            }
            "CF.RESERVE" if is_ok => {
                self.cuckoo.insert(key, Some(0));
            }
            "BF.LOADCHUNK" if is_ok => {
                self.bloom.insert(key, None);
            }
            "CF.LOADCHUNK" if is_ok => {
                self.cuckoo.insert(key, None);
            }
            "BF.ADD" | "BF.MADD" | "BF.INSERT" if !r.is_error() => {
                let items: Vec<Vec<u8>> = if name == "BF.INSERT" {
                    let at = a.iter().skip(2).position(|x| x == b"ITEMS").unwrap() + 3;
                    a[at..].to_vec()
                } else {
                    a[2..].to_vec()
                };
                let entry = self
                    .bloom
                    .entry(key)
                    .or_insert_with(|| Some((BTreeSet::new(), 0)));
                if let (Some((set, card)), Reply::Array(elems)) = (entry.as_mut(), r) {
                    for (item, e) in items.iter().zip(elems) {
                        if let Reply::Int(n) = e {
                            set.insert(item.clone());
                            *card += n;
                        }
                    }
                } else if let Some((set, card)) = entry.as_mut() {
                    set.insert(items[0].clone());
                    *card += r.as_int();
                }
            }
            "CF.ADD" | "CF.ADDNX" | "CF.INSERT" | "CF.INSERTNX" => {
                let created = if let Reply::Error(e) = r {
                    // Auto-created, then refused (docs/cuckoo.md §4).
                    e == "Maximum expansions reached"
                } else {
                    true
                };
                if created {
                    let entry = self.cuckoo.entry(key).or_insert(Some(0));
                    if let Some(n) = entry.as_mut() {
                        *n += ones(r).iter().filter(|&&b| b).count() as i64;
                    }
                }
            }
            "CF.DEL" if *r == int(1) => {
                if let Some(Some(n)) = self.cuckoo.get_mut(&key) {
                    *n -= 1;
                }
            }
            _ => {}
        }
    }

    /// Asserts the restarted server agrees with the model.
    fn check(&self, c: &mut Conn, what: &str) {
        let mut checked = 0;
        for (key, state) in &self.bloom {
            let Some((items, card)) = state else { continue };
            let mut cmd = vec![b"BF.MEXISTS".to_vec(), key.clone()];
            cmd.extend(items.iter().cloned());
            if !items.is_empty() {
                let r = c.cmd(&cmd);
                assert!(
                    r.as_array().iter().all(|e| *e == int(1)),
                    "{what}: acknowledged items missing from {key:?}"
                );
            }
            assert_eq!(
                c.cmd(&[&b"BF.CARD"[..], key]),
                int(*card),
                "{what}: BF.CARD {key:?}"
            );
            checked += 1;
        }
        for (key, state) in &self.cuckoo {
            let Some(n) = state else { continue };
            let info = c.cmd(&[&b"CF.INFO"[..], key]);
            assert_eq!(info.as_array()[7], int(*n), "{what}: CF items of {key:?}");
            checked += 1;
        }
        assert!(checked >= 8, "{what}: only {checked} keys modelled");
    }
}

fn aof_files(dir: &Path) -> Vec<PathBuf> {
    let sub = dir.join("appendonlydir");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&sub)
        .unwrap_or_else(|e| panic!("{}: {e}", sub.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

fn kill_mid_stream(flavor: Flavor, preamble: &str, seed: u64) {
    let what = format!("{flavor:?} preamble {preamble}");
    let t0 = Instant::now();
    // The stream and its replies, generated on a plain server.
    let (cmds, expected) = {
        let gen = plain_server(flavor);
        let mut stream = Stream::new(seed, false);
        stream.run(&mut gen.conn(), STREAM_LEN, 50)
    };
    let cmds = Arc::new(cmds);

    let mut server = aof_server(flavor, preamble, "always");
    let progress = Arc::new(AtomicUsize::new(0));
    let hold = Arc::new(AtomicUsize::new(STREAM_LEN / 5));
    let writer = {
        let (port, cmds) = (server.port, cmds.clone());
        let (progress, hold) = (progress.clone(), hold.clone());
        std::thread::spawn(move || pipeline_until_dead(port, cmds, progress, hold))
    };
    let wait_for = |n: usize| {
        let every = Duration::from_micros(200);
        wait::until_every(
            &format!("{what}: {n} replies"),
            wait::STATE,
            every,
            || match progress.load(Ordering::SeqCst) {
                done if done >= n => Ok(()),
                done => Err(format!("{done} replies")),
            },
        );
    };
    // A rewrite while the stream runs: the AOF then is a base (RDB or
    // LOADCHUNK commands) plus an increment. The stream may not pass the
    // kill point before the rewrite is done (a slow rewrite once let it end).
    wait_for(STREAM_LEN / 5);
    let mut admin = server.conn();
    let r = admin.cmd(&["BGREWRITEAOF"]);
    assert!(!r.is_error(), "{r:?}");
    hold.store(STREAM_LEN / 2, Ordering::SeqCst);
    wait_rewrite_done(&mut admin);
    hold.store(usize::MAX, Ordering::SeqCst);
    // Kill at a seed-dependent point, a little after a reply was read, so
    // that the next batch is in flight.
    wait_for(STREAM_LEN / 2 + (seed % 1000) as usize);
    std::thread::sleep(Duration::from_micros(seed % 300));
    server.kill9();
    let sent = writer.join().unwrap();
    let acked = sent.replies.len();
    assert!(
        acked < STREAM_LEN && sent.written < STREAM_LEN,
        "{what}: the stream was not interrupted"
    );
    assert_eq!(
        sent.replies[..],
        expected[..acked],
        "{what}: replies differ from the plain server's"
    );

    server.restart(false);
    let mut c = server.conn();
    // The AOF holds a prefix of the stream containing every acknowledged
    // command (perhaps a few unacknowledged ones too): find its length by
    // replaying onto a plain server until the digests agree.
    let oracle = plain_server(flavor);
    let mut oc = oracle.conn();
    oc.pipeline(&cmds[..acked]);
    let target = c.cmd(&["DEBUG", "DIGEST"]);
    let mut applied = acked;
    while oc.cmd(&["DEBUG", "DIGEST"]) != target {
        assert!(
            applied < sent.written,
            "{what}: restarted data is no prefix of the stream ≥ {acked} acknowledged commands"
        );
        oc.cmd(&cmds[applied]);
        applied += 1;
    }
    assert_same(&snapshot(&mut oc, true), &snapshot(&mut c, true), &what);
    for field in [
        "bf_bloom_keys",
        "bf_cuckoo_keys",
        "bf_bloom_memory",
        "bf_cuckoo_memory",
    ] {
        assert_eq!(
            info_field(&mut c, "bf", field),
            info_field(&mut oc, "bf", field),
            "{what}: INFO {field}"
        );
    }
    let mut model = Model::default();
    for (a, r) in cmds[..applied].iter().zip(&expected) {
        model.apply(a, r);
    }
    model.check(&mut c, &what);
    println!(
        "{what}: {acked} acknowledged, {} written, {} unacknowledged also persisted, {:.1}s",
        sent.written,
        applied - acked,
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let seed = common::stream::seed();
    println!("aof seed {seed} (RSBLOOM_OPS_SEED={seed} to reproduce)");
    for flavor in all_flavors() {
        for preamble in ["yes", "no"] {
            kill_mid_stream(flavor, preamble, seed);
        }
    }
}

#[test]
fn rewrite_of_filters_over_16_mib_restores_exactly() {
    for flavor in all_flavors() {
        let mut server = aof_server(flavor, "no", "everysec");
        let mut c = server.conn();
        // 10M entries at 1e-4: one ~24 MiB link; 2^25 one-byte buckets:
        // one 32 MiB sub-filter. Both dump in two data chunks.
        assert_eq!(
            c.cmd(&["BF.RESERVE", "bigbf", "0.0001", "10000000", "NONSCALING"]),
            ok()
        );
        assert_eq!(
            c.cmd(&["CF.RESERVE", "bigcf", "33554432", "BUCKETSIZE", "1"]),
            ok()
        );
        let mut madd = sargs(&["BF.MADD", "bigbf"]);
        let mut ins = sargs(&["CF.INSERT", "bigcf", "ITEMS"]);
        for i in 0..5000 {
            madd.push(format!("item{i}").into_bytes());
            ins.push(format!("item{i}").into_bytes());
        }
        assert!(c.cmd(&madd).as_array().iter().all(|r| *r == int(1)));
        assert!(c.cmd(&ins).as_array().iter().all(|r| *r == int(1)));
        assert_eq!(c.cmd(&["BF.ADD", "small", "x"]), int(1));
        let bf_size = c.cmd(&["BF.INFO", "bigbf", "SIZE"]).as_array()[0].as_int();
        assert!(bf_size > 16 << 20, "{bf_size}");
        let before = snapshot(&mut c, true);
        for key in [&b"bigbf"[..], b"bigcf"] {
            let chunks = before[key].scandump.as_ref().unwrap().as_ref().unwrap();
            assert_eq!(chunks.len(), 3, "{key:?}: header and two data chunks");
        }

        assert!(!c.cmd(&["BGREWRITEAOF"]).is_error());
        wait_rewrite_done(&mut c);
        let files = aof_files(server.dir());
        let base = files
            .iter()
            .find(|p| p.to_string_lossy().ends_with(".base.aof"))
            .unwrap_or_else(|| panic!("no base AOF in {files:?}"));
        let text = std::fs::read(base).unwrap();
        assert!(text.starts_with(b"*"), "base AOF has an RDB preamble");
        // Header + two data chunks each (docs/bloom.md §11, docs/cuckoo.md
        // §15), upper-case names.
        assert_eq!(count(&text, b"$12\r\nBF.LOADCHUNK\r\n$5\r\nbigbf\r\n"), 3);
        assert_eq!(count(&text, b"$12\r\nCF.LOADCHUNK\r\n$5\r\nbigcf\r\n"), 3);
        assert_eq!(count(&text, b"$12\r\nBF.LOADCHUNK\r\n$5\r\nsmall\r\n"), 2);

        // Only the rewritten AOF can restore the data now.
        server.kill9();
        server.restart(false);
        let mut c = server.conn();
        let after = snapshot(&mut c, true);
        assert_same(&before, &after, &format!("{flavor:?} rewrite"));
        assert_eq!(c.cmd(&["BF.EXISTS", "bigbf", "item4999"]), int(1));
        assert_eq!(c.cmd(&["CF.EXISTS", "bigcf", "item4999"]), int(1));
    }
}

/// Top-K with decay < 1 (docs/topk.md §3.5): replaying the AOF — commands
/// only, or a rewrite (RDB preamble or RESTORE commands) followed by more
/// commands — rebuilds every key byte for byte, generator state included.
#[test]
fn topk_aof_replay_decays_exactly_like_the_live_server() {
    let seed = common::stream::seed();
    println!("Top-K AOF seed {seed} (RSBLOOM_OPS_SEED={seed} to reproduce)");
    for flavor in flavors() {
        for preamble in ["yes", "no"] {
            let mut server = aof_server(flavor, preamble, "always");
            let mut c = server.conn();
            let mut stream = common::topk::TopkStream::new(seed);
            stream.run(&mut c, 3000, true, false);
            let what = format!("{flavor:?} preamble {preamble}");
            let live = common::topk::state(&mut c, true);
            server.restart(false);
            let mut c = server.conn();
            assert_eq!(
                common::topk::state(&mut c, true),
                live,
                "{what}: commands replayed"
            );
            assert!(!c.cmd(&["BGREWRITEAOF"]).is_error());
            wait_rewrite_done(&mut c);
            stream.run(&mut c, 3000, false, false);
            let live = common::topk::state(&mut c, true);
            server.kill9();
            server.restart(false);
            let mut c = server.conn();
            assert_eq!(
                common::topk::state(&mut c, true),
                live,
                "{what}: rewrite and commands replayed"
            );
            // Only applied increments were logged: the replay answered no error.
            assert!(
                !server.log().contains("CRITICAL"),
                "{what}: {}",
                server.log()
            );
        }
    }
}
