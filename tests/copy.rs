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

/// The families each module serves, as key names: RedisBloom has no
/// sliding-window type.
fn families(m: Module) -> &'static [&'static str] {
    const ALL: [&str; 6] = ["bf", "cf", "cms", "topk", "td", "apbf"];
    match m {
        Module::Reference => &ALL[..5],
        _ => &ALL,
    }
}

/// The family of a key that `fill` wrote.
fn family_of(key: &str) -> &str {
    let name = key.rsplit(':').next().unwrap_or(key);
    name.split('-').next().unwrap_or(name)
}

/// The keys of each family `m` serves, `prefix`ed, with content; the Bloom
/// key has a TTL; the sliding-window family has a count window (`apbf`)
/// and a time window whose clock has started (`apbf-time`).
fn fill(c: &mut Conn, prefix: &str, m: Module) -> Vec<String> {
    let k = |name: &str| format!("{prefix}{name}");
    let cmds: Vec<Vec<&str>> = vec![
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
        vec!["APBF.RESERVE", "apbf", "COUNT", "0.01", "100"],
        vec!["APBF.ADD", "apbf", "a", "b"],
        vec!["APBF.RESERVE", "apbf-time", "TIME", "0.01", "100", "3600"],
        vec!["APBF.ADD", "apbf-time", "a", "b"],
    ];
    let mut keys = Vec::new();
    for cmd in cmds
        .iter()
        .filter(|cmd| families(m).contains(&family_of(cmd[1])))
    {
        let key = k(cmd[1]);
        let mut args = cmd.clone();
        args[1] = &key;
        let r = c.cmd(&args);
        assert!(!r.is_error(), "{args:?}: {r:?}");
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
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
    match family_of(key) {
        "bf" => vec!["BF.EXISTS", key, "b"],
        "cf" => vec!["CF.COUNT", key, "a"],
        "cms" => vec!["CMS.QUERY", key, "a", "b", "z"],
        "topk" => vec!["TOPK.COUNT", key, "a"],
        "apbf" => vec!["APBF.EXISTS", key, "a", "b", "z"],
        _ => vec!["TDIGEST.RANK", key, "3"],
    }
}

/// The content of a value whose saved bytes may differ on the two ends,
/// read through the module: a Top-K's list (RedisBloom saves memory
/// addresses in its heap records, docs/topk.md §5.2; TOPK.INFO's decay is a
/// double that Redis 7.0 formats otherwise); a Count-Min Sketch's width,
/// depth and total (saved in encoding 1 by rsbloom, 0 by RedisBloom 2.8.2:
/// docs/cms.md §6.1; 2.8.2's CMS.INFO has no cell size), its counters
/// being compared by `family_read`.
fn content(c: &mut Conn, key: &str) -> Option<Vec<Reply>> {
    match family_of(key) {
        "topk" => Some(c.cmd(&["TOPK.LIST", key, "WITHCOUNT"]).as_array().to_vec()),
        "cms" => Some(c.cmd(&["CMS.INFO", key]).as_array().get(..6)?.to_vec()),
        _ => None,
    }
}

/// Whether `key` on `dst` holds the value it has on `src`: the same module
/// value bytes (or the same content through the module where the bytes may
/// differ), the same answer to the family's read, and the TTL kept (the
/// tool sets the remaining TTL it read, as MIGRATE does: the copy's own
/// duration is added, a few seconds at most here).
fn same(src: &mut Conn, dst: &mut Conn, key: &str) -> bool {
    let read = family_read(key);
    let ttl_kept = match src.cmd(&["PTTL", key]).as_int() {
        -1 => dst.cmd(&["PTTL", key]).as_int() == -1,
        t => (1..=t + 5000).contains(&dst.cmd(&["PTTL", key]).as_int()),
    };
    let value = match (body(src, key), body(dst, key)) {
        (Some(a), Some(b)) if a == b => true,
        (Some(_), Some(_)) => content(src, key).is_some_and(|c| Some(c) == content(dst, key)),
        _ => false,
    };
    value && src.cmd(&read) == dst.cmd(&read) && ttl_kept
}

/// Where RedisBloom 2.8.2 loads: every server of the matrix (docs/servers.md
/// §2); a flavor added later is tried, and left out if it refuses it.
fn reference_loads(f: Flavor) -> bool {
    std::panic::catch_unwind(|| drop(Server::start(f, Module::Reference))).is_ok()
}

/// Issue 21's matrix through the tool: the keys of every family the source
/// serves (rsbloom everywhere, RedisBloom where it loads), written on each
/// source in its default configuration, copied to each target (the same).
/// A cell counts the families verified on the target out of those both
/// ends serve: six between rsbloom ends, five where RedisBloom is on either
/// side (it has no sliding-window type: a RedisBloom source has no such
/// keys, and an rsbloom source's are skipped for a RedisBloom target, with
/// the reason, nothing written).
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
            let s = Server::start(f, m);
            let keys = fill(&mut s.conn(), "", m);
            (f, m, s, keys)
        })
        .collect();
    let targets: Vec<Server> = ends.iter().map(|&(f, m)| Server::start(f, m)).collect();
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
            let both: Vec<&str> = families(*sm)
                .iter()
                .filter(|f| families(*tm).contains(f))
                .copied()
                .collect();
            let (moving, lacking): (Vec<&String>, Vec<&String>) =
                keys.iter().partition(|k| both.contains(&family_of(k)));
            let ok = both
                .iter()
                .filter(|&&f| {
                    moving
                        .iter()
                        .filter(|k| family_of(k) == f)
                        .all(|k| same(&mut src.conn(), &mut dst.conn(), k))
                })
                .count();
            let skipped_cleanly = report.skipped.len() == lacking.len()
                && report
                    .skipped
                    .iter()
                    .all(|(_, why)| why.starts_with("the target has no "))
                && lacking
                    .iter()
                    .all(|k| dst.conn().cmd(&["EXISTS", k.as_str()]).as_int() == 0);
            table += &format!(" {ok}/{} |", both.len());
            if ok != both.len()
                || report.copied_keys() != moving.len() as u64
                || !report.ok()
                || !skipped_cleanly
            {
                failures.push(format!(
                    "{} -> {}: {ok}/{}\n{out}",
                    name(*sf, *sm),
                    name(*tf, *tm),
                    both.len()
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
        keys.extend(fill(&mut c, &format!("k{i}:"), Module::Rsbloom));
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
    assert_eq!(report.copied_keys(), keys.len() as u64, "{out}");
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
    println!(
        "copied {} keys while {during} writes went to the source; {out}",
        keys.len()
    );
}

/// A 3-master cluster to a standalone server and back, keys routed by slot:
/// after the first copy the second run finds every key identical; after the
/// cluster is emptied, the copy back restores the same values. Bloom,
/// Cuckoo and sliding-window keys go in chunks both ways (`chunk_above` 1 byte): WATCHed reads
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
            (
                format!("c{i}:apbf"),
                vec!["APBF.RESERVE", "", "TIME", "0.01", "100", "60"],
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
    assert!(r.ok() && r.copied_keys() == keys.len() as u64, "{out}");
    let mut s = standalone.conn();
    let there: Vec<Vec<u8>> = keys.iter().map(|k| body(&mut s, k).expect(k)).collect();
    assert_eq!(there, original);
    let stats = String::from_utf8_lossy(s.cmd(&["INFO", "commandstats"]).as_bytes()).into_owned();
    for chunked in [
        "cmdstat_bf.loadchunk:calls=",
        "cmdstat_cf.loadchunk:calls=",
        "cmdstat_apbf.loadchunk:calls=",
    ] {
        assert!(
            stats.to_lowercase().contains(chunked),
            "{chunked} missing:\n{stats}"
        );
    }

    let (r, out) = copy(standalone.port, seed, |_| {});
    assert!(
        r.ok() && r.identical.values().sum::<u64>() == keys.len() as u64 && r.copied_keys() == 0,
        "{out}"
    );
    for (port, _) in cluster.masters(seed) {
        assert_eq!(
            Conn::connect(port).unwrap().cmd(&["FLUSHALL"]),
            common::ok()
        );
    }
    let (r, out) = copy(standalone.port, seed, |o| o.chunk_above = 1);
    assert!(r.ok() && r.copied_keys() == keys.len() as u64, "{out}");
    assert_eq!(bodies(&mut cc), original);
}

/// A target whose proto-max-bulk-len (1 MiB, the lowest it takes) is below
/// the values: Bloom and Cuckoo filters move in chunks split to fit, a
/// sliding-window filter in its whole chunks (slices) where they fit; a
/// Count-Min Sketch, which has no chunked form, and a sliding-window filter
/// whose slices exceed the limit are refused with the reason.
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
        // 9.4 MiB in slices of 168 KiB; 13.9 MiB in slices of 1.07 MiB.
        vec!["APBF.RESERVE", "mid:apbf", "COUNT", "0.01", "4000000"],
        vec!["APBF.ADD", "mid:apbf", "a"],
        vec!["APBF.RESERVE", "big:apbf", "COUNT", "0.3", "14000000"],
    ] {
        assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
    }
    let bf_len = body(&mut c, "big:bf").unwrap().len();
    assert!(bf_len > 4 << 20, "Bloom filter of {bf_len} bytes");
    let (r, out) = copy(src.port, dst.port, |_| {});
    let mut d = dst.conn();
    assert_eq!(r.copied_keys(), 3, "{out}");
    for k in ["big:bf", "big:cf", "mid:apbf"] {
        assert!(same(&mut c, &mut d, k), "{k}\n{out}");
    }
    let mut skipped: Vec<_> = r
        .skipped
        .iter()
        .map(|(k, why)| (String::from_utf8_lossy(k), why.split(':').next().unwrap()))
        .collect();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            (
                "big:apbf".into(),
                "too large for one command (apbf chunks do not split)"
            ),
            (
                "big:cms".into(),
                "too large for one command (no chunked form)"
            )
        ],
        "{out}"
    );
    assert_eq!(d.cmd(&["EXISTS", "big:cms", "big:apbf"]).as_int(), 0);
    // Through DUMP when the limit is raised (--max-command beyond it is refused by the server).
    assert_eq!(
        d.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "64mb"]),
        common::ok()
    );
    let (r, out) = copy(src.port, dst.port, |o| o.pattern = "big:*".into());
    assert_eq!(r.copied_keys(), 2, "{out}");
    for k in ["big:cms", "big:apbf"] {
        assert!(same(&mut c, &mut d, k), "{k}\n{out}");
    }
}

