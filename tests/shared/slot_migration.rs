//! Atomic slot migration of keys of all five families — Bloom and Cuckoo
//! filters (small ones, scaled chains and filters of more than 16 MiB),
//! Count-Min Sketches, Top-K and T-Digests (small and large), windowed
//! Count-Min Sketches and Top-Ks — and of
//! valkey-bloom's Bloom filters (`bloomfltr`: random seeds, a scaled one, a
//! non-scaling one that fills up under the writer, an explicitly seeded
//! one, one of 20 MB) while a client keeps writing to them, on both servers
//! that have it: Valkey ≥ 9 (`CLUSTER MIGRATESLOTS` on the source) and
//! Redis ≥ 8.4 (`CLUSTER MIGRATION IMPORT` on the target). One test body
//! drives both through [`Migration`].
//!
//! On a real 3+3 cluster: a first migration is held before its hand-over
//! (Valkey: DEBUG SLOTMIGRATION PREVENT-PAUSE; Redis: an ASM fail point) and
//! cancelled: the target and its replica, whose modules counted the imported
//! values, drop them, and the source serves its keys unchanged. A second one
//! is held too while the target forks a snapshot (BGSAVE: the module must
//! leave importing T-Digests to their source), then completes under writes.
//! Then every key on the target is byte-identical (DUMP, SCANDUMP, DEBUG
//! DIGEST-VALUE) to the same commands replayed on a standalone server, the
//! target's replica agrees, and the source holds nothing of the slots.
//! Until the hand-over the target and its replica refuse clients every new
//! value and growth (`bf.max-key-memory`, `bf.bloom-memory-usage-limit`
//! at 1 byte): what they import must be obeyed, as a master's stream is.
//!
//! A fork on the source (the migration's snapshot) compresses every T-Digest
//! with a merge pending and replicates that (docs/tdigest.md §8.4): the
//! writer leaves T-Digests alone around each migration's start, so that the
//! replay can compress them at the same point.
//!
//! Keys are created and written through redis-rs's cluster client, which
//! follows the slots to their new owner; the standalone replay goes through
//! redis-rs too, so that replies compare as the same client sees them.
//! valkey-bloom filters are created while every node's `bf.bloom-flavor` is
//! `valkey-bloom` (then `redisbloom` again); the replay makes each with its
//! seed read from the source's DUMP, in the form a creation replicates as.
use common::client::{self, query, try_query};
use common::cluster::{keyslot, redirects, Cluster};
use common::diff::{sargs, Args};
use common::server::SlotMigration;
use common::stream::{assert_same, snapshot, KeySnap};
use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redis::{ConnectionLike, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

/// Slots `0..MIGRATED` move; they belong to the master that owns slot 0.
const MIGRATED: u16 = 2048;
/// Writes before the migration starts, and after it completed.
const WRITES_AROUND: usize = 300;

/// The five families, valkey-bloom's Bloom filters (`bloomfltr`), and the
/// windowed sketches, Top-Ks and digests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bloom,
    Cuckoo,
    Cms,
    Topk,
    Tdigest,
    ValkeyBloom,
    Cmsw,
    Topkw,
    TdigestWindow,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::Bloom,
        Kind::Cuckoo,
        Kind::Cms,
        Kind::Topk,
        Kind::Tdigest,
        Kind::ValkeyBloom,
        Kind::Cmsw,
        Kind::Topkw,
        Kind::TdigestWindow,
    ];

    /// The `INFO bf` fields of its live values and their bytes:
    /// `bf_<name>_keys`, `bf_<name>_memory` (section `bf_stats`), for
    /// valkey-bloom's those of its own section, `bf_bloom_core_metrics`.
    fn info_fields(self) -> (String, String) {
        let name = match self {
            Kind::Bloom => "bloom",
            Kind::Cuckoo => "cuckoo",
            Kind::Cms => "cms",
            Kind::Topk => "topk",
            Kind::Tdigest => "tdigest",
            Kind::Cmsw => "cms_window",
            Kind::Topkw => "topk_window",
            Kind::TdigestWindow => "tdigest_window",
            Kind::ValkeyBloom => {
                return (
                    "bf_bloom_num_objects".into(),
                    "bf_bloom_total_memory_bytes".into(),
                )
            }
        };
        (format!("bf_{name}_keys"), format!("bf_{name}_memory"))
    }
}

#[derive(Clone)]
struct Filter {
    key: String,
    kind: Kind,
    create: Args,
    /// Commands that fill it before the migrations.
    fill: Vec<Args>,
}

impl Filter {
    fn new(kind: Kind, key: String, create: &[&str], fill: Vec<Args>) -> Filter {
        let mut c = sargs(&create[..1]);
        c.push(key.clone().into_bytes());
        c.extend(sargs(&create[1..]));
        Filter {
            key,
            kind,
            create: c,
            fill,
        }
    }
}

fn items(prefix: &str, from: usize, n: usize) -> Vec<Vec<u8>> {
    (from..from + n)
        .map(|i| format!("{prefix}-{i}").into_bytes())
        .collect()
}

/// `n` T-Digest values from `seed`, as arguments.
fn values(seed: usize, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{}", ((seed * 7919 + i * 104_729) % 100_003) as f64 / 7.0).into_bytes())
        .collect()
}

fn with(mut head: Args, rest: Vec<Vec<u8>>) -> Args {
    head.extend(rest);
    head
}

/// `CMS.INCRBY key item 1 item 2 …` for `items`.
fn incrby(key: &str, items: Vec<Vec<u8>>) -> Args {
    let mut cmd = sargs(&["CMS.INCRBY", key]);
    for (i, it) in items.into_iter().enumerate() {
        cmd.push(it);
        cmd.push(format!("{}", i % 5 + 1).into_bytes());
    }
    cmd
}

/// A command's reply as redis-rs gives it, an error as its text: the same
/// through the cluster client and a plain connection.
type Answer = Result<Value, String>;

