//! docs/differences.md §1, Cuckoo items 1–7, 12, 14, 15: inputs that crash or corrupt
//! RedisBloom must get an error reply (or the correct result) here, and the
//! server must stay alive (PING after every case; the harness also fails a
//! test whose server log shows a crash or a caught panic).
use common::dump::{self, Prim, CF_MODULE_ID};
use common::filters::cf_header;
use common::*;

fn loadchunk(c: &mut Conn, key: &str, pos: u64, data: &[u8]) -> Reply {
    c.cmd(&args!["CF.LOADCHUNK", key, pos.to_string(), data])
}

fn scandump(c: &mut Conn, key: &str, pos: u64) -> (i64, Vec<u8>) {
    let r = c.cmd(&args!["CF.SCANDUMP", key, pos.to_string()]);
    let a = r.as_array();
    let data = match &a[1] {
        Reply::Nil | Reply::Null => Vec::new(),
        d => d.as_bytes().to_vec(),
    };
    (a[0].as_int(), data)
}

/// The primitives of a version-4 cuckoo value with the given sub-filters.
fn cf_prims(buckets: u64, bs: u64, x: u64, subs: &[(u64, Vec<u8>)]) -> Vec<Prim> {
    let mut p = vec![
        Prim::U(subs.len() as u64),
        Prim::U(buckets),
        Prim::U(1),
        Prim::U(0),
        Prim::U(bs),
        Prim::U(20),
        Prim::U(x),
    ];
    for (n, data) in subs {
        p.push(Prim::U(*n));
        p.push(Prim::S(data.clone()));
    }
    p
}

/// RDB version this server writes into DUMP payloads.
fn server_rdb_version(c: &mut Conn) -> u16 {
    assert_eq!(line(c, "CF.RESERVE probe 4"), ok());
    let payload = c.cmd(&["DUMP", "probe"]).as_bytes().to_vec();
    assert_eq!(line(c, "DEL probe"), int(1));
    dump::rdb_version(&payload)
}

fn restore(c: &mut Conn, key: &str, prims: &[Prim], version: u16) -> Reply {
    let payload = dump::payload(CF_MODULE_ID, prims, version);
    c.cmd(&args!["RESTORE", key, "0", payload])
}

fn assert_bad_payload(r: &Reply, what: &str) {
    assert!(
        r.is_error() && r.error_text().contains("Bad data format"),
        "{what}: {r:?}"
    );
}

// ---------------------------------------------------------------- helpers' own checks

#[test]
fn dump_helpers_reproduce_genuine_payloads() {
    assert_eq!(dump::crc64(b"123456789"), 0xe9c6d914c4b8d9ca);
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        assert_eq!(line(&mut c, "CONFIG SET rdbcompression no"), ok());
        // docs/cuckoo.md §13 example: CF.RESERVE cf 8 EXPANSION 2 + 20 adds + 1 delete.
        assert_eq!(line(&mut c, "CF.RESERVE cf 8 EXPANSION 2"), ok());
        for i in 0..20 {
            assert_eq!(line(&mut c, &format!("CF.ADD cf {i}")), int(1));
        }
        assert_eq!(line(&mut c, "CF.DEL cf 3"), int(1));
        let genuine = c.cmd(&["DUMP", "cf"]).as_bytes().to_vec();
        assert!(dump::crc_ok(&genuine));
        let (id, prims) = dump::parse(&genuine);
        assert_eq!(id, CF_MODULE_ID);
        assert_eq!(prims[..7], [2, 4, 19, 1, 2, 20, 2].map(Prim::U));
        assert_eq!(prims[7], Prim::U(4));
        assert_eq!(prims[9], Prim::U(8));
        let rebuilt = dump::payload(CF_MODULE_ID, &prims, dump::rdb_version(&genuine));
        assert_eq!(rebuilt, genuine, "{flavor:?}");
        // A crafted but valid payload restores to the same filter.
        assert_eq!(c.cmd(&args!["RESTORE", "copy", "0", rebuilt]), ok());
        assert_eq!(
            c.cmd(&["CF.DEBUG", "copy"]),
            c.cmd(&["CF.DEBUG", "cf"]),
            "{flavor:?}"
        );
        // A patched byte without a CRC fix is refused by the server itself.
        let mut patched = genuine.clone();
        patched[20] ^= 1;
        assert!(c
            .cmd(&args!["RESTORE", "x", "0", patched.clone()])
            .is_error());
        dump::fix_crc(&mut patched);
        assert!(dump::crc_ok(&patched));
    }
}

// ---------------------------------------------------------------- item 1

