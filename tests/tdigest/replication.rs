//! Replicas and AOF replays of a T-Digest master are identical to it
//! (docs/tdigest.md §8): after a seeded random stream interleaving writes
//! with reads that compress, DUMPs, failures, an AOF rewrite and a full
//! resync of the replica, every key's DEBUG DIGEST-VALUE — the whole live
//! state, unmerged nodes included — is the same on the master, its replica,
//! and a server replaying the master's AOF. Reads served by the replica
//! itself answer like the master and change nothing there.
//!
//! Also an rsbloom master with a RedisBloom 2.8.2 replica: the compressions
//! rsbloom replicates are commands RedisBloom executes the same way.
//!
//! The seed is printed; `RSBLOOM_OPS_SEED=<seed>` reproduces a run.
use common::diff::sargs;
use common::info::{bgsave_and_wait, wait_aof_rewrite, wait_link_up, wait_replica_synced as sync};
use common::stream::info_field;
use common::tdigest::{digests, infos, TdStream, KEYS};
use common::*;
use std::time::Instant;

const STREAM_LEN: usize = 2500;
const BATCH: usize = 50;

fn sync_full(c: &mut Conn) -> i64 {
    info_field(c, "stats", "sync_full")
        .unwrap()
        .parse()
        .unwrap()
}

/// The keyspaces are identical digest by digest; at least `min` digests.
fn assert_same_digests(a: &mut Conn, b: &mut Conn, what: &str) {
    let (da, db) = (digests(a), digests(b));
    let n = da.len();
    assert!(n >= 3, "{what}: only {n} keys");
    assert_eq!(
        da.keys().collect::<Vec<_>>(),
        db.keys().collect::<Vec<_>>(),
        "{what}: key sets"
    );
    for (k, d) in &da {
        assert_eq!(
            Some(d),
            db.get(k),
            "{what}: DEBUG DIGEST-VALUE of {}",
            String::from_utf8_lossy(k)
        );
    }
}

/// Some digests hold unmerged nodes right now (so a snapshot would lose
/// them if the master did not compress at the fork).
fn some_unmerged(c: &mut Conn) -> bool {
    KEYS.iter().any(|k| {
        let info = c.cmd(&["TDIGEST.INFO", k]);
        matches!(&info, Reply::Array(a) if a.len() == 18 && a[7].as_int() > 0)
    })
}

/// Reads sent to the replica answer like the same reads on the master, and
/// leave the replica unchanged.
fn replica_reads_match(stream: &mut TdStream, master: &mut Conn, replica: &mut Conn) -> usize {
    let before = digests(replica);
    let reads: Vec<_> = KEYS.iter().map(|k| stream.read(k)).collect();
    let on_replica = replica.pipeline(&reads);
    assert_eq!(digests(replica), before, "reads changed the replica");
    let on_master = master.pipeline(&reads);
    for ((read, r), m) in reads.iter().zip(&on_replica).zip(&on_master) {
        assert_eq!(r, m, "{}", diff::show_args(read));
    }
    reads.len()
}

/// A server started on a copy of the master's AOF (and its directory).
fn replay_of(flavor: Flavor, master: &Server) -> (Server, Conn, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .prefix("rsbloom-aof-")
        .tempdir()
        .unwrap();
    let aof = dir.path().join("appendonlydir");
    std::fs::create_dir(&aof).unwrap();
    for f in std::fs::read_dir(master.dir().join("appendonlydir"))
        .unwrap()
        .flatten()
    {
        std::fs::copy(f.path(), aof.join(f.file_name())).unwrap();
    }
    let replay = Server::builder(flavor, Module::Rsbloom)
        .arg("--appendonly")
        .arg("yes")
        .dir(dir.path())
        .start();
    let conn = replay.conn();
    (replay, conn, dir)
}

