//! The six valkey-bloom 1.0.1 vectors (COMPAT-VALKEY-BLOOM.md §6), replayed
//! on rsbloom with `bf.bloom-flavor valkey-bloom` and on the oracle itself
//! (which validates the test): every recorded reply (RESP2), BF.INFO in RESP2
//! and RESP3 (whole and per field), BF.CARD, BF.EXISTS/MEXISTS of the 20
//! items, MEMORY USAGE, DEBUG DIGEST-VALUE and the DUMP bytes; then the same
//! answers after RESTORE of the recorded DUMP and after BF.LOAD of the
//! recorded AOF blob; the commands again in RESP3; the propagated commands.
//!
//! Servers: Valkey 9.1 (the vectors' server: DUMP compared whole), Valkey 8.0
//! and Redis 8.6 (DUMP compared without the RDB-version/CRC footer, the
//! recorded payload re-framed for RESTORE; MEMORY USAGE as Size plus a small
//! per-key overhead, which differs per server line).

use crate::vb;
use crate::vector::{self, Vector};
use common::diff::show_args;
use common::dump::rdb_version;
use common::{all_flavors, bulk, ok, wait, Conn, Flavor, Module, Reply, Server};

#[derive(Clone, Copy, PartialEq, Debug)]
enum How {
    /// The vector's commands.
    Commands,
    /// RESTORE of the recorded DUMP.
    Restored,
    /// BF.LOAD of the recorded blob.
    Loaded,
}

/// The recorded RESP2 field reply in RESP3: doubles as `,`, null as `_`.
fn resp3_of(field: &str, r: &Reply) -> Reply {
    match r {
        Reply::Bulk(b) if field == "ERROR" || field == "TIGHTENING" => {
            Reply::Double(String::from_utf8(b.clone()).unwrap())
        }
        Reply::Nil => Reply::Null,
        other => other.clone(),
    }
}

/// A full BF.INFO reply with Size lowered by `delta`.
fn with_size_delta(info: &Reply, delta: i64) -> Reply {
    let mut a = info.as_array().to_vec();
    assert_eq!(a[2], Reply::Simple("Size".into()));
    a[3] = Reply::Int(a[3].as_int() - delta);
    Reply::Array(a)
}

/// DEBUG DIGEST-VALUE's text (Valkey and Redis answer a one-element array).
fn digest(c: &mut Conn, key: &str) -> String {
    match c.cmd(&["DEBUG", "DIGEST-VALUE", key]) {
        Reply::Array(a) if a.len() == 1 => String::from_utf8_lossy(a[0].as_bytes()).into(),
        other => String::from_utf8_lossy(other.as_bytes()).into(),
    }
}

/// Bytes of vector 1's DUMP that do not depend on the random seed: type,
/// module id, F, expansion, fp, tightening, is_seed_random, capacity,
/// num_items and the string opcode of the blob.
const RANDOM_STABLE_PREFIX: usize = 39;

struct Ctx<'a> {
    flavor: Flavor,
    who: &'a str,
    rdb_version: u16,
}

fn replay(c: &mut Conn, ctx: &Ctx, v: &Vector) {
    for (cmd, want) in &v.commands {
        let mut cmd = cmd.clone();
        if cmd[0] == "CONFIG" && cmd[1] == "SET" && !ctx.flavor.is_valkey() {
            let bare = cmd[2].strip_prefix("bf.").unwrap_or(&cmd[2]).to_string();
            cmd[2] = vb::config_name(c, &bare);
        }
        let got = c.cmd(&cmd);
        assert_eq!(
            &got,
            want,
            "{} {} on {}: `{}`",
            ctx.who,
            v.name,
            ctx.flavor.name(),
            cmd.join(" ").chars().take(120).collect::<String>()
        );
    }
}

