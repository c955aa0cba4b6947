//! Cuckoo filters survive RDB (DEBUG RELOAD, restart, DUMP/RESTORE) and an
//! AOF rewrite without RDB preamble (docs/cuckoo.md §13, §15) exactly: every
//! SCANDUMP byte, CF.INFO and CF.DEBUG value.
use common::filters::{snapshot, Snapshot};
use common::*;

const KEYS: [&str; 7] = [
    "grown",
    "nonscaling",
    "bs1",
    "deleted",
    "empty",
    "emptied",
    "big",
];

/// Filters of every shape: several sub-filters with deletes, non-scaling,
/// bucket size 1 with custom iterations, empty, emptied (items 0 but
/// counters set), and one of 32 MiB (two 16 MiB chunks).
fn populate(c: &mut Conn) {
    let items = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    };
    let insert = |c: &mut Conn, key: &str, items: &[String]| {
        let mut cmd = vec!["CF.INSERT".to_string(), key.into(), "ITEMS".into()];
        cmd.extend(items.iter().cloned());
        let r = c.cmd(&cmd);
        assert_eq!(r.as_array().len(), items.len(), "{r:?}");
    };
    assert_eq!(
        line(c, "CF.RESERVE grown 16 EXPANSION 4 MAXITERATIONS 9"),
        ok()
    );
    insert(c, "grown", &items("g", 400));
    for i in (0..400).step_by(50) {
        assert_eq!(line(c, &format!("CF.DEL grown g{i}")), int(1));
    }
    assert_eq!(line(c, "CF.RESERVE nonscaling 64 EXPANSION 0"), ok());
    insert(c, "nonscaling", &items("n", 200));
    assert_eq!(
        line(
            c,
            "CF.RESERVE bs1 100 BUCKETSIZE 1 MAXITERATIONS 65535 EXPANSION 1"
        ),
        ok()
    );
    insert(c, "bs1", &items("b", 300));
    assert_eq!(line(c, "CF.RESERVE deleted 100 BUCKETSIZE 4"), ok());
    insert(c, "deleted", &items("d", 50));
    assert_eq!(line(c, "CF.DEL deleted d1"), int(1));
    assert_eq!(line(c, "CF.RESERVE empty 1000 BUCKETSIZE 7"), ok());
    assert_eq!(line(c, "CF.RESERVE emptied 100"), ok());
    assert_eq!(line(c, "CF.ADD emptied x"), int(1));
    assert_eq!(line(c, "CF.DEL emptied x"), int(1));
    assert_eq!(line(c, "CF.RESERVE big 20000000"), ok());
    insert(c, "big", &items("x", 5000));
    let r = c.cmd(&["CF.INFO", "big"]);
    assert_eq!(r.as_array()[1], int(40 + 16 + (32 << 20)));
}

fn snapshots(c: &mut Conn) -> Vec<Snapshot> {
    let all: Vec<Snapshot> = KEYS.iter().map(|k| snapshot(c, Fam::Cf, k)).collect();
    // Sanity: the interesting shapes really are there.
    assert!(all[0].dump.len() > 3, "grown has several sub-filters");
    assert_eq!(all[4].dump, []);
    assert_eq!(all[5].dump, []);
    assert_eq!(
        all[5].debug,
        bulk("bktsize:2 buckets:64 items:0 deletes:1 filters:1 max_iterations:20 expansion:1")
    );
    assert_eq!(all[6].dump.len(), 3, "header + two 16 MiB chunks");
    all
}

#[test]
fn rdb_debug_reload_and_restart() {
    for flavor in all_flavors() {
        let mut s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        populate(&mut c);
        let before = snapshots(&mut c);
        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
        let after: Vec<Snapshot> = KEYS.iter().map(|k| snapshot(&mut c, Fam::Cf, k)).collect();
        assert_eq!(after, before, "{flavor:?}: DEBUG RELOAD");
        s.restart(true);
        let mut c = s.conn();
        assert_eq!(line(&mut c, "DBSIZE"), int(KEYS.len() as i64));
        let after: Vec<Snapshot> = KEYS.iter().map(|k| snapshot(&mut c, Fam::Cf, k)).collect();
        assert_eq!(after, before, "{flavor:?}: restart");
        assert_eq!(line(&mut c, "CF.EXISTS grown g1"), int(1));
        assert_eq!(line(&mut c, "CF.EXISTS grown g50"), int(0));
    }
}

