//! Corrupt RESTORE payloads and LOADCHUNK sequences against a live server.
//!
//! Cases are derived deterministically (seeded) from genuine DUMP payloads and
//! SCANDUMP streams of both filter types: truncations, bit flips, fields set
//! to 0, 1, 2, 2^32, 2^63, u64::MAX and neighbours, lying string lengths,
//! swapped module ids, and the crafted values of docs/differences.md §1 items 2-5 and
//! 9-12. Every case must answer an error, or produce a filter that then
//! works (ADD/EXISTS/INFO/DEBUG, and SCANDUMP+LOADCHUNK reproduces it); the
//! server must stay up and the bystander keys (a string, a Bloom filter, a
//! Cuckoo filter) must keep their exact DUMP bytes.
use common::dump::{self, Prim, BF_MODULE_ID, CF_MODULE_ID};
use common::*;

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const SPECIAL_U: [u64; 14] = [
    0,
    1,
    2,
    3,
    255,
    65535,
    65536,
    (1 << 32) - 1,
    1 << 32,
    (1 << 56) - 1,
    1 << 56,
    1 << 63,
    u64::MAX - 1,
    u64::MAX,
];
const SPECIAL_D: [f64; 10] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    5e-324,
    1e-300,
    1e8,
    f64::INFINITY,
    f64::NAN,
];

/// A genuine filter: its DUMP payload and its SCANDUMP stream.
struct Source {
    bloom: bool,
    payload: Vec<u8>,
    header: Vec<u8>,
    chunks: Vec<(i64, Vec<u8>)>,
}

enum Case {
    Restore(Vec<u8>),
    /// A LOADCHUNK header, then data chunks.
    Load {
        bloom: bool,
        header: Vec<u8>,
        chunks: Vec<(i64, Vec<u8>)>,
    },
}

/// A server whose DUMP payloads the mutators can parse.
fn uncompressed_server(flavor: Flavor) -> Server {
    Server::builder(flavor, Module::Rsbloom)
        .uncompressed_rdb()
        .start()
}

/// The header and the data chunks of a full SCANDUMP (end marker unchecked).
fn scandump(c: &mut Conn, fam: Fam, key: &str) -> (Vec<u8>, Vec<(i64, Vec<u8>)>) {
    let cmd = fam.cmd("SCANDUMP");
    let mut chunks = filters::scandump_with_end(c, fam, key).0;
    assert_eq!(
        chunks.first().map(|h| h.0),
        Some(1),
        "{cmd} {key} 0: header"
    );
    let (_, header) = chunks.remove(0);
    assert!(chunks.len() < 100_000, "{cmd} does not end");
    (header, chunks)
}

fn genuine_sources(c: &mut Conn) -> Vec<Source> {
    let items = |n: usize| (0..n).map(|i| format!("i{i}")).collect::<Vec<_>>();
    let setups: Vec<(bool, Vec<Vec<String>>)> = vec![
        (
            true,
            vec![vec![
                "BF.RESERVE".into(),
                "g".into(),
                "0.01".into(),
                "10".into(),
            ]],
        ),
        (
            true,
            vec![vec![
                "BF.RESERVE".into(),
                "g".into(),
                "0.1".into(),
                "4".into(),
                "EXPANSION".into(),
                "3".into(),
            ]],
        ),
        (
            true,
            vec![vec![
                "BF.RESERVE".into(),
                "g".into(),
                "0.001".into(),
                "50".into(),
                "NONSCALING".into(),
            ]],
        ),
        (true, vec![]),
        (
            false,
            vec![vec![
                "CF.RESERVE".into(),
                "g".into(),
                "8".into(),
                "EXPANSION".into(),
                "2".into(),
            ]],
        ),
        (
            false,
            vec![vec![
                "CF.RESERVE".into(),
                "g".into(),
                "100".into(),
                "BUCKETSIZE".into(),
                "4".into(),
            ]],
        ),
        (
            false,
            vec![vec![
                "CF.RESERVE".into(),
                "g".into(),
                "4".into(),
                "BUCKETSIZE".into(),
                "1".into(),
                "MAXITERATIONS".into(),
                "5".into(),
            ]],
        ),
        (
            false,
            vec![vec!["CF.RESERVE".into(), "g".into(), "1000".into()]],
        ),
    ];
    let mut out = Vec::new();
    for (k, (bloom, setup)) in setups.into_iter().enumerate() {
        for cmd in setup {
            assert_eq!(c.cmd(&cmd), ok(), "{cmd:?}");
        }
        let n = [60, 20, 10, 5, 40, 30, 10, 1][k];
        let mut madd = vec![
            if bloom { "BF.MADD" } else { "CF.INSERT" }.to_string(),
            "g".into(),
        ];
        if !bloom {
            madd.push("ITEMS".into());
        }
        madd.extend(items(n));
        let r = c.cmd(&madd);
        assert!(!r.is_error(), "{r:?}");
        if !bloom && n > 1 {
            assert_eq!(c.cmd(&["CF.DEL", "g", "i0"]), int(1));
        }
        let payload = c.cmd(&["DUMP", "g"]).as_bytes().to_vec();
        let (header, chunks) = scandump(c, if bloom { Fam::Bf } else { Fam::Cf }, "g");
        assert_eq!(c.cmd(&["DEL", "g"]), int(1));
        out.push(Source {
            bloom,
            payload,
            header,
            chunks,
        });
    }
    out
}

/// Module value body with the `k`-th string primitive's length replaced by
/// `len` (the bytes that follow are the real ones).
fn lying_string_length(id: u64, prims: &[Prim], k: usize, len: u64) -> Vec<u8> {
    let mut body = dump::module_value(id, &prims[..k]);
    body.pop(); // EOF opcode
    body.push(5);
    dump::rdb_len(&mut body, len);
    if let Prim::S(s) = &prims[k] {
        body.extend_from_slice(s);
    }
    let rest = dump::module_value(id, &prims[k + 1..]);
    // Skip the type byte and module id of the second encoding.
    let mut skip = vec![7u8];
    dump::rdb_len(&mut skip, id);
    body.extend_from_slice(&rest[skip.len()..]);
    body
}

fn special_u(rng: &mut SmallRng, v: u64) -> u64 {
    match rng.gen_range(0..4) {
        0 => v.wrapping_add(1),
        1 => v.wrapping_sub(1),
        2 => v.wrapping_mul(2),
        _ => SPECIAL_U[rng.gen_range(0..SPECIAL_U.len())],
    }
}

fn random_bytes(rng: &mut SmallRng, n: usize) -> Vec<u8> {
    (0..n)
        .map(|_| if rng.gen_bool(0.5) { 0 } else { rng.gen() })
        .collect()
}

/// `body` cut short, with a valid footer.
fn truncated(rng: &mut SmallRng, body: &[u8], ver: u16) -> Vec<u8> {
    dump::with_footer(&body[..rng.gen_range(0..body.len())], ver)
}

/// `body` with 1 to 4 bits flipped from byte `from` on, with a valid footer.
fn flipped(rng: &mut SmallRng, body: &[u8], from: usize, ver: u16) -> Vec<u8> {
    let mut b = body.to_vec();
    for _ in 0..rng.gen_range(1..=4) {
        let i = rng.gen_range(from..b.len());
        b[i] ^= 1 << rng.gen_range(0..8);
    }
    dump::with_footer(&b, ver)
}

/// One mutated RESTORE payload of `src`.
fn mutate_payload(rng: &mut SmallRng, src: &Source) -> Vec<u8> {
    let (id, mut prims) = dump::parse(&src.payload);
    let ver = dump::rdb_version(&src.payload);
    let body = dump::module_value(id, &prims);
    match rng.gen_range(0..10) {
        0 => truncated(rng, &body, ver),
        1 => flipped(rng, &body, 0, ver),
        2 | 3 => {
            // Up to three unsigned fields set to special values.
            for _ in 0..rng.gen_range(1..=3) {
                let us: Vec<usize> = (0..prims.len())
                    .filter(|&i| matches!(prims[i], Prim::U(_)))
                    .collect();
                let i = us[rng.gen_range(0..us.len())];
                if let Prim::U(v) = prims[i] {
                    prims[i] = Prim::U(special_u(rng, v));
                }
            }
            dump::payload(id, &prims, ver)
        }
        4 => {
            let ds: Vec<usize> = (0..prims.len())
                .filter(|&i| matches!(prims[i], Prim::D(_)))
                .collect();
            if ds.is_empty() {
                return dump::payload(id, &prims[..prims.len() - 1], ver);
            }
            let i = ds[rng.gen_range(0..ds.len())];
            prims[i] = Prim::D(SPECIAL_D[rng.gen_range(0..SPECIAL_D.len())]);
            dump::payload(id, &prims, ver)
        }
        5 => {
            let ss: Vec<usize> = (0..prims.len())
                .filter(|&i| matches!(prims[i], Prim::S(_)))
                .collect();
            let i = ss[rng.gen_range(0..ss.len())];
            if let Prim::S(s) = &mut prims[i] {
                match rng.gen_range(0..4) {
                    0 => s.truncate(rng.gen_range(0..s.len().max(1))),
                    1 => {
                        let n = rng.gen_range(1..64);
                        s.extend(random_bytes(rng, n))
                    }
                    2 => s.clear(),
                    _ => *s = random_bytes(rng, s.len()),
                }
            }
            dump::payload(id, &prims, ver)
        }
        6 => {
            let i = rng.gen_range(0..prims.len());
            if rng.gen_bool(0.5) {
                prims.remove(i);
            } else {
                let p = match rng.gen_range(0..3) {
                    0 => Prim::U(SPECIAL_U[rng.gen_range(0..SPECIAL_U.len())]),
                    1 => Prim::D(0.01),
                    _ => Prim::S(random_bytes(rng, 8)),
                };
                prims.insert(i, p);
            }
            dump::payload(id, &prims, ver)
        }
        7 => {
            // Type confusion: the other type's module id.
            let other = if id == BF_MODULE_ID {
                CF_MODULE_ID
            } else {
                BF_MODULE_ID
            };
            dump::payload(other, &prims, ver)
        }
        8 => {
            let ss: Vec<usize> = (0..prims.len())
                .filter(|&i| matches!(prims[i], Prim::S(_)))
                .collect();
            let k = ss[rng.gen_range(0..ss.len())];
            let real = match &prims[k] {
                Prim::S(s) => s.len() as u64,
                _ => 0,
            };
            let len = [
                real + 1,
                real.saturating_sub(1),
                1 << 32,
                1 << 40,
                1 << 62,
                u64::MAX,
            ][rng.gen_range(0..6)];
            dump::with_footer(&lying_string_length(id, &prims, k, len), ver)
        }
        _ => {
            // Wrong checksum.
            let mut p = src.payload.clone();
            let i = rng.gen_range(0..p.len() - 8);
            p[i] ^= 0x10;
            p
        }
    }
}

