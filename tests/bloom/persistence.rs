//! Bloom filters survive RDB reload, DUMP/RESTORE and an AOF rewrite without
//! RDB preamble (docs/bloom.md §9, §11) bit for bit.

use common::bloom::header::*;
use common::bloom::*;
use common::filters::{snapshot, Snapshot};
use common::*;

fn madd(c: &mut Conn, key: &str, items: impl Iterator<Item = String>) {
    let mut cmd = vec!["BF.MADD".to_string(), key.into()];
    cmd.extend(items);
    let r = c.cmd(&cmd);
    assert!(!r.as_array().iter().any(Reply::is_error), "{r:?}");
}

/// A varied set of filters; returns their keys.
fn populate(c: &mut Conn) -> Vec<&'static str> {
    madd(c, "auto", ["a", "b", "c"].map(String::from).into_iter());
    assert_eq!(line(c, "BF.RESERVE scaling 0.01 10"), ok());
    madd(c, "scaling", (0..100).map(|i| i.to_string()));
    assert_eq!(line(c, "BF.RESERVE nonscaling 0.001 50 NONSCALING"), ok());
    madd(c, "nonscaling", (0..20).map(|i| format!("n{i}")));
    assert_eq!(line(c, "BF.RESERVE exp3 0.1 5 EXPANSION 3"), ok());
    madd(c, "exp3", (0..8).map(|i| format!("x{i}")));
    assert_eq!(line(c, "BF.RESERVE empty 0.01 1000"), ok());

    // Legacy 32-bit hashing (options NOROUND only), from a header.
    assert_eq!(line(c, "BF.RESERVE src 0.01 100"), ok());
    let mut pairs = filters::scandump(c, Fam::Bf, "src");
    patch(&mut pairs[0].1, OPTIONS, &1u32.to_le_bytes());
    filters::load_ok(c, Fam::Bf, "legacy32", &pairs);
    assert_eq!(line(c, "BF.ADD legacy32 foo"), int(1));
    assert!(debug_lines(c, "legacy32")[1].contains("hashwidth:32"));
    // Its bits are those of docs/bloom.md §5 for the 32-bit pair of "foo".
    let bits = &filters::scandump(c, Fam::Bf, "legacy32")[1].1;
    let set: Vec<usize> = (0..1152)
        .filter(|i| bits[i / 8] & (1 << (i % 8)) != 0)
        .collect();
    assert_eq!(set, [164, 335, 506, 677, 803, 848, 974, 1145]);

    // > 16 MiB: two SCANDUMP/AOF chunks.
    assert_eq!(line(c, "BF.RESERVE big 0.0001 10000000"), ok());
    madd(c, "big", (0..2000).map(|i| format!("big{i}")));
    let big_dump = filters::scandump(c, Fam::Bf, "big");
    let chunk_lens: Vec<usize> = big_dump.iter().skip(1).map(|(_, d)| d.len()).collect();
    assert_eq!(chunk_lens.len(), 2, "{chunk_lens:?}");
    assert_eq!(chunk_lens[0], 16 * 1024 * 1024);

    vec![
        "auto",
        "scaling",
        "nonscaling",
        "exp3",
        "empty",
        "legacy32",
        "big",
    ]
}

fn snapshots(c: &mut Conn, keys: &[&str]) -> Vec<Snapshot> {
    keys.iter().map(|k| snapshot(c, Fam::Bf, k)).collect()
}

fn check_type_and_memory(c: &mut Conn, keys: &[&str]) {
    for key in keys {
        assert_eq!(c.cmd(&["TYPE", key]), simple("MBbloom--"));
        // Size is RedisBloom's formula (its records and the bit arrays);
        // MEMORY USAGE what the chain takes, at least its bit arrays.
        let size = info_field(c, key, "SIZE").as_int();
        let links = info_field(c, key, "FILTERS").as_int();
        let bits = size - 32 - 64 * links;
        let usage = c.cmd(&["MEMORY", "USAGE", key]).as_int();
        assert!(usage >= bits, "{key}: MEMORY USAGE {usage} < bits {bits}");
    }
}