#[test]
fn item1_option_word_as_last_argument() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        for opt in ["MAXITERATIONS", "BUCKETSIZE", "EXPANSION"] {
            let r = line(&mut c, &format!("CF.RESERVE k 100 x {opt}"));
            assert_eq!(r, err(&format!("Couldn't parse {opt}")), "{flavor:?}");
            alive(&mut c);
        }
        assert_eq!(line(&mut c, "EXISTS k"), int(0));
    }
}

// ---------------------------------------------------------------- items 2, 3, 5 (RDB)

#[test]
fn item2_rdb_buffer_length_mismatch_fails_the_load() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let v = server_rdb_version(&mut c);
        // Control: 4 buckets × 2 = 8 bytes is accepted.
        let good = cf_prims(4, 2, 1, &[(4, vec![0; 8])]);
        assert_eq!(restore(&mut c, "good", &good, v), ok());
        for (what, subs) in [
            ("short buffer", vec![(4, vec![0; 7])]),
            ("long buffer", vec![(4, vec![0; 9])]),
            ("empty buffer", vec![(4, vec![])]),
            (
                "second sub-filter short",
                vec![(4, vec![0; 8]), (4, vec![0; 4])],
            ),
            ("bucket count not the grown one", vec![(8, vec![0; 16])]),
        ] {
            let r = restore(&mut c, "bad", &cf_prims(4, 2, 1, &subs), v);
            assert_bad_payload(&r, what);
            alive(&mut c);
        }
        assert_eq!(line(&mut c, "EXISTS bad"), int(0));
        assert_eq!(line(&mut c, "CF.ADD good x"), int(1));
    }
}

#[test]
fn item3_rdb_parameters_are_validated() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let v = server_rdb_version(&mut c);
        for (what, prims) in [
            ("bucket size 0", cf_prims(4, 0, 1, &[(4, vec![])])),
            ("bucket size 256", cf_prims(1, 256, 1, &[(1, vec![0; 256])])),
            ("6 buckets", cf_prims(6, 2, 1, &[(6, vec![0; 12])])),
            ("0 buckets", cf_prims(0, 2, 1, &[(0, vec![])])),
            ("no sub-filter", cf_prims(4, 2, 1, &[])),
            ("max iterations 0", {
                let mut p = cf_prims(4, 2, 1, &[(4, vec![0; 8])]);
                p[5] = Prim::U(0);
                p
            }),
            // Item 5 through RDB: sub-filters of 4, 12, 36 buckets.
            (
                "expansion 3",
                cf_prims(
                    4,
                    1,
                    3,
                    &[(4, vec![0; 4]), (12, vec![0; 12]), (36, vec![0; 36])],
                ),
            ),
            (
                "truncated",
                cf_prims(4, 2, 1, &[(4, vec![0; 8])])[..7].to_vec(),
            ),
        ] {
            let r = restore(&mut c, "bad", &prims, v);
            assert_bad_payload(&r, what);
            alive(&mut c);
            // The crash of RedisBloom came with the next insert.
            assert_eq!(line(&mut c, "CF.ADD bad x"), int(1), "{what}");
            assert_eq!(line(&mut c, "DEL bad"), int(1));
        }
    }
}

// ---------------------------------------------------------------- items 4, 5 (LOADCHUNK header)

#[test]
fn item4_zero_bucket_sub_filter_header_is_rejected() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let r = loadchunk(&mut c, "z", 1, &cf_header(1, 4, 0, 2, 2, 20, 0));
        assert_eq!(r, err("Couldn't create filter!"));
        alive(&mut c);
        assert_eq!(line(&mut c, "CF.EXISTS z x"), int(0));
        assert_eq!(line(&mut c, "EXISTS z"), int(0));
        // One sub-filter with expansion 0 is a legitimate non-scaling filter.
        assert_eq!(
            loadchunk(&mut c, "z", 1, &cf_header(1, 4, 0, 1, 2, 20, 0)),
            ok()
        );
        assert_eq!(line(&mut c, "CF.EXISTS z x"), int(0));
    }
}

#[test]
fn item5_non_power_of_two_growth_header_is_rejected() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        for x in [3, 5, 6, 100, 32767] {
            let r = loadchunk(&mut c, "p", 1, &cf_header(1, 4, 0, 3, 2, 20, x));
            assert_eq!(r, err("Couldn't create filter!"), "expansion {x}");
            alive(&mut c);
        }
        assert_eq!(line(&mut c, "EXISTS p"), int(0));
        assert_eq!(
            loadchunk(&mut c, "p", 1, &cf_header(1, 4, 0, 3, 2, 20, 4)),
            ok()
        );
        // 4 + 16 + 64 buckets of 2 slots.
        let r = c.cmd(&["CF.INFO", "p"]);
        assert_eq!(r.as_array()[1], int(40 + 16 * 3 + 168));
    }
}

