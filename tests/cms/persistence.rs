//! Sketches survive DEBUG RELOAD, DUMP/RESTORE and an AOF rewrite without
//! RDB preamble, and move both ways between rsbloom and the reference
//! RedisBloom 2.8.2 — DUMP payloads, RDB files and AOF rewrites — after
//! which both answer identically (docs/cms.md §6). rsbloom writes Redis
//! 8.12's encoding 1 by default, which 2.8.2 cannot read; under
//! `bf.cms-rdb-encoding 0` it writes encoding 0, byte for byte what 2.8.2
//! writes (§6.5): both settings are moved both ways. Also the DUMP test
//! vectors of §9 and of the 8.12 specification.
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::diff::{sargs, subject_module, Args};
use common::dump::{parse, payload, rdb_version, Prim};
use common::server::Builder;
use common::*;

/// How rsbloom writes CMS values (docs/cms.md §6.5).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Enc {
    /// Encoding 1 (Redis 8.12), the default.
    Current,
    /// `bf.cms-rdb-encoding 0`: encoding 0, as RedisBloom 2.8.2 and 8.4.
    Legacy,
}

/// A server side of a move: the module and, for rsbloom, its setting.
type End = (Module, Enc);

const REFERENCE: End = (Module::Reference, Enc::Legacy);

fn rsbloom(enc: Enc) -> End {
    (subject_module(), enc)
}

/// A server of `end`, the legacy setting given on its command line.
fn builder(flavor: Flavor, (module, enc): End) -> Builder {
    let b = Server::builder(flavor, module);
    if module == Module::Rsbloom && enc == Enc::Legacy {
        b.arg("--bf.cms-rdb-encoding").arg("0")
    } else {
        b
    }
}

/// Sketches of 1-, 2- and 8-byte cells, with decrements (rsbloom only).
const SIZED: [&str; 6] = [
    "CMS.INITBYDIM c1 30 4 CELL_SIZE 1",
    "CMS.INCRBY c1 a 255 b 7 b -3",
    "CMS.INITBYPROB c2 0.01 0.01 CELL_SIZE 2",
    "CMS.INCRBY c2 a 65535 b 9",
    "CMS.INITBYDIM c8 10 3 CELL_SIZE 8",
    "CMS.INCRBY c8 a 9223372036854775806 b 1 a -5",
];

const SIZED_KEYS: [&str; 3] = ["c1", "c2", "c8"];

/// Sketches of every kind: tiny, deep (no batching), wide (27 MB, one
/// RDB string), saturated, merged, fresh.
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

/// `populate` and the sketches of other cell sizes.
fn populate_sized(c: &mut Conn) {
    populate(c);
    for cmd in SIZED {
        let r = line(c, cmd);
        assert!(
            !r.is_error() && !format!("{r:?}").contains("flow"),
            "{cmd}: {r:?}"
        );
    }
}

fn all_keys() -> Vec<&'static str> {
    KEYS.iter().chain(&SIZED_KEYS).copied().collect()
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

/// An observation as any module and encoding shows it: the DUMP as its
/// value (width, depth, total, 4-byte cells; no cell-size field, no RDB
/// version or CRC) and CMS.INFO without the `cell_size` pair, which only
/// rsbloom (8.12) adds. Needs `rdbcompression no`.
fn portable(obs: &[Reply]) -> Vec<Reply> {
    let mut out = obs.to_vec();
    if let (true, Reply::Bulk(p)) = (obs[0] == simple("CMSk-TYPE"), &obs[1]) {
        let (_, mut prims) = dump::parse(p);
        if prims.len() == 5 {
            assert_eq!(prims.remove(3), dump::Prim::U(4), "only 4-byte cells move");
        }
        out[1] = bulk(format!("{prims:?}"));
    }
    if let Some(info) = out.get_mut(2) {
        *info = without_cell_size(info);
    }
    out
}

/// CMS.INFO's first three pairs (RESP2 array or RESP3 map).
fn without_cell_size(info: &Reply) -> Reply {
    match info {
        Reply::Array(a) if a.len() == 8 => Reply::Array(a[..6].to_vec()),
        Reply::Map(m) if m.len() == 4 => Reply::Map(m[..3].to_vec()),
        other => other.clone(),
    }
}

