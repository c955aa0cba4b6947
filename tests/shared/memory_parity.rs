//! Identical filters take identical memory in rsbloom and the reference:
//! not only the sizes they report (BF.INFO/CF.INFO Size, MEMORY USAGE) but
//! the server's `used_memory`, i.e. every allocation behind them (records,
//! record arrays, bit and slot arrays) lands in the same allocator size class.
//! Bloom chains are the exception: one block holds the chain, its link
//! records and the first bit array (docs/bloom.md §1), so they take less,
//! by an exact amount per case ([`Case::more`]).

use common::diff::sargs;
use common::server::valkey_bloom_oracle;
use common::stream::info_field;
use common::*;

/// A filter built by `cmds` (on key `k`, items `i<n>`).
struct Case {
    name: &'static str,
    cmds: Vec<Vec<Vec<u8>>>,
    /// After a compaction that frees sub-filters, rsbloom shrinks the record
    /// array to the exact length while RedisBloom keeps its slack: rsbloom
    /// may then use less, never more.
    may_use_less: bool,
    /// rsbloom uses exactly this many bytes more: a Count-Min Sketch's
    /// record is RedisBloom 8.12's 40 bytes, 2.8.2's 32 (docs/cms.md §6.4;
    /// both are size classes of the servers' jemalloc). Negative: less.
    more: i64,
}

fn adds(cmd: &str, n: usize) -> Vec<Vec<Vec<u8>>> {
    (0..n)
        .map(|i| sargs(&[cmd, "k", &format!("i{i}")]))
        .collect()
}

fn case(name: &'static str, create: &[&str], more: Vec<Vec<Vec<u8>>>) -> Case {
    let mut cmds = vec![sargs(create)];
    cmds.extend(more);
    Case {
        name,
        cmds,
        may_use_less: false,
        more: 0,
    }
}

/// A Bloom case: rsbloom takes exactly `more` bytes more ([`Case::more`]).
fn bloom_case(name: &'static str, create: &[&str], then: Vec<Vec<Vec<u8>>>, more: i64) -> Case {
    Case {
        more,
        ..case(name, create, then)
    }
}

/// A Count-Min Sketch case: [`Case::more`].
fn cms_case(name: &'static str, create: &[&str], then: Vec<Vec<Vec<u8>>>) -> Case {
    Case {
        more: 8,
        ..case(name, create, then)
    }
}

fn cases() -> Vec<Case> {
    let mut compacted = adds("CF.ADD", 60);
    compacted.extend(
        (0..60)
            .step_by(2)
            .map(|i| sargs(&["CF.DEL", "k", &format!("i{i}")])),
    );
    compacted.push(sargs(&["CF.COMPACT", "k"]));
    vec![
        // RedisBloom: chain 32 + link array 64·n + the bit arrays. rsbloom:
        // one block (16 bytes, the first bit array when at most 64 KiB);
        // a chain whose fields do not fit those 16 bytes (here: more than
        // one link) has its records (16 + 56·n) apart; later bit arrays.
        // 32 + 64 + 1536 against 1536 (16 + 1384).
        bloom_case(
            "BF one link",
            &["BF.RESERVE", "k", "0.01", "1000"],
            vec![],
            -96,
        ),
        // A first bit array above 64 KiB is not inline: 32 + 64 against 16 +
        // 80 (72 bytes of records, in the 80-byte class).
        bloom_case("BF 1M", &["BF.RESERVE", "k", "0.001", "1000000"], vec![], 0),
        // 32 + 128 + 16 against 32 (16 + 16) + 128 (16 + 112).
        bloom_case(
            "BF 2 links",
            &["BF.RESERVE", "k", "0.01", "10"],
            adds("BF.ADD", 15),
            -16,
        ),
        // 32 + 384 + 16 against 32 + 384 (16 + 336).
        bloom_case(
            "BF 6 links",
            &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "2"],
            adds("BF.ADD", 600),
            -16,
        ),
        case("CF one sub-filter", &["CF.RESERVE", "k", "1000"], vec![]),
        case(
            "CF bucket size 4",
            &["CF.RESERVE", "k", "100000", "BUCKETSIZE", "4"],
            vec![],
        ),
        case(
            "CF 5 sub-filters",
            &["CF.RESERVE", "k", "8", "EXPANSION", "1"],
            adds("CF.ADD", 60),
        ),
        Case {
            may_use_less: true,
            ..case(
                "CF grown then compacted",
                &["CF.RESERVE", "k", "8", "EXPANSION", "1"],
                compacted,
            )
        },
        cms_case("CMS 1x1", &["CMS.INITBYDIM", "k", "1", "1"], vec![]),
        cms_case("CMS 20x5", &["CMS.INITBYDIM", "k", "20", "5"], vec![]),
        cms_case(
            "CMS 2000x7 with items",
            &["CMS.INITBYPROB", "k", "0.001", "0.01"],
            (0..50)
                .map(|i| sargs(&["CMS.INCRBY", "k", &format!("i{i}"), "3"]))
                .collect(),
        ),
        cms_case("CMS 16 MB", &["CMS.INITBYDIM", "k", "1000000", "4"], vec![]),
        cms_case(
            "CMS merged",
            &["CMS.INITBYDIM", "k", "300", "3"],
            vec![
                sargs(&["CMS.INCRBY", "k", "a", "7"]),
                sargs(&["CMS.MERGE", "k", "2", "k", "k", "WEIGHTS", "2", "-1"]),
            ],
        ),
    ]
}

