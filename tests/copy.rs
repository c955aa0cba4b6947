//! The copy tool (tools/copy, docs/copy.md) between real servers: every
//! family from every server to every other, with rsbloom and RedisBloom on
//! either side (issue 21's matrix), live writes to other keys, a cluster to
//! a standalone server and back, values larger than the target's
//! proto-max-bulk-len, TTLs, re-runs, --replace and dry runs.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::cluster::Cluster;
use common::server::{all_flavors, flavors, Flavor, Module, Server};
use common::{Conn, Reply};
use rsbloom_copy::{Options, Report};

fn url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}")
}

/// Runs the tool from `from` to `to` (ports), `tweak`ing its options.
fn copy(from: u16, to: u16, tweak: impl FnOnce(&mut Options)) -> (Report, String) {
    let mut o = Options::new(&url(from), &url(to));
    o.progress = None;
    tweak(&mut o);
    let mut out = Vec::new();
    let report =
        rsbloom_copy::run(&o, &mut out).unwrap_or_else(|e| panic!("copy {from} -> {to}: {e}"));
    (report, String::from_utf8_lossy(&out).into_owned())
}

/// A source and a target with rsbloom.
fn pair(source: Flavor, target: Flavor) -> (Server, Server) {
    (
        Server::start(source, Module::Rsbloom),
        Server::start(target, Module::Rsbloom),
    )
}

/// One key of each family, `prefix`ed, with content; the Bloom key has a TTL.
fn fill(c: &mut Conn, prefix: &str) -> Vec<String> {
    let k = |name: &str| format!("{prefix}{name}");
    let cmds: Vec<Vec<String>> = [
        vec!["BF.RESERVE", "bf", "0.01", "1000"],
        vec!["BF.MADD", "bf", "a", "b", "c"],
        vec!["PEXPIRE", "bf", "600000"],
        vec!["CF.RESERVE", "cf", "1000"],
        vec!["CF.ADD", "cf", "a"],
        vec!["CF.ADD", "cf", "b"],
        vec!["CMS.INITBYDIM", "cms", "100", "5"],
        vec!["CMS.INCRBY", "cms", "a", "3", "b", "4"],
        vec!["TOPK.RESERVE", "topk", "5"],
        vec!["TOPK.ADD", "topk", "a", "b", "c", "a"],
        vec!["TDIGEST.CREATE", "td"],
        vec!["TDIGEST.ADD", "td", "1", "2", "3", "4.5"],
    ]
    .iter()
    .map(|cmd| {
        cmd.iter()
            .enumerate()
            .map(|(i, a)| if i == 1 { k(a) } else { a.to_string() })
            .collect()
    })
    .collect();
    for cmd in &cmds {
        let r = c.cmd(cmd);
        assert!(!r.is_error(), "{cmd:?}: {r:?}");
    }
    ["bf", "cf", "cms", "topk", "td"]
        .iter()
        .map(|n| k(n))
        .collect()
}

/// The module value of a DUMP payload (its RDB version and CRC aside).
fn body(c: &mut Conn, key: &str) -> Option<Vec<u8>> {
    match c.cmd(&["DUMP", key]) {
        Reply::Bulk(p) if p.len() > 10 => Some(p[..p.len() - 10].to_vec()),
        _ => None,
    }
}

/// A read of each family that the target's module must answer from the value.
fn family_read(key: &str) -> Vec<&str> {
    match key.rsplit(':').next().unwrap_or(key) {
        "bf" => vec!["BF.EXISTS", key, "b"],
        "cf" => vec!["CF.COUNT", key, "a"],
        "cms" => vec!["CMS.QUERY", key, "b"],
        "topk" => vec!["TOPK.COUNT", key, "a"],
        _ => vec!["TDIGEST.RANK", key, "3"],
    }
}

/// Whether `key` on `dst` holds the value it has on `src`: the same module
/// value bytes, the same answer to the family's read, and the TTL kept (the
/// tool sets the remaining TTL it read, as MIGRATE does: the copy's own
/// duration is added, a few seconds at most here).
fn same(src: &mut Conn, dst: &mut Conn, key: &str) -> bool {
    let read = family_read(key);
    let ttl_kept = match src.cmd(&["PTTL", key]).as_int() {
        -1 => dst.cmd(&["PTTL", key]).as_int() == -1,
        t => (1..=t + 5000).contains(&dst.cmd(&["PTTL", key]).as_int()),
    };
    let value = match body(src, key) {
        // RedisBloom saves memory addresses in a Top-K's heap records
        // (docs/topk.md §5.2): there the content is compared through the module.
        Some(b) if key.ends_with("topk") && Some(&b) != body(dst, key).as_ref() => {
            // (TOPK.INFO's decay is a double: Redis 7.0 formats it otherwise.)
            let list = ["TOPK.LIST", key, "WITHCOUNT"];
            src.cmd(&list) == dst.cmd(&list)
        }
        b => b.is_some() && b == body(dst, key),
    };
    value && src.cmd(&read) == dst.cmd(&read) && ttl_kept
}