/// The crafted RDB values of docs/differences.md §1 (and neighbours) as payloads.
fn crafted_payloads(sources: &[Source]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let cf = sources.iter().find(|s| !s.bloom).unwrap();
    let (_, cfp) = dump::parse(&cf.payload);
    let ver = dump::rdb_version(&cf.payload);
    let set = |prims: &[Prim], i: usize, v: u64| {
        let mut p = prims.to_vec();
        p[i] = Prim::U(v);
        dump::payload(CF_MODULE_ID, &p, ver)
    };
    // Item 3: bucket size 0, non-power-of-two and zero bucket counts,
    // zero filters, non-power-of-two expansion (item 5), expansion 0 with
    // more than one sub-filter (item 4), 16-bit overflow of the fields.
    for (i, v) in [
        (4, 0),
        (4, 65536 + 2),
        (1, 6),
        (1, 0),
        (0, 0),
        (0, 65536 + 2),
        (6, 3),
        (6, 0),
        (5, 0),
        (7, 3),
        (7, 1 << 56),
    ] {
        out.push(set(&cfp, i, v));
    }
    // Item 2: a sub-filter buffer one byte short / long.
    for delta in [-1i64, 1] {
        let mut p = cfp.clone();
        if let Prim::S(s) = &mut p[8] {
            if delta < 0 {
                s.pop();
            } else {
                s.push(0);
            }
        }
        out.push(dump::payload(CF_MODULE_ID, &p, ver));
    }
    // Bloom: n2 > 63 (item 10), bpe / hashes unbounded (item 11), zero and
    // huge link counts, bits not matching the buffer (item 12).
    let bf = sources.iter().find(|s| s.bloom).unwrap();
    let (_, bfp) = dump::parse(&bf.payload);
    let ver = dump::rdb_version(&bf.payload);
    let with = |edits: &[(usize, Prim)]| {
        let mut p = bfp.clone();
        for (i, v) in edits {
            p[*i] = v.clone();
        }
        dump::payload(BF_MODULE_ID, &p, ver)
    };
    out.push(with(&[(9, Prim::U(64))]));
    out.push(with(&[(9, Prim::U(255))]));
    out.push(with(&[(7, Prim::D(1e8)), (6, Prim::U(69314719))]));
    out.push(with(&[(7, Prim::D(3e9)), (6, Prim::U(2079441541))]));
    out.push(with(&[(1, Prim::U(0))]));
    out.push(with(&[(1, Prim::U(1 << 40))]));
    out.push(with(&[(8, Prim::U(1 << 50))]));
    out.push(with(&[(8, Prim::U(0))]));
    out.push(with(&[(5, Prim::D(0.0))]));
    out.push(with(&[(5, Prim::D(f64::NAN))]));
    out
}

/// A mutated LOADCHUNK sequence of `src`.
fn mutate_load(rng: &mut SmallRng, src: &Source) -> Case {
    let mut header = src.header.clone();
    let fields: &[(usize, usize)] = if src.bloom {
        // size, n, options, growth, then link 0: bytes, bits, size, error,
        // bpe, hashes, entries, n2.
        &[
            (0, 8),
            (8, 4),
            (12, 4),
            (16, 4),
            (20, 8),
            (28, 8),
            (36, 8),
            (44, 8),
            (52, 8),
            (60, 4),
            (64, 8),
            (72, 1),
        ]
    } else {
        &[(0, 8), (8, 8), (16, 8), (24, 8), (32, 2), (34, 2), (36, 2)]
    };
    match rng.gen_range(0..5) {
        0 => {} // genuine header, mutated chunks
        1 => {
            for _ in 0..rng.gen_range(1..=3) {
                let i = rng.gen_range(0..header.len());
                header[i] ^= 1 << rng.gen_range(0..8);
            }
        }
        2 | 3 => {
            let (at, w) = fields[rng.gen_range(0..fields.len())];
            let v = special_u(rng, 0).to_le_bytes();
            if at + w <= header.len() {
                header[at..at + w].copy_from_slice(&v[..w]);
            }
        }
        _ => {
            if rng.gen_bool(0.5) {
                header.truncate(rng.gen_range(0..header.len()));
            } else {
                let n = rng.gen_range(1..60);
                header.extend(random_bytes(rng, n));
            }
        }
    }
    let mut chunks = Vec::new();
    for (it, data) in &src.chunks {
        let (mut it, mut data) = (*it, data.clone());
        match rng.gen_range(0..8) {
            0 => it += rng.gen_range(-3..=3),
            1 => data.truncate(rng.gen_range(0..=data.len())),
            2 => {
                let n = rng.gen_range(1..9);
                data.extend(random_bytes(rng, n))
            }
            3 => it = SPECIAL_U[rng.gen_range(0..SPECIAL_U.len())] as i64,
            4 => continue,
            5 if !data.is_empty() => {
                let i = rng.gen_range(0..data.len());
                data[i] = rng.gen();
            }
            _ => {}
        }
        chunks.push((it, data));
    }
    if rng.gen_bool(0.2) {
        chunks.reverse();
    }
    Case::Load {
        bloom: src.bloom,
        header,
        chunks,
    }
}

/// Checks that `key` holds a working filter; Err describes what failed.
/// Filters up to this size are copied through SCANDUMP/LOADCHUNK.
const COPY_LIMIT: i64 = 256 << 20;

fn check_filter(c: &mut Conn, key: &str) -> Result<&'static str, String> {
    let t = c.cmd(&["TYPE", key]);
    let bloom = match t.as_bytes() {
        b"MBbloom--" => true,
        b"MBbloomCF" => false,
        _ => return Err(format!("TYPE {t:?}")),
    };
    let p = if bloom { "BF" } else { "CF" };
    let info = c.cmd(&[&format!("{p}.INFO"), key]);
    let want = if bloom { 10 } else { 16 };
    if !matches!(&info, Reply::Array(a) if a.len() == want) {
        return Err(format!("{p}.INFO {info:?}"));
    }
    let dbg = c.cmd(&[&format!("{p}.DEBUG"), key]);
    if dbg.is_error() {
        return Err(format!("{p}.DEBUG {dbg:?}"));
    }
    let added = c.cmd(&[&format!("{p}.ADD"), key, "probe-item"]);
    let allowed: &[&str] = if bloom {
        &[
            "ERR problem inserting into filter",
            "ERR non scaling filter is full",
        ]
    } else {
        &[
            "Filter is full",
            "ERR Insufficient memory",
            "Maximum expansions reached",
        ]
    };
    match &added {
        Reply::Int(0) | Reply::Int(1) => {
            let e = c.cmd(&[&format!("{p}.EXISTS"), key, "probe-item"]);
            if e != int(1) {
                return Err(format!("{p}.EXISTS after ADD {added:?}: {e:?}"));
            }
        }
        Reply::Error(e) if allowed.contains(&e.as_str()) => {}
        other => return Err(format!("{p}.ADD {other:?}")),
    }
    if !bloom {
        let n = c.cmd(&["CF.COUNT", key, "probe-item"]);
        if !matches!(n, Reply::Int(_)) {
            return Err(format!("CF.COUNT {n:?}"));
        }
    }
    // A crafted header can make the ADD above grow the filter by gigabytes
    // (lazily zeroed pages); copying that through the test's own memory
    // would take three times as much of a 24 GiB CI machine, and the copy
    // of large filters is covered by the persistence tests.
    let size = c.cmd(&["MEMORY", "USAGE", key]);
    if !matches!(size, Reply::Int(n) if n <= COPY_LIMIT) {
        return Ok(if bloom {
            "bloom (large)"
        } else {
            "cuckoo (large)"
        });
    }
    // SCANDUMP + LOADCHUNK must reproduce the filter (when its header is one
    // LOADCHUNK accepts; RDB-loaded values may carry fields it refuses).
    let cmd = format!("{p}.SCANDUMP");
    let first = c.cmd(&[&cmd, key, "0"]);
    let a = first.as_array();
    if a[0] == int(0) {
        return Ok(if bloom { "bloom" } else { "cuckoo-empty" });
    }
    let (header, chunks) = scandump(c, if bloom { Fam::Bf } else { Fam::Cf }, key);
    let load = format!("{p}.LOADCHUNK");
    let r = c.cmd(&args![&load, "copy", "1", &header]);
    if r == ok() {
        for (it, data) in &chunks {
            let r = c.cmd(&args![&load, "copy", it.to_string(), data]);
            if r != ok() {
                return Err(format!("replaying own chunk at {it}: {r:?}"));
            }
        }
        let (a, b) = (c.cmd(&["DUMP", key]), c.cmd(&["DUMP", "copy"]));
        if a != b {
            return Err("SCANDUMP/LOADCHUNK copy differs".into());
        }
        c.cmd(&["DEL", "copy"]);
    } else if !r.is_error() {
        return Err(format!("{load} of own header: {r:?}"));
    }
    Ok(if bloom { "bloom" } else { "cuckoo" })
}

