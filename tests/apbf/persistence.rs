//! APBF values survive DEBUG RELOAD, a restart from RDB, DUMP/RESTORE and
//! AOF (with and without RDB preamble; the rewrite is APBF.LOADCHUNK
//! chunks) byte-identical; replicas and AOF replays of time windows are
//! byte-identical to the master, shifts included (docs/apbf.md §4, §6);
//! hostile RESTORE payloads are refused with the server alive and other
//! keys untouched.
use common::apbf::{add_range, info, info_int, present, with_items};
use common::diff::Args;
use common::dump::{parse, payload, rdb_version, Prim};
use common::info::wait_aof_rewrite;
use common::window::{
    dumps, hostile_restore_payloads, master_and_replica, replay_identical, replica_identical,
    replicated,
};
use common::*;
use std::time::Duration;

const KEYS: [&str; 5] = ["cnt", "tim", "big", "fresh", "str"];

/// Filters of every kind: count windows that shifted, a time window (long
/// enough not to age during the test), a larger one, an empty one.
fn populate(c: &mut Conn) {
    for cmd in [
        "APBF.RESERVE cnt COUNT 0.01 5000",
        "APBF.RESERVE tim TIME 0.01 1000 3600",
        "APBF.RESERVE big COUNT 0.0001 300000",
        "APBF.RESERVE fresh COUNT 1 10",
        "SET str bystander",
    ] {
        assert!(!line(c, cmd).is_error(), "{cmd}");
    }
    add_range(c, "cnt", "c", 0, 12_000);
    add_range(c, "tim", "t", 0, 700);
    add_range(c, "big", "b", 0, 50_000);
}

/// Everything observable about a key but the clock-dependent INFO field.
fn observe(c: &mut Conn, key: &str) -> Vec<Reply> {
    let mut out = vec![c.cmd(&["TYPE", key]), c.cmd(&["DUMP", key])];
    if key != "str" {
        let mut i: Vec<(String, Reply)> = info(c, key).into_iter().collect();
        i.retain(|(k, _)| k != "Pending shifts");
        i.sort_by(|a, b| a.0.cmp(&b.0));
        out.extend(i.into_iter().map(|(k, v)| arr(vec![bulk(k), v])));
        for prefix in ["c", "t", "b", "none"] {
            out.push(c.cmd(&with_items("APBF.EXISTS", key, prefix, 0, 300)));
        }
    }
    out
}

fn observe_all(c: &mut Conn) -> Vec<Vec<Reply>> {
    KEYS.iter().map(|k| observe(c, k)).collect()
}

#[test]
fn reload_restart_and_restore_keep_every_filter() {
    for flavor in flavors() {
        let mut s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        populate(&mut c);
        let before = observe_all(&mut c);
        assert_eq!(present(&mut c, "cnt", "c", 7000, 12_000), 5000);
        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
        assert_eq!(observe_all(&mut c), before, "{flavor:?} DEBUG RELOAD");
        drop(c);
        s.restart(true);
        let mut c = s.conn();
        assert_eq!(observe_all(&mut c), before, "{flavor:?} restart");
        for key in &KEYS[..4] {
            let p = c.cmd(&["DUMP", key]).as_bytes().to_vec();
            let copy = format!("{key}-copy");
            assert_eq!(c.cmd(&args!["RESTORE", &copy, "0", p]), ok());
            assert_eq!(c.cmd(&["DUMP", &copy]), c.cmd(&["DUMP", key]));
            let add = |k: &str| args!["APBF.ADD", k, "new1", "c:1"];
            assert_eq!(c.cmd(&add(&copy)), c.cmd(&add(key)));
            assert_eq!(c.cmd(&["DUMP", &copy]), c.cmd(&["DUMP", key]));
        }
    }
}