/// Where RedisBloom 2.8.2 loads: every server of the matrix (README "Server
/// support"); a flavor added later is tried, and left out if it refuses it.
fn reference_loads(f: Flavor) -> bool {
    std::panic::catch_unwind(|| drop(Server::start(f, Module::Reference))).is_ok()
}

/// A server of the matrix. rsbloom runs with `bf.cms-rdb-encoding 0`, as a
/// user exchanging data with RedisBloom before Redis 8.12 must (its default,
/// Redis 8.12's encoding, is not readable by 2.8.2: docs/cms.md §6.5), so
/// sketches are byte-identical both ways.
fn matrix_server(f: Flavor, m: Module) -> Server {
    let b = Server::builder(f, m);
    if m == Module::Rsbloom {
        b.arg("--bf.cms-rdb-encoding").arg("0").start()
    } else {
        b.start()
    }
}

/// Issue 21's matrix through the tool: one key of each family, written on
/// each source (rsbloom everywhere, RedisBloom where it loads), copied to
/// each target (the same), all five verified there.
#[test]
fn every_family_moves_between_every_pair_of_servers() {
    let mut ends: Vec<(Flavor, Module)> = Vec::new();
    for f in all_flavors() {
        ends.push((f, Module::Rsbloom));
        if reference_loads(f) {
            ends.push((f, Module::Reference));
        }
    }
    let sources: Vec<(Flavor, Module, Server, Vec<String>)> = ends
        .iter()
        .map(|&(f, m)| {
            let s = matrix_server(f, m);
            let keys = fill(&mut s.conn(), "");
            (f, m, s, keys)
        })
        .collect();
    let targets: Vec<Server> = ends.iter().map(|&(f, m)| matrix_server(f, m)).collect();
    let name = |f: Flavor, m: Module| {
        format!(
            "{}{}",
            f.name(),
            if m == Module::Reference {
                "/RedisBloom"
            } else {
                ""
            }
        )
    };
    let mut table = String::from("| source → target |");
    for &(f, m) in &ends {
        table += &format!(" {} |", name(f, m));
    }
    let mut failures = Vec::new();
    for (sf, sm, src, keys) in &sources {
        table += &format!("\n| {} |", name(*sf, *sm));
        for ((tf, tm), dst) in ends.iter().zip(&targets) {
            assert_eq!(dst.conn().cmd(&["FLUSHALL"]), common::ok());
            let (report, out) = copy(src.port, dst.port, |_| {});
            let ok = keys
                .iter()
                .filter(|k| same(&mut src.conn(), &mut dst.conn(), k))
                .count();
            table += &format!(" {ok}/5 |");
            if ok != 5 || report.copied_keys() != 5 || !report.ok() {
                failures.push(format!(
                    "{} -> {}: {ok}/5\n{out}",
                    name(*sf, *sm),
                    name(*tf, *tm)
                ));
            }
        }
    }
    println!("{table}");
    assert!(failures.is_empty(), "{table}\n{}", failures.join("\n"));
}

/// A client keeps writing other keys of the source during the copy: every
/// selected key arrives identical, the writer is never held up for long.
#[test]
fn copies_while_the_source_keeps_serving() {
    let fl = flavors();
    let (sf, tf) = (fl[0], fl[fl.len() - 1]);
    let (src, dst) = pair(sf, tf);
    let mut c = src.conn();
    let mut keys = Vec::new();
    for i in 0..300 {
        keys.extend(fill(&mut c, &format!("k{i}:")));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, writes, port) = (stop.clone(), writes.clone(), src.port);
        std::thread::spawn(move || {
            let mut w = Conn::connect(port).expect("connect");
            assert_eq!(w.cmd(&["TDIGEST.CREATE", "w:td"]), common::ok());
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let item = i.to_string();
                for cmd in [
                    ["BF.ADD", "w:bf", &item],
                    ["CF.ADD", "w:cf", &item],
                    ["TDIGEST.ADD", "w:td", &item],
                ] {
                    let r = w.cmd(&cmd);
                    assert!(!r.is_error(), "{cmd:?}: {r:?}");
                }
                i += 1;
                writes.store(i, Ordering::Relaxed);
            }
        })
    };
    let before = writes.load(Ordering::Relaxed);
    let (report, out) = copy(src.port, dst.port, |o| {
        o.pattern = "k*".into();
        o.scan_count = 50;
    });
    let during = writes.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer");
    assert!(report.ok(), "{out}");
    assert_eq!(report.copied_keys(), 1500, "{out}");
    assert!(during > 0, "the writer made no progress during the copy");
    let mut d = dst.conn();
    for k in &keys {
        assert!(same(&mut c, &mut d, k), "{k}");
    }
    assert_eq!(
        d.cmd(&["EXISTS", "w:bf"]).as_int(),
        0,
        "--match k* copied w:bf"
    );
    println!("copied 1500 keys while {during} writes went to the source; {out}");
}