#[test]
fn debug_reload_and_restore_keep_every_filter() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let keys = populate(&mut c);
        let before = snapshots(&mut c, &keys);
        check_type_and_memory(&mut c, &keys);

        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
        assert_eq!(snapshots(&mut c, &keys), before, "{flavor:?}");
        check_type_and_memory(&mut c, &keys);
        assert_eq!(
            line(&mut c, "BF.MEXISTS big big0 big1999"),
            arr(vec![int(1), int(1)])
        );
        assert_eq!(line(&mut c, "BF.EXISTS legacy32 foo"), int(1));

        for (key, snap) in keys.iter().zip(&before) {
            let payload = c.cmd(&["DUMP", key]).as_bytes().to_vec();
            let copy = format!("{key}-copy");
            assert_eq!(c.cmd(&args!["RESTORE", &copy, "0", payload]), ok());
            assert_eq!(&snapshot(&mut c, Fam::Bf, &copy), snap, "{key}");
        }
        // The restored filters keep working like the originals.
        assert_eq!(
            line(&mut c, "BF.ADD scaling-copy new"),
            line(&mut c, "BF.ADD scaling new")
        );
        assert_eq!(
            snapshot(&mut c, Fam::Bf, "scaling-copy"),
            snapshot(&mut c, Fam::Bf, "scaling")
        );
    }
}

fn wait_for_aof_rewrite(c: &mut Conn) {
    let info = info::wait_for(c, "persistence", wait::STATE, |i| {
        i.contains("aof_rewrite_in_progress:0") && i.contains("aof_rewrite_scheduled:0")
    });
    assert!(info.contains("aof_last_bgrewrite_status:ok"), "{info}");
}

#[test]
fn aof_rewrite_without_preamble_restores_every_filter() {
    for flavor in all_flavors() {
        let mut s = Server::builder(flavor, Module::Rsbloom)
            .aof_without_preamble()
            .start();
        let mut c = s.conn();
        let keys = populate(&mut c);
        let before = snapshots(&mut c, &keys);

        let r = line(&mut c, "BGREWRITEAOF");
        assert!(matches!(r, Reply::Simple(_)), "{r:?}");
        wait_for_aof_rewrite(&mut c);
        let aof = s.base_aof();
        assert!(!aof.starts_with(b"REDIS"), "base AOF has an RDB preamble");
        let loadchunks = aof.windows(12).filter(|w| w == b"BF.LOADCHUNK").count();
        // Header + one chunk per link, two for the big filter.
        assert!(loadchunks >= 2 * keys.len() + 4, "{loadchunks} LOADCHUNKs");
        drop(c);

        s.restart(false);
        let mut c = s.conn();
        assert_eq!(snapshots(&mut c, &keys), before, "{flavor:?}");
        check_type_and_memory(&mut c, &keys);
        assert_eq!(line(&mut c, "BF.EXISTS big big7"), int(1));
    }
}

/// BF.MERGE (docs/bloom.md §12) is replicated verbatim: a replica and a
/// replay of the AOF (commands, no rewrite) hold the very same values, of
/// both flavours, destkey among the sources included.
#[test]
fn merge_replicates_and_replays_identically() {
    for flavor in all_flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .arg("--appendonly")
            .arg("yes")
            .start();
        let replica = s.start_replica();
        let (mut c, mut r) = (s.conn(), replica.conn());
        for (flavour, prefix) in [("redisbloom", "rb"), ("valkey-bloom", "vb")] {
            let set = ["CONFIG", "SET", "bf.bloom-flavor", flavour];
            assert_eq!(c.cmd(&set), ok());
            let (a, b, d) = (
                format!("{prefix}a"),
                format!("{prefix}b"),
                format!("{prefix}d"),
            );
            assert_eq!(c.cmd(&["BF.RESERVE", &a, "0.01", "50"]), ok());
            madd(&mut c, &a, (0..80).map(|j| format!("a{j}")));
            // A copy, then other items: valkey-bloom's random seed shared.
            assert_eq!(c.cmd(&["BF.MERGE", &b, &a]), ok());
            madd(&mut c, &b, (0..30).map(|j| format!("b{j}")));
            assert_eq!(c.cmd(&["BF.MERGE", &d, &a, &b]), ok());
            assert_eq!(c.cmd(&["BF.MERGE", &a, &b, &a]), ok());
        }
        info::wait_replica_synced(&mut c, &mut r);
        let keys = ["rba", "rbb", "rbd", "vba", "vbb", "vbd"];
        let dumps =
            |c: &mut Conn| -> Vec<Reply> { keys.iter().map(|k| c.cmd(&["DUMP", k])).collect() };
        let master = dumps(&mut c);
        assert_eq!(dumps(&mut r), master, "{flavor:?}: replica");
        // RedisBloom's creations replay in the flavour of the replay
        // (docs/valkey-bloom.md §6): the one they were made in.
        assert_eq!(line(&mut c, "CONFIG SET bf.bloom-flavor redisbloom"), ok());
        assert_eq!(line(&mut c, "DEBUG LOADAOF"), ok());
        assert_eq!(dumps(&mut c), master, "{flavor:?}: AOF replay");
    }
}