/// AOF on from the start, with and without RDB preamble: a rewrite, then
/// writes after it, then a restart that replays both.
#[test]
fn aof_with_and_without_preamble() {
    for flavor in flavors() {
        for preamble in ["yes", "no"] {
            let mut s = Server::builder(flavor, Module::Rsbloom)
                .aof_fsync_always(preamble)
                .start();
            let mut c = s.conn();
            populate(&mut c);
            assert!(matches!(line(&mut c, "BGREWRITEAOF"), Reply::Simple(_)));
            wait_aof_rewrite(&mut c);
            // With a preamble the base is an RDB file (`*.base.rdb`).
            if preamble == "no" {
                let aof = s.base_aof();
                let chunks = aof.windows(14).filter(|w| w == b"APBF.LOADCHUNK").count();
                let slices: i64 = ["cnt", "tim", "big", "fresh"]
                    .iter()
                    .map(|k| 1 + info_int(&mut c, k, "Slices count"))
                    .sum();
                assert_eq!(
                    chunks as i64, slices,
                    "{flavor:?}: one per slice and header"
                );
            }
            add_range(&mut c, "cnt", "after", 0, 3000);
            add_range(&mut c, "fresh", "after", 0, 30);
            let before = observe_all(&mut c);
            drop(c);
            s.restart(false);
            let mut c = s.conn();
            assert_eq!(
                observe_all(&mut c),
                before,
                "{flavor:?} preamble {preamble}"
            );
        }
    }
}