// ---------------------------------------------------------------- item 6

/// An 8 GiB sub-filter (numBuckets 2^33, bucket size 1). The fingerprint of
/// `t2` (208) belongs at byte 4874832503; RedisBloom's 32-bit truncation puts
/// it at 579865207. The allocation is lazily zeroed where the server has
/// try-calloc (Redis ≥ 7.4, Valkey) and written out otherwise: on Redis 7.0
/// that takes 8 GiB of RAM and ~20 s on the test machine, so it runs on the
/// newest two servers only (the filter code is the same on all).
#[test]
fn item6_slot_offsets_beyond_4_gib() {
    const RIGHT: u64 = 4874832503;
    const TRUNCATED: u64 = 579865207;
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let r = loadchunk(&mut c, "t", 1, &cf_header(0, 1 << 33, 0, 1, 1, 20, 1));
        assert_eq!(r, ok(), "{flavor:?}: 8 GiB header");
        assert_eq!(line(&mut c, "CF.ADD t t2"), int(1));
        let (next, data) = scandump(&mut c, "t", RIGHT + 1);
        assert_eq!(next as u64, RIGHT + 1 + (16 << 20));
        assert_eq!(data[0], 208, "{flavor:?}: fingerprint at its 64-bit offset");
        let (_, data) = scandump(&mut c, "t", TRUNCATED + 1);
        assert_eq!(data[0], 0, "{flavor:?}: nothing at the truncated offset");
        assert_eq!(line(&mut c, "CF.EXISTS t t2"), int(1));
        assert_eq!(line(&mut c, "CF.COUNT t t2"), int(1));
        assert_eq!(line(&mut c, "CF.ADDNX t t2"), int(0));
        assert_eq!(line(&mut c, "CF.DEL t t2"), int(1));
        assert_eq!(line(&mut c, "CF.EXISTS t t2"), int(0));
        alive(&mut c);
        assert_eq!(line(&mut c, "DEL t"), int(1));
    }
}

// ---------------------------------------------------------------- item 7

#[test]
fn item7_loadchunk_past_the_end_is_refused() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        // `CF.RESERVE k 100`'s 128 slots, counting 3 items for the chunks below.
        let header = filters::cf_header(3, 64, 0, 1, 2, 20, 1);
        assert_eq!(loadchunk(&mut c, "k", 1, &header), ok());
        assert_eq!(line(&mut c, "CF.ADD k x"), int(1));
        let before = filters::scandump_with_end(&mut c, Fam::Cf, "k").0;
        assert_eq!(before[1].1.len(), 128);
        for (pos, data) in [
            (203, &b"dd"[..]),
            (131, b"dd"),
            (130, b"ddd"),
            (1 << 40, b"d"),
        ] {
            let r = loadchunk(&mut c, "k", pos, data);
            assert_eq!(r, err("Couldn't load chunk!"), "pos {pos}");
            alive(&mut c);
        }
        assert_eq!(filters::scandump_with_end(&mut c, Fam::Cf, "k").0, before);
        // The last two bytes are still writable.
        assert_eq!(loadchunk(&mut c, "k", 129, b"dd"), ok());
        assert_eq!(
            &filters::scandump_with_end(&mut c, Fam::Cf, "k").0[1].1[126..],
            b"dd"
        );
    }
}

// ---------------------------------------------------------------- item 12, 15

/// Caps the server's address space at its current size plus `extra` bytes,
/// so that big allocations fail instead of succeeding on a large machine.
fn limit_address_space(c: &mut Conn, extra: u64) {
    let pid: i32 = info::num(c, "server", "process_id");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let vm_kib: u64 = info::find(&status, "VmSize")
        .unwrap()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    let lim = libc::rlimit64 {
        rlim_cur: vm_kib * 1024 + extra,
        rlim_max: libc::RLIM64_INFINITY,
    };
    // SAFETY: plain syscall on a child process we started.
    let rc = unsafe { libc::prlimit64(pid, libc::RLIMIT_AS, &lim, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "prlimit on the server");
}

const GIB: u64 = 1 << 30;

#[test]
fn item12_creation_from_untrusted_sizes_fails_cleanly() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let v = server_rdb_version(&mut c);
        limit_address_space(&mut c, GIB);
        // Header sizes: 2^55 buckets × 255 and 8 GiB.
        for h in [
            cf_header(1, 1 << 55, 0, 1, 255, 20, 1),
            cf_header(1, 1 << 30, 0, 1, 8, 20, 1),
        ] {
            assert_eq!(
                loadchunk(&mut c, "h", 1, &h),
                err("Couldn't create filter!")
            );
            alive(&mut c);
        }
        // 2 GiB of buckets from CF.RESERVE and from auto-creation.
        let oom = err("ERR Insufficient memory to create filter");
        assert_eq!(line(&mut c, "CF.RESERVE r 1073741824 BUCKETSIZE 255"), oom);
        config_set(&mut c, "cf-initial-size", "1073741824");
        config_set(&mut c, "cf-bucket-size", "255");
        for cmd in [
            "CF.ADD a x",
            "CF.ADDNX a x",
            "CF.INSERT a ITEMS x",
            "CF.INSERTNX a ITEMS x",
        ] {
            assert_eq!(line(&mut c, cmd), oom, "{cmd}");
            alive(&mut c);
        }
        assert_eq!(line(&mut c, "EXISTS h r a"), int(0));
        // RDB: a huge declared sub-filter with a short buffer.
        let prims = cf_prims(1 << 40, 1, 1, &[(1 << 40, vec![0; 8])]);
        let r = restore(&mut c, "rdb", &prims, v);
        assert_bad_payload(&r, "2^40 buckets");
        alive(&mut c);
    }
}