fn run_case(c: &mut Conn, case: &Case, tally: &mut BTreeMap<String, usize>) -> Result<(), String> {
    c.cmd(&["DEL", "victim", "copy"]);
    match case {
        Case::Restore(payload) => {
            let r = c.cmd(&args!["RESTORE", "victim", "0", payload]);
            match r {
                Reply::Simple(s) if s == "OK" => {
                    let kind = check_filter(c, "victim")?;
                    *tally.entry(format!("restored {kind}")).or_default() += 1;
                }
                Reply::Error(e) => {
                    if c.cmd(&["EXISTS", "victim"]) != int(0) {
                        return Err(format!("failed RESTORE left a key: {e}"));
                    }
                    *tally.entry(format!("RESTORE: {e}")).or_default() += 1;
                }
                other => return Err(format!("RESTORE replied {other:?}")),
            }
        }
        Case::Load {
            bloom,
            header,
            chunks,
        } => {
            let p = if *bloom { "BF" } else { "CF" };
            let load = format!("{p}.LOADCHUNK");
            let r = c.cmd(&args![&load, "victim", "1", header]);
            match &r {
                Reply::Simple(s) if s == "OK" => {}
                Reply::Error(e) => {
                    let expected: &[&str] = if *bloom {
                        &["ERR received bad data"]
                    } else {
                        &["Invalid header", "Couldn't create filter!"]
                    };
                    if !expected.contains(&e.as_str()) {
                        return Err(format!("{load} header: {e}"));
                    }
                    if c.cmd(&["EXISTS", "victim"]) != int(0) {
                        return Err("rejected header left a key".into());
                    }
                    *tally.entry(format!("{load} header: {e}")).or_default() += 1;
                    return Ok(());
                }
                other => return Err(format!("{load} header replied {other:?}")),
            }
            for (it, data) in chunks {
                let r = c.cmd(&args![&load, "victim", it.to_string(), data]);
                let expected: &[&str] = if *bloom {
                    &[
                        "ERR received bad data",
                        "ERR invalid offset - no link found",
                        "ERR invalid chunk - Too big for current filter",
                    ]
                } else {
                    &[
                        "Couldn't load chunk!",
                        "Invalid position",
                        "ERR item exists",
                    ]
                };
                match &r {
                    Reply::Simple(s) if s == "OK" => {}
                    Reply::Error(e) if expected.contains(&e.as_str()) => {
                        *tally.entry(format!("{load} chunk: {e}")).or_default() += 1;
                    }
                    other => return Err(format!("{load} chunk at {it}: {other:?}")),
                }
            }
            let kind = check_filter(c, "victim")?;
            *tally.entry(format!("loaded {kind}")).or_default() += 1;
        }
    }
    Ok(())
}

fn cases(sources: &[Source], seed: u64) -> Vec<Case> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out: Vec<Case> = crafted_payloads(sources)
        .into_iter()
        .map(Case::Restore)
        .collect();
    for src in sources {
        // Genuine ones first: they must restore and load.
        out.push(Case::Restore(src.payload.clone()));
        for _ in 0..100 {
            out.push(Case::Restore(mutate_payload(&mut rng, src)));
        }
        for _ in 0..40 {
            out.push(mutate_load(&mut rng, src));
        }
    }
    out
}

#[test]
fn corrupt_restore_payloads_and_loadchunk_sequences_are_contained() {
    for flavor in flavors() {
        let s = uncompressed_server(flavor);
        let mut c = s.conn();
        let sources = genuine_sources(&mut c);
        // Bystanders.
        assert_eq!(c.cmd(&["SET", "str", "bystander"]), ok());
        assert_eq!(c.cmd(&["BF.RESERVE", "bf0", "0.01", "10"]), ok());
        assert!(!c.cmd(&["BF.MADD", "bf0", "a", "b", "c"]).is_error());
        assert_eq!(c.cmd(&["CF.RESERVE", "cf0", "8", "EXPANSION", "2"]), ok());
        assert!(!c
            .cmd(&["CF.INSERT", "cf0", "ITEMS", "a", "b", "c", "d", "e"])
            .is_error());
        let bystanders = dumps(&mut c, &["str", "bf0", "cf0"]);
        let all = cases(&sources, 0xc0ff_ee00 + flavor as u64);
        assert!(all.len() >= 1000, "only {} cases", all.len());
        let mut tally = BTreeMap::new();
        for (n, case) in all.iter().enumerate() {
            if let Err(e) = run_case(&mut c, case, &mut tally) {
                let what = match case {
                    Case::Restore(p) => format!("RESTORE payload {p:02x?}"),
                    Case::Load { header, chunks, .. } => {
                        format!("LOADCHUNK header {header:02x?} + {} chunks", chunks.len())
                    }
                };
                panic!("{flavor:?} case {n}: {e}\n{what}");
            }
            assert_eq!(c.cmd(&["PING"]), Reply::Simple("PONG".into()), "case {n}");
            if n % 50 == 0 {
                assert_unchanged(&mut c, &bystanders, &format!(" by case {n}"));
            }
        }
        assert_unchanged(&mut c, &bystanders, "");
        assert_eq!(c.cmd(&["BF.EXISTS", "bf0", "b"]), int(1));
        assert_eq!(c.cmd(&["CF.EXISTS", "cf0", "e"]), int(1));
        // The generator really exercised both outcomes on both types.
        let count = |prefix: &str| -> usize {
            tally
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(_, v)| v)
                .sum()
        };
        eprintln!("{flavor:?}: {} cases: {tally:#?}", all.len());
        assert!(count("restored bloom") >= 20, "{tally:?}");
        assert!(count("restored cuckoo") >= 20, "{tally:?}");
        assert!(count("RESTORE: ") >= 300, "{tally:?}");
        assert!(count("loaded") >= 40, "{tally:?}");
        assert!(count("BF.LOADCHUNK header") >= 10, "{tally:?}");
        assert!(count("CF.LOADCHUNK header") >= 10, "{tally:?}");
        assert!(count("BF.LOADCHUNK chunk") >= 10, "{tally:?}");
        assert!(count("CF.LOADCHUNK chunk") >= 10, "{tally:?}");
    }
}

/// The DUMP of each bystander key, to compare after the cases.
fn dumps<'a>(c: &mut Conn, keys: &[&'a str]) -> Vec<(&'a str, Reply)> {
    keys.iter().map(|k| (*k, c.cmd(&["DUMP", k]))).collect()
}

/// Every bystander still has its exact DUMP; `when` ends the message.
fn assert_unchanged(c: &mut Conn, bystanders: &[(&str, Reply)], when: &str) {
    for (k, d) in bystanders {
        assert_eq!(&c.cmd(&["DUMP", k]), d, "{k} changed{when}");
    }
}

/// How many cases ended in exactly `outcome`.
fn tallied(tally: &BTreeMap<String, usize>, outcome: &str) -> usize {
    tally.get(outcome).copied().unwrap_or(0)
}

/// `key`'s DUMP restores (as `copy`) to the same DUMP.
fn own_dump_restores(c: &mut Conn, key: &str) -> Result<(), String> {
    let payload = c.cmd(&["DUMP", key]);
    let r = c.cmd(&args![
        "RESTORE",
        "copy",
        "0",
        payload.as_bytes(),
        "REPLACE"
    ]);
    if r != ok() || c.cmd(&["DUMP", "copy"]) != payload {
        return Err(format!("own DUMP does not restore: {r:?}"));
    }
    Ok(())
}

/// RESTOREs each payload as `victim` (with `victim` and `copy` deleted
/// first). A refusal must leave no key and is tallied by its error; an
/// accepted value must pass `check` (given the case number), whose Ok is
/// tallied. After every case the server answers and the bystanders keep
/// their DUMP.
fn restore_each(
    c: &mut Conn,
    flavor: Flavor,
    payloads: &[Vec<u8>],
    bystanders: &[(&str, Reply)],
    mut check: impl FnMut(&mut Conn, usize) -> Result<String, String>,
) -> BTreeMap<String, usize> {
    let mut tally = BTreeMap::new();
    for (n, payload) in payloads.iter().enumerate() {
        c.cmd(&["DEL", "victim", "copy"]);
        let outcome = match c.cmd(&args!["RESTORE", "victim", "0", payload]) {
            Reply::Simple(s) if s == "OK" => check(c, n),
            Reply::Error(e) if c.cmd(&["EXISTS", "victim"]) == int(0) => Ok(e),
            other => Err(format!("RESTORE {other:?}, key left behind?")),
        };
        match outcome {
            Ok(k) => *tally.entry(k).or_default() += 1,
            Err(e) => panic!("{flavor:?} case {n}: {e}\npayload {payload:02x?}"),
        }
        alive(c);
        assert_unchanged(c, bystanders, &format!(" by case {n}"));
    }
    tally
}

/// docs/differences.md §1 item 9: a legitimately built chain of ~1000 links restores.
#[test]
fn chain_with_a_thousand_links_restores() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(
            c.cmd(&["BF.RESERVE", "poc", "0.0001", "1", "EXPANSION", "1"]),
            ok()
        );
        let mut cmd = vec!["BF.MADD".to_string(), "poc".into()];
        cmd.extend((0..3000).map(|i| format!("x{i}")));
        c.cmd(&cmd);
        let links = c.cmd(&["BF.INFO", "poc", "FILTERS"]).as_array()[0].as_int();
        assert!(links >= 1000, "only {links} links");
        let payload = c.cmd(&["DUMP", "poc"]);
        assert_eq!(
            c.cmd(&args!["RESTORE", "copy", "0", payload.as_bytes()]),
            ok()
        );
        assert_eq!(c.cmd(&["DUMP", "copy"]), payload);
        assert_eq!(c.cmd(&["BF.EXISTS", "copy", "x1"]), int(1));
    }
}

// ---------------------------------------------------------------- CMS