fn answer(c: &mut dyn ConnectionLike, cmd: &Args) -> Answer {
    try_query(c, cmd).map_err(|e| e.to_string())
}

/// One command of the history to replay, with the reply it got (`None`:
/// a compression the server did by itself, whose reply nobody saw).
type Step = (Args, Option<Answer>);

/// Hash tags whose slots (as node `via` computes them) lie in `range`, `n`
/// of them, distinct slots.
fn tags(via: u16, range: std::ops::Range<u16>, n: usize) -> Vec<String> {
    let mut seen = Vec::new();
    (0..)
        .map(|i| format!("{{asm{i}}}"))
        .filter(|t| {
            let s = keyslot(via, t);
            let fresh = range.contains(&s) && !seen.contains(&s);
            if fresh {
                seen.push(s);
            }
            fresh
        })
        .take(n)
        .collect()
}

/// A small key of each family per tag, of varied parameters.
fn small(tags: &[String]) -> Vec<Filter> {
    let mut out = Vec::new();
    for (i, t) in tags.iter().enumerate() {
        let k = |suffix: &str| format!("{t}:{suffix}");
        let (bf, cf, cms, topk, td) = (k("bf"), k("cf"), k("cms"), k("topk"), k("td"));
        let v = i % 3;
        let bf_create: [&[&str]; 3] = [
            &["BF.RESERVE", "0.01", "200"],
            &["BF.RESERVE", "0.001", "500", "NONSCALING"],
            &["BF.RESERVE", "0.05", "50", "EXPANSION", "4"],
        ];
        let fill = vec![with(sargs(&["BF.MADD", &bf]), items(&bf, 0, 40))];
        out.push(Filter::new(Kind::Bloom, bf, bf_create[v], fill));
        let cf_create: [&[&str]; 3] = [
            &["CF.RESERVE", "256"],
            &["CF.RESERVE", "512", "BUCKETSIZE", "4"],
            &["CF.RESERVE", "64", "EXPANSION", "2"],
        ];
        let fill = vec![with(sargs(&["CF.INSERT", &cf, "ITEMS"]), items(&cf, 0, 40))];
        out.push(Filter::new(Kind::Cuckoo, cf, cf_create[v], fill));
        let cms_create: [&[&str]; 3] = [
            &["CMS.INITBYDIM", "100", "5"],
            &["CMS.INITBYPROB", "0.001", "0.01"],
            &["CMS.INITBYDIM", "40", "3"],
        ];
        let fill = vec![incrby(&cms, items(&cms, 0, 40))];
        out.push(Filter::new(Kind::Cms, cms, cms_create[v], fill));
        let topk_create: [&[&str]; 3] = [
            &["TOPK.RESERVE", "10"],
            &["TOPK.RESERVE", "5", "50", "4", "0.9"],
            &["TOPK.RESERVE", "20", "100", "5", "0.925"],
        ];
        let fill = vec![with(sargs(&["TOPK.ADD", &topk]), items(&topk, 0, 40))];
        out.push(Filter::new(Kind::Topk, topk, topk_create[v], fill));
        let td_create: [&[&str]; 3] = [
            &["TDIGEST.CREATE"],
            &["TDIGEST.CREATE", "COMPRESSION", "50"],
            &["TDIGEST.CREATE", "COMPRESSION", "400"],
        ];
        let fill = vec![with(sargs(&["TDIGEST.ADD", &td]), values(i, 40))];
        out.push(Filter::new(Kind::Tdigest, td, td_create[v], fill));
        // Windows of two 5-year buckets whose clock starts at a fixed time
        // (as their types' tours): a replay later makes the same values.
        let window = ["WINDOW", "315360000000", "BUCKETS", "2"];
        let start = |key: &str, tick: &str| sargs(&[tick, key, "1700000000000"]);
        let (cmsw, topkw, tdw) = (k("cmsw"), k("topkw"), k("tdw"));
        let fill = vec![start(&cmsw, "CMS.TICK"), incrby(&cmsw, items(&cmsw, 0, 40))];
        let create = [&["CMS.INITBYDIM", "100", "5"][..], &window].concat();
        out.push(Filter::new(Kind::Cmsw, cmsw, &create, fill));
        let fill = vec![
            start(&topkw, "TOPK.TICK"),
            with(sargs(&["TOPK.ADD", &topkw]), items(&topkw, 0, 40)),
        ];
        let create = [&["TOPK.RESERVE", "5", "50", "4", "0.9"][..], &window].concat();
        out.push(Filter::new(Kind::Topkw, topkw, &create, fill));
        let fill = vec![
            start(&tdw, "TDIGEST.TICK"),
            with(sargs(&["TDIGEST.ADD", &tdw]), values(i, 40)),
        ];
        let create = [&["TDIGEST.CREATE", "COMPRESSION", "20"][..], &window].concat();
        out.push(Filter::new(Kind::TdigestWindow, tdw, &create, fill));
    }
    out
}

/// The seed of the explicitly seeded valkey-bloom filter (32 bytes).
const VB_SEED: &str = "rsbloom:slot-migration:seed/0001";

/// valkey-bloom 1.0.1's fixed seed (`bf.bloom-use-random-seed no`).
const VB_FIXED_SEED: [u8; 32] = [
    0x59, 0x0f, 0xf5, 0x22, 0xea, 0x78, 0x11, 0xda, 0xa7, 0x14, 0xd8, 0x09, 0x3b, 0x3e, 0x7b, 0xd9,
    0x1d, 0x89, 0x8a, 0x73, 0x3e, 0x98, 0x88, 0x87, 0x30, 0x7f, 0x97, 0xcd, 0x28, 0x07, 0x33, 0x83,
];

