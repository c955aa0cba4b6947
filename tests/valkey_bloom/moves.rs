//! Data moved both ways between rsbloom (valkey-bloom flavour) and the
//! valkey-bloom 1.0.1 oracle on Valkey 9.1:
//!
//! * the RDB file one wrote, loaded by the other (restart on the same data
//!   directory with the other module);
//! * the AOF without RDB preamble after BGREWRITEAOF (`BF.LOAD key blob`
//!   records), replayed by the other;
//! * the AOF of the commands as they were propagated (BF.INSERT … SEED …
//!   forms, the adds), replayed by the other;
//! * DUMP on one, RESTORE on the other.
//!
//! Each artifact is also loaded by a server with the writer's own module
//! (the control): every key must then answer BF.INFO (RESP2, RESP3), BF.CARD,
//! BF.MEXISTS of ~200 probes, DUMP and DEBUG DIGEST-VALUE identically on the
//! two, and CARD, EXISTS and DUMP as on the writer. (BF.INFO Size can differ
//! from the writer's after an AOF replay, identically on both: BF.LOAD sizes
//! the sub-filter list exactly, §5.4.)

use std::path::Path;

use crate::differential::FIXED_SEED;
use crate::vb::{self, State};
use crate::vector;
use common::{info, ok, Flavor, Module, Server};

fn other(m: Module) -> Module {
    if m == Module::Rsbloom {
        Module::ValkeyBloom
    } else {
        Module::Rsbloom
    }
}

fn name(m: Module) -> &'static str {
    if m == Module::Rsbloom {
        "rsbloom"
    } else {
        "valkey-bloom"
    }
}

fn start(module: Module, dir: Option<&Path>, aof: bool) -> Server {
    let mut b = Server::builder(Flavor::Valkey9, module).valkey_bloom_flavor();
    if let Some(d) = dir {
        b = b.dir(d);
    }
    if aof {
        b = b.aof_without_preamble();
    }
    b.start()
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// Probe items: everything the data set adds and as many never added.
pub fn probes() -> Vec<Vec<u8>> {
    let mut p: Vec<String> = vector::load("1-default")
        .items()
        .iter()
        .map(|s| s.to_string())
        .collect();
    for i in 0..32 {
        p.push(format!("s:{i}"));
        p.push(format!("t:{i}"));
        p.push(format!("L:{}", i * 31));
        p.push(format!("m{i}"));
        p.push(format!("absent-{i}"));
    }
    for i in 0..12 {
        p.push(format!("n:{i}"));
    }
    let mut out: Vec<Vec<u8>> = p.into_iter().map(String::into_bytes).collect();
    out.push(Vec::new());
    out.push(vec![0, 255, 1]);
    out
}

/// The data set, made by commands on `c`: the six vectors (vector 1 with a
/// random seed), more shapes (tightening, expansion 1 with many sub-filters,
/// empty, full non-scaling, binary key and items, a BF.LOAD-made key), and
/// a string beside them.
pub fn fill(s: &Server) {
    let mut c = s.conn();
    for v in vector::all() {
        for (cmd, want) in &v.commands {
            assert_eq!(&c.cmd(cmd), want, "filling: {}", cmd.join(" "));
        }
    }
    let items = |p: &str, n: usize| -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("{p}{i}").into_bytes()).collect()
    };
    let mut cmd = |args: Vec<Vec<u8>>| {
        let r = c.cmd(&args);
        assert!(
            !r.is_error(),
            "filling: {} → {r:?}",
            String::from_utf8_lossy(&args[0])
        );
    };
    let b = |x: &str| x.as_bytes().to_vec();
    let mut a = vec![
        b("BF.INSERT"),
        b("m:tight"),
        b("CAPACITY"),
        b("3"),
        b("ERROR"),
        b("0.2"),
    ];
    a.extend([
        b("TIGHTENING"),
        b("0.3"),
        b("EXPANSION"),
        b("3"),
        b("SEED"),
        FIXED_SEED.to_vec(),
        b("ITEMS"),
    ]);
    a.extend(items("m", 30));
    cmd(a);
    let mut a = vec![
        b("BF.INSERT"),
        b("m:x1"),
        b("CAPACITY"),
        b("1"),
        b("EXPANSION"),
        b("1"),
    ];
    a.extend([b("SEED"), b("0123456789abcdefghijklmnopqrstuv"), b("ITEMS")]);
    a.extend(items("m", 11));
    cmd(a);
    cmd(vec![b("BF.RESERVE"), b("m:empty"), b("0.05"), b("7")]);
    cmd(vec![
        b("BF.RESERVE"),
        b("m:ns"),
        b("0.1"),
        b("4"),
        b("NONSCALING"),
    ]);
    cmd([vec![b("BF.MADD"), b("m:ns")], items("m", 4)].concat());
    cmd(vec![b("BF.ADD"), b("m:ns"), b("m0")]);
    cmd(vec![
        b("BF.MADD"),
        vec![0xff, 0, b'k'],
        Vec::new(),
        vec![0, 255, 1],
        b("ü"),
    ]);
    cmd(vec![
        b("BF.LOAD"),
        b("m:loaded"),
        vector::load("4-seeded").blob,
    ]);
    cmd(vec![b("SET"), b("plain"), b("v")]);
}

/// Every key's state (non-Bloom keys: their DUMP only).
pub fn snapshot(s: &Server) -> Vec<(Vec<u8>, State)> {
    let (mut c2, mut c3) = (s.conn(), s.conn3());
    let probes = probes();
    vb::keys(&mut c2)
        .into_iter()
        .map(|k| {
            let st = vb::observe(&mut c2, &mut c3, &k, &probes);
            (k, st)
        })
        .collect()
}