/// Genuine Count-Min Sketch payloads (docs/cms.md §6.1): tiny, the 4×2
/// vector, a stream, an INITBYPROB shape, a deep one, a saturated one.
fn cms_sources(c: &mut Conn) -> Vec<Vec<u8>> {
    let setups: &[&[&str]] = &[
        &["CMS.INITBYDIM g 1 1"],
        &["CMS.INITBYDIM g 4 2", "CMS.INCRBY g foo 3 bar 1"],
        &["CMS.INITBYDIM g 20 5", "CMS.INCRBY g a 1 b 2 c 3 d 4 e 5"],
        &["CMS.INITBYPROB g 0.01 0.01", "CMS.INCRBY g x 7"],
        &["CMS.INITBYDIM g 3 200", "CMS.INCRBY g x 7 y 9"],
        &[
            "CMS.INITBYDIM g 5 2",
            "CMS.INCRBY g a 4294967295 b 9223372036854775807",
        ],
        &["CMS.INITBYDIM g 6 3 CELL_SIZE 1", "CMS.INCRBY g a 255 b 3"],
        &[
            "CMS.INITBYDIM g 6 3 CELL_SIZE 2",
            "CMS.INCRBY g a 65535 b 3",
        ],
        &[
            "CMS.INITBYDIM g 4 2 CELL_SIZE 8",
            "CMS.INCRBY g a 9223372036854775807",
        ],
    ];
    setups
        .iter()
        .map(|cmds| {
            c.cmd(&["DEL", "g"]);
            for cmd in *cmds {
                assert!(!line(c, cmd).is_error(), "{cmd}");
            }
            c.cmd(&["DUMP", "g"]).as_bytes().to_vec()
        })
        .collect()
}

/// The crafted values of docs/cms.md §7.1 item 8 and §7.2 item 2 (and
/// neighbours): zero dimensions, arrays one byte short or long, and
/// dimensions whose byte count wraps 64 bits (4 · 2^62 = 0) with an empty
/// or short array.
fn cms_crafted(ver: u16) -> Vec<Vec<u8>> {
    let value = |w: u64, d: u64, array: usize| {
        let prims = [Prim::U(w), Prim::U(d), Prim::U(0), Prim::S(vec![0; array])];
        dump::payload(dump::CMS_MODULE_ID, &prims, ver)
    };
    let mut out = vec![
        value(4, 2, 31),
        value(4, 2, 33),
        value(0, 2, 0),
        value(4, 0, 0),
        value(0, 0, 0),
        value(1 << 62, 1, 0),
        value(1, 1 << 62, 0),
        value(1 << 61, 2, 0),
        value(1 << 62, 4, 16),
        value(1 << 63, 2, 0),
        value(u64::MAX, u64::MAX, 4),
        value(1 << 32, 1 << 30, 0),
        value(1 << 40, 1, 64),
    ];
    out.extend(cms_812_crafted(ver));
    out
}

/// A restored sketch must work: CMS.INFO, QUERY and INCRBY answer, its
/// array matches its dimensions, and its DUMP restores to the same DUMP.
fn check_sketch(c: &mut Conn, key: &str) -> Result<(), String> {
    let info = c.cmd(&["CMS.INFO", key]);
    let Reply::Array(f) = &info else {
        return Err(format!("CMS.INFO {info:?}"));
    };
    let cells = f[1].as_int().checked_mul(f[3].as_int());
    let (_, prims) = dump::parse(c.cmd(&["DUMP", key]).as_bytes());
    let (size, array) = match &prims[..] {
        [_, _, _, Prim::U(size), Prim::S(s)] => (*size as i64, s.len() as i64),
        _ => return Err(format!("DUMP primitives {prims:?}")),
    };
    if f[7].as_int() != size || cells.and_then(|n| n.checked_mul(size)) != Some(array) {
        return Err(format!("{info:?} with a {array}-byte array"));
    }
    for cmd in [
        &["CMS.QUERY", key, "a", "foo"][..],
        &["CMS.INCRBY", key, "a", "1"],
    ] {
        let r = c.cmd(cmd);
        if !matches!(r.as_array(), [_, ..]) {
            return Err(format!("{cmd:?}: {r:?}"));
        }
    }
    own_dump_restores(c, key)
}

/// Corrupt CMS payloads: every RESTORE answers an error and leaves no key,
/// or gives a working sketch; the server stays up and the bystanders
/// (including a sketch) keep their exact DUMP.
#[test]
fn corrupt_cms_payloads_are_contained() {
    for flavor in flavors() {
        let s = uncompressed_server(flavor);
        let mut c = s.conn();
        let sources = cms_sources(&mut c);
        let ver = dump::rdb_version(&sources[0]);
        for cmd in [
            "SET str bystander",
            "BF.ADD bf0 a",
            "CF.ADD cf0 a",
            "CMS.INITBYDIM cms0 10 3",
            "CMS.INCRBY cms0 a 5",
        ] {
            assert!(!line(&mut c, cmd).is_error(), "{cmd}");
        }
        let bystanders = dumps(&mut c, &["str", "bf0", "cf0", "cms0"]);
        let mut rng = SmallRng::seed_from_u64(0xc0de_c005 + flavor as u64);
        let mut cases = cms_crafted(ver);
        for payload in &sources {
            cases.push(payload.clone());
            // The filters' mutations apply as they are: the module id is
            // read from the payload.
            let src = Source {
                bloom: false,
                payload: payload.clone(),
                header: Vec::new(),
                chunks: Vec::new(),
            };
            cases.extend((0..100).map(|_| mutate_payload(&mut rng, &src)));
        }
        let tally = restore_each(&mut c, flavor, &cases, &bystanders, |c, _| {
            match c.cmd(&["TYPE", "victim"]).as_bytes() {
                b"CMSk-TYPE" => check_sketch(c, "victim").map(|_| "restored".into()),
                _ => Ok("restored another type".into()),
            }
        });
        assert_eq!(c.cmd(&["CMS.QUERY", "cms0", "a"]), arr(vec![int(5)]));
        eprintln!("{flavor:?}: {} CMS cases: {tally:#?}", cases.len());
        // Every crafted value of §7 is refused; mutations do both.
        for (n, crafted) in cms_crafted(ver).iter().enumerate() {
            c.cmd(&["DEL", "victim"]);
            let r = c.cmd(&args!["RESTORE", "victim", "0", crafted]);
            assert_eq!(r, err("ERR Bad data format"), "crafted case {n}");
        }
        assert!(tallied(&tally, "restored") >= 60, "{tally:?}");
        assert!(tallied(&tally, "ERR Bad data format") >= 100, "{tally:?}");
    }
}

// ---------------------------------------------------------------- CMS, Redis 8.12
// The load validation of encoding 1 (docs/cms.md §6.2; 8.12 spec §4.3).

/// An encoding-1 sketch payload: width, depth, total, cell size, cells.
fn cms_v1(ver: u16, w: u64, d: u64, count: u64, size: u64, array: Vec<u8>) -> Vec<u8> {
    let prims = [
        Prim::U(w),
        Prim::U(d),
        Prim::U(count),
        Prim::U(size),
        Prim::S(array),
    ];
    dump::payload(dump::CMS_MODULE_ID + 1, &prims, ver)
}

/// Counters beyond 2^63 − 1 (issue 30; 8.12 spec §4.3 rule 7): the total,
/// in both encodings (RedisBloom 8.4 could write one), and an 8-byte cell.
/// The total is not compared with the cells (docs/cms.md §6.2).
fn cms_counters_beyond_i64(ver: u16) -> Vec<(String, Vec<u8>)> {
    let v0 = [
        Prim::U(4),
        Prim::U(2),
        Prim::U(1 << 63),
        Prim::S(vec![0; 32]),
    ];
    let cells = |c: &[u64]| c.iter().flat_map(|c| c.to_le_bytes()).collect();
    [
        ("total 2^63", cms_v1(ver, 4, 2, 1 << 63, 4, vec![0; 32])),
        ("total 2^64 − 1", cms_v1(ver, 4, 2, u64::MAX, 1, vec![0; 8])),
        (
            "total 2^63, encoding 0",
            dump::payload(dump::CMS_MODULE_ID, &v0, ver),
        ),
        (
            "8-byte cell 2^63",
            cms_v1(ver, 2, 1, 0, 8, cells(&[0, 1 << 63])),
        ),
        (
            "8-byte cell 2^64 − 1",
            cms_v1(ver, 1, 1, 0, 8, cells(&[u64::MAX])),
        ),
    ]
    .into_iter()
    .map(|(what, payload)| (format!("cms: {what}"), payload))
    .collect()
}

/// [`cms_counters_beyond_i64`] at the server's RDB version.
fn cms_counter_mismatches(c: &mut Conn) -> Vec<(String, Vec<u8>)> {
    let (_, _, ver) = genuine_prims(c, &["CMS.INITBYDIM g 4 2"]);
    cms_counters_beyond_i64(ver)
}

/// Encoding-1 values each rule refuses, and encoding-0 totals beyond
/// 2^63 − 1 (which RedisBloom 8.4 could write), and encoding 2.
fn cms_812_crafted(ver: u16) -> Vec<Vec<u8>> {
    let v1 = |w, d, count, size, array| cms_v1(ver, w, d, count, size, array);
    let mut out: Vec<Vec<u8>> = [0, 3, 5, 16, (1 << 32) + 4, u64::MAX]
        .into_iter()
        .map(|size| v1(4, 2, 0, size, vec![0; 32]))
        .collect();
    out.extend([
        // The array of another size than the cells need.
        v1(4, 2, 0, 2, vec![0; 32]),
        v1(4, 2, 0, 8, vec![0; 32]),
        v1(4, 2, 0, 1, vec![0; 7]),
        // 8 · 2^61 wraps to 0.
        v1(1 << 61, 1, 0, 8, Vec::new()),
        v1(0, 2, 0, 4, Vec::new()),
    ]);
    out.extend(cms_counters_beyond_i64(ver).into_iter().map(|(_, p)| p));
    // Encoding version 2 does not exist.
    let prims = [
        Prim::U(1),
        Prim::U(1),
        Prim::U(0),
        Prim::U(4),
        Prim::S(vec![0; 4]),
    ];
    out.push(dump::payload(dump::CMS_MODULE_ID + 2, &prims, ver));
    out
}