/// Existing target keys: identical ones are recognised (a re-run copies
/// nothing), different ones are left alone unless --replace; a dry run
/// writes nothing; other types are counted, not copied; databases are chosen.
#[test]
fn reruns_replace_dry_runs_and_databases() {
    let (src, dst) = pair(flavors()[0], flavors()[0]);
    let mut c = src.conn();
    assert_eq!(c.cmd(&["SELECT", "2"]), common::ok());
    let keys = fill(&mut c, "", Module::Rsbloom);
    assert_eq!(c.cmd(&["SET", "plain", "string"]), common::ok());
    let mut d = dst.conn();
    assert_eq!(d.cmd(&["SELECT", "5"]), common::ok());
    let n = keys.len() as u64;
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
        n,
        "{out}"
    );
    assert_eq!(d.cmd(&["DBSIZE"]).as_int(), 0, "dry run wrote: {out}");

    let (r, out) = copy(src.port, dst.port, dbs);
    assert_eq!(
        (r.copied_keys(), r.other_types.get("string")),
        (n, Some(&1)),
        "{out}"
    );
    for k in &keys {
        assert!(same(&mut c, &mut d, k), "{k}");
    }
    assert_eq!(
        d.cmd(&["DBSIZE"]).as_int() as u64,
        n,
        "no private key left behind"
    );

    let (r, out) = copy(src.port, dst.port, dbs);
    assert_eq!(
        (r.copied_keys(), r.identical.values().sum::<u64>()),
        (0, n),
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
        (1, n - 1),
        "{out}"
    );
    assert!(same(&mut c, &mut d, "cms"));
}