#[test]
fn debug_reload_and_restore_keep_every_sketch() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        populate_sized(&mut c);
        let observe_all = |c: &mut Conn| -> Vec<Vec<Reply>> {
            all_keys().iter().map(|k| observe(c, k)).collect()
        };
        let before = observe_all(&mut c);
        assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
        assert_eq!(observe_all(&mut c), before, "{flavor:?}");
        for key in all_keys().iter().filter(|k| **k != "str") {
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
        // Encoding 2 does not exist (docs/cms.md §6.2).
        let mut payload = c.cmd(&["DUMP", "tiny"]).as_bytes().to_vec();
        assert_eq!(payload[9], 1, "encoding 1 by default");
        payload[9] = 2; // low byte of the module id: the encoding version
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
        populate_sized(&mut c);
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
        assert_eq!(restores, 13, "one RESTORE per sketch");
        // Written after the rewrite: replayed from the increment file.
        line(&mut c, "CMS.INCRBY s after 5");
        line(&mut c, "CMS.MERGE merged 1 sat");
        line(&mut c, "CMS.INCRBY c1 b -4 a 1");
        let observe_all = |c: &mut Conn| -> Vec<Vec<Reply>> {
            all_keys().iter().map(|k| observe(c, k)).collect()
        };
        let before = observe_all(&mut c);
        drop(c);
        s.restart(false);
        let mut c = s.conn();
        assert_eq!(observe_all(&mut c), before, "{flavor:?}");
        assert_eq!(db3(&mut c, "CMS.QUERY tiny in-db3"), arr(vec![int(9)]));
        assert_eq!(db3(&mut c, "CMS.INFO tiny").as_array()[1], int(7));
    }
}

