//! Where rsbloom departs from valkey-bloom 1.0.1 on purpose
//! (COMPAT-VALKEY-BLOOM.md §8, "instead" column; docs/valkey-bloom.md §7):
//! inputs that crash, block or misbehave in valkey-bloom get an error or the
//! sane result, on Redis 8.6 and Valkey 9 with the valkey-bloom flavour. (The
//! oracle is not run here: most of these inputs kill it.) Also what rsbloom
//! adds: BF.MERGE (docs/valkey-bloom.md "BF.MERGE").

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::vb;
use crate::vector;
use common::dump::{payload, Prim};
use common::server::module_path;
use common::{flavors, ok, wait, Conn, Module, Reply, Server};

/// RDB module id of `bloomfltr`, encoding version 1 (§1.1).
const VB_MODULE_ID: u64 = 0x6e5a2899f96dac01;

fn bad_format() -> Reply {
    Reply::Error("ERR Bad data format".into())
}

fn decoding_failed() -> Reply {
    Reply::Error("ERR bloom object decoding failed".into())
}

/// Vector 5's one sub-filter `bloomfilter` blob (§5.3), from its BF.LOAD
/// blob (header 30 bytes, then the blob's u64 length).
fn fixed_bloom() -> Vec<u8> {
    let load = vector::load("5-fixed-seed").blob;
    let n = u64::from_le_bytes(load[30..38].try_into().unwrap()) as usize;
    load[38..38 + n].to_vec()
}

/// A one-sub-filter RDB value (§5.1) as RESTORE takes it.
fn rdb_value(version: u16, f: u64, fp: f64, t: f64, cap: u64, items: u64, bloom: &[u8]) -> Vec<u8> {
    let mut prims = vec![Prim::U(f), Prim::U(2), Prim::D(fp), Prim::D(t), Prim::U(0)];
    if f > 0 {
        prims.extend([Prim::U(cap), Prim::U(items), Prim::S(bloom.to_vec())]);
    }
    payload(VB_MODULE_ID, &prims, version)
}

/// A BF.LOAD blob (§5.4) of sub-filters (bloom blob, num_items, capacity).
fn load_blob(seed_random: u8, subs: &[(Vec<u8>, i64, i64)]) -> Vec<u8> {
    let mut out = vec![1u8];
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&0.01f64.to_le_bytes());
    out.extend_from_slice(&0.5f64.to_le_bytes());
    out.push(seed_random);
    out.extend_from_slice(&(subs.len() as u64).to_le_bytes());
    for (b, items, cap) in subs {
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
        out.extend_from_slice(&items.to_le_bytes());
        out.extend_from_slice(&cap.to_le_bytes());
    }
    out
}

fn with_k(bloom: &[u8], k: u32) -> Vec<u8> {
    let mut b = bloom.to_vec();
    b[9..13].copy_from_slice(&k.to_le_bytes());
    b
}

fn gone(c: &mut Conn, key: &str) {
    assert_eq!(
        c.cmd(&["EXISTS", key]),
        Reply::Int(0),
        "{key} must not exist"
    );
}