/// `unlike_writer`: a key the artifact itself does not carry as the writer
/// held it (valkey-bloom propagates a client's BF.LOAD as a BF.INSERT of the
/// blob as one item, COMPAT-VALKEY-BLOOM.md §8 first bullet; rsbloom
/// propagates BF.LOAD verbatim): compared with the control only.
fn compare(
    what: &str,
    dest: &[(Vec<u8>, State)],
    control: &[(Vec<u8>, State)],
    source: &[(Vec<u8>, State)],
    unlike_writer: Option<&[u8]>,
) {
    let names = |x: &[(Vec<u8>, State)]| {
        x.iter()
            .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(dest), names(source), "{what}: keys");
    assert_eq!(names(control), names(source), "{what}: keys of the control");
    for (((k, d), (_, c)), (_, s)) in dest.iter().zip(control).zip(source) {
        let exempt = unlike_writer == Some(k.as_slice());
        let k = String::from_utf8_lossy(k);
        assert_eq!(
            d, c,
            "{what}: key {k} differs from the control (the writer's module loading the same data)"
        );
        if exempt {
            continue;
        }
        assert_eq!(d.card, s.card, "{what}: key {k} BF.CARD vs the writer");
        assert_eq!(
            d.exists, s.exists,
            "{what}: key {k} BF.MEXISTS vs the writer"
        );
        assert_eq!(d.dump, s.dump, "{what}: key {k} DUMP vs the writer");
    }
}

/// One direction: `from` writes, `to` (and the control, `from` again) load.
fn moves(from: Module) {
    let to = other(from);
    let dir = format!("{} → {}", name(from), name(to));
    let mut src = start(from, None, true);
    fill(&src);
    let source = snapshot(&src);
    assert!(source.len() == 13, "data set: {} keys", source.len());
    let mut c = src.conn();

    // The AOF of the commands as propagated (before any rewrite).
    let propagated = tempfile::tempdir().unwrap();
    copy_dir(
        &src.dir().join("appendonlydir"),
        &propagated.path().join("appendonlydir"),
    );
    // After BGREWRITEAOF: BF.LOAD records.
    assert!(!c.cmd(&["BGREWRITEAOF"]).is_error());
    info::wait_aof_rewrite(&mut c);
    let base = String::from_utf8_lossy(&src.base_aof()).into_owned();
    assert!(
        base.contains("BF.LOAD"),
        "{dir}: the rewritten AOF has BF.LOAD records"
    );
    let rewritten = tempfile::tempdir().unwrap();
    copy_dir(
        &src.dir().join("appendonlydir"),
        &rewritten.path().join("appendonlydir"),
    );
    // DUMP payloads.
    let dumps: Vec<(Vec<u8>, Vec<u8>)> = vb::keys(&mut c)
        .into_iter()
        .map(|k| {
            let d = c.cmd(&[b"DUMP".as_slice(), &k]).as_bytes().to_vec();
            (k, d)
        })
        .collect();
    // The RDB file, written at shutdown; the control gets a copy.
    drop(c);
    src.stop(true);
    let rdb_control = tempfile::tempdir().unwrap();
    std::fs::copy(
        src.dir().join("dump.rdb"),
        rdb_control.path().join("dump.rdb"),
    )
    .unwrap();

    {
        let d = start(to, Some(src.dir()), false);
        let k = start(from, Some(rdb_control.path()), false);
        compare(
            &format!("RDB {dir}"),
            &snapshot(&d),
            &snapshot(&k),
            &source,
            None,
        );
    }
    for (how, aof) in [
        ("AOF rewrite (BF.LOAD)", &rewritten),
        ("AOF of the propagated commands", &propagated),
    ] {
        let control = tempfile::tempdir().unwrap();
        copy_dir(aof.path(), control.path());
        let d = start(to, Some(aof.path()), true);
        let k = start(from, Some(control.path()), true);
        let (sd, sk) = (snapshot(&d), snapshot(&k));
        let unlike = (from == Module::ValkeyBloom && how.contains("propagated"))
            .then_some(b"m:loaded".as_slice());
        compare(&format!("{how} {dir}"), &sd, &sk, &source, unlike);
    }
    {
        let d = start(to, None, false);
        let k = start(from, None, false);
        for s in [&d, &k] {
            let mut c = s.conn();
            for (key, payload) in &dumps {
                let r = c.cmd(&[b"RESTORE".as_slice(), key, b"0", payload]);
                assert_eq!(r, ok(), "{dir}: RESTORE {}", String::from_utf8_lossy(key));
            }
        }
        compare(
            &format!("DUMP/RESTORE {dir}"),
            &snapshot(&d),
            &snapshot(&k),
            &source,
            None,
        );
        // And the full BF.INFO as on the writer (RESTORE grows the list as
        // the commands did; not for the BF.LOAD-made key, whose list was exact).
        for ((k, st), (_, s)) in snapshot(&d).iter().zip(&source) {
            if k == b"m:loaded" {
                continue;
            }
            assert_eq!(
                st,
                s,
                "DUMP/RESTORE {dir}: key {} vs the writer",
                String::from_utf8_lossy(k)
            );
        }
    }
}

#[test]
fn moves_oracle_to_rsbloom() {
    if vb::valkey9().is_none()
        || !vb::have_oracle(Flavor::Valkey9, "the moves from valkey-bloom to rsbloom")
    {
        return;
    }
    moves(Module::ValkeyBloom);
}

#[test]
fn moves_rsbloom_to_oracle() {
    if vb::valkey9().is_none()
        || !vb::have_oracle(Flavor::Valkey9, "the moves from rsbloom to valkey-bloom")
    {
        return;
    }
    moves(Module::Rsbloom);
}