/// A 3-master cluster to a standalone server and back, keys routed by slot:
/// after the first copy the second run finds every key identical; after the
/// cluster is emptied, the copy back restores the same values. Bloom and
/// Cuckoo keys go in chunks both ways (`chunk_above` 1 byte): WATCHed reads
/// on the node holding the key, LOADCHUNK and RENAME through the cluster
/// client.
#[test]
fn cluster_to_standalone_and_back() {
    let fl = flavors();
    let (cf, sf) = (fl[0], fl[fl.len() - 1]);
    let cluster = Cluster::start(cf, Module::Rsbloom);
    let mut cc = cluster
        .client()
        .get_connection()
        .expect("cluster connection");
    let mut keys = Vec::new();
    for i in 0..40 {
        for (k, cmd) in [
            (format!("c{i}:bf"), vec!["BF.ADD", "", "x"]),
            (format!("c{i}:cf"), vec!["CF.ADD", "", "x"]),
            (format!("c{i}:cms"), vec!["CMS.INITBYDIM", "", "10", "2"]),
            (format!("c{i}:topk"), vec!["TOPK.RESERVE", "", "3"]),
            (
                format!("c{i}:td"),
                vec!["TDIGEST.CREATE", "", "COMPRESSION", "50"],
            ),
        ] {
            let mut c = redis::cmd(cmd[0]);
            c.arg(&k);
            for a in &cmd[2..] {
                c.arg(*a);
            }
            let _: redis::Value = c.query(&mut cc).expect("write to the cluster");
            keys.push(k);
        }
    }
    let bodies = |cc: &mut redis::cluster::ClusterConnection| -> Vec<Vec<u8>> {
        keys.iter()
            .map(|k| {
                let p: Vec<u8> = redis::cmd("DUMP").arg(k).query(cc).expect("DUMP");
                p[..p.len() - 10].to_vec()
            })
            .collect()
    };
    let original = bodies(&mut cc);
    let seed = cluster.live_ports()[0];
    let standalone = Server::start(sf, Module::Rsbloom);
    let (r, out) = copy(seed, standalone.port, |o| o.chunk_above = 1);
    assert!(r.ok() && r.copied_keys() == 200, "{out}");
    let mut s = standalone.conn();
    let there: Vec<Vec<u8>> = keys.iter().map(|k| body(&mut s, k).expect(k)).collect();
    assert_eq!(there, original);
    let stats = String::from_utf8_lossy(s.cmd(&["INFO", "commandstats"]).as_bytes()).into_owned();
    for chunked in ["cmdstat_bf.loadchunk:calls=", "cmdstat_cf.loadchunk:calls="] {
        assert!(
            stats.to_lowercase().contains(chunked),
            "{chunked} missing:\n{stats}"
        );
    }

    let (r, out) = copy(standalone.port, seed, |_| {});
    assert!(
        r.ok() && r.identical.values().sum::<u64>() == 200 && r.copied_keys() == 0,
        "{out}"
    );
    for (port, _) in cluster.masters(seed) {
        assert_eq!(
            Conn::connect(port).unwrap().cmd(&["FLUSHALL"]),
            common::ok()
        );
    }
    let (r, out) = copy(standalone.port, seed, |o| o.chunk_above = 1);
    assert!(r.ok() && r.copied_keys() == 200, "{out}");
    assert_eq!(bodies(&mut cc), original);
}