/// What loads although odd: a total below the cells (not compared), an
/// 8-byte cell of exactly 2^63 − 1; each then refuses what would leave its
/// range (RedisBloom's `test_incrby_underflow_corrupt_counter`).
#[test]
fn cms_812_odd_but_valid_values_load() {
    for flavor in flavors() {
        let s = uncompressed_server(flavor);
        let mut c = s.conn();
        assert_eq!(line(&mut c, "CMS.INITBYDIM g 20 5"), ok());
        let ver = dump::rdb_version(c.cmd(&["DUMP", "g"]).as_bytes());
        line(&mut c, "CMS.INCRBY g a 7");
        let (_, mut prims) = dump::parse(c.cmd(&["DUMP", "g"]).as_bytes());
        prims[2] = Prim::U(0);
        let bad = dump::payload(dump::CMS_MODULE_ID + 1, &prims, ver);
        assert_eq!(c.cmd(&args!["RESTORE", "bad", "0", &bad]), ok());
        assert_eq!(line(&mut c, "CMS.QUERY bad a"), arr(vec![int(7)]));
        assert_eq!(
            line(&mut c, "CMS.INCRBY bad a -7"),
            arr(vec![err("CMS: INCRBY underflow")])
        );
        let full = cms_v1(
            ver,
            1,
            1,
            i64::MAX as u64,
            8,
            (i64::MAX as u64).to_le_bytes().to_vec(),
        );
        assert_eq!(c.cmd(&args!["RESTORE", "full", "0", &full]), ok());
        assert_eq!(line(&mut c, "CMS.QUERY full a"), arr(vec![int(i64::MAX)]));
        assert_eq!(
            line(&mut c, "CMS.INCRBY full a 1"),
            arr(vec![err("CMS: INCRBY overflow")])
        );
        assert_eq!(
            line(&mut c, "CMS.INCRBY full a -1"),
            arr(vec![int(i64::MAX - 1)])
        );
        for crafted in cms_812_crafted(ver) {
            assert_eq!(
                c.cmd(&args!["RESTORE", "victim", "0", &crafted]),
                err("ERR Bad data format")
            );
        }
        alive(&mut c);
    }
}

// ---------------------------------------------------------------------------
// Top-K (docs/topk.md §5.3)

/// Genuine Top-K payloads: empty, decay 1 and < 1, the empty item, long
/// binary items, a heap of 1 and of 200.
fn topk_sources(c: &mut Conn) -> Vec<Source> {
    let setups: Vec<Vec<Vec<Vec<u8>>>> = vec![
        vec![args!["TOPK.RESERVE", "g", "1", "1", "1", "0.5"].to_vec()],
        vec![
            args!["TOPK.RESERVE", "g", "3", "8", "7", "1"].to_vec(),
            args!["TOPK.ADD", "g", "", "a", "", "bin\0ary", "foo"].to_vec(),
        ],
        vec![
            args!["TOPK.RESERVE", "g", "5", "4", "3", "0.9"].to_vec(),
            args![
                "TOPK.INCRBY",
                "g",
                "x",
                "50",
                "y",
                "30",
                "z",
                "7",
                "w",
                "300"
            ]
            .to_vec(),
        ],
        vec![
            args!["TOPK.RESERVE", "g", "200", "64", "2", "0.925"].to_vec(),
            args!["TOPK.ADD", "g", vec![7u8; 300], "k1", "k2", "k3"].to_vec(),
        ],
    ];
    let mut out = Vec::new();
    for setup in setups {
        for cmd in setup {
            assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
        }
        let payload = c.cmd(&["DUMP", "g"]).as_bytes().to_vec();
        assert_eq!(c.cmd(&["DEL", "g"]), int(1));
        out.push(Source {
            bloom: false,
            payload,
            header: Vec::new(),
            chunks: Vec::new(),
        });
    }
    out
}

/// The load checks of docs/topk.md §5.3 and the RedisBloom defects of §9
/// (sizes truncated to 32 bits, unchecked lengths, unterminated items).
fn topk_crafted(src: &Source) -> Vec<Vec<u8>> {
    let (id, prims) = dump::parse(&src.payload);
    let ver = dump::rdb_version(&src.payload);
    let with = |i: usize, p: Prim| {
        let mut v = prims.clone();
        v[i] = p;
        dump::payload(id, &v, ver)
    };
    let mut out = Vec::new();
    for i in 0..3 {
        for v in [0, (1 << 32) + 1, 1 << 32, u64::MAX] {
            out.push(with(i, Prim::U(v)));
        }
    }
    for (i, extra) in [(4, -1i64), (4, 1), (4, -8), (5, -1), (5, 24), (5, -24)] {
        if let Prim::S(s) = &prims[i] {
            let n = (s.len() as i64 + extra).max(0) as usize;
            let mut t = s.clone();
            t.resize(n, 0);
            out.push(with(i, Prim::S(t)));
        }
    }
    for item in [&b""[..], b"foo", b"f\0o\0", b"x", b"\0\0"] {
        out.push(with(6, Prim::S(item.to_vec())));
    }
    // One item string missing or one too many.
    out.push(dump::payload(id, &prims[..prims.len() - 1], ver));
    let mut more = prims.clone();
    more.push(Prim::S(b"extra\0".to_vec()));
    out.push(dump::payload(id, &more, ver));
    // Encoding version 1 (never existed).
    out.push(dump::payload(id + 1, &prims, ver));
    // A decay TOPK.RESERVE refuses (RedisBloom loads any double).
    for d in [0.0, -1.0, 2.0, f64::NAN, f64::INFINITY] {
        out.push(with(3, Prim::D(d)));
    }
    out
}

/// A restored Top-K must answer every command and survive DUMP/RESTORE.
fn check_topk(c: &mut Conn, key: &str) -> Result<(), String> {
    let t = c.cmd(&["TYPE", key]);
    if t != simple("TopK-TYPE") {
        return Err(format!("TYPE {t:?}"));
    }
    let info = c.cmd(&["TOPK.INFO", key]);
    // A decay TOPK.RESERVE accepts (0 < decay ≤ 1, docs/topk.md §5.3).
    let decay: Option<f64> = match &info {
        Reply::Array(a) if a.len() == 8 => match &a[7] {
            Reply::Bulk(b) => std::str::from_utf8(b).ok().and_then(|t| t.parse().ok()),
            Reply::Double(t) => t.parse().ok(),
            _ => None,
        },
        _ => None,
    };
    if !decay.is_some_and(|d| d > 0.0 && d <= 1.0) {
        return Err(format!("TOPK.INFO {info:?}"));
    }
    for cmd in [
        vec!["TOPK.ADD", key, "probe", "", "foo", "probe"],
        vec!["TOPK.INCRBY", key, "probe", "1000", "bar", "0"],
        vec!["TOPK.QUERY", key, "probe", "foo", ""],
        vec!["TOPK.COUNT", key, "probe", "foo", ""],
        vec!["TOPK.LIST", key, "WITHCOUNT"],
    ] {
        let r = c.cmd(&cmd);
        if !matches!(&r, Reply::Array(a) if a.iter().all(|e| !e.is_error())) {
            return Err(format!("{cmd:?}: {r:?}"));
        }
    }
    own_dump_restores(c, key)
}

#[test]
fn corrupt_topk_payloads_are_contained() {
    for flavor in flavors() {
        let s = uncompressed_server(flavor);
        let mut c = s.conn();
        let sources = topk_sources(&mut c);
        assert_eq!(c.cmd(&["SET", "str", "bystander"]), ok());
        assert_eq!(c.cmd(&["TOPK.RESERVE", "tk0", "3", "8", "7", "0.9"]), ok());
        assert!(!c.cmd(&["TOPK.ADD", "tk0", "a", "b", "a"]).is_error());
        let bystanders = dumps(&mut c, &["str", "tk0"]);
        let mut rng = SmallRng::seed_from_u64(0x70b0_c0de + flavor as u64);
        let mut payloads: Vec<Vec<u8>> = Vec::new();
        for src in &sources {
            payloads.push(src.payload.clone());
            payloads.extend(topk_crafted(src));
            payloads.extend((0..120).map(|_| mutate_payload(&mut rng, src)));
        }
        let tally = restore_each(&mut c, flavor, &payloads, &bystanders, |c, _| {
            check_topk(c, "victim").map(|()| "restored".into())
        });
        eprintln!("{flavor:?}: {} Top-K cases: {tally:#?}", payloads.len());
        let restored = tallied(&tally, "restored");
        assert!(restored >= 40, "{tally:?}");
        assert!(payloads.len() - restored >= 300, "{tally:?}");
    }
}

// ---------------------------------------------------------------------------
// T-Digest (docs/tdigest.md §7.2): RedisBloom shipped fixes for crafted
// RESTORE payloads of this type; every field is validated, every read is
// checked, and node arrays are allocated fallibly.

const TD_MODULE_ID: u64 = 0x4c32_12f9_360f_1000;

/// Genuine digests of every shape, as DUMP payloads.
fn tdigest_sources(c: &mut Conn) -> Vec<Vec<u8>> {
    let setups: &[&[&str]] = &[
        &["TDIGEST.CREATE g COMPRESSION 1"],
        &["TDIGEST.CREATE g", "TDIGEST.ADD g 5"],
        &[
            "TDIGEST.CREATE g COMPRESSION 12",
            "TDIGEST.ADD g 1 2 3 4 5 6 7 8 9 10 3 3 3",
        ],
        &[
            "TDIGEST.CREATE g COMPRESSION 50",
            "TDIGEST.ADD g 1e300 -1.7e308 1.7e308 -1e300 0 -0 7",
        ],
        &["TDIGEST.CREATE g COMPRESSION 200"],
    ];
    let mut out = Vec::new();
    for (n, setup) in setups.iter().enumerate() {
        for cmd in *setup {
            assert_eq!(line(c, cmd), ok(), "{cmd}");
        }
        if n == 4 {
            let mut add = vec!["TDIGEST.ADD".to_string(), "g".into()];
            add.extend((0..2000).map(|i| ((i * 7919) % 1009).to_string()));
            assert_eq!(c.cmd(&add), ok());
        }
        out.push(c.cmd(&["DUMP", "g"]).as_bytes().to_vec());
        assert_eq!(c.cmd(&["DEL", "g"]), int(1));
    }
    out
}