/// [`small`] plus scaled chains, large keys of every family (two filters of
/// more than 16 MiB), valkey-bloom filters, and (last) the key CF.COMPACT
/// writes to; `tags` has at least four.
fn filters(tags: &[String]) -> Vec<Filter> {
    let mut out = small(tags);
    let k = |t: usize, suffix: &str| format!("{}:{suffix}", tags[t]);
    let chunked = |head: &[&str], key: &str, n: usize, chunk: usize| -> Vec<Args> {
        items(key, 0, n)
            .chunks(chunk)
            .map(|c| {
                with(
                    sargs(&[head[0], key])
                        .into_iter()
                        .chain(sargs(&head[1..]))
                        .collect(),
                    c.to_vec(),
                )
            })
            .collect()
    };
    let key = k(0, "bf-chain");
    let fill = chunked(&["BF.MADD"], &key, 3000, 500);
    out.push(Filter::new(
        Kind::Bloom,
        key,
        &["BF.RESERVE", "0.01", "100", "EXPANSION", "2"],
        fill,
    ));
    let key = k(0, "cf-chain");
    let fill = chunked(&["CF.INSERT", "ITEMS"], &key, 1500, 300);
    out.push(Filter::new(
        Kind::Cuckoo,
        key,
        &["CF.RESERVE", "64", "EXPANSION", "2"],
        fill,
    ));
    // 49 MiB and 32 MiB: on Valkey a header and four, resp. two, 16 MiB
    // LOADCHUNKs (the Cuckoo filter grows 32 MiB sub-filters as the writer
    // adds duplicates); on Redis one RESTORE each.
    let key = k(1, "bf-big");
    let fill = vec![with(sargs(&["BF.MADD", &key]), items(&key, 0, 2000))];
    out.push(Filter::new(
        Kind::Bloom,
        key,
        &["BF.RESERVE", "0.0001", "20000000"],
        fill,
    ));
    let key = k(1, "cf-big");
    let fill = vec![with(
        sargs(&["CF.INSERT", &key, "ITEMS"]),
        items(&key, 0, 2000),
    )];
    out.push(Filter::new(
        Kind::Cuckoo,
        key,
        &["CF.RESERVE", "33554432"],
        fill,
    ));
    // 16 MB of counters, 6.4 MB of Top-K buckets, a T-Digest of 5 000 centroids.
    let key = k(1, "cms-big");
    let fill = vec![incrby(&key, items(&key, 0, 2000))];
    out.push(Filter::new(
        Kind::Cms,
        key,
        &["CMS.INITBYDIM", "1000000", "4"],
        fill,
    ));
    let key = k(1, "topk-big");
    let fill = chunked(&["TOPK.ADD"], &key, 2000, 500);
    out.push(Filter::new(
        Kind::Topk,
        key,
        &["TOPK.RESERVE", "100", "100000", "8", "0.9"],
        fill,
    ));
    let key = k(1, "td-big");
    let fill = (0..10)
        .map(|i| with(sargs(&["TDIGEST.ADD", &key]), values(i, 2000)))
        .collect();
    out.push(Filter::new(
        Kind::Tdigest,
        key,
        &["TDIGEST.CREATE", "COMPRESSION", "5000"],
        fill,
    ));
    // valkey-bloom's (made while the flavour is valkey-bloom): random seeds
    // but the third; a chain that scales four times, a non-scaling filter
    // the writer fills up (then its adds fail: the items before the error
    // replicate), one seeded and made with items by BF.INSERT in
    // valkey-bloom's grammar, and one of 20 MB.
    let key = k(0, "vb-chain");
    let fill = chunked(&["BF.MADD"], &key, 3000, 500);
    out.push(Filter::new(
        Kind::ValkeyBloom,
        key,
        &["BF.RESERVE", "0.01", "100", "EXPANSION", "2"],
        fill,
    ));
    let key = k(2, "vb-full");
    let fill = vec![with(sargs(&["BF.MADD", &key]), items(&key, 0, 40))];
    out.push(Filter::new(
        Kind::ValkeyBloom,
        key,
        &["BF.RESERVE", "0.001", "50", "NONSCALING"],
        fill,
    ));
    let key = k(3, "vb-seeded");
    let fill = chunked(&["BF.INSERT", "NOCREATE", "ITEMS"], &key, 400, 200);
    let create = format!(
        "BF.INSERT SEED {VB_SEED} CAPACITY 200 ERROR 0.005 TIGHTENING 0.6 EXPANSION 3 \
         ITEMS first second"
    );
    let create: Vec<&str> = create.split(' ').collect();
    out.push(Filter::new(Kind::ValkeyBloom, key, &create, fill));
    let key = k(1, "vb-big");
    let fill = vec![with(sargs(&["BF.MADD", &key]), items(&key, 0, 2000))];
    out.push(Filter::new(
        Kind::ValkeyBloom,
        key,
        &["BF.RESERVE", "0.001", "11000000"],
        fill,
    ));
    let key = k(2, "cf-compact");
    let fill = vec![with(
        sargs(&["CF.INSERT", &key, "ITEMS"]),
        items(&key, 0, 100),
    )];
    out.push(Filter::new(
        Kind::Cuckoo,
        key,
        &["CF.RESERVE", "64", "EXPANSION", "1"],
        fill,
    ));
    out
}