#[test]
fn malformed_values_are_refused() {
    for flavor in flavors() {
        let s = vb::rsbloom(flavor);
        let mut c = s.conn();
        let ver = vb::server_rdb_version(&mut c);
        let bloom = fixed_bloom();
        let at = flavor.name();
        // The genuine value restores (the builders are right).
        let good = rdb_value(ver, 1, 0.01, 0.5, 100, 7, &bloom);
        assert_eq!(
            c.cmd(&[b"RESTORE".as_slice(), b"good", b"0", &good]),
            ok(),
            "{at}"
        );
        assert_eq!(c.cmd(&["BF.CARD", "good"]), Reply::Int(7));
        // RESTORE: 0 sub-filters, k = 0, blob version 2, a blob shorter than
        // its header says, fp ≥ 1, capacity 0, tightening making p_1 ≥ 1.
        let mut short = bloom.clone();
        short.truncate(100);
        let mut v2 = bloom.clone();
        v2[0] = 2;
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("0 sub-filters", rdb_value(ver, 0, 0.01, 0.5, 0, 0, &bloom)),
            (
                "k = 0",
                rdb_value(ver, 1, 0.01, 0.5, 100, 7, &with_k(&bloom, 0)),
            ),
            ("blob version 2", rdb_value(ver, 1, 0.01, 0.5, 100, 7, &v2)),
            ("short blob", rdb_value(ver, 1, 0.01, 0.5, 100, 7, &short)),
            ("fp 1.5", rdb_value(ver, 1, 1.5, 0.5, 100, 7, &bloom)),
            ("capacity 0", rdb_value(ver, 1, 0.01, 0.5, 0, 0, &bloom)),
            (
                "k 200000000",
                rdb_value(ver, 1, 0.01, 0.5, 100, 7, &with_k(&bloom, 200_000_000)),
            ),
            (
                "k 2049",
                rdb_value(ver, 1, 0.01, 0.5, 100, 7, &with_k(&bloom, 2049)),
            ),
        ];
        for (what, p) in &cases {
            let r = c.cmd(&[b"RESTORE".as_slice(), b"bad", b"0", p]);
            assert_eq!(r, bad_format(), "{at}: RESTORE with {what}");
            gone(&mut c, "bad");
        }
        // Two sub-filters with tightening 300: p_1 = 3 (§8).
        let two = payload(
            VB_MODULE_ID,
            &[
                Prim::U(2),
                Prim::U(2),
                Prim::D(0.01),
                Prim::D(300.0),
                Prim::U(0),
                Prim::U(100),
                Prim::S(bloom.clone()),
                Prim::U(200),
                Prim::U(1),
                Prim::S(bloom.clone()),
            ],
            ver,
        );
        let r = c.cmd(&[b"RESTORE".as_slice(), b"bad", b"0", &two]);
        assert_eq!(r, bad_format(), "{at}: RESTORE with tightening 300");

        // BF.LOAD: 0 sub-filters, a capacity-0 sub-filter, negative capacity
        // or item count, huge k, a fixed-seed flag with another seed.
        let mut other_seed = bloom.clone();
        other_seed[13..45].copy_from_slice(b"0123456789abcdefghijklmnopqrstuv");
        let loads: Vec<(&str, Vec<u8>)> = vec![
            ("0 sub-filters", load_blob(0, &[])),
            ("capacity 0", load_blob(0, &[(bloom.clone(), 0, 0)])),
            ("capacity -7", load_blob(0, &[(bloom.clone(), 7, -7)])),
            ("num_items -1", load_blob(0, &[(bloom.clone(), -1, 100)])),
            (
                "k 200000000",
                load_blob(0, &[(with_k(&bloom, 200_000_000), 7, 100)]),
            ),
            (
                "fixed-seed flag, other seed",
                load_blob(0, &[(other_seed.clone(), 7, 100)]),
            ),
        ];
        for (what, b) in &loads {
            let r = c.cmd(&[b"BF.LOAD".as_slice(), b"bad", b]);
            assert_eq!(r, decoding_failed(), "{at}: BF.LOAD with {what}");
            gone(&mut c, "bad");
        }
        // The genuine blob, and the same seed flagged random, load.
        let r = c.cmd(&[
            b"BF.LOAD".as_slice(),
            b"l1",
            &load_blob(0, &[(bloom.clone(), 7, 100)]),
        ]);
        assert_eq!(r, ok(), "{at}: genuine BF.LOAD");
        let r = c.cmd(&[
            b"BF.LOAD".as_slice(),
            b"l2",
            &load_blob(1, &[(other_seed, 7, 100)]),
        ]);
        assert_eq!(r, ok(), "{at}: BF.LOAD of a random-seed object");
        assert_eq!(c.cmd(&["BF.ADD", "l1", "new item"]), Reply::Int(1));
        common::alive(&mut c);
    }
}