fn used_memory(c: &mut Conn) -> i64 {
    info_field(c, "memory", "used_memory")
        .and_then(|v| v.parse().ok())
        .expect("used_memory")
}

/// How far `used_memory` may stay above its level before a build once the
/// filter is deleted (client buffers; far below any large value).
const RELEASED_SLACK: i64 = 64 << 10;

/// Median over 5 builds of the `used_memory` growth one filter causes
/// (client buffers move it by a few hundred bytes now and then).
fn growth(c: &mut Conn, case: &Case) -> i64 {
    let mut deltas: Vec<i64> = (0..5)
        .map(|_| {
            let before = used_memory(c);
            for cmd in &case.cmds {
                assert!(!c.cmd(cmd).is_error(), "{}: {cmd:?}", case.name);
            }
            let after = used_memory(c);
            assert_eq!(c.cmd(&["DEL", "k"]), int(1));
            // rsbloom releases values over 4 MiB on its own thread: the
            // next build starts once this one's memory is back.
            wait::until("the deleted filter's memory released", wait::STATE, || {
                let now = used_memory(c);
                if now <= before + RELEASED_SLACK {
                    Ok(())
                } else {
                    Err(format!("used_memory {now}, {before} before the build"))
                }
            });
            after - before
        })
        .collect();
    deltas.sort_unstable();
    deltas[2]
}

#[test]
fn identical_filters_take_identical_used_memory() {
    for flavor in flavors() {
        used_memory_parity(flavor);
    }
}

