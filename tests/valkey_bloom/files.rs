//! Files valkey-bloom 1.0.1 wrote, committed with what valkey-bloom itself
//! answers after loading them (tests/data/valkey-bloom/files/), so that they
//! are checked without the oracle: the RDB file (Valkey 9.1) and the two AOF
//! files without preamble — after BGREWRITEAOF (`BF.LOAD key blob` records)
//! and of the commands as propagated (BF.INSERT … SEED …, adds, and the
//! BF.INSERT it makes of a client's BF.LOAD) — of the data set of `moves`.
//! rsbloom (valkey-bloom flavour) must load them into the same BF.INFO
//! (RESP2, RESP3), BF.CARD, BF.MEXISTS of the probes, DUMP and digest: the
//! RDB on Valkey 9.1, the AOF files on Valkey 9.1, Valkey 8.0 and Redis 8.6
//! (DUMP compared without the RDB-version/CRC footer off Valkey 9.1).
//!
//! `cargo test --profile ci --test valkey_bloom -- --ignored regenerate`
//! rewrites them with the oracle.

use std::path::{Path, PathBuf};

use crate::moves::{copy_dir, fill, snapshot};
use crate::vb::{self, State};
use crate::vector::{data_dir, hex, to_hex};
use common::resp::parse_wire;
use common::{info, Flavor, Module, Reply, Server};

const ARTIFACTS: [&str; 3] = ["rdb", "aof-rewrite", "aof-propagated"];

fn files() -> PathBuf {
    data_dir().join("files")
}

fn start(flavor: Flavor, module: Module, artifact: &str) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let src = files().join(artifact);
    let mut b = Server::builder(flavor, module)
        .valkey_bloom_flavor()
        .dir(dir.path());
    if artifact == "rdb" {
        std::fs::copy(src.join("dump.rdb"), dir.path().join("dump.rdb")).unwrap();
    } else {
        copy_dir(&src, dir.path());
        b = b.aof_without_preamble();
    }
    (b.start(), dir)
}

fn write_expected(path: &Path, snap: &[(Vec<u8>, State)]) {
    let mut out = String::from(
        "# What valkey-bloom 1.0.1 answers after loading this artifact on Valkey 9.1:\n\
         # per key, the RESP bytes (hex) of BF.INFO (RESP2, RESP3), BF.CARD,\n\
         # BF.MEXISTS of the probes, DUMP and DEBUG DIGEST-VALUE.\n",
    );
    for (k, s) in snap {
        out.push_str(&format!("key {}\n", to_hex(k)));
        for (name, r) in [
            ("info2", &s.info2),
            ("info3", &s.info3),
            ("card", &s.card),
            ("exists", &s.exists),
            ("dump", &s.dump),
            ("digest", &s.digest),
        ] {
            out.push_str(&format!("{name} {}\n", to_hex(&vb::wire(r))));
        }
    }
    std::fs::write(path, out).unwrap();
}

fn read_expected(path: &Path) -> Vec<(Vec<u8>, State)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<(Vec<u8>, State)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, h) = line.split_once(' ').unwrap();
        if name == "key" {
            let empty = State {
                info2: Reply::Nil,
                info3: Reply::Nil,
                card: Reply::Nil,
                exists: Reply::Nil,
                dump: Reply::Nil,
                digest: Reply::Nil,
            };
            out.push((hex(h), empty));
            continue;
        }
        let r = parse_wire(&hex(h));
        let s = &mut out.last_mut().unwrap().1;
        match name {
            "info2" => s.info2 = r,
            "info3" => s.info3 = r,
            "card" => s.card = r,
            "exists" => s.exists = r,
            "dump" => s.dump = r,
            "digest" => s.digest = r,
            _ => panic!("{}: {name}", path.display()),
        }
    }
    out
}

/// The committed files loaded by rsbloom answer as valkey-bloom did.
#[test]
fn oracle_files_on_rsbloom() {
    let flavors = common::all_flavors();
    for artifact in ARTIFACTS {
        let want = read_expected(&files().join(format!("expected-{artifact}.txt")));
        assert_eq!(want.len(), 13, "{artifact}: keys");
        for flavor in flavors.iter().copied().filter(|f| {
            *f == Flavor::Valkey9
                || (artifact != "rdb" && matches!(f, Flavor::Valkey8 | Flavor::Redis86))
        }) {
            let (s, _dir) = start(flavor, Module::Rsbloom, artifact);
            let got = snapshot(&s);
            let keys =
                |x: &[(Vec<u8>, State)]| x.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
            assert_eq!(
                keys(&got),
                keys(&want),
                "{artifact} on {}: keys",
                flavor.name()
            );
            for ((k, g), (_, w)) in got.iter().zip(&want) {
                let at = format!(
                    "{artifact} on {}, key {}",
                    flavor.name(),
                    String::from_utf8_lossy(k)
                );
                let (mut g, mut w) = (g.clone(), w.clone());
                if flavor != Flavor::Valkey9 {
                    // Another server frames the same value with its own RDB version.
                    for d in [&mut g.dump, &mut w.dump] {
                        if let Reply::Bulk(b) = d {
                            b.truncate(b.len() - 10);
                        }
                    }
                }
                assert_eq!(g, w, "{at}");
            }
            eprintln!("files: valkey-bloom's {artifact} loaded by rsbloom on {}: {} keys as valkey-bloom answers", flavor.name(), got.len());
        }
    }
}

/// Rewrites tests/data/valkey-bloom/files with the oracle (Valkey 9.1).
#[test]
#[ignore]
fn regenerate() {
    assert!(
        vb::have_oracle(Flavor::Valkey9, "regenerating the files"),
        "no oracle"
    );
    let root = files();
    let _ = std::fs::remove_dir_all(&root);
    for a in ARTIFACTS {
        std::fs::create_dir_all(root.join(a)).unwrap();
    }
    let mut src = Server::builder(Flavor::Valkey9, Module::ValkeyBloom)
        .aof_without_preamble()
        .start();
    fill(&src);
    copy_dir(
        &src.dir().join("appendonlydir"),
        &root.join("aof-propagated/appendonlydir"),
    );
    let mut c = src.conn();
    assert!(!c.cmd(&["BGREWRITEAOF"]).is_error());
    info::wait_aof_rewrite(&mut c);
    copy_dir(
        &src.dir().join("appendonlydir"),
        &root.join("aof-rewrite/appendonlydir"),
    );
    drop(c);
    src.stop(true);
    std::fs::copy(src.dir().join("dump.rdb"), root.join("rdb/dump.rdb")).unwrap();
    for a in ARTIFACTS {
        let (s, _dir) = start(Flavor::Valkey9, Module::ValkeyBloom, a);
        write_expected(&root.join(format!("expected-{a}.txt")), &snapshot(&s));
    }
}