/// Allocation-sized requests answer an error: with the limit at 2^63 − 1
/// (valkey-bloom aborts on the failed allocation), and at the default limit
/// with capacities whose size projection passes 2^64 (valkey-bloom aborts
/// too: found by the differential stream, not in the specification).
#[test]
fn huge_creations_answer_errors() {
    let exceeds = Reply::Error("ERR operation exceeds bloom object memory limit".into());
    for flavor in flavors() {
        let s = vb::rsbloom(flavor);
        let mut c = s.conn();
        let limit = vb::config_name(&mut c, "bloom-memory-usage-limit");
        let cap = vb::config_name(&mut c, "bloom-capacity");
        let fp = vb::config_name(&mut c, "bloom-fp-rate");
        let at = flavor.name();
        assert_eq!(
            c.cmd(&["BF.RESERVE", "a", "0.0001", "9223372036854775807"]),
            exceeds,
            "{at}"
        );
        assert_eq!(c.cmd(&["CONFIG", "SET", &cap, "9223372036854775807"]), ok());
        assert_eq!(c.cmd(&["CONFIG", "SET", &fp, "1e-310"]), ok());
        assert_eq!(c.cmd(&["BF.ADD", "b", "x"]), exceeds, "{at}: auto-creation");
        assert_eq!(
            c.cmd(&["CONFIG", "SET", &limit, "9223372036854775807"]),
            ok()
        );
        let r = c.cmd(&["BF.RESERVE", "c", "0.01", "1000000000000000000"]);
        assert_eq!(r, exceeds, "{at}: 10^18 at the largest limit");
        let r = c.cmd(&[
            "BF.INSERT",
            "d",
            "CAPACITY",
            "1000000000000000000",
            "ITEMS",
            "x",
        ]);
        assert_eq!(r, exceeds, "{at}: BF.INSERT 10^18 at the largest limit");
        common::alive(&mut c);
        for k in ["a", "b", "c", "d"] {
            gone(&mut c, k);
        }
    }
}

/// RDB loading keeps what valkey-bloom cannot load back: objects whose first
/// rate is below MIN_POSITIVE, and objects above a limit lowered since
/// (the limit holds for a client's RESTORE only).
#[test]
fn reloads_keep_values() {
    for flavor in flavors() {
        let s = vb::rsbloom(flavor);
        let mut c = s.conn();
        let at = flavor.name();
        assert_eq!(c.cmd(&["BF.RESERVE", "tiny", "1e-310", "10"]), ok());
        assert_eq!(c.cmd(&["BF.ADD", "tiny", "x"]), Reply::Int(1));
        assert_eq!(c.cmd(&["BF.ADD", "big", "x"]), Reply::Int(1));
        let info = (c.cmd(&["BF.INFO", "tiny"]), c.cmd(&["BF.INFO", "big"]));
        let dump = c.cmd(&["DUMP", "big"]);
        let limit = vb::config_name(&mut c, "bloom-memory-usage-limit");
        assert_eq!(c.cmd(&["CONFIG", "SET", &limit, "100"]), ok());
        assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), ok(), "{at}: DEBUG RELOAD");
        assert_eq!(c.cmd(&["BF.EXISTS", "tiny", "x"]), Reply::Int(1));
        assert_eq!(c.cmd(&["BF.EXISTS", "big", "x"]), Reply::Int(1));
        // A client's RESTORE still meets the limit.
        let r = c.cmd(&[b"RESTORE".as_slice(), b"again", b"0", dump.as_bytes()]);
        assert_eq!(r, bad_format(), "{at}: RESTORE above the limit");
        // (Max scaled capacity depends on the limit of the moment, §4.7.)
        assert_eq!(c.cmd(&["CONFIG", "SET", &limit, "134217728"]), ok());
        assert_eq!(
            (c.cmd(&["BF.INFO", "tiny"]), c.cmd(&["BF.INFO", "big"])),
            info,
            "{at}"
        );
        common::alive(&mut c);
    }
}