fn td_special_d(rng: &mut SmallRng) -> f64 {
    const D: [f64; 16] = [
        0.0,
        -0.0,
        0.5,
        1.0,
        -1.0,
        1.5,
        12.0,
        357913939.0,
        357913940.0,
        1e17,
        9.3e18,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        5e-324,
    ];
    D[rng.gen_range(0..D.len())]
}

/// One mutated payload of a genuine digest dump.
fn mutate_tdigest(rng: &mut SmallRng, payload: &[u8]) -> Vec<u8> {
    let (id, mut prims) = dump::parse(payload);
    let ver = dump::rdb_version(payload);
    let body = dump::module_value(id, &prims);
    match rng.gen_range(0..8) {
        // Truncated, with a valid checksum: every read is checked.
        0 => truncated(rng, &body, ver),
        // Not in the type and module id.
        1 => flipped(rng, &body, 10, ver),
        2 | 3 => {
            // Counters: cap, merged, unmerged, compressions.
            for _ in 0..rng.gen_range(1..=2) {
                let i = rng.gen_range(3..7);
                if let Prim::U(v) = prims[i] {
                    prims[i] = Prim::U(special_u(rng, v));
                }
            }
            dump::payload(id, &prims, ver)
        }
        4 | 5 => {
            let ds: Vec<usize> = (0..prims.len())
                .filter(|&i| matches!(prims[i], Prim::D(_)))
                .collect();
            let i = ds[rng.gen_range(0..ds.len())];
            prims[i] = Prim::D(td_special_d(rng));
            dump::payload(id, &prims, ver)
        }
        6 => {
            let i = rng.gen_range(0..prims.len());
            if rng.gen_bool(0.5) {
                prims.remove(i);
            } else {
                prims.insert(i, Prim::D(1.0));
            }
            dump::payload(id, &prims, ver)
        }
        _ => {
            // Another type's module id.
            dump::payload(
                if rng.gen() {
                    BF_MODULE_ID
                } else {
                    CF_MODULE_ID
                },
                &prims,
                ver,
            )
        }
    }
}

/// The payloads of docs/tdigest.md §7.2: RedisBloom's 2026 out-of-bounds
/// case, and the gaps its fix left open.
fn crafted_tdigest(ver: u16) -> Vec<Vec<u8>> {
    use Prim::{D, U};
    let image = |c: f64, cap: u64, merged: u64, unmerged: u64, nodes: usize| {
        let mut p = vec![
            D(c),
            D(1.0),
            D(1.0),
            U(cap),
            U(merged),
            U(unmerged),
            U(1),
            D(1.0),
            D(1.0),
        ];
        p.extend(std::iter::repeat_n(D(1.0), 2 * nodes));
        dump::payload(TD_MODULE_ID, &p, ver)
    };
    vec![
        image(12.0, 1, 97, 1, 97),       // the flow test's payload
        image(12.0, 97, 97, 0, 97),      // stored cap instead of the allocated one
        image(12.0, 82, 83, 0, 83),      // merged past cap
        image(12.0, 82, 40, 43, 40),     // merged + unmerged past cap
        image(12.0, 82, 3, u64::MAX, 3), // negative unmerged
        image(12.0, 82, u64::MAX, 0, 0), // negative merged
        image(-1.0, 0, 0, 0, 0),         // compression below 1
        image(f64::NAN, 16, 0, 0, 0),
        image(1e300, 0, 0, 0, 0), // capacity beyond any allocation
        image(357913940.0, 2147483650, 0, 0, 0), // capacity past i32::MAX
        // A capacity of 2^31 - 4 slots: 2 × 16 GiB the allocator refuses.
        image(357913939.0, 2147483644, 0, 0, 0),
        image(12.0, 82, 82, 0, 82), // merged nodes filling the capacity
        image(12.0, 82, 3, 2, 3),   // unmerged nodes beside merged ones
    ]
}

/// Issue 20: a genuine digest's DUMP (the reproducer's, 1..10 at
/// compression 100) with one field a value no digest holds. RedisBloom
/// accepts them all; the weights then lose observations on the next save.
fn issue20_tdigest(c: &mut Conn, ver: u16) -> Vec<Vec<u8>> {
    use Prim::{D, U};
    assert_eq!(line(c, "TDIGEST.CREATE src20 COMPRESSION 100"), ok());
    assert_eq!(line(c, "TDIGEST.ADD src20 1 2 3 4 5 6 7 8 9 10"), ok());
    let (id, prims) = dump::parse(c.cmd(&["DUMP", "src20"]).as_bytes());
    assert_eq!(c.cmd(&["DEL", "src20"]), int(1));
    let Prim::U(merged) = prims[4] else {
        panic!("merged nodes {:?}", prims[4]);
    };
    let first_weight = 9 + merged as usize;
    let two63 = 2f64.powi(63);
    let mut fields: Vec<(usize, Prim)> = Vec::new();
    for w in [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        two63,
        1e19,
        -1.0,
        0.5,
    ] {
        fields.push((8, D(w))); // unmerged weight
        fields.push((7, D(w))); // merged weight
        fields.push((first_weight, D(w)));
    }
    fields.extend([
        (8, D(1.0)), // an unmerged weight without unmerged node
        (7, D(1.0)), // merged nodes of a total of 1
        (7, D(0.0)),
        (first_weight, D(4e18)), // node weights far above the total
        (1, D(f64::NAN)),        // min, max
        (2, D(f64::NAN)),
        (1, D(100.0)),    // min above max
        (6, U(u64::MAX)), // negative compression count
    ]);
    fields
        .into_iter()
        .map(|(i, p)| {
            let mut v = prims.clone();
            v[i] = p;
            dump::payload(id, &v, ver)
        })
        .collect()
}

/// A restored digest works: INFO shows no negative weight, estimates,
/// adds and merges answer, and its own dump restores to the same bytes,
/// before and after the adds, with nothing left unmerged (issue 20).
fn check_tdigest(c: &mut Conn) -> Result<(), String> {
    check_tdigest_info(c)?;
    for cmd in [
        "TDIGEST.QUANTILE victim 0 0.5 1",
        "TDIGEST.CDF victim 0 1 1e300",
        "TDIGEST.RANK victim 0 1",
        "TDIGEST.BYREVRANK victim 0 1 5",
        "TDIGEST.TRIMMED_MEAN victim 0.1 0.9",
        "TDIGEST.MIN victim",
    ] {
        let r = line(c, cmd);
        if r.is_error() {
            return Err(format!("{cmd}: {r:?}"));
        }
    }
    td_dump_restores(c)?;
    // Only a total weight near 2^63 takes no more: `overflow detected`.
    for cmd in [
        "TDIGEST.MERGE copy 2 victim victim",
        "TDIGEST.ADD victim 1 2 3",
    ] {
        let r = line(c, cmd);
        if r != ok() && r != err("ERR T-Digest: overflow detected") {
            return Err(format!("{cmd}: {r:?}"));
        }
    }
    if c.cmd(&["EXISTS", "copy"]) == int(1) && line(c, "TDIGEST.QUANTILE copy 0.5").is_error() {
        return Err("the merged copy does not answer".into());
    }
    td_dump_restores(c)?;
    let info = check_tdigest_info(c)?;
    if info[6] > 1 && info[3] != 0 {
        return Err(format!("unmerged nodes after a DUMP: {info:?}"));
    }
    Ok(())
}

/// TDIGEST.INFO's integers (compression, capacity, merged and unmerged
/// nodes, merged and unmerged weights, observations, total compressions,
/// memory usage); none negative.
fn check_tdigest_info(c: &mut Conn) -> Result<Vec<i64>, String> {
    let info = c.cmd(&["TDIGEST.INFO", "victim"]);
    let Reply::Array(a) = &info else {
        return Err(format!("TDIGEST.INFO {info:?}"));
    };
    let values: Vec<i64> = a.iter().skip(1).step_by(2).map(Reply::as_int).collect();
    if a.len() != 18 || values.iter().any(|&v| v < 0) {
        return Err(format!("TDIGEST.INFO {info:?}"));
    }
    Ok(values)
}

/// DUMP, RESTORE as `copy`, DUMP again: the same bytes.
fn td_dump_restores(c: &mut Conn) -> Result<(), String> {
    let dump = c.cmd(&["DUMP", "victim"]);
    let r = c.cmd(&args!["RESTORE", "copy", "0", dump.as_bytes(), "REPLACE"]);
    if r != ok() {
        return Err(format!("own dump does not restore: {r:?}"));
    }
    if c.cmd(&["DUMP", "copy"]) != dump {
        return Err("own dump restores to another digest".into());
    }
    Ok(())
}