fn used_memory_parity(flavor: Flavor) {
    let servers = [Module::Rsbloom, Module::Reference].map(|m| Server::start(flavor, m));
    let mut conns = servers.each_ref().map(Server::conn);
    for c in &mut conns {
        // First use of each type allocates module-wide state once.
        for case in cases() {
            growth(c, &case);
        }
    }
    let mut mismatches = Vec::new();
    for case in cases() {
        let [rs, reference] = conns.each_mut().map(|c| growth(c, &case));
        assert!(rs > 0, "{}: no growth measured", case.name);
        let rs = rs - case.more;
        if rs != reference && !(case.may_use_less && rs < reference) {
            mismatches.push(format!(
                "{flavor:?} {}: rsbloom {rs}, RedisBloom {reference}",
                case.name
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "used_memory differs: {mismatches:#?}"
    );
}

/// Top-K (docs/topk.md §3.8): the record, buckets, heap and every item
/// copy take RedisBloom's allocations, also after expulsions, and for a
/// value loaded from its RDB form (items held in the loaded buffers: a
/// RESTORE of each server's own DUMP; a DEBUG RELOAD would measure the
/// server's lazy free of the old dataset too).
#[test]
fn identical_topk_sketches_take_identical_used_memory() {
    let adds = |n: usize, len: usize| -> Vec<Vec<Vec<u8>>> {
        (0..n)
            .map(|i| sargs(&["TOPK.ADD", "k", &format!("{i:0>len$}"), "", "bin\0ary"]))
            .collect()
    };
    let topk_cases = vec![
        case(
            "TopK 1x1x1",
            &["TOPK.RESERVE", "k", "1", "1", "1", "1"],
            vec![],
        ),
        case("TopK defaults", &["TOPK.RESERVE", "k", "3"], vec![]),
        case(
            "TopK 50 2000x7",
            &["TOPK.RESERVE", "k", "50", "2000", "7", "0.925"],
            vec![],
        ),
        case(
            "TopK 1000 100x3",
            &["TOPK.RESERVE", "k", "1000", "100", "3", "1"],
            vec![],
        ),
        case(
            "TopK items of 1..40 bytes",
            &["TOPK.RESERVE", "k", "100", "64", "4", "1"],
            adds(40, 1),
        ),
        case(
            "TopK long items",
            &["TOPK.RESERVE", "k", "20", "64", "4", "1"],
            adds(30, 100),
        ),
        case(
            "TopK expulsions",
            &["TOPK.RESERVE", "k", "5", "8", "3", "0.9"],
            adds(300, 7),
        ),
    ];
    let source = [
        vec![sargs(&["TOPK.RESERVE", "k", "30", "64", "4", "1"])],
        adds(25, 12),
    ]
    .concat();
    for flavor in flavors() {
        topk_parity(flavor, &topk_cases, &source);
    }
}

fn topk_parity(flavor: Flavor, topk_cases: &[Case], source: &[Vec<Vec<u8>>]) {
    let servers = [Module::Rsbloom, Module::Reference].map(|m| Server::start(flavor, m));
    let mut conns = servers.each_ref().map(Server::conn);
    // Each server restores its own DUMP of the same sketch.
    let restored = conns.each_mut().map(|c| {
        for cmd in source {
            assert!(!c.cmd(cmd).is_error(), "{cmd:?}");
        }
        let payload = c.cmd(&["DUMP", "k"]);
        assert_eq!(c.cmd(&["DEL", "k"]), int(1));
        Case {
            name: "TopK restored",
            cmds: vec![args!["RESTORE", "k", "0", payload.as_bytes()].to_vec()],
            may_use_less: false,
            // The empty item's allocation (jemalloc's 8-byte class): rsbloom's
            // load keeps the item, 2.8.2's drops it (docs/topk.md §5.2).
            more: 8,
        }
    });
    for (c, own) in conns.iter_mut().zip(&restored) {
        for case in topk_cases.iter().chain([own]) {
            growth(c, case);
        }
    }
    let mut mismatches = Vec::new();
    let cases = topk_cases
        .iter()
        .map(|c| [c, c])
        .chain([restored.each_ref()]);
    for pair in cases {
        let case = pair[0];
        let [rs, reference] = [0, 1].map(|i| growth(&mut conns[i], pair[i]));
        assert!(rs > 0, "{}: no growth measured", case.name);
        let rs = rs - case.more;
        let usage = [0, 1].map(|i| {
            let c = &mut conns[i];
            for cmd in &pair[i].cmds {
                c.cmd(cmd);
            }
            let u = c.cmd(&["MEMORY", "USAGE", "k"]);
            c.cmd(&["DEL", "k"]);
            u
        });
        if rs != reference || usage[0] != usage[1] {
            mismatches.push(format!(
                "{flavor:?} {}: used_memory rsbloom {rs}, RedisBloom {reference}; MEMORY USAGE {:?}",
                case.name, usage
            ));
        }
    }
    assert!(mismatches.is_empty(), "memory differs: {mismatches:#?}");
}

/// jemalloc's size class of an allocation of `n` bytes (4 classes per
/// doubling above 128 bytes).
fn size_class(n: i64) -> i64 {
    if n <= 128 {
        return (n + 15) / 16 * 16;
    }
    let step = 1i64 << (63 - (n - 1).leading_zeros() - 2);
    (n + step - 1) / step * step
}

/// A T-Digest takes exactly its 80-byte record and its two node arrays of
/// `8 × capacity` bytes (docs/tdigest.md §2.1), allocated like RedisBloom
/// 8.x allocates them. (RedisBloom 2.8.2 allocates digests outside the
/// server's allocator: its `used_memory` only grows by the key.)
#[test]
fn digests_take_their_record_and_node_arrays() {
    for flavor in flavors() {
        digest_memory(flavor);
    }
}

fn digest_memory(flavor: Flavor) {
    let servers = [Module::Rsbloom, Module::Reference].map(|m| Server::start(flavor, m));
    let mut conns = servers.each_ref().map(Server::conn);
    let values = |n: usize| {
        let mut a = sargs(&["TDIGEST.ADD", "k"]);
        a.extend((0..n).map(|i| ((i * 37) % 1001).to_string().into_bytes()));
        vec![a]
    };
    let mut merged = values(500);
    merged.push(sargs(&[
        "TDIGEST.MERGE",
        "k",
        "2",
        "k",
        "k",
        "COMPRESSION",
        "50",
    ]));
    let cases = [
        (100, case("default", &["TDIGEST.CREATE", "k"], vec![])),
        (
            1,
            case(
                "compression 1",
                &["TDIGEST.CREATE", "k", "COMPRESSION", "1"],
                values(100),
            ),
        ),
        (
            5000,
            case(
                "compression 5000",
                &["TDIGEST.CREATE", "k", "COMPRESSION", "5000"],
                values(3000),
            ),
        ),
        (
            50,
            case(
                "merged",
                &["TDIGEST.CREATE", "k", "COMPRESSION", "300"],
                merged,
            ),
        ),
    ];
    for c in &mut conns {
        growth(c, &cases[0].1);
    }
    for (compression, case) in &cases {
        let [rs, reference] = conns.each_mut().map(|c| growth(c, case));
        let cap = 6 * compression + 10;
        let digest = size_class(80) + 2 * size_class(8 * cap);
        assert_eq!(rs, reference + digest, "{flavor:?} {}", case.name);
    }
}

/// Keys per shape of [`small_filters_cost_less_per_key`]: enough that the
/// keyspace table's share per key is what a real dataset's is.
const SMALL_KEYS: usize = 20_000;

/// `used_memory` growth and MEMORY USAGE per key over [`SMALL_KEYS`] keys
/// built by `capacity`'s BF.RESERVE and a BF.MADD of 20 items.
fn per_key(c: &mut Conn, capacity: &str) -> (f64, f64) {
    let build = |k: &str| {
        let mut madd = sargs(&["BF.MADD", k]);
        madd.extend((0..20).map(|i| format!("{k}:{i}").into_bytes()));
        [sargs(&["BF.RESERVE", k, "0.01", capacity]), madd]
    };
    // First use of the type allocates module-wide state once.
    c.pipeline(&build("warm"));
    c.cmd(&["DEL", "warm"]);
    let keys: Vec<String> = (0..SMALL_KEYS).map(|i| format!("key:{i}")).collect();
    let before = used_memory(c);
    for chunk in keys.chunks(500) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk.iter().flat_map(|k| build(k)).collect();
        assert!(c.pipeline(&cmds).iter().all(|r| !r.is_error()));
    }
    let after = used_memory(c);
    let mut usage = 0;
    for chunk in keys.chunks(500) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|k| sargs(&["MEMORY", "USAGE", k, "SAMPLES", "0"]))
            .collect();
        usage += c.pipeline(&cmds).iter().map(Reply::as_int).sum::<i64>();
    }
    assert_eq!(c.cmd(&["FLUSHALL"]), ok());
    let n = SMALL_KEYS as f64;
    ((after - before) as f64 / n, usage as f64 / n)
}