/// One write of the concurrent client, drawn for `f` (`n`: a counter that
/// keeps items fresh). CF.COMPACT only goes to the compact key: run while
/// the source pauses writes, it is skipped there (it may not replicate),
/// so its effect on the layout depends on timing. That key's deletions
/// take each filled item once (`deleted` counts them), so that no deletion
/// can remove another item's fingerprint.
fn draw(rng: &mut SmallRng, f: &Filter, n: usize, compact_key: &str, deleted: &mut usize) -> Args {
    let k = f.key.as_str();
    let fresh = || format!("w{n}").into_bytes();
    let old = |rng: &mut SmallRng| format!("{k}-{}", rng.gen_range(0..40)).into_bytes();
    if k == compact_key {
        return match rng.gen_range(0..4) {
            0 => sargs(&["CF.COMPACT", k]),
            1 if *deleted < 100 => {
                *deleted += 1;
                sargs(&["CF.DEL", k, &format!("{k}-{}", *deleted - 1)])
            }
            _ => with(sargs(&["CF.ADD", k]), vec![fresh()]),
        };
    }
    // valkey-bloom's filters take the same writes (their own type answers).
    match (f.kind, rng.gen_range(0..4)) {
        (Kind::Bloom | Kind::ValkeyBloom, 0) => with(sargs(&["BF.ADD", k]), vec![fresh()]),
        (Kind::Bloom | Kind::ValkeyBloom, 1) => {
            with(sargs(&["BF.MADD", k]), vec![fresh(), old(rng)])
        }
        (Kind::Bloom | Kind::ValkeyBloom, 2) => {
            with(sargs(&["BF.INSERT", k, "NOCREATE", "ITEMS"]), vec![fresh()])
        }
        (Kind::Bloom | Kind::ValkeyBloom, _) => with(sargs(&["BF.ADD", k]), vec![old(rng)]),
        (Kind::Cuckoo, 0) => with(sargs(&["CF.ADD", k]), vec![fresh()]),
        (Kind::Cuckoo, 1) => with(sargs(&["CF.ADDNX", k]), vec![fresh()]),
        (Kind::Cuckoo, 2) => with(sargs(&["CF.DEL", k]), vec![old(rng)]),
        (Kind::Cuckoo, _) => with(sargs(&["CF.INSERT", k, "ITEMS"]), vec![fresh(), old(rng)]),
        (Kind::Cms | Kind::Cmsw, 0 | 1) => incrby(k, vec![fresh()]),
        (Kind::Cms | Kind::Cmsw, _) => incrby(k, vec![old(rng), fresh()]),
        (Kind::Topk | Kind::Topkw, 0) => with(sargs(&["TOPK.ADD", k]), vec![fresh()]),
        (Kind::Topk | Kind::Topkw, 1) => {
            with(sargs(&["TOPK.INCRBY", k]), vec![old(rng), b"3".to_vec()])
        }
        (Kind::Topk | Kind::Topkw, _) => with(sargs(&["TOPK.ADD", k]), vec![old(rng), fresh()]),
        (Kind::Tdigest | Kind::TdigestWindow, _) => {
            with(sargs(&["TDIGEST.ADD", k]), values(n, rng.gen_range(1..4)))
        }
    }
}

/// A node's migration jobs, as field → value maps: Valkey's `CLUSTER
/// GETSLOTMIGRATIONS` or Redis's `CLUSTER MIGRATION STATUS ALL`.
fn jobs(kind: SlotMigration, port: u16) -> Vec<HashMap<String, String>> {
    let cmd: &[&str] = match kind {
        SlotMigration::MigrateSlots => &["CLUSTER", "GETSLOTMIGRATIONS"],
        SlotMigration::Migration => &["CLUSTER", "MIGRATION", "STATUS", "ALL"],
    };
    query(&mut client::connect(port), cmd)
}

/// A job's name in [`jobs`].
fn job_name(kind: SlotMigration, job: &HashMap<String, String>) -> String {
    let field = match kind {
        SlotMigration::MigrateSlots => "name",
        SlotMigration::Migration => "id",
    };
    job.get(field).cloned().unwrap_or_default()
}

/// How a migration ended, as the servers name the states.
#[derive(Clone, Copy, Debug)]
enum End {
    Completed,
    Cancelled,
}

/// One migration of slots `0..MIGRATED` from `source` to `target`.
struct Migration {
    kind: SlotMigration,
    source: u16,
    target: u16,
    /// Job names listed before it started: its own are the others.
    known: Vec<String>,
}

impl Migration {
    fn start(kind: SlotMigration, source: u16, target: u16) -> Migration {
        let known = [source, target]
            .iter()
            .flat_map(|&p| jobs(kind, p))
            .map(|j| job_name(kind, &j))
            .collect();
        common::cluster::start_slot_migration(kind, source, target, 0, MIGRATED - 1);
        Migration {
            kind,
            source,
            target,
            known,
        }
    }

    /// Holds the next hand-over (`true`) or lets it happen.
    fn hold(kind: SlotMigration, source: u16, on: bool) {
        let mut c = Conn::connect(source).expect("connect");
        let r = match (kind, on) {
            (SlotMigration::MigrateSlots, _) => c.cmd(&[
                "DEBUG",
                "SLOTMIGRATION",
                "PREVENT-PAUSE",
                if on { "1" } else { "0" },
            ]),
            // The source never reaches handoff-prep (its write pause).
            (SlotMigration::Migration, true) => c.cmd(&[
                "DEBUG",
                "ASM-FAILPOINT",
                "migrate-main-channel",
                "handoff-prep",
            ]),
            (SlotMigration::Migration, false) => c.cmd(&["DEBUG", "ASM-FAILPOINT", "", ""]),
        };
        assert_eq!(r, ok(), "hold {on}");
    }

    fn cancel(&self) {
        match self.kind {
            SlotMigration::MigrateSlots => {
                let r = Conn::connect(self.source)
                    .expect("connect")
                    .cmd(&["CLUSTER", "CANCELSLOTMIGRATIONS"]);
                assert_eq!(r, ok(), "CANCELSLOTMIGRATIONS");
            }
            SlotMigration::Migration => {
                let r = Conn::connect(self.target).expect("connect").cmd(&[
                    "CLUSTER",
                    "MIGRATION",
                    "CANCEL",
                    "ALL",
                ]);
                assert_eq!(r, int(1), "CLUSTER MIGRATION CANCEL");
            }
        }
    }