#[test]
fn corrupt_tdigest_payloads_are_refused_or_work() {
    for flavor in flavors() {
        let s = Server::builder(flavor, Module::Rsbloom).start();
        let mut c = s.conn();
        let sources = tdigest_sources(&mut c);
        let ver = dump::rdb_version(&sources[0]);
        assert_eq!(c.cmd(&["SET", "str", "bystander"]), ok());
        assert_eq!(line(&mut c, "TDIGEST.CREATE td0 COMPRESSION 30"), ok());
        assert_eq!(line(&mut c, "TDIGEST.ADD td0 1 2 3 4 5 6 7 8 9"), ok());
        let bystanders = dumps(&mut c, &["str", "td0"]);
        let mut rng = SmallRng::seed_from_u64(0x7d16_e570 + flavor as u64);
        let mut payloads = crafted_tdigest(ver);
        payloads.extend(issue20_tdigest(&mut c, ver));
        let crafted = payloads.len();
        for src in &sources {
            payloads.push(src.clone());
            payloads.extend((0..60).map(|_| mutate_tdigest(&mut rng, src)));
        }
        let tally = restore_each(&mut c, flavor, &payloads, &bystanders, |c, n| {
            if n < crafted {
                return Err("crafted payload was accepted".into());
            }
            check_tdigest(c).map(|()| "restored".into())
        });
        eprintln!(
            "{flavor:?}: {} T-Digest payloads: {tally:#?}",
            payloads.len()
        );
        assert!(tallied(&tally, "restored") >= 20, "{tally:?}");
        assert!(tallied(&tally, "ERR Bad data format") >= 100, "{tally:?}");
    }
}

/// Windowed digests (docs/tdigest-window.md §6), mutated as plain ones
/// are: refused, or a window that answers every read, takes adds and
/// restores from its own dump to the same bytes.
#[test]
fn corrupt_windowed_tdigest_payloads_are_refused_or_work() {
    for flavor in flavors() {
        let s = Server::builder(flavor, Module::Rsbloom).start();
        let mut c = s.conn();
        let mut sources = Vec::new();
        for setup in [
            "TDIGEST.CREATE g COMPRESSION 1 WINDOW 1000 BUCKETS 1",
            "TDIGEST.CREATE g COMPRESSION 5 WINDOW 60000 BUCKETS 3",
            "TDIGEST.CREATE g WINDOW 3600000",
        ] {
            assert_eq!(line(&mut c, setup), ok());
            let values: Vec<String> = (0..90).map(|i| ((i * 37) % 41).to_string()).collect();
            assert_eq!(
                line(&mut c, &format!("TDIGEST.ADD g {}", values.join(" "))),
                ok()
            );
            sources.push(c.cmd(&["DUMP", "g"]).as_bytes().to_vec());
            assert_eq!(c.cmd(&["DEL", "g"]), int(1));
        }
        assert_eq!(c.cmd(&["SET", "str", "bystander"]), ok());
        let bystanders = dumps(&mut c, &["str"]);
        let mut rng = SmallRng::seed_from_u64(0x7d16_e571 + flavor as u64);
        let mut payloads = Vec::new();
        for src in &sources {
            payloads.push(src.clone());
            payloads.extend((0..80).map(|_| mutate_tdigest(&mut rng, src)));
        }
        let tally = restore_each(&mut c, flavor, &payloads, &bystanders, |c, _| {
            for cmd in [
                "TDIGEST.QUANTILE victim 0 0.5 1",
                "TDIGEST.CDF victim 0 1 1e300",
                "TDIGEST.RANK victim 0 1",
                "TDIGEST.BYREVRANK victim 0 1 5",
                "TDIGEST.TRIMMED_MEAN victim 0.1 0.9",
                "TDIGEST.MIN victim",
                "TDIGEST.INFO victim",
                "TDIGEST.ADD victim 1 2 3",
            ] {
                let r = line(c, cmd);
                if r.is_error() {
                    return Err(format!("{cmd}: {r:?}"));
                }
            }
            td_dump_restores(c).map(|()| "restored".into())
        });
        eprintln!(
            "{flavor:?}: {} windowed payloads: {tally:#?}",
            payloads.len()
        );
        assert!(tallied(&tally, "restored") >= 3, "{tally:?}");
        assert!(tallied(&tally, "ERR Bad data format") >= 100, "{tally:?}");
    }
}

// ---------------------------------------------------------------------------
// Counters that disagree with the contents (issue 30): refused by RESTORE
// (the RDB loader) and, where the header carries them, by LOADCHUNK.

/// A genuine value's DUMP primitives after `setup`, and its RDB version.
fn genuine_prims(c: &mut Conn, setup: &[&str]) -> (u64, Vec<Prim>, u16) {
    c.cmd(&["DEL", "g"]);
    for cmd in setup {
        assert!(!line(c, cmd).is_error(), "{cmd}");
    }
    let payload = c.cmd(&["DUMP", "g"]).as_bytes().to_vec();
    let (id, prims) = dump::parse(&payload);
    (id, prims, dump::rdb_version(&payload))
}

/// `prims` with the fields of `edits` replaced, as a payload.
fn edited(id: u64, prims: &[Prim], ver: u16, edits: &[(usize, u64)]) -> Vec<u8> {
    let mut p = prims.to_vec();
    for &(i, v) in edits {
        p[i] = Prim::U(v);
    }
    dump::payload(id, &p, ver)
}

/// Each family's counter mismatches: (what, payload).
fn counter_mismatches(c: &mut Conn) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    // Bloom: chain count, then per link entries, error, hashes, bpe, bits,
    // n2, data, count (docs/bloom.md §9).
    let (id, p, ver) = genuine_prims(
        c,
        &[
            "BF.RESERVE g 0.01 20 EXPANSION 2",
            "BF.MADD g a b c d e f g h i j k l m n o p q r s t u v w x y",
        ],
    );
    let Prim::U(links) = p[1] else {
        panic!("links {:?}", p[1]);
    };
    assert_eq!(links, 2, "a chain of two links");
    // Field indexes: link 0's count, link 1's capacity and count.
    let (count0, entries1, count1) = (11, 12, 19);
    let u = |i: usize| match p[i] {
        Prim::U(v) => v,
        ref other => panic!("field {i}: {other:?}"),
    };
    let (total, s0, e1) = (u(0), u(count0), u(entries1));
    for (what, edits) in [
        ("chain count above the links'", vec![(0, total + 1)]),
        ("chain count below the links'", vec![(0, total - 1)]),
        ("chain count near 2^64", vec![(0, u64::MAX)]),
        (
            "link count above its capacity",
            vec![(0, s0 + e1 + 1), (count1, e1 + 1)],
        ),
        (
            "link counts wrapping 2^64",
            vec![(count0, u64::MAX), (count1, 2)],
        ),
        ("capacity below the count", vec![(entries1, 1)]),
    ] {
        out.push((format!("bloom: {what}"), edited(id, &p, ver, &edits)));
    }
    cuckoo_counter_mismatches(c, &mut out);
    out.extend(cms_counter_mismatches(c));
    out.extend(valkey_bloom_counter_mismatches(c));
    out.extend(apbf_counter_mismatches(c));
    out.extend(tdigest_counter_mismatches(c));
    out
}

/// docs/apbf.md §6.2: APBF counters no command sequence reaches. Fields:
/// 7 head, 8 gen_items, 9 inserts, 10 shifts, 11 last_shift_ms. Also
/// checks here that APBF.LOADCHUNK refuses such a header.
fn apbf_counter_mismatches(c: &mut Conn) -> Vec<(String, Vec<u8>)> {
    let u = |p: &[Prim], i: usize| match p[i] {
        Prim::U(v) => v,
        ref other => panic!("field {i}: {other:?}"),
    };
    let mut out = Vec::new();
    let mut push = |what: &str, (id, p, ver): &(u64, Vec<Prim>, u16), edits: &[(usize, u64)]| {
        out.push((format!("apbf: {what}"), edited(*id, p, *ver, edits)));
    };
    // k + l = 20 slices of one item per generation: 24 shifts, head 16.
    let count = genuine_prims(
        c,
        &[
            "APBF.RESERVE g COUNT 0.1 10",
            "APBF.ADD g a b c d e f g h i j k l m n o p q r s t u v w x y",
        ],
    );
    let p = &count.1;
    assert_eq!((u(p, 8), u(p, 9), u(p, 10), u(p, 7)), (1, 25, 24, 16));
    push(
        "count: inserts above shifts·g + gen_items",
        &count,
        &[(9, 26)],
    );
    push("count: a generation left empty", &count, &[(8, 0)]);
    push("count: a shift too many", &count, &[(10, 25)]);
    push("count: head not following the shifts", &count, &[(7, 17)]);
    push("count: inserts near 2^64", &count, &[(9, u64::MAX)]);
    push("count: a clock", &count, &[(11, 5)]);
    let fresh = genuine_prims(c, &["APBF.RESERVE g TIME 0.1 10 5"]);
    push(
        "time: a shift before the clock started",
        &fresh,
        &[(10, 1), (7, 19)],
    );
    let time = genuine_prims(c, &["APBF.RESERVE g TIME 0.1 10 5", "APBF.ADD g a b c"]);
    // 5000 ms over l = 14 slices, rounded up.
    let (p, period) = (&time.1, 358);
    assert_eq!((u(p, 8), u(p, 9), u(p, 10), u(p, 7)), (3, 3, 0, 0));
    let beyond = u(p, 11).div_ceil(period);
    push(
        "time: inserts outside the generation before a shift",
        &time,
        &[(8, 2)],
    );
    push("time: head moved without a shift", &time, &[(7, 1)]);
    // Agreeing counters INFO would answer negative (RESP integers are signed).
    let past = 1 << 63;
    push(
        "time: inserts past 2^63 − 1",
        &time,
        &[(8, past), (9, past)],
    );
    push("time: a clock past 2^63 − 1", &time, &[(11, past)]);
    push("time: a shift without the head moving", &time, &[(10, 1)]);
    push(
        "time: more shifts than the clock ran periods",
        &time,
        &[(10, beyond)],
    );
    // BF.LOADCHUNK's twin: the count window's header with one more insert.
    line(c, "APBF.RESERVE h COUNT 0.1 10");
    line(c, "APBF.ADD h a b c");
    let mut header = c.cmd(&["APBF.SCANDUMP", "h", "0"]).as_array()[1]
        .as_bytes()
        .to_vec();
    header[80..88].copy_from_slice(&4u64.to_le_bytes());
    let r = c.cmd(&args!["APBF.LOADCHUNK", "copy-h", "1", &header]);
    assert_eq!(r, err("ERR APBF: received bad data"));
    assert_eq!(c.cmd(&["EXISTS", "copy-h"]), int(0));
    header[80..88].copy_from_slice(&3u64.to_le_bytes());
    assert_eq!(
        c.cmd(&args!["APBF.LOADCHUNK", "copy-h", "1", &header]),
        ok()
    );
    out
}