/// Issue 40: over 20,000 keys of 20 items each, a small Bloom filter costs
/// at most `ceiling` × what the peer's costs (used_memory per key), and
/// MEMORY USAGE is within 5 % of that cost. Default flavour against
/// RedisBloom 2.8.2: one allocation instead of three (docs/bloom.md §1);
/// valkey-bloom flavour against valkey-bloom 1.0.1: records of exact length.
#[test]
fn small_filters_cost_less_per_key() {
    for flavor in flavors() {
        let mut sides = vec![(
            "default",
            Server::builder(flavor, Module::Rsbloom),
            Server::builder(flavor, Module::Reference),
            [("100", 0.80), ("1000", 0.95)],
        )];
        if flavor.is_valkey() && valkey_bloom_oracle(flavor).is_some() {
            sides.push((
                "valkey-bloom",
                Server::builder(flavor, Module::Rsbloom).valkey_bloom_flavor(),
                Server::builder(flavor, Module::ValkeyBloom),
                [("100", 0.81), ("1000", 0.94)],
            ));
        }
        for (name, rs, peer, shapes) in sides {
            let (rs, peer) = (rs.start(), peer.start());
            let (mut rc, mut pc) = (rs.conn(), peer.conn());
            for (capacity, ceiling) in shapes {
                let (used, usage) = per_key(&mut rc, capacity);
                let (peer_used, _) = per_key(&mut pc, capacity);
                let what = format!("{flavor:?} {name} flavour, capacity {capacity}");
                eprintln!("{what}: {used} B/key (MEMORY USAGE {usage}), peer {peer_used}");
                assert!(used <= ceiling * peer_used, "{what}: {used} vs {peer_used}");
                assert!(
                    (usage - used).abs() <= 0.05 * used,
                    "{what}: MEMORY USAGE {usage} vs {used}"
                );
            }
        }
    }
}