/// A server started on a copy of the master's AOF holds what the master
/// holds, once both forked: Redis 8 rewrites an AOF copied from a running
/// server as soon as it starts, and a fork compresses every digest with a
/// merge pending (docs/tdigest.md §8.4); the replica check above compares
/// the unforked state.
fn assert_replay_identical(flavor: Flavor, master: &Server, mc: &mut Conn, when: &str) {
    let (_replay, mut pc, _dir) = replay_of(flavor, master);
    wait_aof_rewrite(&mut pc);
    bgsave_and_wait(&mut pc);
    bgsave_and_wait(mc);
    assert_same_digests(mc, &mut pc, &format!("{flavor:?} AOF replay {when}"));
    assert_eq!(
        mc.cmd(&["DEBUG", "DIGEST"]),
        pc.cmd(&["DEBUG", "DIGEST"]),
        "{flavor:?} AOF replay {when}"
    );
}

/// `preamble`: the AOF rewrite writes an RDB (`yes`) or RESTORE commands
/// made by DUMP in the rewriting child (`no`).
fn run(flavor: Flavor, seed: u64, preamble: &str) {
    let t0 = Instant::now();
    let master = Server::builder(flavor, Module::Rsbloom)
        .aof_fsync_always(preamble)
        .start();
    let mut replica = Server::builder(flavor, Module::Rsbloom)
        .arg("--replicaof")
        .arg("127.0.0.1")
        .arg(&master.port.to_string())
        .start();
    let mut mc = master.conn();
    let mut rc = replica.conn();
    wait_link_up(&mut rc);
    assert_eq!(mc.cmd(&["SET", "str", "x"]), ok());
    let mut stream = TdStream::new(seed);
    let (mut sent, mut replica_reads, mut unmerged_at_fork) = (0, 0, 0);
    let mut resynced = false;
    while sent < STREAM_LEN {
        let batch = stream.batch(BATCH);
        sent += batch.len();
        for r in mc.pipeline(&batch) {
            assert!(
                !matches!(&r, Reply::Error(e) if e.contains("internal")),
                "{r:?}"
            );
        }
        if sent % 500 < BATCH {
            sync(&mut mc, &mut rc);
            replica_reads += replica_reads_match(&mut stream, &mut mc, &mut rc);
        }
        if sent > STREAM_LEN / 3 && sent <= STREAM_LEN / 3 + BATCH {
            // AOF rewrite: a fork snapshot while digests hold unmerged nodes.
            unmerged_at_fork += usize::from(some_unmerged(&mut mc));
            assert!(!mc.cmd(&["BGREWRITEAOF"]).is_error());
            wait_aof_rewrite(&mut mc);
            assert_replay_identical(flavor, &master, &mut mc, "right after the AOF rewrite");
        }
        if !resynced && sent > 2 * STREAM_LEN / 3 {
            // Full resync: the replica restarts empty and loads the master's
            // snapshot, taken while digests hold unmerged nodes.
            resynced = true;
            sync(&mut mc, &mut rc);
            unmerged_at_fork += usize::from(some_unmerged(&mut mc));
            let full = sync_full(&mut mc);
            replica.stop(false);
            let _ = std::fs::remove_file(replica.dir().join("dump.rdb"));
            replica.restart(false);
            rc = replica.conn();
            wait_link_up(&mut rc);
            assert_eq!(sync_full(&mut mc), full + 1, "full resync");
            sync(&mut mc, &mut rc);
            assert_same_digests(
                &mut mc,
                &mut rc,
                &format!("{flavor:?} right after the full resync"),
            );
        }
    }
    assert!(unmerged_at_fork > 0, "no fork met unmerged nodes");
    sync(&mut mc, &mut rc);
    assert_same_digests(&mut mc, &mut rc, &format!("{flavor:?} replica"));
    let whole = mc.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(
        whole,
        rc.cmd(&["DEBUG", "DIGEST"]),
        "{flavor:?} DEBUG DIGEST"
    );

    assert_replay_identical(flavor, &master, &mut mc, "at the end");
    println!(
        "{flavor:?} (preamble {preamble}): {sent} commands, {replica_reads} replica reads compared, {:.1}s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn replica_and_aof_replay_are_identical_after_reads_and_writes() {
    let seed = common::stream::seed();
    println!("tdigest replication seed {seed} (RSBLOOM_OPS_SEED={seed} to reproduce)");
    for flavor in flavors() {
        for preamble in ["no", "yes"] {
            run(flavor, seed, preamble);
        }
    }
}

/// A master and its replica, in sync, holding digest `key` with unmerged
/// nodes.
fn pair_with_digest(flavor: Flavor, key: &str) -> (Server, Server, Conn, Conn) {
    let master = Server::start(flavor, Module::Rsbloom);
    let replica = master.start_replica();
    let (mut mc, mut rc) = (master.conn(), replica.conn());
    assert_eq!(mc.cmd(&["TDIGEST.CREATE", key, "COMPRESSION", "20"]), ok());
    let mut add = sargs(&["TDIGEST.ADD", key]);
    add.extend((0..100).map(|i| ((i * 37) % 101).to_string().into_bytes()));
    assert_eq!(mc.cmd(&add), ok());
    sync(&mut mc, &mut rc);
    (master, replica, mc, rc)
}

/// A read on a replica: the same answer as on its master, and the replica
/// keeps its unmerged nodes (nothing it holds changes without its master).
#[test]
fn replica_reads_do_not_change_the_replica() {
    for flavor in flavors() {
        let (_master, _replica, mut mc, mut rc) = pair_with_digest(flavor, "t");
        let info = rc.cmd(&["TDIGEST.INFO", "t"]);
        assert!(info.as_array()[7].as_int() > 0, "{info:?}");
        let q = rc.cmd(&["TDIGEST.QUANTILE", "t", "0.1", "0.5", "0.9"]);
        assert_eq!(
            rc.cmd(&["TDIGEST.INFO", "t"]),
            info,
            "{flavor:?}: replica changed"
        );
        assert_eq!(mc.cmd(&["TDIGEST.QUANTILE", "t", "0.1", "0.5", "0.9"]), q);
        sync(&mut mc, &mut rc);
        // The master's read compressed, and so did the replica, through the
        // replicated compression.
        let after = rc.cmd(&["TDIGEST.INFO", "t"]);
        assert_eq!(after.as_array()[7], int(0), "{flavor:?}: {after:?}");
        assert_eq!(after, mc.cmd(&["TDIGEST.INFO", "t"]));
    }
}

/// Saves in the serving process compress like RedisBloom's and replicate
/// that compression: DUMP, SAVE, DEBUG OBJECT, DEBUG RELOAD.
#[test]
fn saves_in_the_serving_process_replicate_their_compression() {
    for flavor in flavors() {
        let master = Server::start(flavor, Module::Rsbloom);
        let replica = master.start_replica();
        let (mut mc, mut rc) = (master.conn(), replica.conn());
        assert_eq!(mc.cmd(&["TDIGEST.CREATE", "d", "COMPRESSION", "10"]), ok());
        // SAVE is refused while the replica's sync child still runs.
        common::info::wait_for(&mut mc, "persistence", common::wait::STATE, |i| {
            common::info::find(i, "rdb_bgsave_in_progress") == Some("0")
        });
        for (i, save) in [
            &["DUMP", "d"][..],
            &["SAVE"],
            &["DEBUG", "OBJECT", "d"],
            &["DEBUG", "RELOAD"],
        ]
        .iter()
        .enumerate()
        {
            let add: Vec<String> = ["TDIGEST.ADD", "d"]
                .iter()
                .map(|s| s.to_string())
                .chain((0..30).map(|j| ((i * 31 + j * 7) % 50).to_string()))
                .collect();
            assert_eq!(mc.cmd(&add), ok());
            assert!(mc.cmd(&["TDIGEST.INFO", "d"]).as_array()[7].as_int() > 0);
            let r = mc.cmd(save);
            assert!(!r.is_error(), "{save:?}: {r:?}");
            assert_eq!(
                mc.cmd(&["TDIGEST.INFO", "d"]).as_array()[7],
                int(0),
                "{save:?}"
            );
            sync(&mut mc, &mut rc);
            assert_eq!(
                rc.cmd(&["DEBUG", "DIGEST-VALUE", "d"]),
                mc.cmd(&["DEBUG", "DIGEST-VALUE", "d"]),
                "{flavor:?} after {save:?}"
            );
        }
    }
}

/// While writes are paused (CLIENT PAUSE WRITE, failover, slot hand-over)
/// nothing may be replicated — the server aborts on it. Reads and DUMPs
/// then work on a compressed copy: the same answers, nothing changed, the
/// server alive; once writes resume, the next read compresses and the
/// replica follows.
#[test]
fn reads_while_writes_are_paused() {
    for flavor in all_flavors() {
        let (_master, _replica, mut mc, mut rc) = pair_with_digest(flavor, "d");
        let digest = |c: &mut Conn| c.cmd(&["DEBUG", "DIGEST-VALUE", "d"]);
        let before = digest(&mut mc);
        assert_eq!(mc.cmd(&["CLIENT", "PAUSE", "60000", "WRITE"]), ok());
        let q = mc.cmd(&["TDIGEST.QUANTILE", "d", "0.5"]);
        assert!(!q.is_error(), "{flavor:?}: {q:?}");
        assert!(!mc.cmd(&["DUMP", "d"]).is_error());
        assert!(!mc.cmd(&["TDIGEST.CDF", "d", "3"]).is_error());
        assert_eq!(mc.cmd(&["PING"]), simple("PONG"), "{flavor:?}");
        assert_eq!(digest(&mut mc), before, "{flavor:?}: changed while paused");
        assert_eq!(mc.cmd(&["CLIENT", "UNPAUSE"]), ok());
        assert_eq!(mc.cmd(&["TDIGEST.QUANTILE", "d", "0.5"]), q);
        let after = digest(&mut mc);
        assert_ne!(after, before, "{flavor:?}: not compressed after the pause");
        sync(&mut mc, &mut rc);
        assert_eq!(digest(&mut rc), after, "{flavor:?}: replica");
    }
}

/// Failed writes replicate what they changed: a MERGE that overflows has
/// compressed its sources, an ADD that overflows keeps the values before the
/// failing one. The total is built exactly: 2W + 1 up to 2^50 − 1, then
/// doubled to 2^63 − 8192, where the next doubling overflows and an ADD
/// stops after 6 144 values, the centroids' limit (docs/tdigest.md §4.3
/// step 3) — before the 12 010 slots of compression 2000 fill, so no
/// compression hides the failure. (Compared through the stream only: RDB
/// weights are doubles.)
#[test]
fn failed_writes_replicate_what_they_changed() {
    for flavor in flavors() {
        let master = Server::builder(flavor, Module::Rsbloom)
            .aof_fsync_always("yes")
            .start();
        let replica = master.start_replica();
        let (mut mc, mut rc) = (master.conn(), replica.conn());
        assert_eq!(
            mc.cmd(&["TDIGEST.CREATE", "d", "COMPRESSION", "2000"]),
            ok()
        );
        assert_eq!(mc.cmd(&["TDIGEST.CREATE", "one"]), ok());
        assert_eq!(mc.cmd(&["TDIGEST.ADD", "d", "1"]), ok());
        assert_eq!(mc.cmd(&["TDIGEST.ADD", "one", "0"]), ok());
        for _ in 0..49 {
            assert_eq!(mc.cmd(&["TDIGEST.MERGE", "d", "2", "d", "one"]), ok());
        }
        for _ in 0..13 {
            assert_eq!(mc.cmd(&["TDIGEST.MERGE", "d", "1", "d"]), ok());
        }
        let overflow = err("ERR T-Digest: overflow detected");
        assert_eq!(mc.cmd(&["TDIGEST.MERGE", "d", "1", "d"]), overflow);
        let mut add = sargs(&["TDIGEST.ADD", "d"]);
        add.extend((0..7000).map(|v| v.to_string().into_bytes()));
        assert_eq!(mc.cmd(&add), overflow);
        let info = mc.cmd(&["TDIGEST.INFO", "d"]);
        assert_eq!(info.as_array()[7], int(6144), "{flavor:?}: values kept");
        sync(&mut mc, &mut rc);
        let d = mc.cmd(&["DEBUG", "DIGEST-VALUE", "d"]);
        assert_eq!(
            rc.cmd(&["DEBUG", "DIGEST-VALUE", "d"]),
            d,
            "{flavor:?} replica"
        );
        assert_eq!(
            rc.cmd(&["TDIGEST.INFO", "d"]),
            mc.cmd(&["TDIGEST.INFO", "d"])
        );
        let mut pc = replay_of(flavor, &master);
        assert_eq!(
            pc.1.cmd(&["DEBUG", "DIGEST-VALUE", "d"]),
            d,
            "{flavor:?} AOF"
        );
    }
}

/// rsbloom master, RedisBloom 2.8.2 replica: the replica follows every
/// compression (INFO counters equal after every kind of read), and the
/// DUMPs agree.
#[test]
fn redisbloom_replica_of_an_rsbloom_master_stays_identical() {
    let seed = common::stream::seed();
    println!("cross seed {seed} (RSBLOOM_OPS_SEED={seed})");
    for flavor in flavors() {
        cross(flavor, seed);
    }
}

fn cross(flavor: Flavor, seed: u64) {
    let master = Server::start(flavor, Module::Rsbloom);
    let replica = Server::builder(flavor, Module::Reference)
        .arg("--replicaof")
        .arg("127.0.0.1")
        .arg(&master.port.to_string())
        .start();
    let (mut mc, mut rc) = (master.conn(), replica.conn());
    wait_link_up(&mut rc);
    assert_eq!(mc.cmd(&["SET", "str", "x"]), ok());
    let mut stream = TdStream::new(seed);
    let (mut sent, mut compared) = (0, 0);
    while sent < STREAM_LEN {
        let batch = stream.batch(BATCH);
        sent += batch.len();
        mc.pipeline(&batch);
        if sent % 500 < BATCH {
            sync(&mut mc, &mut rc);
            let a = infos(&mut mc);
            assert_eq!(a, infos(&mut rc), "INFO at {sent}");
            compared += a.len();
        }
    }
    sync(&mut mc, &mut rc);
    let (a, b) = (infos(&mut mc), infos(&mut rc));
    assert_eq!(a, b);
    // The stream may end with few digests (DEL, MERGE onto strings): what
    // counts is that the checkpoints saw many.
    compared += a.len();
    assert!(compared >= 10, "only {compared} digests compared");
    for k in a.keys() {
        let d = mc.cmd(&[&b"DUMP"[..], k]);
        sync(&mut mc, &mut rc);
        assert_eq!(d, rc.cmd(&[&b"DUMP"[..], k]));
    }
}

/// Issue 30: a digest whose merged centroids fill every slot, built by
/// commands (docs/tdigest.md §4.3): compression 1 (16 slots), then nine
/// rounds of a self-merge (×49) and a new extreme value, then a read
/// compresses 16 nodes and merges none. RedisBloom 2.8.2 builds the same
/// digest (INFO and DUMP bytes equal, checked on Redis 8.6) and answers the
/// next ADD with `overflow detected`, which is why the adds after it are not
/// compared with it; rsbloom frees a slot by merging the lightest adjacent
/// pair and takes them (docs/differences.md §1). The total stays below 2^53,
/// so every observation counts. The replica replays the adds: INFO, DUMP
/// bytes, QUANTILE and CDF equal.
#[test]
fn full_digest_takes_further_observations_on_both() {
    for flavor in all_flavors() {
        let master = Server::start(flavor, Module::Rsbloom);
        let replica = master.start_replica();
        let (mut mc, mut rc) = (master.conn(), replica.conn());
        let full = fill(&mut mc);
        let info = mc.cmd(&["TDIGEST.INFO", "d"]);
        let (merged, unmerged) = (&info.as_array()[5], &info.as_array()[7]);
        assert_eq!((merged, unmerged), (&int(16), &int(0)), "{flavor:?}");
        if flavor == Flavor::Redis86 {
            let oracle = Server::start(flavor, Module::Reference);
            let mut oc = oracle.conn();
            assert_eq!(
                fill(&mut oc),
                full,
                "RedisBloom 2.8.2 builds the same digest"
            );
            let fields = |i: &Reply| i.as_array()[..16].to_vec();
            assert_eq!(fields(&oc.cmd(&["TDIGEST.INFO", "d"])), fields(&info));
            assert_eq!(
                oc.cmd(&["TDIGEST.ADD", "d", "20"]),
                err("ERR T-Digest: overflow detected")
            );
        }
        for values in ["20", "-3 7.5 7.5 100", "1 2 3 4 5 6 7 8 9 10 11 12"] {
            let mut add = sargs(&["TDIGEST.ADD", "d"]);
            add.extend(values.split(' ').map(|v| v.as_bytes().to_vec()));
            assert_eq!(mc.cmd(&add), ok(), "{flavor:?}: ADD {values}");
        }
        let observations = info.as_array()[13].as_int() + 17;
        let info = mc.cmd(&["TDIGEST.INFO", "d"]);
        assert_eq!(
            info.as_array()[13],
            int(observations),
            "{flavor:?}: {info:?}"
        );
        sync(&mut mc, &mut rc);
        assert_eq!(rc.cmd(&["TDIGEST.INFO", "d"]), info, "{flavor:?}");
        let d = mc.cmd(&["DUMP", "d"]);
        assert_eq!(rc.cmd(&["DUMP", "d"]), d, "{flavor:?}: DUMP bytes");
        for read in [
            &["TDIGEST.QUANTILE", "d", "0", "0.01", "0.5", "0.99", "1"][..],
            &["TDIGEST.CDF", "d", "-3", "7", "20", "100"],
        ] {
            assert_eq!(mc.cmd(read), rc.cmd(read), "{flavor:?}: {read:?}");
        }
        assert_eq!(
            mc.cmd(&args!["RESTORE", "again", "0", d.as_bytes()]),
            ok(),
            "{flavor:?}: its DUMP restores"
        );
    }
}

/// The sequence of docs/tdigest.md §4.3 that fills every slot of a digest:
/// returns its DUMP.
fn fill(c: &mut Conn) -> Reply {
    assert_eq!(c.cmd(&["TDIGEST.CREATE", "d", "COMPRESSION", "1"]), ok());
    assert_eq!(c.cmd(&["TDIGEST.ADD", "d", "0"]), ok());
    let merge: Vec<&str> = ["TDIGEST.MERGE", "d", "48"]
        .into_iter()
        .chain(["d"; 48])
        .collect();
    for extreme in ["-1", "2", "-3", "4", "-5", "6", "-7", "8", "-9"] {
        assert_eq!(c.cmd(&merge), ok());
        assert_eq!(c.cmd(&["TDIGEST.ADD", "d", extreme]), ok());
    }
    assert!(!c.cmd(&["TDIGEST.CDF", "d", "0"]).is_error());
    c.cmd(&["DUMP", "d"])
}