fn check(c2: &mut Conn, c3: &mut Conn, ctx: &Ctx, v: &Vector, how: How) {
    let key = v.key.as_str();
    let stable_only = v.random_seed && how == How::Commands;
    let delta = if how == How::Loaded {
        v.load_size_delta()
    } else {
        0
    };
    let at = format!(
        "{} {} on {} after {how:?}",
        ctx.who,
        v.name,
        ctx.flavor.name()
    );

    assert_eq!(
        c2.cmd(&["BF.INFO", key]),
        with_size_delta(&v.info2, delta),
        "{at}: BF.INFO RESP2"
    );
    assert_eq!(
        c3.cmd(&["BF.INFO", key]),
        with_size_delta(&v.info3, delta),
        "{at}: BF.INFO RESP3"
    );
    for (field, want) in &v.fields {
        let want = match want {
            Reply::Int(n) if field == "SIZE" => Reply::Int(n - delta),
            other => other.clone(),
        };
        assert_eq!(
            c2.cmd(&["BF.INFO", key, field]),
            want,
            "{at}: BF.INFO {field}"
        );
        assert_eq!(
            c3.cmd(&["BF.INFO", key, field]),
            resp3_of(field, &want),
            "{at}: BF.INFO {field} RESP3"
        );
        let lower = field.to_lowercase();
        assert_eq!(
            c2.cmd(&["bf.info", key, &lower]),
            want,
            "{at}: bf.info {lower}"
        );
    }
    assert_eq!(
        c2.cmd(&["BF.CARD", key]),
        Reply::Int(v.card),
        "{at}: BF.CARD"
    );
    assert_eq!(
        c3.cmd(&["BF.CARD", key]),
        Reply::Int(v.card),
        "{at}: BF.CARD RESP3"
    );

    let mut mexists = vec!["BF.MEXISTS", key];
    mexists.extend(v.items());
    let m2 = c2.cmd(&mexists);
    let m3 = c3.cmd(&mexists);
    assert_eq!(m2, m3, "{at}: BF.MEXISTS RESP2 vs RESP3");
    for (i, (item, want)) in v.exists.iter().enumerate() {
        let got = c2.cmd(&["BF.EXISTS", key, item]);
        assert_eq!(
            c3.cmd(&["BF.EXISTS", key, item]),
            got,
            "{at}: RESP3 BF.EXISTS {item}"
        );
        assert_eq!(
            m2.as_array()[i],
            got,
            "{at}: BF.MEXISTS vs BF.EXISTS {item}"
        );
        if stable_only && *want == 0 {
            // Never added: a false positive in another run is fine (§6).
            assert!(
                matches!(got, Reply::Int(0 | 1)),
                "{at}: BF.EXISTS {item} {got:?}"
            );
        } else {
            assert_eq!(got, Reply::Int(*want), "{at}: BF.EXISTS {item}");
        }
    }

    let size = v.size() - delta;
    let mem = c2.cmd(&["MEMORY", "USAGE", key]).as_int();
    if ctx.flavor == Flavor::Valkey9 {
        assert_eq!(mem, v.memory - delta, "{at}: MEMORY USAGE");
    } else {
        // Size plus the server's per-key overhead (32 on Valkey 9.1 here).
        assert!(
            (size..=size + 128).contains(&mem),
            "{at}: MEMORY USAGE {mem} for Size {size}"
        );
    }

    let dump = c2.cmd(&["DUMP", key]);
    let dump = dump.as_bytes();
    if stable_only {
        assert_eq!(
            vector::to_hex(&dump[..RANDOM_STABLE_PREFIX]),
            vector::to_hex(&v.dump[..RANDOM_STABLE_PREFIX]),
            "{at}: DUMP fields before the blob"
        );
    } else {
        assert_eq!(digest(c2, key), v.digest, "{at}: DEBUG DIGEST-VALUE");
        if ctx.rdb_version == rdb_version(&v.dump) {
            assert_eq!(vector::to_hex(dump), vector::to_hex(&v.dump), "{at}: DUMP");
        } else {
            assert_eq!(rdb_version(dump), ctx.rdb_version, "{at}: DUMP RDB version");
            assert_eq!(
                vector::to_hex(&dump[..dump.len() - 10]),
                vector::to_hex(&v.dump[..v.dump.len() - 10]),
                "{at}: DUMP without its footer"
            );
        }
    }
}