    /// Waits until both ends of the job show `end`.
    fn wait(&self, end: End) {
        let states: &[&str] = match (self.kind, end) {
            (SlotMigration::MigrateSlots, End::Completed) => &["success"],
            (SlotMigration::MigrateSlots, End::Cancelled) => &["cancelled", "failed"],
            (SlotMigration::Migration, End::Completed) => &["completed"],
            (SlotMigration::Migration, End::Cancelled) => &["canceled", "failed"],
        };
        for port in [self.source, self.target] {
            wait::until(
                &format!("the job on {port} in {states:?}"),
                wait::STATE,
                || {
                    let jobs = jobs(self.kind, port);
                    let new = jobs
                        .iter()
                        .find(|j| !self.known.contains(&job_name(self.kind, j)));
                    match new {
                        Some(j) if states.contains(&j["state"].as_str()) => Ok(()),
                        other => Err(format!("{other:?}")),
                    }
                },
            );
        }
    }
}

/// Per kind, in [`Kind::ALL`] order, the number in `INFO bf` field `pick`
/// of [`Kind::info_fields`].
fn bf_info(c: &mut Conn, pick: fn((String, String)) -> String) -> Vec<i64> {
    let text = info::text(c, "bf");
    Kind::ALL
        .iter()
        .map(|k| {
            let field = pick(k.info_fields());
            info::find(&text, &field)
                .unwrap_or_else(|| panic!("{field} in {text}"))
                .parse()
                .expect("number")
        })
        .collect()
}

/// Live values per kind on a node, in [`Kind::ALL`] order.
fn counts(c: &mut Conn) -> Vec<i64> {
    bf_info(c, |(keys, _)| keys)
}

/// Bytes of all values on a node.
fn bytes(c: &mut Conn) -> i64 {
    bf_info(c, |(_, memory)| memory).iter().sum()
}

fn count_of(fs: &[Filter]) -> Vec<i64> {
    Kind::ALL
        .iter()
        .map(|&k| fs.iter().filter(|f| f.kind == k).count() as i64)
        .collect()
}

/// Waits until the node's module counts `want` values of each family.
fn wait_counts(port: u16, want: &[i64], what: &str) {
    let mut c = Conn::connect(port).expect("connect");
    wait::until(what, wait::STATE, || match counts(&mut c) {
        got if got == want => Ok(()),
        got => Err(format!("values per family {got:?}, want {want:?}")),
    });
}

/// The source's fork count (`total_forks`).
fn forks(c: &mut Conn) -> u64 {
    info::num(c, "stats", "total_forks")
}

/// What a fork on a master does to its T-Digests (src/tdigest/forks.rs):
/// each with a merge pending is compressed, as `TDIGEST.CDF key 0` does.
fn fork_compressions(set: &[Filter]) -> Vec<Step> {
    set.iter()
        .filter(|f| f.kind == Kind::Tdigest)
        .map(|f| (sargs(&["TDIGEST.CDF", &f.key, "0"]), None))
        .collect()
}

/// The migrated keys of a snapshot, without `skip`.
fn only(
    mut snap: BTreeMap<Vec<u8>, KeySnap>,
    keep: &[Filter],
    skip: &str,
) -> BTreeMap<Vec<u8>, KeySnap> {
    snap.retain(|k, _| keep.iter().any(|f| f.key.as_bytes() == k) && k != skip.as_bytes());
    snap
}

/// Sets `bf.bloom-flavor` (the flavour of new Bloom filters) on every node.
fn set_flavour(ports: &[u16], flavour: &str) {
    for &p in ports {
        let mut c = Conn::connect(p).expect("connect");
        let r = c.cmd(&["CONFIG", "SET", "bf.bloom-flavor", flavour]);
        assert_eq!(r, ok(), "{p}: CONFIG SET bf.bloom-flavor {flavour}");
    }
}

/// `steps` between CONFIG SET bf.bloom-flavor valkey-bloom and back, for
/// the replay on a standalone server of the default flavour.
fn vb_flavoured(steps: Vec<Step>) -> Vec<Step> {
    let set = |f: &str| -> Step {
        (
            sargs(&["CONFIG", "SET", "bf.bloom-flavor", f]),
            Some(Ok(Value::Okay)),
        )
    };
    let mut out = vec![set("valkey-bloom")];
    out.extend(steps);
    out.push(set("redisbloom"));
    out
}

/// The creation of the valkey-bloom filter `key` as a client can send it,
/// read from its DUMP on `c` (the node that holds it): `BF.INSERT key
/// CAPACITY c ERROR e TIGHTENING t SEED s EXPANSION x|NONSCALING`, the form
/// a creation replicates as (docs/valkey-bloom.md §6), and its seed. `new`:
/// the filter must be as made, one sub-filter without items.
fn vb_creation(c: &mut Conn, key: &str, new: bool) -> (Args, Vec<u8>) {
    use common::dump::Prim;
    // The DUMP with raw strings, for common::dump::parse.
    let was = c.cmd(&["CONFIG", "GET", "rdbcompression"]).as_array()[1].clone();
    assert_eq!(c.cmd(&["CONFIG", "SET", "rdbcompression", "no"]), ok());
    let payload = c.cmd(&["DUMP", key]);
    let r = c.cmd(&[&b"CONFIG"[..], b"SET", b"rdbcompression", was.as_bytes()]);
    assert_eq!(r, ok());
    let (_, prims) = common::dump::parse(payload.as_bytes());
    // Sub-filters, expansion, fp, tightening, random flag; per sub-filter
    // its capacity, (the newest's) items and blob (its seed at 13..45).
    let (filters, expansion, fp, tightening, random, capacity, items, blob) = match prims.as_slice()
    {
        [Prim::U(n), Prim::U(x), Prim::D(fp), Prim::D(t), Prim::U(r), Prim::U(cap), rest @ ..] => {
            let (items, blob) = match rest {
                [Prim::U(i), Prim::S(b), ..] => (*i, b),
                [Prim::S(b), ..] => (0, b),
                _ => panic!("{key}: {:?}", &prims[..6]),
            };
            (*n, *x, *fp, *t, *r, *cap, items, blob)
        }
        _ => panic!("{key}: not a bloomfltr value"),
    };
    if new {
        assert_eq!((filters, items), (1, 0), "{key}: not new");
    }
    let seed = blob[13..45].to_vec();
    assert_eq!(
        random,
        u64::from(seed != VB_FIXED_SEED),
        "{key}: random flag"
    );
    let mut cmd = sargs(&["BF.INSERT", key]);
    for (name, value) in [
        ("CAPACITY", capacity.to_string()),
        ("ERROR", fp.to_string()),
        ("TIGHTENING", tightening.to_string()),
    ] {
        cmd.extend(sargs(&[name, &value]));
    }
    cmd.extend([b"SEED".to_vec(), seed.clone()]);
    if expansion == 0 {
        cmd.push(b"NONSCALING".to_vec());
    } else {
        cmd.extend(sargs(&["EXPANSION", &expansion.to_string()]));
    }
    (cmd, seed)
}