/// Issue 30: a key saved between its CF.LOADCHUNKs (the header's count
/// ahead of the fingerprints loaded so far) reloads, and the remaining
/// chunks then complete it to the source's value (docs/cuckoo.md §13, §14).
#[test]
fn a_key_between_its_chunks_reloads_and_completes() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(line(&mut c, "CF.RESERVE src 16 EXPANSION 2"), ok());
        let items: Vec<String> = (0..300).map(|i| format!("i{i}")).collect();
        let mut insert = vec!["CF.INSERT", "src", "ITEMS"];
        insert.extend(items.iter().map(String::as_str));
        assert_eq!(c.cmd(&insert).as_array().len(), items.len());
        assert_eq!(line(&mut c, "CF.DEL src i7"), int(1));
        let dump = filters::scandump(&mut c, Fam::Cf, "src");
        let (header, chunks) = dump.split_first().expect("header");
        assert!(chunks.len() >= 4, "{} sub-filters", chunks.len());
        // Header, then the last and the first chunk.
        let (first, rest) = chunks.split_first().expect("chunks");
        let (last, middle) = rest.split_last().expect("chunks");
        let loaded = [header.clone(), last.clone(), first.clone()];
        filters::load_ok(&mut c, Fam::Cf, "dst", &loaded);
        let before = snapshot(&mut c, Fam::Cf, "dst");
        let payload = c.cmd(&["DUMP", "dst"]);
        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok(), "{flavor:?}");
        assert_eq!(snapshot(&mut c, Fam::Cf, "dst"), before, "{flavor:?}");
        assert_eq!(c.cmd(&["DUMP", "dst"]), payload, "{flavor:?}");
        filters::load_ok(&mut c, Fam::Cf, "dst", middle);
        assert_eq!(
            c.cmd(&["DUMP", "dst"]),
            c.cmd(&["DUMP", "src"]),
            "{flavor:?}"
        );
        assert_eq!(line(&mut c, "CF.EXISTS dst i299"), int(1));
    }
}

#[test]
fn dump_restore_round_trip() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        populate(&mut c);
        for key in KEYS {
            let payload = c.cmd(&["DUMP", key]).as_bytes().to_vec();
            let copy = format!("{key}-copy");
            assert_eq!(c.cmd(&args!["RESTORE", copy, "0", payload]), ok());
            assert_eq!(
                snapshot(&mut c, Fam::Cf, &copy),
                snapshot(&mut c, Fam::Cf, key),
                "{flavor:?} {key}"
            );
        }
    }
}

#[test]
fn aof_rewrite_without_preamble() {
    for flavor in all_flavors() {
        let mut s = Server::builder(flavor, Module::Rsbloom)
            .aof_without_preamble()
            .start();
        let mut c = s.conn();
        populate(&mut c);
        let before = snapshots(&mut c);
        let r = line(&mut c, "BGREWRITEAOF");
        assert!(matches!(r, Reply::Simple(_)), "{r:?}");
        info::wait_for(&mut c, "persistence", wait::STATE, |i| {
            i.contains("aof_rewrite_in_progress:0") && i.contains("aof_rewrite_scheduled:0")
        });
        // The rewrite really is made of CF.LOADCHUNK commands.
        let text = s.base_aof();
        let count = text.windows(12).filter(|w| w == b"CF.LOADCHUNK").count();
        // Per filter: the header and one command per chunk, also for the
        // filters without items (docs/cuckoo.md §15), whose single sub-filter is one chunk.
        let expected: usize = before
            .iter()
            .map(|b| if b.dump.is_empty() { 2 } else { b.dump.len() })
            .sum();
        assert_eq!(count, expected, "{flavor:?}");
        // Restart from the AOF only (no RDB written at shutdown).
        s.restart(false);
        let mut c = s.conn();
        assert_eq!(line(&mut c, "DBSIZE"), int(KEYS.len() as i64));
        let after: Vec<Snapshot> = KEYS.iter().map(|k| snapshot(&mut c, Fam::Cf, k)).collect();
        assert_eq!(after, before, "{flavor:?}: AOF rewrite");
        assert_eq!(line(&mut c, "CF.ADD empty x"), int(1));
    }
}