/// A client's BF.LOAD goes to the AOF (and replicas) as received, not as
/// valkey-bloom's BF.INSERT of the blob as one item; the replay rebuilds it.
#[test]
fn bf_load_is_propagated_verbatim() {
    let v = vector::load("2-scaled");
    for flavor in flavors() {
        let mut s = Server::builder(flavor, Module::Rsbloom)
            .valkey_bloom_flavor()
            .aof_without_preamble()
            .start();
        let mut c = s.conn();
        assert_eq!(c.cmd(&[b"BF.LOAD".as_slice(), b"k", &v.blob]), ok());
        let before = c.cmd(&["DUMP", "k"]);
        let want = {
            let mut w = Vec::new();
            common::resp::encode_into(&mut w, &[b"BF.LOAD".as_slice(), b"k", &v.blob]);
            w
        };
        let dir = s.dir().join("appendonlydir");
        wait::until("BF.LOAD in the AOF", wait::STATE, || {
            let incr: Vec<u8> = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".incr.aof"))
                .flat_map(|e| std::fs::read(e.path()).unwrap())
                .collect();
            if incr.windows(want.len()).any(|w| w == want.as_slice()) {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&incr).chars().take(300).collect())
            }
        });
        drop(c);
        s.restart(false);
        let mut c = s.conn();
        assert_eq!(
            c.cmd(&["DUMP", "k"]),
            before,
            "{}: replayed BF.LOAD",
            flavor.name()
        );
    }
}