/// Sets the per-key limits of every family (`bf.max-key-memory`) and of
/// valkey-bloom's filters to their smallest (`on`: every growth and new
/// value refused to a client), or back to their defaults.
fn limit_writes(ports: &[u16], on: bool) {
    let limits = [
        ("bf.max-key-memory", if on { "1" } else { "0" }),
        (
            "bf.bloom-memory-usage-limit",
            if on { "1" } else { "134217728" },
        ),
    ];
    for &p in ports {
        let mut c = Conn::connect(p).expect("connect");
        for (name, value) in limits {
            assert_eq!(c.cmd(&["CONFIG", "SET", name, value]), ok(), "{p}: {name}");
        }
    }
}

/// Counts lines of the module's migration log in a server log.
fn logged(s: &Server, what: &str) -> usize {
    s.log()
        .lines()
        .filter(|l| l.contains("rsbloom: atomic slot migration") && l.contains(what))
        .count()
}

/// The writer thread: random writes to `set` through the cluster client
/// until `stop`; T-Digests only while `digests` is set. Each write with its
/// reply and the instant the reply came.
fn writer(
    client: redis::cluster::ClusterClient,
    set: Vec<Filter>,
    flags: Arc<(AtomicBool, AtomicBool)>,
    written: Arc<AtomicUsize>,
) -> thread::JoinHandle<Vec<(Args, Answer, Instant)>> {
    let compact_key = set.last().expect("compact key").key.clone();
    thread::spawn(move || {
        let (stop, digests) = (&flags.0, &flags.1);
        let mut c = client.get_connection().expect("cluster connection");
        let mut rng = SmallRng::seed_from_u64(12);
        let mut out: Vec<(Args, Answer, Instant)> = Vec::new();
        let mut deleted = 0;
        while !stop.load(Ordering::SeqCst) {
            let f = &set[rng.gen_range(0..set.len())];
            if f.kind == Kind::Tdigest && !digests.load(Ordering::SeqCst) {
                continue;
            }
            let cmd = draw(&mut rng, f, out.len(), &compact_key, &mut deleted);
            let r = answer(&mut c, &cmd);
            out.push((cmd, r, Instant::now()));
            written.store(out.len(), Ordering::SeqCst);
        }
        out
    })
}

struct Writes {
    flags: Arc<(AtomicBool, AtomicBool)>,
    written: Arc<AtomicUsize>,
}

impl Writes {
    fn reach(&self, n: usize) {
        wait::until(&format!("{n} writes"), wait::STATE, || {
            match self.written.load(Ordering::SeqCst) {
                w if w >= n => Ok(()),
                w => Err(format!("{w} writes")),
            }
        })
    }

    fn more(&self, n: usize) {
        self.reach(self.written.load(Ordering::SeqCst) + n)
    }

    /// Stops or resumes T-Digest writes; stopping returns once none is in
    /// flight (the write drawn before the flag changed has been answered).
    fn digests(&self, on: bool) {
        self.flags.1.store(on, Ordering::SeqCst);
        if !on {
            self.more(2);
        }
    }
}

/// Starts a migration while T-Digests are not written, and returns once the
/// source forked its snapshot (which compressed them) and when that was.
fn start_forked(
    kind: SlotMigration,
    source: u16,
    target: u16,
    writes: Option<&Writes>,
) -> (Migration, Instant) {
    writes.inspect(|w| w.digests(false));
    let mut src = Conn::connect(source).expect("connect");
    let before = forks(&mut src);
    let m = Migration::start(kind, source, target);
    wait::until(
        "the source forked its snapshot",
        wait::STATE,
        || match forks(&mut src) {
            n if n > before => Ok(()),
            n => Err(format!("{n} forks")),
        },
    );
    let forked = Instant::now();
    writes.inspect(|w| w.digests(true));
    (m, forked)
}