/// A target whose proto-max-bulk-len (1 MiB, the lowest it takes) is below
/// the values: Bloom and Cuckoo filters move in chunks split to fit; a
/// Count-Min Sketch, which has no chunked form, is refused with the reason.
/// (RDB strings uncompressed on both ends: sparse filters would otherwise
/// DUMP to a few KiB.)
#[test]
fn values_larger_than_the_target_accepts() {
    let fl = flavors();
    let (sf, tf) = (fl[fl.len() - 1], fl[0]);
    let src = Server::builder(sf, Module::Rsbloom)
        .uncompressed_rdb()
        .start();
    let dst = Server::builder(tf, Module::Rsbloom)
        .uncompressed_rdb()
        .arg("--proto-max-bulk-len")
        .arg("1mb")
        .start();
    let mut c = src.conn();
    for cmd in [
        vec!["BF.RESERVE", "big:bf", "0.0001", "2000000"],
        vec!["BF.MADD", "big:bf", "a", "b", "c"],
        vec!["PEXPIRE", "big:bf", "900000"],
        vec!["CF.RESERVE", "big:cf", "2000000", "BUCKETSIZE", "4"],
        vec!["CF.ADD", "big:cf", "a"],
        vec!["CMS.INITBYDIM", "big:cms", "100000", "4"],
    ] {
        assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
    }
    let bf_len = body(&mut c, "big:bf").unwrap().len();
    assert!(bf_len > 4 << 20, "Bloom filter of {bf_len} bytes");
    let (r, out) = copy(src.port, dst.port, |_| {});
    let mut d = dst.conn();
    assert_eq!(r.copied_keys(), 2, "{out}");
    for k in ["big:bf", "big:cf"] {
        assert!(same(&mut c, &mut d, k), "{k}\n{out}");
    }
    assert_eq!(r.skipped.len(), 1, "{out}");
    assert!(
        r.skipped[0].1.starts_with("too large for one command"),
        "{out}"
    );
    assert_eq!(d.cmd(&["EXISTS", "big:cms"]).as_int(), 0);
    // Through DUMP when the limit is raised (--max-command beyond it is refused by the server).
    assert_eq!(
        d.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "64mb"]),
        common::ok()
    );
    let (r, out) = copy(src.port, dst.port, |o| o.pattern = "big:cms".into());
    assert_eq!(r.copied_keys(), 1, "{out}");
    assert!(same(&mut c, &mut d, "big:cms"));
}

/// Existing target keys: identical ones are recognised (a re-run copies
/// nothing), different ones are left alone unless --replace; a dry run
/// writes nothing; other types are counted, not copied; databases are chosen.
#[test]
fn reruns_replace_dry_runs_and_databases() {
    let (src, dst) = pair(flavors()[0], flavors()[0]);
    let mut c = src.conn();
    assert_eq!(c.cmd(&["SELECT", "2"]), common::ok());
    let keys = fill(&mut c, "");
    assert_eq!(c.cmd(&["SET", "plain", "string"]), common::ok());
    let mut d = dst.conn();
    assert_eq!(d.cmd(&["SELECT", "5"]), common::ok());
    let dbs = |o: &mut Options| {
        o.db = 2;
        o.target_db = 5;
    };

    let (r, out) = copy(src.port, dst.port, |o| {
        dbs(o);
        o.dry_run = true;
    });
    assert_eq!(
        r.would_copy.values().map(|c| c.keys).sum::<u64>(),
        5,
        "{out}"
    );
    assert_eq!(d.cmd(&["DBSIZE"]).as_int(), 0, "dry run wrote: {out}");

    let (r, out) = copy(src.port, dst.port, dbs);
    assert_eq!(
        (r.copied_keys(), r.other_types.get("string")),
        (5, Some(&1)),
        "{out}"
    );
    for k in &keys {
        assert!(same(&mut c, &mut d, k), "{k}");
    }
    assert_eq!(d.cmd(&["DBSIZE"]).as_int(), 5, "no private key left behind");

    let (r, out) = copy(src.port, dst.port, dbs);
    assert_eq!(
        (r.copied_keys(), r.identical.values().sum::<u64>()),
        (0, 5),
        "{out}"
    );

    assert!(!d.cmd(&["CMS.INCRBY", "cms", "z", "1"]).is_error());
    let (r, out) = copy(src.port, dst.port, dbs);
    assert_eq!(r.skipped.len(), 1, "{out}");
    assert!(r.skipped[0].1.contains("--replace"), "{out}");
    assert!(!same(&mut c, &mut d, "cms"));
    let (r, out) = copy(src.port, dst.port, |o| {
        dbs(o);
        o.replace = true;
    });
    assert_eq!(
        (r.copied_keys(), r.identical.values().sum::<u64>()),
        (1, 4),
        "{out}"
    );
    assert!(same(&mut c, &mut d, "cms"));
}

/// The command line, as a user runs it: exit codes and the report.
#[test]
fn command_line() {
    let (src, dst) = pair(flavors()[0], flavors()[0]);
    fill(&mut src.conn(), "");
    let run = |to: u16, extra: &[&str]| {
        let mut args = vec![
            "rsbloom-copy".to_string(),
            "--from".into(),
            url(src.port),
            "--to".into(),
            url(to),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut out = Vec::new();
        let code = rsbloom_copy::main_with(args, &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    };
    let (code, out) = run(dst.port, &["--match", "c*", "--verbose"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("copied    cf (cuckoo") && out.contains("copied    cms (cms"),
        "{out}"
    );
    assert!(out.contains("copied: 2 keys"), "{out}");
    // A target that does not answer: exit code 2, nothing copied.
    let (code, out) = run(1, &[]);
    assert_eq!((code, out.as_str()), (2, ""));
    // Not an option.
    assert_eq!(run(dst.port, &["--bogus"]).0, 2);
}