/// A filter whose only sub-filter (2^20 buckets × 8 slots) is full and whose
/// next one would need 2^35 × 8 bytes (256 GiB): growth must fail.
fn full_filter_that_cannot_grow(c: &mut Conn, key: &str) {
    limit_address_space(c, GIB);
    let h = cf_header(8 << 20, 1 << 20, 0, 1, 8, 20, 32768);
    assert_eq!(loadchunk(c, key, 1, &h), ok());
    assert_eq!(loadchunk(c, key, (8 << 20) + 1, &vec![1u8; 8 << 20]), ok());
}

#[test]
fn item12_growth_allocation_failure_is_an_outcome() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        full_filter_that_cannot_grow(&mut c, "g");
        assert_eq!(line(&mut c, "CF.ADD g x"), err("ERR Insufficient memory"));
        assert_eq!(line(&mut c, "CF.ADDNX g x"), err("ERR Insufficient memory"));
        alive(&mut c);
        let r = c.cmd(&["CF.INFO", "g"]);
        assert_eq!(r.as_array()[5], int(1), "still one sub-filter");
        assert_eq!(r.as_array()[7], int(8 << 20), "no item counted");
    }
}

#[test]
fn item15_memory_failure_elements_are_8x_replies() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        full_filter_that_cannot_grow(&mut c, "g");
        // No `Memory allocation failure` element: -1 / false, and the
        // command goes on with the next item.
        assert_eq!(
            line(&mut c, "CF.INSERT g ITEMS x y"),
            arr(vec![int(-1), int(-1)])
        );
        assert_eq!(line(&mut c, "CF.INSERTNX g ITEMS x"), arr(vec![int(-1)]));
        let mut c3 = s.conn3();
        assert_eq!(
            line(&mut c3, "CF.INSERT g ITEMS x y"),
            arr(vec![Reply::Bool(false), Reply::Bool(false)])
        );
        assert_eq!(line(&mut c3, "CF.INSERTNX g ITEMS x"), arr(vec![int(-1)]));
        alive(&mut c);
    }
}

// ---------------------------------------------------------------- item 14

#[test]
fn item14_loadchunk_data_chunks_reach_the_replica() {
    for flavor in all_flavors() {
        let master = Server::start(flavor, Module::Rsbloom);
        let replica = master.start_replica();
        let mut rc = replica.conn();

        let mut c = master.conn();
        assert_eq!(line(&mut c, "CF.RESERVE src 64 EXPANSION 2"), ok());
        let items: Vec<String> = (0..300).map(|i| format!("i{i}")).collect();
        let mut cmd = vec!["CF.INSERT".to_string(), "src".into(), "ITEMS".into()];
        cmd.extend(items.iter().cloned());
        assert_eq!(c.cmd(&cmd).as_array().len(), 300);
        let dump = filters::scandump_with_end(&mut c, Fam::Cf, "src").0;
        assert!(dump.len() >= 3);
        for (pos, data) in &dump {
            assert_eq!(loadchunk(&mut c, "dst", *pos as u64, data), ok());
        }
        assert_eq!(c.cmd(&["WAIT", "1", "5000"]), int(1));
        let on_replica = filters::scandump_with_end(&mut rc, Fam::Cf, "dst").0;
        assert_eq!(on_replica, dump, "{flavor:?}");
        assert!(on_replica[1..]
            .iter()
            .any(|(_, d)| d.iter().any(|&b| b != 0)));
        let mut exists = vec!["CF.MEXISTS".to_string(), "dst".into()];
        exists.extend(items);
        assert_eq!(rc.cmd(&exists), arr(vec![int(1); 300]));
        alive(&mut rc);
    }
}