fn migration_test(flavor: Flavor, kind: SlotMigration) {
    let t0 = Instant::now();
    let cluster = Cluster::start(flavor, Module::Rsbloom);
    let ports = cluster.live_ports();
    if kind == SlotMigration::Migration {
        // Holds last seconds on a loaded machine: no buffer-drain timeout.
        for &p in &ports {
            let r = Conn::connect(p).expect("connect").cmd(&[
                "CONFIG",
                "SET",
                "cluster-slot-migration-sync-buffer-drain-timeout",
                "600000",
            ]);
            assert_eq!(r, ok());
        }
    }
    let masters = cluster.masters(ports[0]);
    let (&source, ranges) = masters
        .iter()
        .find(|(_, r)| r.iter().any(|&(s, _)| s == 0))
        .expect("owner of slot 0");
    let own_end = ranges.iter().find(|&&(s, _)| s == 0).expect("range").1;
    assert!(
        own_end > MIGRATED + 100,
        "slot range of the source {ranges:?}"
    );
    let target = *masters.keys().find(|&&p| p != source).expect("target");
    let target_replica = cluster.replica_of(target);
    let mut src = Conn::connect(source).expect("connect");
    let mut dst = Conn::connect(target).expect("connect");
    // Until the hand-over, the target only imports: it must obey the
    // stream (snapshot and forwarded writes) whatever its own limits.
    limit_writes(&[target, target_replica], true);

    // ---- Keys in the migrated slots, bystanders in the source's others.
    let set = filters(&tags(source, 0..MIGRATED, 8));
    let compact_key = set.last().expect("compact key").key.clone();
    let bystanders = small(&tags(source, MIGRATED..own_end, 2));
    let client = cluster.client();
    let mut c = client.get_connection().expect("cluster connection");
    let mut log: Vec<Step> = Vec::new();
    let valkey_bloom = |f: &&Filter| f.kind == Kind::ValkeyBloom;
    for f in set.iter().chain(&bystanders).filter(|f| !valkey_bloom(f)) {
        for cmd in std::iter::once(&f.create).chain(&f.fill) {
            let r = answer(&mut c, cmd);
            assert!(r.is_ok(), "{}: {r:?}", show(cmd));
            if set.iter().any(|s| s.key == f.key) {
                log.push((cmd.clone(), Some(r)));
            }
        }
    }
    // valkey-bloom's filters, made under its flavour on every node; the
    // replay makes each with the seed it got (or, given one, as it was made).
    set_flavour(&ports, "valkey-bloom");
    let mut seeds = Vec::new();
    for f in set.iter().filter(valkey_bloom) {
        let r = answer(&mut c, &f.create);
        assert!(r.is_ok(), "{}: {r:?}", show(&f.create));
        assert_eq!(src.cmd(&["TYPE", &f.key]), simple("bloomfltr"), "{}", f.key);
        let given = f.create.iter().any(|a| a == b"SEED");
        let (made, seed) = vb_creation(&mut src, &f.key, !given);
        if given {
            assert_eq!(seed, VB_SEED.as_bytes(), "{}: the given seed", f.key);
            log.extend(vb_flavoured(vec![(f.create.clone(), Some(r))]));
        } else {
            assert_ne!(seed, VB_FIXED_SEED, "{}: a random seed", f.key);
            assert!(!seeds.contains(&seed), "{}: a seed seen before", f.key);
            seeds.push(seed);
            log.extend(vb_flavoured(vec![(made, Some(Ok(Value::Array(vec![]))))]));
        }
    }
    set_flavour(&ports, "redisbloom");
    for f in set.iter().filter(valkey_bloom) {
        for cmd in &f.fill {
            let r = answer(&mut c, cmd);
            assert!(r.is_ok(), "{}: {r:?}", show(cmd));
            log.push((cmd.clone(), Some(r)));
        }
    }
    // Compressed now (a read does that), the digests stay as they are when
    // the first migration's fork comes.
    for (cmd, _) in fork_compressions(&set) {
        let r = answer(&mut c, &cmd);
        log.push((cmd, Some(r)));
    }
    for (cmd, _) in fork_compressions(&bystanders) {
        assert!(answer(&mut c, &cmd).is_ok());
    }
    let (want, by) = (count_of(&set), count_of(&bystanders));
    let all: Vec<i64> = want.iter().zip(&by).map(|(a, b)| a + b).collect();
    wait_counts(source, &all, "the source's keys");
    let before = snapshot(&mut src, true);

    // ---- A migration held before its hand-over, then cancelled.
    Migration::hold(kind, source, true);
    let (first, _) = start_forked(kind, source, target, None);
    // The target's module holds the imported values (invisible to clients).
    wait_counts(target, &want, "the imported keys on the target");
    wait_counts(
        target_replica,
        &want,
        "the imported keys on the target's replica",
    );
    first.cancel();
    first.wait(End::Cancelled);
    let none = vec![0; Kind::ALL.len()];
    wait_counts(target, &none, "the aborted import dropped on the target");
    wait_counts(
        target_replica,
        &none,
        "the aborted import dropped on the replica",
    );
    for node in [target, target_replica] {
        let b = bytes(&mut Conn::connect(node).expect("connect"));
        assert_eq!(b, 0, "{node}: bytes of the dropped import");
    }
    assert_same(&before, &snapshot(&mut src, true), "source after the abort");
    assert_eq!(dst.cmd(&["DBSIZE"]), int(0));
    for (node, what) in [(target, "import aborted"), (source, "export aborted")] {
        let n = cluster.node(node);
        wait::until(&format!("{what} logged"), wait::STATE, || {
            match logged(n, what) {
                1 => Ok(()),
                k => Err(format!("{k} lines")),
            }
        });
    }

    // ---- The migration, under writes from another client; held while the
    // target forks a snapshot, then let through.
    let writes = Writes {
        flags: Arc::new((AtomicBool::new(false), AtomicBool::new(true))),
        written: Arc::new(AtomicUsize::new(0)),
    };
    let moved_before = redirects(&[source]).moved;
    let handle = writer(
        client.clone(),
        set.clone(),
        writes.flags.clone(),
        writes.written.clone(),
    );
    writes.reach(WRITES_AROUND);
    let moving = bytes(&mut src);
    let started = Instant::now();
    let (second, forked) = start_forked(kind, source, target, Some(&writes));
    wait_counts(target, &want, "the imported keys on the target");
    // Importing digests get merges pending on the target, which then forks.
    writes.more(WRITES_AROUND);
    info::bgsave_and_wait(&mut dst);
    // From the hand-over on, the writer's writes are the target's own.
    limit_writes(&[target, target_replica], false);
    Migration::hold(kind, source, false);
    second.wait(End::Completed);
    let took = started.elapsed();
    let done = Instant::now();
    // Writes go on at the new owner.
    writes.more(WRITES_AROUND);
    writes.flags.0.store(true, Ordering::SeqCst);
    let written = handle.join().expect("writer thread");
    let during = written
        .iter()
        .filter(|(_, _, t)| *t >= started && *t <= done)
        .count();
    let moved = redirects(&[source]).moved - moved_before;
    assert!(moved > 0, "the writer was redirected to the new owner");
    // The non-scaling valkey-bloom filter filled up: later adds failed.
    let full = set
        .iter()
        .find(|f| f.key.ends_with(":vb-full"))
        .expect("vb-full");
    let refused = written
        .iter()
        .filter(|(a, _, _)| a[1] == full.key.as_bytes())
        .filter(|(_, r, _)| matches!(r, Err(e) if e.contains("non scaling filter is full")))
        .count();
    assert!(refused > 0, "{}: no add refused", full.key);

    // ---- The same commands on a standalone server: same replies, same keys.
    let at_fork = written
        .iter()
        .position(|(_, _, t)| *t > forked)
        .unwrap_or(written.len());
    let mut steps = written.into_iter().map(|(a, r, _)| (a, Some(r)));
    log.extend(steps.by_ref().take(at_fork));
    log.extend(fork_compressions(&set));
    log.extend(steps);
    let model = Server::start(flavor, Module::Rsbloom);
    let mut m = model.conn();
    let mut plain = client::connect(model.port);
    for (cmd, want) in &log {
        let got = answer(&mut plain, cmd);
        if let Some(want) = want {
            assert_eq!(&got, want, "{}: standalone vs cluster reply", show(cmd));
        }
    }
    cluster.wait_converged("cluster after the migration");
    for &p in &ports {
        let owner = cluster
            .masters(p)
            .into_iter()
            .find(|(_, r)| r.iter().any(|&(s, _)| s == 0));
        assert_eq!(
            owner.map(|(o, _)| o),
            Some(target),
            "owner of slot 0 as {p} sees it"
        );
    }
    let on_target = snapshot(&mut dst, true);
    assert_eq!(on_target.len(), set.len(), "keys on the target");
    for f in set.iter().filter(valkey_bloom) {
        let kind = &on_target[f.key.as_bytes()].kind;
        assert_eq!(kind, "bloomfltr", "{} on the target", f.key);
    }
    let moved_bytes = bytes(&mut dst);
    assert_same(
        &only(snapshot(&mut m, true), &set, &compact_key),
        &only(on_target, &set, &compact_key),
        "target vs the writes replayed",
    );
    check_compact_key(&log, &compact_key, &mut c);
    // The target's replica has the same keys, the compact key included.
    let mut r = Conn::connect(target_replica).expect("connect");
    assert_eq!(r.cmd(&["READONLY"]), ok());
    info::wait_replica_synced(&mut dst, &mut r);
    assert_same(
        &snapshot(&mut dst, true),
        &snapshot(&mut r, true),
        "target vs its replica",
    );
    // Nothing of the slots is left on the source; the bystanders stay, and
    // INFO bf stopped counting the moved keys as they left (issue 39).
    wait::until("the slots trimmed on the source", wait::STATE, || {
        let left: i64 = (0..MIGRATED)
            .map(|s| {
                src.cmd(&["CLUSTER", "COUNTKEYSINSLOT", &s.to_string()])
                    .as_int()
            })
            .sum();
        match left {
            0 => Ok(()),
            n => Err(format!("{n} keys left in the slots")),
        }
    });
    assert_eq!(counts(&mut src), by, "INFO bf on the trimmed source");
    let left: Vec<Vec<u8>> = snapshot(&mut src, false).into_keys().collect();
    let mut want_left: Vec<Vec<u8>> = bystanders
        .iter()
        .map(|f| f.key.clone().into_bytes())
        .collect();
    want_left.sort();
    assert_eq!(left, want_left, "keys left on the source");
    for (node, what) in [
        (source, "export started"),
        (source, "export completed"),
        (target, "import started"),
        (target, "import completed"),
    ] {
        assert!(logged(cluster.node(node), what) >= 1, "{what} on {node}");
    }
    for n in &cluster.nodes {
        n.check_log();
    }
    eprintln!(
        "{flavor:?}: migrated {} keys ({:?} Bloom, Cuckoo, CMS, Top-K, T-Digest, \
         valkey-bloom; source {moving} bytes with bystanders at the start, target \
         {moved_bytes} bytes after) in {took:?} with {during} writes during the migration \
         ({} commands in all, {refused} refused by the full valkey-bloom filter); test took {:?}",
        set.len(),
        want,
        log.len(),
        t0.elapsed()
    );
}