/// Every vector on one server: commands, RESTORE, BF.LOAD.
fn run(server: &Server, who: &str, vectors: &[Vector]) {
    let (mut c2, mut c3) = (server.conn(), server.conn3());
    let ctx = Ctx {
        flavor: server.flavor(),
        who,
        rdb_version: vb::server_rdb_version(&mut c2),
    };
    for v in vectors {
        let key = v.key.as_str();
        assert_eq!(c2.cmd(&["FLUSHALL"]), ok());
        replay(&mut c2, &ctx, v);
        check(&mut c2, &mut c3, &ctx, v, How::Commands);

        assert_eq!(c2.cmd(&["FLUSHALL"]), ok());
        let payload = vb::reframe(&v.dump, ctx.rdb_version);
        let r = c2.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &payload]);
        assert_eq!(
            r,
            ok(),
            "{who} {} on {}: RESTORE",
            v.name,
            ctx.flavor.name()
        );
        check(&mut c2, &mut c3, &ctx, v, How::Restored);

        assert_eq!(c2.cmd(&["FLUSHALL"]), ok());
        let r = c2.cmd(&[b"BF.LOAD".as_slice(), key.as_bytes(), &v.blob]);
        assert_eq!(
            r,
            ok(),
            "{who} {} on {}: BF.LOAD",
            v.name,
            ctx.flavor.name()
        );
        check(&mut c2, &mut c3, &ctx, v, How::Loaded);
        // BF.LOAD on an existing key, in both protocols.
        let busy = Reply::Error("BUSYKEY Target key name already exists.".into());
        let args = [b"BF.LOAD".as_slice(), key.as_bytes(), &v.blob];
        assert_eq!(c2.cmd(&args), busy);
        assert_eq!(c3.cmd(&args), busy);

        // The commands in RESP3: valkey-bloom's replies to them are the
        // same bytes (integers, arrays, errors; §0).
        assert_eq!(c2.cmd(&["FLUSHALL"]), ok());
        replay(&mut c3, &ctx, v);
        assert_eq!(c3.cmd(&["BF.CARD", key]), Reply::Int(v.card));
    }
    assert_eq!(c2.cmd(&["PING"]), Reply::Simple("PONG".into()));
    eprintln!(
        "vectors: {who} on {}: {} vectors replayed, restored and BF.LOADed, every recorded answer identical",
        ctx.flavor.name(),
        vectors.len()
    );
}

/// Valkey 9.1, Valkey 8.0 and Redis 8.6, as far as the matrix has them.
fn vector_flavors() -> Vec<Flavor> {
    all_flavors()
        .into_iter()
        .filter(|f| matches!(f, Flavor::Valkey9 | Flavor::Valkey8 | Flavor::Redis86))
        .collect()
}

#[test]
fn vectors_on_rsbloom() {
    let vectors = vector::all();
    for flavor in vector_flavors() {
        let s = vb::rsbloom(flavor);
        run(&s, "rsbloom", &vectors);
        // Vector 5 with the fixed seed set at start-up (the vector's own
        // CONFIG SETs then only repeat it).
        let name = format!("--{}", flavor.config_name("bloom-use-random-seed"));
        let name = if flavor.is_valkey() {
            name
        } else {
            // Redis: the config is named as on Valkey unless rsbloom registers
            // it unprefixed; the running server tells.
            format!(
                "--{}",
                vb::config_name(&mut s.conn(), "bloom-use-random-seed")
            )
        };
        drop(s);
        let s = Server::builder(flavor, Module::Rsbloom)
            .valkey_bloom_flavor()
            .arg(&name)
            .arg("no")
            .start();
        let fixed = vector::load("5-fixed-seed");
        let got = s.conn().cmd(&["CONFIG", "GET", &name[2..]]);
        assert_eq!(
            got.as_array().get(1),
            Some(&bulk("no")),
            "{name} no at start-up"
        );
        run(
            &s,
            "rsbloom (random seed off at start-up)",
            std::slice::from_ref(&fixed),
        );
    }
}

/// The same checks against valkey-bloom itself: they must pass there, or
/// the test (not rsbloom) is wrong.
#[test]
fn vectors_on_the_oracle() {
    let vectors = vector::all();
    for flavor in vector_flavors().into_iter().filter(|f| f.is_valkey()) {
        if !vb::have_oracle(flavor, "the vector replay on the oracle") {
            continue;
        }
        let s = Server::start(flavor, Module::ValkeyBloom);
        run(&s, "oracle", &vectors);
    }
}