/// A server of `end` started on a copy of `files` (names relative to
/// `src`'s directory).
fn start_on_copy(
    src: &Server,
    files: &[&str],
    end: End,
    aof: bool,
    compress: bool,
) -> (Server, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .prefix("rsbloom-cms-")
        .tempdir()
        .unwrap();
    for f in files {
        copy_tree(&src.dir().join(f), &dir.path().join(f));
    }
    let mut b = builder(src.flavor(), end).dir(dir.path());
    if aof {
        b = b.aof_without_preamble();
    }
    if !compress {
        b = b.uncompressed_rdb();
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
fn move_set(from: End, to: End, how: &str) {
    for flavor in flavors() {
        move_set_on(flavor, from, to, how);
    }
}

/// Whether both ends write the same bytes (the reference writes
/// encoding 0): DUMPs are then compared as they are.
fn same_encoding(from: End, to: End) -> bool {
    from.1 == to.1
}

fn move_set_on(flavor: Flavor, from: End, to: End, how: &str) {
    let aof = how == "aof";
    let exact = same_encoding(from, to);
    let start = |end: End| {
        let mut b = builder(flavor, end);
        if aof {
            b = b.aof_without_preamble();
        }
        if !exact {
            b = b.uncompressed_rdb();
        }
        b
    };
    let mut src = start(from).start();
    let mut c = src.conn();
    populate(&mut c);
    let before = observe_all(&mut c);
    let (dst, _dir) = match how {
        "restore" => {
            let dst = start(to).start();
            let mut d = dst.conn();
            for key in KEYS {
                let payload = c.cmd(&["DUMP", key]).as_bytes().to_vec();
                assert_eq!(d.cmd(&args!["RESTORE", key, "0", payload]), ok(), "{key}");
            }
            (dst, None)
        }
        "rdb" => {
            assert_eq!(line(&mut c, "SAVE"), ok());
            let (dst, dir) = start_on_copy(&src, &["dump.rdb"], to, false, exact);
            (dst, Some(dir))
        }
        _ => {
            assert!(matches!(line(&mut c, "BGREWRITEAOF"), Reply::Simple(_)));
            wait_for_aof_rewrite(&mut c);
            src.stop(false);
            let (dst, dir) = start_on_copy(&src, &["appendonlydir"], to, true, exact);
            (dst, Some(dir))
        }
    };
    let mut d = dst.conn();
    let what = format!("{how} {from:?} -> {to:?} on {flavor:?}");
    let after = observe_all(&mut d);
    let same = |a: &[Vec<Reply>], b: &[Vec<Reply>]| {
        let view = |o: &[Vec<Reply>]| -> Vec<Vec<Reply>> {
            o.iter()
                .map(|r| {
                    if exact && from.0 == to.0 {
                        r.clone()
                    } else if exact {
                        // Same bytes, but only rsbloom shows the cell size.
                        let mut r = r.clone();
                        if let Some(i) = r.get_mut(2) {
                            *i = without_cell_size(i);
                        }
                        r
                    } else {
                        portable(r)
                    }
                })
                .collect()
        };
        assert_eq!(view(a), view(b), "{what}");
    };
    same(&after, &before);
    // The moved sketches keep working identically; `sat` overflows,
    // which 2.8.2 answers as 8.4 did (docs/differences.md).
    if !aof {
        for cmd in build()
            .iter()
            .filter(|a| a[0] != b"CMS.INITBYDIM" && a[0] != b"CMS.INITBYPROB" && a[1] != b"sat")
        {
            assert_eq!(d.cmd(cmd), c.cmd(cmd), "{what}: {cmd:?}");
        }
        same(&observe_all(&mut d), &observe_all(&mut c));
    }
}

/// 2.8.2's values load under both settings; rsbloom's load in 2.8.2 under
/// the legacy one; the two settings read each other's 4-byte sketches.
#[test]
fn dump_restore_both_ways() {
    move_set(REFERENCE, rsbloom(Enc::Current), "restore");
    move_set(REFERENCE, rsbloom(Enc::Legacy), "restore");
    move_set(rsbloom(Enc::Legacy), REFERENCE, "restore");
    move_set(rsbloom(Enc::Current), rsbloom(Enc::Legacy), "restore");
    move_set(rsbloom(Enc::Legacy), rsbloom(Enc::Current), "restore");
}

#[test]
fn rdb_files_both_ways() {
    move_set(REFERENCE, rsbloom(Enc::Current), "rdb");
    move_set(REFERENCE, rsbloom(Enc::Legacy), "rdb");
    move_set(rsbloom(Enc::Legacy), REFERENCE, "rdb");
    move_set(rsbloom(Enc::Current), rsbloom(Enc::Legacy), "rdb");
}

#[test]
fn aof_rewrites_both_ways() {
    move_set(REFERENCE, rsbloom(Enc::Current), "aof");
    move_set(REFERENCE, rsbloom(Enc::Legacy), "aof");
    move_set(rsbloom(Enc::Legacy), REFERENCE, "aof");
}

/// docs/cms.md §6.5: what the default refuses to the reference and what
/// the legacy setting refuses itself.
#[test]
fn legacy_setting_and_its_limits() {
    for flavor in flavors() {
        let current = Server::builder(flavor, Module::Rsbloom).start();
        let legacy = builder(flavor, rsbloom(Enc::Legacy)).start();
        let reference = Server::start(flavor, Module::Reference);
        let (mut c, mut l, mut r) = (current.conn(), legacy.conn(), reference.conn());
        // The config: its value, and no change at run time.
        let get = |c: &mut Conn| c.cmd(&["CONFIG", "GET", "bf.cms-rdb-encoding"]);
        assert_eq!(
            get(&mut c),
            arr(vec![bulk("bf.cms-rdb-encoding"), bulk("1")])
        );
        assert_eq!(
            get(&mut l),
            arr(vec![bulk("bf.cms-rdb-encoding"), bulk("0")])
        );
        assert!(l
            .cmd(&["CONFIG", "SET", "bf.cms-rdb-encoding", "1"])
            .is_error());
        assert!(c
            .cmd(&["CONFIG", "SET", "bf.cms-rdb-encoding", "0"])
            .is_error());
        // Encoding 1 is refused by 2.8.2.
        for cmd in ["CMS.INITBYDIM k 4 2", "CMS.INCRBY k foo 3 bar 1"] {
            assert!(!line(&mut c, cmd).is_error());
            assert!(!line(&mut l, cmd).is_error());
            assert!(!line(&mut r, cmd).is_error());
        }
        let current_dump = c.cmd(&["DUMP", "k"]).as_bytes().to_vec();
        assert_eq!(
            r.cmd(&args!["RESTORE", "k2", "0", &current_dump]),
            err("ERR Bad data format")
        );
        // The legacy DUMP is the reference's, byte for byte.
        let legacy_dump = l.cmd(&["DUMP", "k"]);
        assert_eq!(legacy_dump, r.cmd(&["DUMP", "k"]));
        // Other cell sizes: refused at creation, and at load.
        assert_eq!(
            line(&mut l, "CMS.INITBYDIM s 4 2 CELL_SIZE 2"),
            err("CMS: CELL_SIZE must be 4 while bf.cms-rdb-encoding is 0")
        );
        assert_eq!(line(&mut l, "CMS.INITBYDIM s 4 2 CELL_SIZE 4"), ok());
        assert_eq!(
            line(&mut l, "CMS.INITBYDIM s9 4 2 CELL_SIZE 9"),
            err("CMS: CELL_SIZE must be 1, 2, 4 or 8")
        );
        assert_eq!(line(&mut c, "CMS.INITBYDIM s 4 2 CELL_SIZE 2"), ok());
        let sized = c.cmd(&["DUMP", "s"]).as_bytes().to_vec();
        assert_eq!(
            l.cmd(&args!["RESTORE", "s2", "0", &sized]),
            err("ERR Bad data format")
        );
        // A 4-byte encoding-1 value loads and is written as encoding 0.
        assert_eq!(l.cmd(&args!["RESTORE", "k3", "0", &current_dump]), ok());
        assert_eq!(l.cmd(&["DUMP", "k3"]), legacy_dump);
        assert_eq!(line(&mut l, "CMS.INCRBY k3 foo -1"), arr(vec![int(2)]));
        for (s, c) in [(&legacy, &mut l), (&current, &mut c)] {
            alive(c);
            let log = s.log();
            assert!(!log.contains("panic"), "{log}");
        }
    }
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
/// RDB version 10), which rsbloom writes under the legacy setting; the
/// default writes the same with the cell size (encoding 1).
#[test]
fn dump_vectors() {
    for compression in ["no", "yes"] {
        for enc in [Enc::Legacy, Enc::Current] {
            let s = builder(Flavor::Redis7, (Module::Rsbloom, enc))
                .arg("--rdbcompression")
                .arg(compression)
                .start();
            let mut c = s.conn();
            populate(&mut c);
            let p = c.cmd(&["DUMP", "s"]).as_bytes().to_vec();
            let v4x2 = hex(c.cmd(&["DUMP", "v4x2"]).as_bytes());
            let (len, sha) = match (compression, enc) {
                ("no", Enc::Legacy) => {
                    assert_eq!(
                        v4x2,
                        "078108c4a4f9360f1000020402020204052000000000030000000000000001000000\
                         00000000010000000300000000000000000a00d9c779e51ea2ca6c"
                    );
                    (
                        831,
                        "b941e27022e5ebad6c4941a5052b78009c2cfc37b7441d4daeb989cc096cc839",
                    )
                }
                (_, Enc::Legacy) => (
                    487,
                    "ed53a2d57e1cd84d47c21c0579b9354542400bbd7136050698e2e324d672ca32",
                ),
                (_, Enc::Current) => {
                    // Encoding 1: the same with the module id's low bit and
                    // the cell size (`02 04`) after the total.
                    if compression == "no" {
                        assert_eq!(
                            &v4x2[..v4x2.len() - 20],
                            "078108c4a4f9360f10010204020202040204052000000000030000000000000001000000\
                             0000000001000000030000000000000000"
                        );
                    }
                    assert_eq!(p[..14], hex_bytes("078108c4a4f9360f100102320204"));
                    (p.len(), "")
                }
            };
            assert_eq!(p.len(), len);
            if !sha.is_empty() {
                assert_eq!(sha256(&p[..len - 10]), sha);
            }
            assert_eq!(hex(&p[len - 10..len - 8]), "0a00");
        }
    }
}

fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The 8.12 specification's §4.2 vectors: `CMS.INITBYDIM c 4 2 CELL_SIZE
/// cs`, `CMS.INCRBY c foo 3 bar 1`, module part (`rdbcompression no`; the
/// RDB version and CRC are the server's).
#[test]
fn dump_vectors_812() {
    for flavor in all_flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .uncompressed_rdb()
            .start();
        let mut c = s.conn();
        // Module id (encoding 1), width 4, depth 2, total 4, cell size,
        // the string (length as RDB encodes it), the cells, module EOF.
        let eight: String = [0u64, 3, 0, 1, 0, 1, 3, 0]
            .iter()
            .map(|c| hex(&c.to_le_bytes()))
            .collect();
        let rows = [
            (1, "08", "0003000100010300"),
            (2, "10", "00000300000001000000010003000000"),
            (
                4,
                "20",
                "00000000030000000000000001000000000000000100000003000000 00000000",
            ),
            (8, "4040", eight.as_str()),
        ];
        for (cs, len, cells) in rows {
            let rest = format!("02{cs:02x}05{len}{}00", cells.replace(' ', ""));
            let id = "078108c4a4f9360f1001020402020204";
            let key = format!("c{cs}");
            assert_eq!(
                c.cmd(&[
                    "CMS.INITBYDIM",
                    &key,
                    "4",
                    "2",
                    "CELL_SIZE",
                    &cs.to_string()
                ]),
                ok()
            );
            c.cmd(&["CMS.INCRBY", &key, "foo", "3", "bar", "1"]);
            let p = c.cmd(&["DUMP", &key]).as_bytes().to_vec();
            let want = format!("{id}{rest}");
            assert_eq!(hex(&p[..p.len() - 10]), want, "{flavor:?} cell size {cs}");
            assert!(dump::crc_ok(&p));
            // And it loads back as the same sketch.
            assert_eq!(
                c.cmd(&args!["RESTORE", format!("{key}-copy"), "0", &p]),
                ok()
            );
            assert_eq!(
                c.cmd(&["CMS.QUERY", &format!("{key}-copy"), "foo", "bar"]),
                arr(vec![int(3), int(1)])
            );
        }
    }
}

/// A windowed sketch saved in encoding 0 (with the sum of all buckets,
/// before the closed sum replaced it: docs/cms-window.md §6) restores,
/// answers as before and is saved again as encoding 1; a saved sum other
/// than the buckets' is refused.
#[test]
fn windowed_encoding_0_still_restores() {
    for flavor in flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .uncompressed_rdb()
            .start();
        let mut c = s.conn();
        // Buckets of 20 s; the tick runs one bucket ahead of the clock,
        // so the increments after it see no shift of their own.
        line(&mut c, "CMS.INITBYDIM w 8 2 WINDOW 60000 BUCKETS 3");
        assert!(!line(&mut c, "CMS.INCRBY w a 3 b 5").is_error());
        let start = info_field(&mut c, "w", "last_shift_ms");
        assert_eq!(
            c.cmd(&args!["CMS.TICK", "w", (start + 20_000).to_string()]),
            int(1)
        );
        assert!(!line(&mut c, "CMS.INCRBY w a 2 c 1").is_error());
        let genuine = c.cmd(&["DUMP", "w"]).as_bytes().to_vec();
        let (id, prims) = parse(&genuine);
        assert_eq!(id, rsbloom_core::cms::WINDOW_TYPE.id(1));
        // Header (7 numbers), then each bucket's total and 4-byte counters.
        let (mut total, mut sum) = (0, vec![0u32; 16]);
        for pair in prims[7..].chunks(2) {
            let [Prim::U(t), Prim::S(cells)] = pair else {
                panic!("{pair:?}")
            };
            total += t;
            for (s, b) in sum.iter_mut().zip(cells.chunks(4)) {
                *s += u32::from_le_bytes(b.try_into().unwrap());
            }
        }
        let cells = |sum: &[u32]| Prim::S(sum.iter().flat_map(|v| v.to_le_bytes()).collect());
        let encoding_0 = |total: u64, sum: &[u32]| {
            let p = [&prims[..7], &[Prim::U(total), cells(sum)], &prims[7..]].concat();
            payload(
                rsbloom_core::cms::WINDOW_TYPE.id(0),
                &p,
                rdb_version(&genuine),
            )
        };
        let query = |c: &mut Conn, k: &str| c.cmd(&["CMS.QUERY", k, "a", "b", "c", "z"]);
        assert_eq!(
            c.cmd(&args!["RESTORE", "old", "0", encoding_0(total, &sum)]),
            ok()
        );
        assert_eq!(query(&mut c, "old"), query(&mut c, "w"));
        assert_eq!(c.cmd(&["DUMP", "old"]).as_bytes(), &genuine[..]);
        sum[0] += 1;
        assert_eq!(
            c.cmd(&args!["RESTORE", "bad", "0", encoding_0(total, &sum)]),
            err("ERR Bad data format")
        );
        assert_eq!(c.cmd(&["EXISTS", "bad"]), int(0));
    }
}

/// A numeric field of CMS.INFO.
fn info_field(c: &mut Conn, key: &str, name: &str) -> u64 {
    let Reply::Array(r) = c.cmd(&["CMS.INFO", key]) else {
        panic!("CMS.INFO {key}")
    };
    let at = r.chunks(2).position(|f| f[0].as_bytes() == name.as_bytes());
    match at.and_then(|i| r.get(2 * i + 1)) {
        Some(Reply::Int(v)) => *v as u64,
        other => panic!("{name}: {other:?}"),
    }
}
