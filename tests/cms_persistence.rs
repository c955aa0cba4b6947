//! Sketches survive DEBUG RELOAD, DUMP/RESTORE and an AOF rewrite without
//! RDB preamble, and move both ways between rsbloom and the reference
//! RedisBloom 2.8.2 — DUMP payloads, RDB files and AOF rewrites — after
//! which both answer identically (docs/cms.md §6). Also the DUMP test
//! vectors of §9.
mod common;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::diff::{sargs, subject_module, Args};
use common::*;

/// Sketches of every kind: tiny, deep (no batching), wide (27 MB, one
/// RDB string), saturated with a wrapped total, merged, fresh.
fn build() -> Vec<Args> {
    let mut v: Vec<Args> = [
        "CMS.INITBYDIM tiny 1 1",
        "CMS.INCRBY tiny a 3 b 4",
        "CMS.INITBYDIM v4x2 4 2",
        "CMS.INCRBY v4x2 foo 3 bar 1",
        "CMS.INITBYDIM deep 10 200",
        "CMS.INITBYPROB wide 3e-7 0.5",
        "CMS.INITBYPROB prob 0.001 0.01",
        "CMS.INITBYDIM sat 20 5",
        "CMS.INCRBY sat big 4294967295 big4 9223372036854775807 big5 9223372036854775807",
        "CMS.INITBYDIM merged 20 5",
        "CMS.INITBYDIM empty 100 3",
        "CMS.INITBYDIM s 50 4",
    ]
    .iter()
    .map(|l| sargs(&l.split(' ').collect::<Vec<_>>()))
    .collect();
    for key in ["deep", "wide", "prob"] {
        let mut cmd = sargs(&["CMS.INCRBY", key]);
        for i in 0..500 {
            cmd.push(format!("i{}", i % 170).into_bytes());
            cmd.push((i % 7 + 1).to_string().into_bytes());
        }
        v.push(cmd);
    }
    for i in 0..1000 {
        let item = format!("item-{}", i % 97);
        v.push(sargs(&["CMS.INCRBY", "s", &item, &(i % 5 + 1).to_string()]));
    }
    v.push(sargs(&[
        "CMS.MERGE",
        "merged",
        "2",
        "sat",
        "merged",
        "WEIGHTS",
        "1",
        "3",
    ]));
    v
}

const KEYS: [&str; 10] = [
    "tiny", "v4x2", "deep", "wide", "prob", "sat", "merged", "empty", "s", "str",
];

fn probes() -> Args {
    let mut v = sargs(&["foo", "bar", "a", "b", "big", "big4", "absent", ""]);
    v.extend((0..200).map(|i| format!("i{i}").into_bytes()));
    v.extend((0..100).map(|i| format!("item-{i}").into_bytes()));
    v
}

fn populate(c: &mut Conn) {
    for (cmd, r) in build().iter().zip(c.pipeline(&build())) {
        assert!(!r.is_error(), "{cmd:?}: {r:?}");
    }
    c.cmd(&["SET", "str", "bystander"]);
}

/// Everything observable about a key: TYPE, DUMP, CMS.INFO, the probes.
fn observe(c: &mut Conn, key: &str) -> Vec<Reply> {
    let mut out = vec![c.cmd(&["TYPE", key]), c.cmd(&["DUMP", key])];
    if key != "str" {
        out.push(c.cmd(&["CMS.INFO", key]));
        let mut q = sargs(&["CMS.QUERY", key]);
        q.extend(probes());
        out.push(c.cmd(&q));
    }
    out
}

fn observe_all(c: &mut Conn) -> Vec<Vec<Reply>> {
    KEYS.iter().map(|k| observe(c, k)).collect()
}