/// The recorded files parse as expected (no server needed).
#[test]
fn vector_files() {
    let vs = vector::all();
    let summary: Vec<(String, usize, i64, usize)> = vs
        .iter()
        .map(|v| (v.key.clone(), v.filters(), v.card, v.dump.len()))
        .collect();
    assert_eq!(
        summary,
        [
            ("vb:default".to_string(), 1, 7, 192),
            ("vb:scaled".to_string(), 3, 30, 247),
            ("vb:nonscaling".to_string(), 1, 10, 114),
            ("vb:seeded".to_string(), 3, 28, 300),
            ("vb:fixed".to_string(), 1, 7, 186),
            ("vb:large".to_string(), 1, 1000, 34039),
        ]
    );
    assert_eq!(vs[5].blob.len(), 179_819);
    assert_eq!(vs[1].load_size_delta(), 8);
    assert!(vs[0].random_seed && !vs[4].random_seed);
}

/// The commands of an AOF file's RESP arrays, in order.
fn aof_commands(mut b: &[u8]) -> Vec<Vec<Vec<u8>>> {
    fn line<'a>(b: &mut &'a [u8]) -> &'a [u8] {
        let i = b.windows(2).position(|w| w == b"\r\n").expect("CRLF");
        let l = &b[..i];
        *b = &b[i + 2..];
        l
    }
    let num = |l: &[u8]| -> usize { std::str::from_utf8(&l[1..]).unwrap().parse().unwrap() };
    let mut out = Vec::new();
    while !b.is_empty() {
        let head = line(&mut b);
        assert_eq!(head[0], b'*', "AOF: {:?}", String::from_utf8_lossy(head));
        let n = num(head);
        let mut cmd = Vec::new();
        for _ in 0..n {
            let len = num(line(&mut b));
            cmd.push(b[..len].to_vec());
            b = &b[len + 2..];
        }
        out.push(cmd);
    }
    out
}