/// rsbloom in its default configuration saves Count-Min Sketches in
/// encoding 1, which RedisBloom 2.8.2 cannot read (docs/cms.md §6.5): to it
/// a sketch of 4-byte cells goes in encoding 0, the same content; one of 1-
/// or 8-byte cells, which encoding 0 cannot hold, is skipped with the
/// reason, nothing written. rsbloom targets get all three as they are.
#[test]
fn cms_encoding_1_to_an_older_module() {
    let f = flavors()
        .into_iter()
        .find(|&f| reference_loads(f))
        .expect("a server where RedisBloom 2.8.2 loads");
    let src = Server::start(f, Module::Rsbloom);
    let mut c = src.conn();
    for cmd in [
        vec!["CMS.INITBYDIM", "cms", "50", "3"],
        vec!["CMS.INCRBY", "cms", "a", "5", "b", "70000"],
        vec!["CMS.INITBYDIM", "cms-1", "50", "3", "CELL_SIZE", "1"],
        vec!["CMS.INITBYDIM", "cms-8", "50", "3", "CELL_SIZE", "8"],
    ] {
        assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
    }
    // Encoding 1: the module id ends in 1 (docs/cms.md §6.1).
    let encoding = |c: &mut Conn, k: &str| body(c, k).map(|b| b[9] & 3);
    assert_eq!(encoding(&mut c, "cms"), Some(1));

    let old = Server::start(f, Module::Reference);
    let (r, out) = copy(src.port, old.port, |_| {});
    assert!(r.ok() && r.copied_keys() == 1, "{out}");
    let mut d = old.conn();
    assert!(same(&mut c, &mut d, "cms"), "{out}");
    assert_eq!(encoding(&mut d, "cms"), Some(0));
    let mut skipped = r.skipped.clone();
    skipped.sort();
    assert_eq!(
        skipped,
        [("cms-1", 1), ("cms-8", 8)].map(|(k, size)| (
            k.as_bytes().to_vec(),
            format!(
                "the target's module (bf ver 20802) reads only cms encoding 0: cell size \
                 {size}: the encoding the target reads holds cell size 4 only"
            )
        ))
    );
    assert_eq!(d.cmd(&["EXISTS", "cms-1", "cms-8"]).as_int(), 0);

    let new = Server::start(f, Module::Rsbloom);
    let (r, out) = copy(src.port, new.port, |_| {});
    assert!(r.ok() && r.copied_keys() == 3, "{out}");
    let mut d = new.conn();
    for k in ["cms", "cms-1", "cms-8"] {
        assert_eq!(body(&mut c, k), body(&mut d, k), "{k}");
    }
}

/// The command line, as a user runs it: exit codes and the report.
#[test]
fn command_line() {
    let (src, dst) = pair(flavors()[0], flavors()[0]);
    fill(&mut src.conn(), "", Module::Rsbloom);
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
