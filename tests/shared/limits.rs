//! Resource limits: sizes that cannot be allocated answer an error (never an
//! abort), `maxmemory` makes deny-oom commands answer OOM without partial
//! writes, and crafted filters cannot make one command run unbounded.
use common::filters::cf_header;
use common::*;

use std::time::{Duration, Instant};

use rsbloom_core::bloom::{Chain, LN2C, LN2SQC};

const BF_OPTIONS: u32 = 5; // FORCE64 | NOROUND

fn bpe(error: f64) -> f64 {
    -(error.ln() / LN2SQC)
}

/// One 53-byte link record of a BF.SCANDUMP header (docs/bloom.md §10), with the
/// bpe and hash count creation would derive from `error`.
fn bf_link(bytes: u64, size: u64, error: f64, entries: u64) -> Vec<u8> {
    let bpe = bpe(error);
    let hashes = (LN2C * bpe).ceil() as u32;
    let mut l = Vec::new();
    l.extend_from_slice(&bytes.to_le_bytes());
    l.extend_from_slice(&(bytes * 8).to_le_bytes());
    l.extend_from_slice(&size.to_le_bytes());
    l.extend_from_slice(&error.to_le_bytes());
    l.extend_from_slice(&bpe.to_le_bytes());
    l.extend_from_slice(&hashes.to_le_bytes());
    l.extend_from_slice(&entries.to_le_bytes());
    l.push(0);
    l
}

fn bf_header(size: u64, options: u32, growth: u32, links: &[Vec<u8>]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&size.to_le_bytes());
    h.extend_from_slice(&(links.len() as u32).to_le_bytes());
    h.extend_from_slice(&options.to_le_bytes());
    h.extend_from_slice(&growth.to_le_bytes());
    for l in links {
        h.extend_from_slice(l);
    }
    h
}

fn exists(c: &mut Conn, key: &str) -> i64 {
    c.cmd(&["EXISTS", key]).as_int()
}

#[test]
fn unallocatable_headers_and_reservations_answer_errors() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        // BF.LOADCHUNK header with a 2^50-byte (and a 2^36-byte) link.
        for bytes in [1u64 << 50, 1 << 36, 1 << 60] {
            let h = bf_header(0, BF_OPTIONS, 2, &[bf_link(bytes, 0, 0.01, 100)]);
            let r = c.cmd(&args!["BF.LOADCHUNK", "bf", "1", h]);
            assert_eq!(r, err("ERR received bad data"), "{flavor:?} {bytes}");
            assert_eq!(exists(&mut c, "bf"), 0);
        }
        // Many links whose sum is unallocatable though each is "only" 2^33.
        let links: Vec<Vec<u8>> = (0..8).map(|_| bf_link(1 << 33, 0, 0.01, 100)).collect();
        let r = c.cmd(&args![
            "BF.LOADCHUNK",
            "bf",
            "1",
            bf_header(0, BF_OPTIONS, 2, &links)
        ]);
        assert_eq!(r, err("ERR received bad data"), "{flavor:?}");
        assert_eq!(exists(&mut c, "bf"), 0);
        // CF.LOADCHUNK header: 2^55 buckets of 255 slots, and 2^33 x 255 x 2 sub-filters.
        for h in [
            cf_header(0, 1 << 55, 0, 1, 255, 20, 1),
            cf_header(0, 1 << 33, 0, 2, 255, 20, 1),
            cf_header(0, 1 << 40, 0, 16, 1, 20, 2),
            // Sub-filter 54 overflows 2^56: rejected before allocating 2-16 GiB.
            cf_header(0, 4, 0, 514, 2, 20, 2),
        ] {
            let r = c.cmd(&args!["CF.LOADCHUNK", "cf", "1", h]);
            assert_eq!(r, err("Couldn't create filter!"), "{flavor:?}");
            assert_eq!(exists(&mut c, "cf"), 0);
        }
        // Creation: a 193 GB Bloom filter, a valid but large Cuckoo filter.
        let r = c.cmd(&["BF.RESERVE", "big", "1e-300", "1073741824"]);
        assert_eq!(
            r,
            err("ERR Insufficient memory to create filter"),
            "{flavor:?}"
        );
        assert_eq!(exists(&mut c, "big"), 0);
        let r = c.cmd(&[
            "CF.RESERVE",
            "bigcf",
            "1073741824",
            "BUCKETSIZE",
            "255",
            "EXPANSION",
            "32768",
        ]);
        // 8388608 buckets x 255 = 2 GiB: created, or refused for lack of memory.
        if r == ok() {
            let size = c.cmd(&["CF.INFO", "bigcf"]).as_array()[1].as_int();
            assert_eq!(size, 40 + 16 + 8388608 * 255);
            assert_eq!(c.cmd(&["CF.ADD", "bigcf", "x"]), int(1));
            assert_eq!(c.cmd(&["DEL", "bigcf"]), int(1));
        } else {
            assert_eq!(
                r,
                err("ERR Insufficient memory to create filter"),
                "{flavor:?}"
            );
        }
        alive(&mut c);
    }
}