/// A 1-second time window written over 3 s, so it shifts many times: the
/// replica (fed the master's APBF.TICK) and a replay of the master's AOF
/// end byte-identical to the master, although they run at other times.
#[test]
fn replicas_and_aof_replays_are_identical_with_time_shifts() {
    for flavor in flavors() {
        let (mut master, replica) = master_and_replica(replicated(flavor));
        let (mut mc, mut rc) = (master.conn(), replica.conn());
        let keys = ["t", "t2", "c"];
        for cmd in [
            "APBF.RESERVE t TIME 0.1 200 1",
            "APBF.RESERVE t2 TIME 0.01 50 1",
            "APBF.RESERVE c COUNT 0.1 100",
        ] {
            assert_eq!(line(&mut mc, cmd), ok());
        }
        for round in 0..60u64 {
            let cmds: Vec<Args> = keys
                .iter()
                .map(|k| with_items("APBF.ADD", k, "r", round * 10, round * 10 + 10))
                .collect();
            for r in mc.pipeline(&cmds) {
                assert!(!r.is_error(), "{r:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let shifts = info_int(&mut mc, "t", "Shifts count");
        assert!(shifts >= 20, "{flavor:?}: {shifts} shifts");
        let on_master = replica_identical(&mut mc, &mut rc, &keys, flavor);
        // The replica never shifts by its own clock.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(dumps(&mut rc, &keys), on_master, "{flavor:?} replica later");
        // Idle reads on the replica see the window aged by the clock: the
        // first rounds' items (3 s old, the window is 1 s) answer 1 only at
        // about the error rate (10 %).
        let old = present(&mut rc, "t", "r", 0, 100);
        assert!(old < 30, "{flavor:?}: {old} of 100 expired items");
        drop(mc);
        replay_identical(&mut master, &keys, &on_master);
    }
}

// ---------------------------------------------------------------- hostile

/// [`hostile_restore_payloads`] of a time window holding 150 items.
#[test]
fn hostile_restore_payloads_are_refused() {
    let read = |c: &mut Conn, k: &str| vec![c.cmd(&with_items("APBF.EXISTS", k, "i", 0, 150))];
    hostile_restore_payloads(&rsbloom_core::apbf::TYPE, read, |c| {
        assert_eq!(line(c, "APBF.RESERVE k TIME 0.1 100 60"), ok());
        add_range(c, "k", "i", 0, 150);
    });
}

// ------------------------------------------------------------ full counts

/// The reply of an item a full inserts count refuses (docs/apbf.md §5.2).
const COUNT_FULL: &str = "ERR APBF: inserts count at its maximum";

/// The largest inserts count that loads: APBF.INFO answers it as a RESP
/// integer, which is signed (docs/apbf.md §6.2).
const MAX_INSERTS: u64 = i64::MAX as u64;

/// `key`'s value with its inserts count `full` and counters that still
/// agree (docs/apbf.md §6.2): a count window of one item per generation,
/// shifted before each insert but the first, the head moved back once per
/// shift; a time window before its first shift, every insert in the
/// generation.
fn with_inserts(c: &mut Conn, key: &str, full: u64) -> Vec<u8> {
    let genuine = c.cmd(&["DUMP", key]).as_bytes().to_vec();
    let (id, mut p) = parse(&genuine);
    if info(c, key)["Window type"] == simple("count") {
        assert_eq!(info_int(c, key, "Generation size"), 1, "{key}");
        let n = info_int(c, key, "Slices count") as u64;
        let shifts = full - 1;
        p[7] = Prim::U((n - shifts % n) % n);
        p[10] = Prim::U(shifts);
    } else {
        assert_eq!(p[10], Prim::U(0), "{key}: no shift yet");
        p[8] = Prim::U(full);
    }
    p[9] = Prim::U(full);
    payload(id, &p, rdb_version(&genuine))
}

/// APBF.ADD on restored windows whose inserts count is 2 short of 2^63 − 1
/// adds two items, then answers the error per item and changes nothing
/// (one past it does not load: INFO would answer a negative count).
/// Only the items added are replicated: the replica and an AOF replay end
/// identical, the refused items are not in the AOF, and no replica
/// answers its master with an error.
#[test]
fn a_full_inserts_count_refuses_adds_and_replicates_the_rest() {
    for flavor in flavors() {
        let (mut master, replica) = master_and_replica(replicated(flavor).uncompressed_rdb());
        let (mut mc, mut rc) = (master.conn(), replica.conn());
        let keys = ["c", "t"];
        for (key, window) in keys.iter().zip(["COUNT 0.1 10", "TIME 0.1 10 3600"]) {
            let reserve = format!("APBF.RESERVE {key} {window}");
            assert_eq!(line(&mut mc, &reserve), ok());
            // One item per generation in the count window (k + l > 10).
            add_range(&mut mc, key, "i", 0, 25);
            let past = with_inserts(&mut mc, key, MAX_INSERTS + 1);
            let full = with_inserts(&mut mc, key, MAX_INSERTS - 2);
            mc.cmd(&["DEL", key]);
            let r = mc.cmd(&args!["RESTORE", key, "0", past]);
            assert_eq!(r, err("ERR Bad data format"), "{flavor:?} {key}");
            assert_eq!(mc.cmd(&args!["RESTORE", key, "0", full]), ok());
            let r = mc.cmd(&with_items("APBF.ADD", key, "kept", 0, 2));
            assert_eq!(r, arr(vec![int(1), int(1)]), "{flavor:?} {key}");
            let before = mc.cmd(&["DUMP", key]);
            let r = mc.cmd(&with_items("APBF.ADD", key, "refused", 0, 3));
            assert_eq!(r, arr(vec![err(COUNT_FULL); 3]), "{flavor:?} {key}");
            // An item already present is refused too (an add renews it).
            let r = mc.cmd(&args!["APBF.ADD", key, "kept:1", "refused:3"]);
            assert_eq!(r, arr(vec![err(COUNT_FULL); 2]), "{flavor:?} {key}");
            assert_eq!(mc.cmd(&["DUMP", key]), before, "{flavor:?} {key}");
            assert_eq!(present(&mut mc, key, "kept", 0, 2), 2);
            assert_eq!(info_int(&mut mc, key, "Inserts count"), i64::MAX);
        }
        let on_master = replica_identical(&mut mc, &mut rc, &keys, flavor);
        assert!(
            !replica.log().contains("sending an error to its master"),
            "{flavor:?}: {}",
            replica.log()
        );
        let aof: Vec<u8> = std::fs::read_dir(master.dir().join("appendonlydir"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().to_string_lossy().ends_with(".aof"))
            .flat_map(|e| std::fs::read(e.path()).unwrap())
            .collect();
        let has = |s: &[u8]| aof.windows(s.len()).any(|w| w == s);
        assert!(has(b"kept:1") && !has(b"refused"), "{flavor:?} AOF");
        drop(mc);
        replay_identical(&mut master, &keys, &on_master);
    }
}