/// The compact key (whose layout depends on which CF.COMPACT ran): every
/// item added and not deleted is still found.
fn check_compact_key(log: &[Step], compact_key: &str, c: &mut dyn ConnectionLike) {
    let mut live: HashMap<Vec<u8>, i64> = HashMap::new();
    for (cmd, r) in log {
        if cmd.get(1).map(Vec::as_slice) != Some(compact_key.as_bytes()) {
            continue;
        }
        match (cmd[0].as_slice(), r) {
            (b"CF.ADD", Some(Ok(Value::Int(1)))) => *live.entry(cmd[2].clone()).or_default() += 1,
            (b"CF.DEL", Some(Ok(Value::Int(1)))) => *live.entry(cmd[2].clone()).or_default() -= 1,
            (b"CF.INSERT", Some(Ok(Value::Array(_)))) => {
                for it in &cmd[3..] {
                    *live.entry(it.clone()).or_default() += 1;
                }
            }
            _ => {}
        }
    }
    for (it, n) in live.iter().filter(|(_, &n)| n > 0) {
        let count: i64 = query(c, &[b"CF.COUNT", compact_key.as_bytes(), it]);
        assert!(
            count >= *n,
            "{compact_key} {:?}: CF.COUNT {count}",
            String::from_utf8_lossy(it)
        );
    }
}

fn show(cmd: &Args) -> String {
    common::diff::show_args(&cmd[..cmd.len().min(3)])
}

#[test]
fn atomic_slot_migration_under_writes() {
    let asm: Vec<(Flavor, SlotMigration)> = flavors()
        .into_iter()
        .filter_map(|f| f.slot_migration().map(|k| (f, k)))
        .collect();
    if asm.is_empty() {
        eprintln!("no selected server has atomic slot migration: skipped");
    }
    for (flavor, kind) in asm {
        migration_test(flavor, kind);
    }
}