#[test]
fn growth_beyond_memory_answers_an_error_and_changes_nothing() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        // Cuckoo: one full 1 MiB sub-filter (1 slot per bucket), expansion
        // 32768: the next sub-filter would be 32 GiB.
        let nb = 1u64 << 20;
        let h = cf_header(nb, nb, 0, 1, 1, 5, 32768);
        assert_eq!(c.cmd(&args!["CF.LOADCHUNK", "cf", "1", h]), ok());
        let chunk = vec![0xabu8; nb as usize];
        let pos = (nb + 1).to_string();
        assert_eq!(c.cmd(&args!["CF.LOADCHUNK", "cf", pos, chunk]), ok());
        let before = c.cmd(&["DUMP", "cf"]);
        let r = c.cmd(&["CF.ADD", "cf", "new-item"]);
        assert_eq!(r, err("ERR Insufficient memory"), "{flavor:?}");
        let r = c.cmd(&["CF.INSERT", "cf", "ITEMS", "n1", "n2"]);
        assert_eq!(r, Reply::Array(vec![int(-1), int(-1)]), "{flavor:?}");
        assert_eq!(
            c.cmd(&["DUMP", "cf"]),
            before,
            "failed growth changed the filter"
        );
        let info = c.cmd(&["CF.INFO", "cf"]);
        assert_eq!(info.as_array()[5], int(1), "Number of filters");
        // Bloom: a full link whose successor (2^40 x 2 entries) cannot exist.
        let e = 1u64 << 40;
        let h = bf_header(e, BF_OPTIONS, 2, &[bf_link(8, e, 0.01, e)]);
        assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "bf", "1", h]), ok());
        let before = c.cmd(&["DUMP", "bf"]);
        let r = c.cmd(&["BF.ADD", "bf", "new-item"]);
        // Either already (falsely) present in the 8-byte link, or the error.
        if r != int(0) {
            assert_eq!(r, err("ERR problem inserting into filter"), "{flavor:?}");
        }
        assert_eq!(c.cmd(&["DUMP", "bf"]), before);
        assert_eq!(
            c.cmd(&["BF.INFO", "bf", "FILTERS"]),
            Reply::Array(vec![int(1)])
        );
        alive(&mut c);
    }
}