#[test]
fn debug_reload_and_restore_keep_every_sketch() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        populate(&mut c);
        let before = observe_all(&mut c);
        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
        assert_eq!(observe_all(&mut c), before, "{flavor:?}");
        for key in &KEYS[..9] {
            let payload = c.cmd(&["DUMP", key]).as_bytes().to_vec();
            let copy = format!("{key}-copy");
            assert_eq!(c.cmd(&args!["RESTORE", &copy, "0", payload]), ok());
            let (mut a, b) = (observe(&mut c, &copy), observe(&mut c, key));
            a[1] = c.cmd(&["DUMP", key]);
            assert_eq!(a, b, "{key}");
            assert_eq!(
                c.cmd(&["CMS.INCRBY", &copy, "new", "2"]),
                c.cmd(&["CMS.INCRBY", key, "new", "2"])
            );
            assert_eq!(c.cmd(&["DUMP", &copy]), c.cmd(&["DUMP", key]));
        }
        // Encoding 1 does not exist (docs/cms.md §6.2).
        let mut payload = c.cmd(&["DUMP", "tiny"]).as_bytes().to_vec();
        payload[9] |= 1; // low byte of the module id: the encoding version
        dump::fix_crc(&mut payload);
        assert_eq!(
            c.cmd(&args!["RESTORE", "v1", "0", payload]),
            err("ERR Bad data format")
        );
        alive(&mut c);
    }
}

fn wait_for_aof_rewrite(c: &mut Conn) {
    let info = info::wait_for(c, "persistence", Duration::from_secs(30), |i| {
        i.contains("aof_rewrite_in_progress:0") && i.contains("aof_rewrite_scheduled:0")
    });
    assert!(info.contains("aof_last_bgrewrite_status:ok"), "{info}");
}

#[test]
fn aof_rewrite_without_preamble_restores_every_sketch() {
    for flavor in flavors() {
        let mut s = Server::builder(flavor, Module::Rsbloom)
            .aof_without_preamble()
            .start();
        let mut c = s.conn();
        populate(&mut c);
        // The rewrite DUMPs each key in its own database.
        let db3 = |c: &mut Conn, cmd: &str| {
            line(c, "SELECT 3");
            let r = line(c, cmd);
            line(c, "SELECT 0");
            r
        };
        assert_eq!(db3(&mut c, "CMS.INITBYDIM tiny 7 3"), ok());
        db3(&mut c, "CMS.INCRBY tiny in-db3 9");
        assert!(matches!(line(&mut c, "BGREWRITEAOF"), Reply::Simple(_)));
        wait_for_aof_rewrite(&mut c);
        let aof = s.base_aof();
        assert!(!aof.starts_with(b"REDIS"), "base AOF has an RDB preamble");
        let restores = aof.windows(7).filter(|w| w == b"RESTORE").count();
        assert_eq!(restores, 10, "one RESTORE per sketch");
        // Written after the rewrite: replayed from the increment file.
        line(&mut c, "CMS.INCRBY s after 5");
        line(&mut c, "CMS.MERGE merged 1 sat");
        let before = observe_all(&mut c);
        drop(c);
        s.restart(false);
        let mut c = s.conn();
        assert_eq!(observe_all(&mut c), before, "{flavor:?}");
        assert_eq!(db3(&mut c, "CMS.QUERY tiny in-db3"), arr(vec![int(9)]));
        assert_eq!(db3(&mut c, "CMS.INFO tiny").as_array()[1], int(7));
    }
}

/// A server of `module` started on a copy of `files` (names relative to
/// `src`'s directory).
fn start_on_copy(
    src: &Server,
    files: &[&str],
    module: Module,
    aof: bool,
) -> (Server, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .prefix("rsbloom-cms-")
        .tempdir()
        .unwrap();
    for f in files {
        copy_tree(&src.dir().join(f), &dir.path().join(f));
    }
    let mut b = Server::builder(src.flavor(), module).dir(dir.path());
    if aof {
        b = b.aof_without_preamble();
    }
    (b.start(), dir)
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    }
}