/// valkey-bloom counts an RDB reload could not hold in i64 (docs/valkey-bloom.md
/// §5; a count above its capacity loads). The memory limit is lifted (for the
/// rest of the test too) so that the count check, not the size a capacity
/// near 2^63 implies, refuses them; rate 0.5 keeps that size below 2^63.
fn valkey_bloom_counter_mismatches(c: &mut Conn) -> Vec<(String, Vec<u8>)> {
    let (id, p, ver) = genuine_prims(
        c,
        &[
            "CONFIG SET bf.bloom-flavor valkey-bloom",
            "CONFIG SET bf.bloom-use-random-seed no",
            "CONFIG SET bf.bloom-memory-usage-limit 9223372036854775807",
            "BF.RESERVE g 0.5 2",
            "BF.MADD g a b c d e f g h",
        ],
    );
    assert_eq!(line(c, "CONFIG SET bf.bloom-flavor redisbloom"), ok());
    // Sub-filters, expansion, rate, tightening, seed flag, then per
    // sub-filter its capacity (the newest's followed by its count) and blob.
    assert!(
        matches!(p[0], Prim::U(n) if n >= 2),
        "sub-filters: {:?}",
        p[0]
    );
    let (cap0, newest_count) = (5, p.len() - 2);
    let max = i64::MAX as u64;
    [
        ("a negative item count", vec![(newest_count, u64::MAX)]),
        ("capacities summing past 2^63 − 1", vec![(cap0, max)]),
        (
            "item counts summing past 2^63 − 1",
            vec![(newest_count, max)],
        ),
    ]
    .into_iter()
    .map(|(what, edits)| (format!("valkey-bloom: {what}"), edited(id, &p, ver, &edits)))
    .collect()
}

/// Cuckoo: numItems below the fingerprints or above the slots, in a value of
/// one sub-filter and of three (docs/cuckoo.md §13). Fields: numFilters,
/// numBuckets, numItems, numDeletes, bucket size, max iterations,
/// expansion, then per sub-filter N_i and the slots.
fn cuckoo_counter_mismatches(c: &mut Conn, out: &mut Vec<(String, Vec<u8>)>) {
    const ITEMS: usize = 2;
    for (filters, setup) in [
        (1, ["CF.RESERVE g 64", "CF.INSERT g ITEMS a b c"]),
        (
            3,
            [
                "CF.RESERVE g 4 BUCKETSIZE 1 EXPANSION 1",
                "CF.INSERT g ITEMS k0 k1 k2 k3 k4 k5 k6 k7 k8 k9",
            ],
        ),
    ] {
        let (id, p, ver) = genuine_prims(c, &setup);
        assert_eq!(p[0], Prim::U(filters), "{setup:?}");
        let Prim::U(items) = p[ITEMS] else {
            panic!("numItems {:?}", p[ITEMS]);
        };
        let slots: u64 = p
            .iter()
            .filter_map(|f| match f {
                Prim::S(b) => Some(b.len() as u64),
                _ => None,
            })
            .sum();
        for (what, n) in [
            ("count below the fingerprints", items - 1),
            ("count 0 with fingerprints", 0),
            ("count above the slots", slots + 1),
            ("count at 2^64 - 1", u64::MAX),
        ] {
            let payload = edited(id, &p, ver, &[(ITEMS, n)]);
            out.push((format!("cuckoo, {filters} sub-filters: {what}"), payload));
        }
    }
}

/// Cuckoo (docs/cuckoo.md §13, §14): counts between the fingerprints and
/// the slots load by RESTORE (a key saved between its LOADCHUNKs); a header
/// counting more items than its slots is refused, and so is a chunk
/// bringing more fingerprints than its header counts, writing nothing.
fn cuckoo_counts_between_the_bounds_and_loadchunk(c: &mut Conn) {
    let (id, p, ver) = genuine_prims(c, &["CF.RESERVE g 64", "CF.INSERT g ITEMS a b c"]);
    for n in [3, 64] {
        c.cmd(&["DEL", "between"]);
        let payload = edited(id, &p, ver, &[(2, n)]);
        let r = c.cmd(&args!["RESTORE", "between", "0", &payload]);
        assert_eq!(r, ok(), "{n} items of 64 slots, 3 fingerprints");
    }
    let (header, chunks) = scandump(c, Fam::Cf, "g");
    assert_eq!(chunks.len(), 1);
    let with_items = |n: u64| {
        let mut h = header.clone();
        h[..8].copy_from_slice(&n.to_le_bytes());
        h
    };
    let r = c.cmd(&args!["CF.LOADCHUNK", "cf-h", "1", with_items(65)]);
    assert_eq!(r, err("Couldn't create filter!"));
    assert_eq!(c.cmd(&["EXISTS", "cf-h"]), int(0));
    assert_eq!(
        c.cmd(&args!["CF.LOADCHUNK", "cf-h", "1", with_items(2)]),
        ok()
    );
    let before = c.cmd(&["DUMP", "cf-h"]);
    let (pos, chunk) = &chunks[0];
    let r = c.cmd(&args!["CF.LOADCHUNK", "cf-h", pos.to_string(), chunk]);
    assert_eq!(r, err("Couldn't load chunk!"));
    assert_eq!(c.cmd(&["DUMP", "cf-h"]), before);
}

/// T-Digest counters against the nodes (docs/tdigest.md §7.2): compression,
/// min, max, capacity, merged and unmerged nodes, compressions, merged and
/// unmerged weight, then the merged means and weights. A merged weight
/// above the centroids' stays accepted: RedisBloom writes such digests
/// (zero-weight nodes, totals rounded past 2^53).
fn tdigest_counter_mismatches(c: &mut Conn) -> Vec<(String, Vec<u8>)> {
    let (id, p, ver) = genuine_prims(
        c,
        &[
            "TDIGEST.CREATE g COMPRESSION 10",
            "TDIGEST.ADD g 1 2 3 4 5 6 7 8 9 10 11 12",
        ],
    );
    let (Prim::U(cap), Prim::U(merged), Prim::D(mw)) = (&p[3], &p[4], &p[7]) else {
        panic!("header {p:?}");
    };
    let (cap, merged, mw) = (*cap, *merged as usize, *mw);
    assert_eq!(p.len(), 9 + 2 * merged, "merged centroids only");
    let unedited = dump::payload(id, &p, ver);
    assert_eq!(c.cmd(&args!["RESTORE", "g2", "0", &unedited]), ok());
    let weight = |i: usize| 9 + merged + i;
    let huge = 2f64.powi(62);
    let cases: Vec<(&str, Vec<(usize, Prim)>)> = vec![
        (
            "merged weight below the centroids'",
            vec![(7, Prim::D(mw - 1.0))],
        ),
        ("merged weight without merged nodes", vec![(4, Prim::U(0))]),
        (
            "merged nodes above the capacity",
            vec![(4, Prim::U(cap + 1))],
        ),
        (
            "merged and unmerged nodes above the capacity",
            vec![(5, Prim::U(cap + 1 - merged as u64))],
        ),
        (
            "unmerged weight without unmerged nodes",
            vec![(8, Prim::D(1.0))],
        ),
        ("a merged weight of 2^63", vec![(7, Prim::D(huge * 2.0))]),
        (
            "a negative centroid weight",
            vec![(weight(0), Prim::D(-1.0))],
        ),
        (
            "a centroid weight of 2^63",
            vec![(weight(0), Prim::D(huge * 2.0))],
        ),
        (
            "centroid weights wrapping i64",
            vec![
                (7, Prim::D(huge)),
                (weight(0), Prim::D(huge)),
                (weight(1), Prim::D(huge)),
            ],
        ),
        ("a negative compression count", vec![(6, Prim::U(u64::MAX))]),
        (
            "capacity other than the compression's",
            vec![(3, Prim::U(cap + 6))],
        ),
    ];
    cases
        .into_iter()
        .map(|(what, edits)| {
            let mut q = p.clone();
            for (i, v) in edits {
                q[i] = v;
            }
            (format!("tdigest: {what}"), dump::payload(id, &q, ver))
        })
        .collect()
}

/// Issue 30: counters that lie about the contents do not load, in every
/// family that has them (RESTORE; LOADCHUNK where a header carries them):
/// docs/bloom.md §9, cuckoo.md §13, cms.md §6.2, valkey-bloom.md §5,
/// apbf.md §6.2, tdigest.md §7.2.
#[test]
fn counter_mismatches_are_refused() {
    for flavor in flavors() {
        let s = uncompressed_server(flavor);
        let mut c = s.conn();
        for (what, payload) in counter_mismatches(&mut c) {
            c.cmd(&["DEL", "victim"]);
            let r = c.cmd(&args!["RESTORE", "victim", "0", &payload]);
            assert_eq!(r, err("ERR Bad data format"), "{flavor:?} {what}");
            assert_eq!(c.cmd(&["EXISTS", "victim"]), int(0), "{what}");
        }
        cuckoo_counts_between_the_bounds_and_loadchunk(&mut c);
        // BF.LOADCHUNK: a link count above its capacity.
        line(&mut c, "BF.RESERVE bf 0.01 5");
        line(&mut c, "BF.MADD bf a b c");
        let (mut header, _) = scandump(&mut c, Fam::Bf, "bf");
        header[..8].copy_from_slice(&7u64.to_le_bytes());
        header[36..44].copy_from_slice(&7u64.to_le_bytes());
        assert_eq!(
            c.cmd(&args!["BF.LOADCHUNK", "copy2", "1", &header]),
            err("ERR received bad data")
        );
        alive(&mut c);
    }
}