#[test]
fn maxmemory_denies_writes_without_partial_effects() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(c.cmd(&["BF.RESERVE", "bf", "0.01", "1000"]), ok());
        assert_eq!(c.cmd(&["BF.ADD", "bf", "a"]), int(1));
        assert_eq!(c.cmd(&["CF.RESERVE", "cf", "1000"]), ok());
        assert_eq!(c.cmd(&["CF.ADD", "cf", "a"]), int(1));
        let (bf, cf) = (c.cmd(&["DUMP", "bf"]), c.cmd(&["DUMP", "cf"]));
        let cf_hdr = c.cmd(&["CF.SCANDUMP", "cf", "0"]).as_array()[1].clone();
        let bf_hdr = c.cmd(&["BF.SCANDUMP", "bf", "0"]).as_array()[1].clone();
        // A bit above what is used, then strings push usage over it.
        let limit = info::used_memory::<u64>(&mut c) + 1024 * 1024;
        assert_eq!(
            c.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]),
            ok()
        );
        assert_eq!(
            c.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]),
            ok()
        );
        for i in 0.. {
            let r = c.cmd(&args!["SET", format!("filler{i}"), vec![b'x'; 100_000]]);
            if r != ok() {
                assert!(r.error_text().starts_with("OOM"), "{r:?}");
                break;
            }
            assert!(i < 100, "maxmemory never reached");
        }
        // Right at the limit, client buffers decide; pin it just below usage.
        let pinned = info::used_memory::<u64>(&mut c) - 200_000;
        assert!(
            pinned + 1_000_000 > limit,
            "filled up to {pinned} of {limit}"
        );
        let r = c.cmd(&["CONFIG", "SET", "maxmemory", &pinned.to_string()]);
        assert_eq!(r, ok());
        let denied: Vec<Vec<Vec<u8>>> = vec![
            args!["BF.RESERVE", "new-bf", "0.01", "100"].to_vec(),
            args!["BF.ADD", "bf", "b"].to_vec(),
            args!["BF.ADD", "new-bf", "b"].to_vec(),
            args!["BF.MADD", "bf", "b", "c"].to_vec(),
            args!["BF.INSERT", "bf", "ITEMS", "b"].to_vec(),
            args!["BF.INSERT", "new-bf", "CAPACITY", "1000000", "ITEMS", "b"].to_vec(),
            args!["BF.LOADCHUNK", "new-bf", "1", bf_hdr.as_bytes()].to_vec(),
            args!["BF.LOADCHUNK", "bf", "145", vec![0xffu8; 144]].to_vec(),
            args!["CF.RESERVE", "new-cf", "1000000"].to_vec(),
            args!["CF.ADD", "cf", "b"].to_vec(),
            args!["CF.ADD", "new-cf", "b"].to_vec(),
            args!["CF.ADDNX", "cf", "b"].to_vec(),
            args!["CF.INSERT", "cf", "ITEMS", "b"].to_vec(),
            args!["CF.INSERTNX", "new-cf", "ITEMS", "b"].to_vec(),
            args!["CF.LOADCHUNK", "new-cf", "1", cf_hdr.as_bytes()].to_vec(),
            args!["CF.LOADCHUNK", "cf", "1025", vec![0xffu8; 1024]].to_vec(),
        ];
        for cmd in &denied {
            let r = c.cmd(cmd);
            assert!(
                r.is_error() && r.error_text().starts_with("OOM"),
                "{flavor:?} {}: {r:?}",
                String::from_utf8_lossy(&cmd[0])
            );
        }
        assert_eq!(exists(&mut c, "new-bf"), 0);
        assert_eq!(exists(&mut c, "new-cf"), 0);
        assert_eq!(c.cmd(&["DUMP", "bf"]), bf, "Bloom filter changed under OOM");
        assert_eq!(
            c.cmd(&["DUMP", "cf"]),
            cf,
            "Cuckoo filter changed under OOM"
        );
        // Reads still work.
        assert_eq!(c.cmd(&["BF.EXISTS", "bf", "a"]), int(1));
        assert_eq!(c.cmd(&["CF.EXISTS", "cf", "a"]), int(1));
        assert_eq!(c.cmd(&["BF.CARD", "bf"]), int(1));
        // Lifting the limit makes the same commands work.
        assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "0"]), ok());
        assert_eq!(c.cmd(&["BF.ADD", "bf", "b"]), int(1));
        assert_eq!(c.cmd(&["CF.ADD", "new-cf", "b"]), int(1));
        alive(&mut c);
    }
}