/// Builds the set on `from`, moves it to a server of `to` by `how`, and
/// compares everything observable, then the replies of further writes.
fn move_set(from: Module, to: Module, how: &str) {
    for flavor in flavors() {
        move_set_on(flavor, from, to, how);
    }
}

fn move_set_on(flavor: Flavor, from: Module, to: Module, how: &str) {
    let aof = how == "aof";
    let mut b = Server::builder(flavor, from);
    if aof {
        b = b.aof_without_preamble();
    }
    let mut src = b.start();
    let mut c = src.conn();
    populate(&mut c);
    let before = observe_all(&mut c);
    let (dst, _dir) = match how {
        "restore" => {
            let dst = Server::start(flavor, to);
            let mut d = dst.conn();
            for key in KEYS {
                let payload = c.cmd(&["DUMP", key]).as_bytes().to_vec();
                assert_eq!(d.cmd(&args!["RESTORE", key, "0", payload]), ok(), "{key}");
            }
            (dst, None)
        }
        "rdb" => {
            assert_eq!(line(&mut c, "SAVE"), ok());
            let (dst, dir) = start_on_copy(&src, &["dump.rdb"], to, false);
            (dst, Some(dir))
        }
        _ => {
            assert!(matches!(line(&mut c, "BGREWRITEAOF"), Reply::Simple(_)));
            wait_for_aof_rewrite(&mut c);
            src.stop(false);
            let (dst, dir) = start_on_copy(&src, &["appendonlydir"], to, true);
            (dst, Some(dir))
        }
    };
    let mut d = dst.conn();
    assert_eq!(
        observe_all(&mut d),
        before,
        "{how} {from:?} -> {to:?} on {flavor:?}"
    );
    // The moved sketches keep working identically.
    if !aof {
        for cmd in build()
            .iter()
            .filter(|a| a[0] != b"CMS.INITBYDIM" && a[0] != b"CMS.INITBYPROB")
        {
            assert_eq!(d.cmd(cmd), c.cmd(cmd), "{how}: {cmd:?}");
        }
        assert_eq!(observe_all(&mut d), observe_all(&mut c));
    }
}

#[test]
fn dump_restore_both_ways() {
    move_set(Module::Reference, subject_module(), "restore");
    move_set(subject_module(), Module::Reference, "restore");
}

#[test]
fn rdb_files_both_ways() {
    move_set(Module::Reference, subject_module(), "rdb");
    move_set(subject_module(), Module::Reference, "rdb");
}

#[test]
fn aof_rewrites_both_ways() {
    move_set(Module::Reference, subject_module(), "aof");
    move_set(subject_module(), Module::Reference, "aof");
}

fn sha256(data: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, data).unwrap();
    let out = Command::new("sha256sum").arg(&path).output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// docs/cms.md §9: the DUMP payloads verified on RedisBloom (Redis 7.0,
/// RDB version 10).
#[test]
fn dump_vectors() {
    for compression in ["no", "yes"] {
        let s = Server::builder(Flavor::Redis7, Module::Rsbloom)
            .arg("--rdbcompression")
            .arg(compression)
            .start();
        let mut c = s.conn();
        populate(&mut c);
        let p = c.cmd(&["DUMP", "s"]).as_bytes().to_vec();
        let (len, sha) = if compression == "no" {
            assert_eq!(
                hex(c.cmd(&["DUMP", "v4x2"]).as_bytes()),
                "078108c4a4f9360f1000020402020204052000000000030000000000000001000000\
                 00000000010000000300000000000000000a00d9c779e51ea2ca6c"
            );
            (
                831,
                "b941e27022e5ebad6c4941a5052b78009c2cfc37b7441d4daeb989cc096cc839",
            )
        } else {
            (
                487,
                "ed53a2d57e1cd84d47c21c0579b9354542400bbd7136050698e2e324d672ca32",
            )
        };
        assert_eq!(p.len(), len);
        assert_eq!(sha256(&p[..len - 10]), sha);
        assert_eq!(hex(&p[len - 10..len - 8]), "0a00");
    }
}