/// Every incremental AOF file of the server's directory, concatenated.
fn incr_aof(s: &Server) -> Vec<u8> {
    let mut files: Vec<_> = std::fs::read_dir(s.dir().join("appendonlydir"))
        .expect("appendonlydir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect()
}

/// What rsbloom propagates for a vector: what valkey-bloom recorded, except
/// that a command whose reply ends in an error goes out truncated after
/// the items answered before it (COMPAT-VALKEY-BLOOM.md §8, "partial adds
/// replicate in full": rsbloom's deliberate departure), and vector 1's
/// random SEED, which is masked on both sides.
fn expected_propagation(v: &Vector) -> Vec<Vec<Vec<u8>>> {
    v.propagated
        .iter()
        .map(|p| {
            let sent = v.commands.iter().find(|(c, _)| {
                c.iter()
                    .map(|w| w.as_bytes())
                    .eq(p.iter().map(Vec::as_slice))
            });
            match sent {
                Some((_, Reply::Array(a))) if a.last().is_some_and(Reply::is_error) => {
                    let first_item = if p[0].eq_ignore_ascii_case(b"BF.INSERT") {
                        p.iter()
                            .position(|w| w.eq_ignore_ascii_case(b"ITEMS"))
                            .unwrap()
                            + 1
                    } else {
                        2
                    };
                    p[..first_item + a.len() - 1].to_vec()
                }
                _ => p.clone(),
            }
        })
        .map(mask_seed)
        .collect()
}

fn mask_seed(mut c: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    if let Some(i) = c.iter().position(|w| w == b"SEED") {
        assert_eq!(c[i + 1].len(), 32, "SEED argument");
        c[i + 1] = b"<seed>".to_vec();
    }
    c
}

/// The commands a server propagated to its AOF for the vectors, against the
/// recording: `departures` applies rsbloom's §8 departures to it.
fn propagation(s: &Server, who: &str, vectors: &[Vector], departures: bool) {
    let flavor = s.flavor();
    let mut c = s.conn();
    for v in vectors {
        replay(
            &mut c,
            &Ctx {
                flavor,
                who,
                rdb_version: 0,
            },
            v,
        );
    }
    let want: usize = vectors.iter().map(|v| v.propagated.len()).sum();
    let bf = || -> Vec<Vec<Vec<u8>>> {
        aof_commands(&incr_aof(s))
            .into_iter()
            .filter(|c| c[0].len() > 3 && c[0][..3].eq_ignore_ascii_case(b"BF."))
            .collect()
    };
    let all = wait::until("the AOF to hold the vectors' commands", wait::STATE, || {
        let all = bf();
        if all.len() >= want {
            Ok(all)
        } else {
            Err(format!("{} of {want} BF commands", all.len()))
        }
    });
    let show = |x: &[Vec<Vec<u8>>]| {
        x.iter()
            .map(|c| show_args(c))
            .collect::<Vec<_>>()
            .join("\n    ")
    };
    for v in vectors {
        let got: Vec<Vec<Vec<u8>>> = all
            .iter()
            .filter(|c| c[1] == v.key.as_bytes())
            .cloned()
            .map(mask_seed)
            .collect();
        let want = if departures {
            expected_propagation(v)
        } else {
            v.propagated.iter().cloned().map(mask_seed).collect()
        };
        assert!(
            got == want,
            "{who} {} on {}: propagated\n    {}\nexpected\n    {}",
            v.name,
            flavor.name(),
            show(&got),
            show(&want)
        );
    }
    eprintln!(
        "vectors: {who} on {}: the propagated commands of the {} vectors as recorded{}",
        flavor.name(),
        vectors.len(),
        if departures {
            " (§8 departures applied)"
        } else {
            ""
        }
    );
}

fn aof_server(flavor: Flavor, module: Module) -> Server {
    Server::builder(flavor, module)
        .valkey_bloom_flavor()
        .aof_without_preamble()
        .start()
}

/// The commands rsbloom propagates to the AOF (and so to replicas) for the
/// vectors: valkey-bloom's BF.INSERT creation forms (CAPACITY, ERROR,
/// TIGHTENING, SEED, EXPANSION or NONSCALING, ITEMS) and the adds verbatim,
/// byte for byte, with the departures of §8.
#[test]
fn vectors_propagation() {
    let vectors = vector::all();
    for flavor in vector_flavors() {
        propagation(
            &aof_server(flavor, Module::Rsbloom),
            "rsbloom",
            &vectors,
            true,
        );
    }
    // The oracle propagates exactly what was recorded.
    for flavor in vector_flavors().into_iter().filter(|f| f.is_valkey()) {
        if vb::have_oracle(flavor, "the oracle's propagation of the vectors") {
            propagation(
                &aof_server(flavor, Module::ValkeyBloom),
                "oracle",
                &vectors,
                false,
            );
        }
    }
    // The departure changes vector 3's full MADD only: 10 items of 12.
    let v3 = &vectors[2];
    assert_eq!(expected_propagation(v3)[1].len(), 2 + 10);
    assert_eq!(v3.propagated[1].len(), 2 + 12);
}

/// Under the default flavour (`bf.bloom-flavor redisbloom`) a key's own type
/// decides: the vectors' values RESTOREd (and BF.LOADed) there answer as
/// valkey-bloom's, RESP3 adds included (integers, not RedisBloom's booleans).
#[test]
fn vectors_under_the_redisbloom_flavour() {
    let vectors = vector::all();
    for flavor in vector_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let (mut c2, mut c3) = (s.conn(), s.conn3());
        let ctx = Ctx {
            flavor,
            who: "rsbloom (redisbloom flavour)",
            rdb_version: vb::server_rdb_version(&mut c2),
        };
        for v in &vectors {
            let key = v.key.as_str();
            assert_eq!(c2.cmd(&["FLUSHALL"]), ok());
            let payload = vb::reframe(&v.dump, ctx.rdb_version);
            let r = c2.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &payload]);
            assert_eq!(r, ok(), "{} on {}: RESTORE", v.name, flavor.name());
            assert_eq!(c2.cmd(&["TYPE", key]), Reply::Simple("bloomfltr".into()));
            check(&mut c2, &mut c3, &ctx, v, How::Restored);
            let r = c3.cmd(&["BF.MADD", key, "a new item", v.exists[0].0.as_str()]);
            let want = if v.name.starts_with("3-") {
                // Full and non-scaling: the new item is refused, and the
                // error ends the reply (§2.1).
                Reply::Array(vec![Reply::Error("ERR non scaling filter is full".into())])
            } else {
                Reply::Array(vec![Reply::Int(1), Reply::Int(0)])
            };
            assert_eq!(r, want, "{} on {}: RESP3 BF.MADD", v.name, flavor.name());
        }
        eprintln!(
            "vectors: the 6 RESTOREd under the redisbloom flavour on {}",
            flavor.name()
        );
    }
}