/// Per-command work is bounded even on a crafted filter: 1100 links (the
/// most a loaded chain may have) of 8 KiB, each with 1075 hashes (the most a
/// valid error rate gives, 5e-324), filled so that one item passes every
/// probe but the last in every link. BF.EXISTS / BF.ADD of that item then do
/// the worst-case 1100 x 1075 = 1.18 million probes into 9 MiB; at well under
/// 10 ns per probe that is < 15 ms, so 50 ms is a safe bound even on a loaded
/// 2-core machine, while RedisBloom's unbounded hash count (docs/differences.md §1
/// item 11: 0.2 s to seconds per command) would exceed it.
#[test]
fn crafted_bloom_filter_cannot_make_a_command_slow() {
    const LINKS: usize = 1100;
    const BYTES: u64 = 8192;
    let error = 5e-324;
    let hashes = (LN2C * bpe(error)).ceil() as u64;
    assert_eq!(hashes, 1075);
    let item = b"victim";
    let pair = Chain::new(1, 0.01, 2, false).unwrap().hash(item);
    let bits = BYTES * 8;
    // All bits set except the last probe of `item`.
    let mut data = vec![0xffu8; BYTES as usize];
    let probe = |i: u64| pair.a.wrapping_add(i.wrapping_mul(pair.b)) % bits;
    let last = probe(hashes - 1);
    assert!(
        (0..hashes - 1).all(|i| probe(i) != last),
        "pick another item"
    );
    data[(last / 8) as usize] &= !(1 << (last % 8));
    let links: Vec<Vec<u8>> = (0..LINKS)
        .map(|_| bf_link(BYTES, 0, error, 1 << 40))
        .collect();
    let header = bf_header(0, BF_OPTIONS, 2, &links);
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "slow", "1", &header]), ok());
        let chunks: Vec<_> = (0..LINKS as u64)
            .map(|k| ((k + 1) * BYTES + 1).to_string())
            .map(|iter| args!["BF.LOADCHUNK", "slow", iter, &data].to_vec())
            .collect();
        for r in c.pipeline(&chunks) {
            assert_eq!(r, ok());
        }
        let mut worst = Duration::ZERO;
        for _ in 0..5 {
            let t = Instant::now();
            assert_eq!(c.cmd(&["BF.EXISTS", "slow", "victim"]), int(0));
            worst = worst.max(t.elapsed());
        }
        let t = Instant::now();
        assert_eq!(c.cmd(&["BF.ADD", "slow", "victim"]), int(1));
        worst = worst.max(t.elapsed());
        let t = Instant::now();
        assert_eq!(c.cmd(&["BF.EXISTS", "slow", "victim"]), int(1));
        worst = worst.max(t.elapsed());
        assert!(
            worst < Duration::from_millis(50),
            "{flavor:?}: worst command took {worst:?}"
        );
        // More links or more hashes than that are refused outright.
        let too_many: Vec<Vec<u8>> = (0..LINKS + 1).map(|_| bf_link(8, 0, 0.01, 10)).collect();
        let r = c.cmd(&args![
            "BF.LOADCHUNK",
            "x",
            "1",
            bf_header(0, BF_OPTIONS, 2, &too_many)
        ]);
        assert_eq!(r, err("ERR received bad data"));
        let mut huge_hashes = bf_link(8, 0, 0.01, 10);
        huge_hashes[32..40].copy_from_slice(&1e8f64.to_le_bytes()); // bpe 1e8
        huge_hashes[40..44].copy_from_slice(&((LN2C * 1e8).ceil() as u32).to_le_bytes());
        let r = c.cmd(&args![
            "BF.LOADCHUNK",
            "x",
            "1",
            bf_header(0, BF_OPTIONS, 2, &[huge_hashes])
        ]);
        assert_eq!(r, err("ERR received bad data"));
        alive(&mut c);
    }
}

/// docs/cms.md §3.3: sketches whose size fits in 64 bits but in no memory
/// (4 PB, 16 TB, 8 TB, 800 PB) answer an error — RedisBloom
/// on Redis < 7.4 aborts the server — and under maxmemory the CMS writes
/// are denied without effect while reads go on.
#[test]
fn cms_unallocatable_sizes_and_maxmemory() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        for cmd in [
            "CMS.INITBYDIM big 1099511627776 1024",
            "CMS.INITBYDIM big 4294967296 1024",
            "CMS.INITBYPROB big 1e-12 0.9",
            "CMS.INITBYPROB big 1e-17 0.5",
        ] {
            assert_eq!(
                line(&mut c, cmd),
                err("CMS: Insufficient memory to create the key"),
                "{flavor:?} {cmd}"
            );
            assert_eq!(exists(&mut c, "big"), 0);
        }
        assert_eq!(line(&mut c, "CMS.INITBYDIM m 100 5"), ok());
        assert_eq!(line(&mut c, "CMS.INITBYDIM s 100 5"), ok());
        line(&mut c, "CMS.INCRBY m a 1");
        let before = c.cmd(&["DUMP", "m"]);
        assert_eq!(
            c.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]),
            ok()
        );
        let limit = info::used_memory::<u64>(&mut c) - 100_000;
        assert_eq!(
            c.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]),
            ok()
        );
        for cmd in [
            "CMS.INITBYDIM new 10 2",
            "CMS.INITBYPROB new 0.1 0.1",
            "CMS.INCRBY m a 1",
            "CMS.MERGE m 1 s",
        ] {
            let r = line(&mut c, cmd);
            assert!(r.error_text().starts_with("OOM"), "{flavor:?} {cmd}: {r:?}");
        }
        assert_eq!(exists(&mut c, "new"), 0);
        assert_eq!(c.cmd(&["DUMP", "m"]), before);
        assert_eq!(line(&mut c, "CMS.QUERY m a"), arr(vec![int(1)]));
        assert!(!line(&mut c, "CMS.INFO m").is_error());
        assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "0"]), ok());
        assert_eq!(line(&mut c, "CMS.INCRBY m a 1"), arr(vec![int(2)]));
    }
}