/// Module arguments valkey-bloom crashes on make the load fail cleanly.
#[test]
fn bad_module_arguments_fail_the_load() {
    let module = module_path(Module::Rsbloom).unwrap();
    for flavor in flavors() {
        for (name, value) in [
            ("bloom-capacity", "0"),
            ("bloom-capacity", "-3"),
            ("bloom-fp-rate", "2"),
            ("bloom-fp-rate", "abc"),
            ("bloom-tightening-ratio", "0"),
            ("bloom-memory-usage-limit", "-5"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("server.log");
            let mut child = Command::new(flavor.binary())
                .args(["--port", "0", "--save", "", "--logfile"])
                .arg(&log)
                .arg("--dir")
                .arg(dir.path())
                .arg("--loadmodule")
                .arg(&module)
                .args(["bloom-flavor", "valkey-bloom", name, value])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let status = wait::poll(
                "the server to refuse the module",
                Duration::from_secs(20),
                Duration::from_millis(20),
                || match child.try_wait() {
                    Ok(Some(st)) => Ok(st),
                    _ => Err("still running".into()),
                },
            );
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let at = format!("{} with {name} {value}", flavor.name());
            let status = status.unwrap_or_else(|e| {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{at}: the server runs: {e}\n{text}")
            });
            assert!(
                !status.success() && status.code().is_some(),
                "{at}: {status}"
            );
            assert!(
                !text.contains("crashed by signal") && !text.contains("panicked"),
                "{at}: crashed:\n{text}"
            );
            assert!(
                text.contains("Module") || text.contains("module"),
                "{at}: the log says why:\n{text}"
            );
        }
    }
}

/// BF.MERGE on valkey-bloom objects: the union of objects of one shape and
/// seed; refusals name what differs and write nothing.
#[test]
fn merge_unites_objects_of_one_shape_and_seed() {
    let err = |t: &str| Reply::Error(t.into());
    let differ = |what: &str| err(&format!("ERR BF.MERGE: sources differ in {what}"));
    for flavor in flavors() {
        let s = vb::rsbloom(flavor);
        let mut c = s.conn();
        let at = flavor.name();
        let random = vb::config_name(&mut c, "bloom-use-random-seed");
        let dump = |c: &mut Conn, k: &str| c.cmd(&["DUMP", k]).as_bytes().to_vec();
        let madd = |c: &mut Conn, k: &str, p: &str| {
            let mut cmd = vec!["BF.MADD".to_string(), k.into()];
            cmd.extend((0..300).map(|i| format!("{p}{i}")));
            c.cmd(&cmd);
        };

        assert_eq!(c.cmd(&["CONFIG", "SET", &random, "yes"]), ok());
        assert_eq!(c.cmd(&["BF.RESERVE", "r1", "0.01", "1000"]), ok());
        assert_eq!(c.cmd(&["BF.RESERVE", "r2", "0.01", "1000"]), ok());
        let r = c.cmd(&["BF.MERGE", "d", "r1", "r2"]);
        assert_eq!(r, differ("sub-filter 1's seed"), "{at}");
        assert_eq!(c.cmd(&["EXISTS", "d"]), Reply::Int(0));
        // One source: a copy, its seed included.
        assert_eq!(c.cmd(&["BF.MERGE", "d", "r1"]), ok());
        assert_eq!(dump(&mut c, "d"), dump(&mut c, "r1"), "{at}");

        assert_eq!(c.cmd(&["CONFIG", "SET", &random, "no"]), ok());
        assert_eq!(c.cmd(&["BF.RESERVE", "a", "0.01", "1000"]), ok());
        assert_eq!(c.cmd(&["BF.RESERVE", "b", "0.01", "1000"]), ok());
        madd(&mut c, "a", "x");
        madd(&mut c, "b", "y");
        assert_eq!(c.cmd(&["BF.MERGE", "d", "a", "b"]), ok());
        assert_eq!(c.cmd(&["TYPE", "d"]), Reply::Simple("bloomfltr".into()));
        let found = c.cmd(&["BF.MEXISTS", "d", "x0", "x299", "y0", "y299"]);
        assert_eq!(found, Reply::Array(vec![Reply::Int(1); 4]), "{at}");
        let card = c.cmd(&["BF.CARD", "d"]).as_int();
        assert!((570..=600).contains(&card), "{at}: {card}");
        let a = dump(&mut c, "a");
        assert_eq!(c.cmd(&["BF.MERGE", "a", "a", "a"]), ok());
        assert_eq!(dump(&mut c, "a"), a, "{at}: self-merge");

        let before = dump(&mut c, "d");
        assert_eq!(c.cmd(&["BF.MERGE", "d", "a", "r1"]), differ("seed mode"));
        assert_eq!(
            c.cmd(&["BF.RESERVE", "n", "0.01", "1000", "NONSCALING"]),
            ok()
        );
        assert_eq!(c.cmd(&["BF.MERGE", "d", "a", "n"]), differ("expansion"));
        let t = ["BF.INSERT", "t", "CAPACITY", "1000", "ERROR", "0.01"];
        assert_eq!(
            c.cmd(&[&t[..], &["TIGHTENING", "0.6", "ITEMS", "i"]].concat())
                .as_array()
                .len(),
            1
        );
        assert_eq!(
            c.cmd(&["BF.MERGE", "d", "a", "t"]),
            differ("tightening ratio")
        );
        assert_eq!(c.cmd(&["BF.RESERVE", "e", "0.02", "1000"]), ok());
        assert_eq!(c.cmd(&["BF.MERGE", "d", "a", "e"]), differ("error rate"));
        assert_eq!(c.cmd(&["BF.RESERVE", "f", "0.01", "999"]), ok());
        let r = c.cmd(&["BF.MERGE", "d", "a", "f"]);
        assert_eq!(r, differ("sub-filter 1's capacity"));
        assert_eq!(
            c.cmd(&["BF.MERGE", "d", "a", "nokey"]),
            err("ERR not found")
        );
        assert_eq!(c.cmd(&["SET", "str", "v"]), ok());
        let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(c.cmd(&["BF.MERGE", "d", "a", "str"]), wrongtype);
        assert_eq!(c.cmd(&["BF.MERGE", "str", "a"]), wrongtype);
        assert_eq!(dump(&mut c, "d"), before, "{at}: refusals wrote nothing");

        // The memory limits, checked before anything is allocated.
        let size = c.cmd(&["BF.INFO", "a", "SIZE"]).as_int().to_string();
        let limit = vb::config_name(&mut c, "bloom-memory-usage-limit");
        let small = (size.parse::<i64>().unwrap() - 1).to_string();
        assert_eq!(c.cmd(&["CONFIG", "SET", &limit, &small]), ok());
        let exceeds = err("ERR operation exceeds bloom object memory limit");
        assert_eq!(c.cmd(&["BF.MERGE", "d", "a"]), exceeds, "{at}");
        assert_eq!(c.cmd(&["CONFIG", "SET", &limit, &size]), ok());
        assert_eq!(c.cmd(&["BF.MERGE", "d", "a"]), ok());
        assert_eq!(dump(&mut c, "d"), a, "{at}");
    }
}
