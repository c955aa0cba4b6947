//! What rsbloom adds over RedisBloom: COPY, DEBUG DIGEST, lazy free of large
//! filters, keyspace notifications, the INFO section, active defrag, the
//! `bf.huge-pages` setting.
use common::*;

/// A Bloom filter with a few links and a grown cuckoo filter with deletes.
fn populate(c: &mut Conn) {
    assert_eq!(c.cmd(&["BF.RESERVE", "bf", "0.01", "50"]), ok());
    assert_eq!(c.cmd(&["CF.RESERVE", "cf", "64", "BUCKETSIZE", "2"]), ok());
    let adds: Vec<Vec<String>> = (0..300)
        .flat_map(|i| {
            let item = format!("item{i}");
            [
                vec!["BF.ADD".into(), "bf".into(), item.clone()],
                vec!["CF.ADD".into(), "cf".into(), item],
            ]
        })
        .collect();
    for r in c.pipeline(&adds) {
        assert!(!r.is_error());
    }
    assert_eq!(c.cmd(&["CF.DEL", "cf", "item7"]), int(1));
}

/// Turns module keyspace events on (`d`) and returns a connection
/// subscribed to every keyspace event of db 0.
fn subscribe_keyspace(s: &Server, c: &mut Conn) -> Conn {
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEd$"]),
        ok()
    );
    let mut sub = s.conn();
    sub.cmd(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    sub
}

/// The next event is write `w`'s: on its key (`w[1]`), named after its
/// command in lower case.
fn assert_event(sub: &mut Conn, w: &[&str]) {
    let msg = sub.read();
    let parts = msg.as_array();
    assert_eq!(parts[0], bulk("pmessage"), "{w:?}: {msg:?}");
    assert_eq!(
        parts[2],
        bulk(format!("__keyspace@0__:{}", w[1])),
        "{w:?}: {msg:?}"
    );
    assert_eq!(parts[3], bulk(w[0].to_lowercase()), "{w:?}");
}

/// `cmds` (reads and failed writes) publish nothing: the next event is
/// that of a SET sent after them.
fn assert_silent(c: &mut Conn, sub: &mut Conn, cmds: &[&[&str]]) {
    for cmd in cmds {
        c.cmd(cmd);
    }
    c.cmd(&["SET", "marker", "1"]);
    let msg = sub.read();
    assert_eq!(msg.as_array()[3], bulk("set"), "{msg:?}");
}

/// COPY of `key` to `copy` has the same DUMP and DEBUG DIGEST-VALUE (not
/// the empty digest); `write` on the copy changes the copy's digest only;
/// DEBUG RELOAD keeps the original's and the dataset's digest. Returns the
/// original's digest.
fn assert_copy_diverges(c: &mut Conn, key: &str, copy: &str, write: &[&str]) -> Reply {
    let digest = |c: &mut Conn, k: &str| c.cmd(&["DEBUG", "DIGEST-VALUE", k]).as_array()[0].clone();
    let d = digest(c, key);
    assert_ne!(d, bulk("0".repeat(40)));
    assert_eq!(c.cmd(&["COPY", key, copy]), int(1));
    assert_eq!(c.cmd(&["DUMP", key]), c.cmd(&["DUMP", copy]));
    assert_eq!(digest(c, copy), d, "equal values digest equal");
    assert!(!c.cmd(write).is_error(), "{write:?}");
    assert_ne!(digest(c, copy), d);
    assert_eq!(digest(c, key), d);
    let all = c.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), ok());
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), all);
    assert_eq!(digest(c, key), d);
    d
}

#[test]
fn copy_makes_an_independent_identical_filter() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        populate(&mut c);
        for (key, fam, add, exists) in [
            ("bf", Fam::Bf, "BF.ADD", "BF.EXISTS"),
            ("cf", Fam::Cf, "CF.ADD", "CF.EXISTS"),
        ] {
            let copy = format!("{key}-copy");
            assert_eq!(c.cmd(&["COPY", key, &copy]), int(1), "{flavor:?} {key}");
            assert_eq!(
                filters::scandump_with_end(&mut c, fam, key),
                filters::scandump_with_end(&mut c, fam, &copy)
            );
            assert_eq!(c.cmd(&["DUMP", key]), c.cmd(&["DUMP", &copy]));
            // Independent: writing the copy leaves the original alone.
            c.cmd(&[add, &copy, "only-in-copy"]);
            assert_eq!(c.cmd(&[exists, &copy, "only-in-copy"]).as_int(), 1);
            assert_eq!(c.cmd(&[exists, key, "only-in-copy"]).as_int(), 0);
            assert_ne!(c.cmd(&["DUMP", key]), c.cmd(&["DUMP", &copy]));
            c.cmd(&["DEL", key]);
            assert_eq!(c.cmd(&[exists, &copy, "item1"]).as_int(), 1);
        }
    }
}

#[test]
fn debug_digest_tracks_content() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        populate(&mut c);
        let empty = c.cmd(&["DEBUG", "DIGEST"]);
        for key in ["bf", "cf"] {
            let d1 = c.cmd(&["DEBUG", "DIGEST-VALUE", key]);
            assert_ne!(
                d1.as_array()[0],
                bulk("0000000000000000000000000000000000000000")
            );
            c.cmd(&["COPY", key, "twin"]);
            assert_eq!(
                c.cmd(&["DEBUG", "DIGEST-VALUE", "twin"]),
                d1,
                "equal values digest equal"
            );
            c.cmd(&["DEL", "twin"]);
        }
        let before = c.cmd(&["DEBUG", "DIGEST-VALUE", "bf", "cf"]);
        c.cmd(&["BF.ADD", "bf", "new-item"]);
        c.cmd(&["CF.ADD", "cf", "new-item"]);
        let after = c.cmd(&["DEBUG", "DIGEST-VALUE", "bf", "cf"]);
        assert_ne!(before.as_array()[0], after.as_array()[0]);
        assert_ne!(before.as_array()[1], after.as_array()[1]);
        assert_ne!(c.cmd(&["DEBUG", "DIGEST"]), empty);
        // A reload keeps the digest: it covers exactly the persisted form.
        assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), ok());
        assert_eq!(c.cmd(&["DEBUG", "DIGEST-VALUE", "bf", "cf"]), after);
    }
}

/// CPU time the server's main thread has run so far, in microseconds
/// (schedstat): unlike SLOWLOG's wall time, it does not grow while the
/// thread waits for a core of a loaded machine.
fn main_thread_cpu_us(c: &mut Conn) -> i64 {
    let pid = info::field(c, "server", "process_id");
    let path = format!("/proc/{pid}/task/{pid}/schedstat");
    let stat = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let ns: i64 = stat
        .split_whitespace()
        .next()
        .and_then(|ns| ns.parse().ok())
        .unwrap_or_else(|| panic!("{path}: {stat}"));
    ns / 1000
}

/// Creates a ~1.05 GiB filter (docs/bloom.md §3: 300M entries at 1e-6), touches
/// every page, UNLINKs it and returns the main thread's CPU time for it (and
/// the INFO that reads it).
fn unlink_huge_filter(c: &mut Conn) -> i64 {
    assert_eq!(
        c.cmd(&["BF.RESERVE", "huge", "0.000001", "300000000", "NONSCALING"]),
        ok()
    );
    let size = c.cmd(&["BF.INFO", "huge", "SIZE"]).as_array()[0].as_int();
    assert!(size > 1 << 30, "{size}");
    // 20 000 items x 21 probes hit every 4 KiB page, so the memory is resident.
    let script = "for i=1,20000 do redis.call('BF.ADD','huge',i) end";
    c.cmd(&["EVAL", script, "0"]);
    assert!(info::used_memory::<i64>(c) > 1 << 30);
    let before = main_thread_cpu_us(c);
    assert_eq!(c.cmd(&["UNLINK", "huge"]), int(1));
    let us = main_thread_cpu_us(c) - before;
    wait::until(
        "the memory released",
        wait::STATE,
        || match info::used_memory::<i64>(c) {
            m if m > 1 << 28 => Err(format!("used_memory {m}")),
            _ => Ok(()),
        },
    );
    us
}

#[test]
fn unlink_of_a_1gib_filter_frees_in_the_background() {
    let flavor = flavors()[0];
    let s = Server::start(flavor, Module::Rsbloom);
    let mut c = s.conn();
    // Median of three; a synchronous free of the 1 GiB takes tens of ms.
    let mut times: Vec<i64> = (0..3).map(|_| unlink_huge_filter(&mut c)).collect();
    times.sort();
    assert!(times[1] < 2_000, "UNLINK main-thread CPU {times:?} µs");
    // DEL still works (small filters are freed synchronously).
    c.cmd(&["BF.ADD", "small", "x"]);
    assert_eq!(c.cmd(&["DEL", "small"]), int(1));
    assert_eq!(c.cmd(&["EXISTS", "small"]), int(0));
}

/// (thread id, name, `Cpus_allowed_list`) of each thread of process `pid`.
fn thread_cpus(pid: &str) -> Vec<(String, String, String)> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("/proc");
    tasks
        .flatten()
        .filter_map(|t| {
            let read = |file| std::fs::read_to_string(t.path().join(file)).ok();
            let name = read("comm")?.trim_end().to_string();
            let status = read("status")?;
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
            let tid = t.file_name().to_string_lossy().into_owned();
            Some((tid, name, cpus.trim().to_string()))
        })
        .collect()
}

/// The thread that releases large values runs on the cores of the server's
/// own lazy-free thread (`bio_cpulist`), not on those the main thread is
/// pinned to (`server_cpulist`), from which it is started.
#[test]
fn release_thread_runs_where_the_server_frees() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    for flavor in flavors() {
        for (main, bio) in [("0", "1"), ("1", "0")] {
            let s = Server::builder(flavor, Module::Rsbloom)
                .arg("--server_cpulist")
                .arg(main)
                .arg("--bio_cpulist")
                .arg(bio)
                .start();
            let mut c = s.conn();
            let pid = info::field(&mut c, "server", "process_id");
            // 20 MiB: released on the module's thread (over 4 MiB).
            assert_eq!(c.cmd(&["BF.RESERVE", "big", "0.0001", "10000000"]), ok());
            assert_eq!(c.cmd(&["UNLINK", "big"]), int(1));
            wait::until("the release thread on the bio cores", wait::STATE, || {
                let threads = thread_cpus(&pid);
                let on =
                    |name: &str, cpus: &str| threads.iter().any(|(_, n, c)| n == name && c == cpus);
                let main_pinned = threads.iter().any(|(t, _, c)| *t == pid && c == main);
                match main_pinned && on("bio_lazy_free", bio) && on("rsbloom-free", bio) {
                    true => Ok(()),
                    false => Err(format!("{flavor:?} {threads:?}")),
                }
            });
        }
    }
}

#[test]
fn info_section_counts_keys_memory_and_commands() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let field = |c: &mut Conn, name: &str| info::field(c, "bf", name);
        assert_eq!(field(&mut c, "bf_version"), env!("CARGO_PKG_VERSION"));
        assert_eq!(field(&mut c, "bf_bloom_keys"), "0");
        populate(&mut c);
        let bf_size = c.cmd(&["BF.INFO", "bf", "SIZE"]).as_array()[0].as_int();
        let cf_size = c.cmd(&["CF.INFO", "cf"]).as_array()[1].as_int();
        assert_eq!(field(&mut c, "bf_bloom_keys"), "1");
        assert_eq!(field(&mut c, "bf_bloom_memory"), bf_size.to_string());
        assert_eq!(field(&mut c, "bf_cuckoo_keys"), "1");
        assert_eq!(field(&mut c, "bf_cuckoo_memory"), cf_size.to_string());
        assert_eq!(field(&mut c, "bf_cmd_bf_add"), "calls=300,failed=0");
        // (A wrong argument count never reaches the module: the server checks
        // the registered arity.)
        assert!(c.cmd(&["BF.ADD", "cf", "x"]).is_error());
        assert_eq!(field(&mut c, "bf_cmd_bf_add"), "calls=301,failed=1");
        c.cmd(&["COPY", "bf", "bf2"]);
        c.cmd(&["DEBUG", "RELOAD"]);
        // Valkey 9 frees the dataset it replaced lazily: the count falls
        // from 4 (old and reloaded values) to 2 shortly after.
        wait::until("the replaced dataset freed", wait::STATE, || {
            match field(&mut c, "bf_bloom_keys") {
                k if k == "2" => Ok(()),
                k => Err(format!("bf_bloom_keys {k}")),
            }
        });
        assert_eq!(field(&mut c, "bf_bloom_memory"), (2 * bf_size).to_string());
        c.cmd(&["FLUSHALL"]);
        // Valkey 8 flushes lazily by default: the frees land shortly after.
        wait::until("key counters at 0 after FLUSHALL", wait::STATE, || {
            let keys = [
                field(&mut c, "bf_bloom_keys"),
                field(&mut c, "bf_cuckoo_keys"),
            ];
            match keys == ["0", "0"] {
                true => Ok(()),
                false => Err(format!("bloom, cuckoo keys {keys:?}")),
            }
        });
        assert_eq!(field(&mut c, "bf_bloom_memory"), "0");
        assert_eq!(field(&mut c, "bf_cuckoo_memory"), "0");
    }
}

#[test]
fn every_write_fires_a_module_keyspace_event() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        // Off by default: nothing is published until the user enables `d`.
        c.cmd(&["BF.ADD", "quiet", "x"]);
        let mut sub = subscribe_keyspace(&s, &mut c);
        let writes: &[&[&str]] = &[
            &["BF.RESERVE", "b", "0.01", "100"],
            &["BF.ADD", "b", "x"],
            &["BF.MADD", "b", "y", "z"],
            &["BF.INSERT", "b", "ITEMS", "w"],
            // On destkey.
            &["BF.MERGE", "m", "b"],
            &["CF.RESERVE", "c", "100"],
            &["CF.ADD", "c", "x"],
            &["CF.ADDNX", "c", "y"],
            &["CF.INSERT", "c", "ITEMS", "z"],
            &["CF.INSERTNX", "c", "ITEMS", "w"],
            &["CF.DEL", "c", "x"],
            &["CF.COMPACT", "c"],
        ];
        for w in writes {
            assert!(!c.cmd(w).is_error(), "{w:?}");
            assert_event(&mut sub, w);
        }
        assert_silent(
            &mut c,
            &mut sub,
            &[
                &["BF.EXISTS", "b", "x"],
                &["BF.ADD", "c", "x"],
                &["BF.MERGE", "m", "b", "nokey"],
            ],
        );
    }
}

/// The server's transparent huge pages in use, in kB (`/proc/<pid>/smaps_rollup`).
fn anon_huge_kb(c: &mut Conn) -> u64 {
    let pid: u32 = info::num(c, "server", "process_id");
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    let line = rollup
        .lines()
        .find(|l| l.starts_with("AnonHugePages:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Adds the same 2000 items to `key` (Bloom or Cuckoo by `fam`).
fn fill(c: &mut Conn, fam: Fam, key: &str) {
    let add = if fam == Fam::Bf {
        "BF.MADD"
    } else {
        "CF.INSERT"
    };
    let mut cmd = vec![add.to_string(), key.to_string()];
    if fam == Fam::Cf {
        cmd.push("ITEMS".into());
    }
    cmd.extend((0..2000).map(|i| format!("item{i}")));
    let r = c.cmd(&cmd);
    assert_eq!(r.as_array().len(), 2000, "{key}: {r:?}");
}

/// `bf.huge-pages yes` backs filters allocated afterwards with transparent
/// huge pages (when the kernel's THP mode is `madvise`, as on Debian) and
/// changes nothing observable: same replies, same SCANDUMP, same after a
/// reload; off (the default) no huge page is used.
#[test]
fn huge_pages_setting_backs_large_filters_and_changes_nothing_else() {
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let madvise = thp.contains("[madvise]");
    if !madvise {
        eprintln!(
            "THP mode is not madvise ({}): only replies are checked",
            thp.trim()
        );
    }
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let get = |c: &mut Conn| c.cmd(&["CONFIG", "GET", "bf.huge-pages"]);
        assert_eq!(get(&mut c), arr(vec![bulk("bf.huge-pages"), bulk("no")]));
        // 20M capacity: 34 MiB Bloom, 16 MiB cuckoo; 2000 items touch every 2 MiB.
        let create = |c: &mut Conn, suffix: &str| {
            let (bf, cf) = (format!("bf-{suffix}"), format!("cf-{suffix}"));
            assert_eq!(c.cmd(&["BF.RESERVE", &bf, "0.001", "20000000"]), ok());
            assert_eq!(c.cmd(&["CF.RESERVE", &cf, "20000000"]), ok());
            fill(c, Fam::Bf, &bf);
            fill(c, Fam::Cf, &cf);
        };
        create(&mut c, "off");
        if madvise {
            assert_eq!(anon_huge_kb(&mut c), 0, "{flavor:?}: huge pages while off");
        }
        assert_eq!(c.cmd(&["CONFIG", "SET", "bf.huge-pages", "yes"]), ok());
        assert_eq!(get(&mut c), arr(vec![bulk("bf.huge-pages"), bulk("yes")]));
        assert!(c
            .cmd(&["CONFIG", "SET", "bf.huge-pages", "maybe"])
            .is_error());
        create(&mut c, "on");
        if madvise {
            let kb = anon_huge_kb(&mut c);
            assert!(kb >= 16 << 10, "{flavor:?}: {kb} kB of huge pages");
        }
        let same = |c: &mut Conn| {
            for fam in [Fam::Bf, Fam::Cf] {
                let p = fam.prefix().to_lowercase();
                let (on, off) = (format!("{p}-on"), format!("{p}-off"));
                assert_eq!(
                    filters::snapshot(c, fam, &on).dump,
                    filters::snapshot(c, fam, &off).dump,
                    "{flavor:?} {fam:?}"
                );
                let exists = fam.cmd("EXISTS");
                for item in ["item0", "item1999", "absent"] {
                    assert_eq!(c.cmd(&[&exists, &on, item]), c.cmd(&[&exists, &off, item]));
                }
            }
        };
        same(&mut c);
        assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), ok());
        same(&mut c);
        assert_eq!(c.cmd(&["COPY", "bf-on", "bf-copy"]), int(1));
        assert_eq!(c.cmd(&["BF.EXISTS", "bf-copy", "item7"]), int(1));
        assert_eq!(c.cmd(&["CONFIG", "SET", "bf.huge-pages", "no"]), ok());
        assert_eq!(c.cmd(&["DEL", "bf-on", "cf-on", "bf-copy"]), int(3));
        alive(&mut c);
    }
}

/// Count-Min Sketch: COPY (RedisBloom refuses it), DEBUG DIGEST-VALUE, the
/// INFO fields and a keyspace event per successful write (docs/cms.md §7.3).
#[test]
fn cms_copy_digest_info_and_keyspace_events() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let mut sub = subscribe_keyspace(&s, &mut c);
        let writes: &[&[&str]] = &[
            &["CMS.INITBYDIM", "m", "20", "5"],
            &["CMS.INITBYPROB", "p", "0.01", "0.01"],
            &["CMS.INCRBY", "m", "a", "3", "b", "4294967295"],
            &["CMS.MERGE", "m", "1", "m", "WEIGHTS", "0"],
            &["CMS.INCRBY", "m", "a", "3", "b", "4"],
        ];
        for w in writes {
            assert!(!c.cmd(w).is_error(), "{w:?}");
            assert_event(&mut sub, w);
        }
        assert_silent(
            &mut c,
            &mut sub,
            &[
                &["CMS.QUERY", "m", "a"],
                &["CMS.INFO", "m"],
                &["CMS.INITBYDIM", "m", "2", "2"],
                &["CMS.INCRBY", "m", "a", "-9223372036854775808"],
                &["CMS.MERGE", "m", "1", "p"],
                &["CMS.MERGE", "m", "1", "m", "WEIGHTS", "-1"],
            ],
        );

        // COPY: an independent, identical sketch.
        let d = assert_copy_diverges(
            &mut c,
            "m",
            "m2",
            &["CMS.INCRBY", "m2", "only-in-copy", "1"],
        );
        assert_ne!(c.cmd(&["DEBUG", "DIGEST-VALUE", "p"]).as_array()[0], d);
        assert_eq!(
            c.cmd(&["CMS.QUERY", "m", "only-in-copy"]),
            arr(vec![int(0)])
        );

        // INFO: keys and MEMORY USAGE's module part, 40 + 4·w·d each.
        let field = |c: &mut Conn, name: &str| info::field(c, "bf", name);
        // DEBUG RELOAD may free the old values lazily: wait for their frees.
        let info = info::wait_for(&mut c, "bf", wait::STATE, |i| i.contains("bf_cms_keys:3\r"));
        let bytes = 2 * (40 + 4 * 100) + (40 + 4 * 200 * 7);
        assert!(info.contains(&format!("bf_cms_memory:{bytes}\r")), "{info}");
        assert_eq!(field(&mut c, "bf_cmd_cms_incrby"), "calls=4,failed=1");
        assert_eq!(field(&mut c, "bf_cmd_cms_merge"), "calls=3,failed=2");
        c.cmd(&["DEL", "m", "m2", "p"]);
        assert_eq!(field(&mut c, "bf_cms_keys"), "0");
        assert_eq!(field(&mut c, "bf_cms_memory"), "0");
    }
}

/// Top-K: COPY (RedisBloom: `ERR not supported`), DEBUG DIGEST-VALUE, a
/// keyspace event for every write, INFO `bf_topk_*`.
#[test]
fn topk_copy_digest_events_and_info() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let mut sub = subscribe_keyspace(&s, &mut c);
        let writes: &[&[&str]] = &[
            &["TOPK.RESERVE", "t", "5", "16", "3", "0.9"],
            &["TOPK.ADD", "t", "x", "y", "x"],
            &["TOPK.INCRBY", "t", "z", "20"],
            // A rejected increment after an applied pair: that pair is
            // replicated, so an event.
            &["TOPK.INCRBY", "t", "w", "2", "v", "-1"],
        ];
        for w in writes {
            c.cmd(w);
            assert_event(&mut sub, w);
        }
        assert_silent(
            &mut c,
            &mut sub,
            &[
                &["TOPK.QUERY", "t", "x"],
                &["TOPK.LIST", "t"],
                &["TOPK.ADD", "missing", "x"],
                &["TOPK.RESERVE", "t", "5"],
                &["TOPK.INCRBY", "t", "w", "-1", "v", "2"],
            ],
        );

        assert_copy_diverges(&mut c, "t", "t2", &["TOPK.ADD", "t2", "only-in-copy"]);
        assert_eq!(
            c.cmd(&["TOPK.QUERY", "t", "only-in-copy"]).as_array()[0],
            int(0)
        );

        let field = |c: &mut Conn, name: &str| info::field(c, "bf", name);
        let usage = c.cmd(&["TOPK.INFO", "t"]);
        assert_eq!(usage.as_array()[1], int(5));
        let size = 2088 + 8 * 16 * 3 + 24 * 5;
        // DEBUG RELOAD may free the old values lazily: wait for their frees.
        let info = info::wait_for(&mut c, "bf", wait::STATE, |i| {
            i.contains("bf_topk_keys:2\r")
        });
        assert!(
            info.contains(&format!("bf_topk_memory:{}\r", 2 * size)),
            "{info}"
        );
        assert_eq!(field(&mut c, "bf_cmd_topk_add"), "calls=3,failed=1");
        assert_eq!(field(&mut c, "bf_cmd_topk_incrby"), "calls=3,failed=0");
        c.cmd(&["FLUSHALL"]);
        // Valkey flushes lazily by default: the frees land shortly after.
        let info = info::wait_for(&mut c, "bf", wait::STATE, |i| i.contains("bf_topk_keys:0"));
        assert!(info.contains("bf_topk_memory:0\r"), "{info}");
    }
}

/// A digest holding unmerged nodes (so that its saved form differs from
/// its live state).
fn populate_tdigest(c: &mut Conn, key: &str) {
    assert_eq!(c.cmd(&["TDIGEST.CREATE", key, "COMPRESSION", "30"]), ok());
    let mut add = vec!["TDIGEST.ADD".to_string(), key.into()];
    add.extend((0..500).map(|i| ((i * 7) % 101).to_string()));
    assert_eq!(c.cmd(&add), ok());
}

fn unmerged(c: &mut Conn, key: &str) -> i64 {
    c.cmd(&["TDIGEST.INFO", key]).as_array()[7].as_int()
}

#[test]
fn tdigest_copy_and_debug_digest() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        populate_tdigest(&mut c, "t");
        assert!(unmerged(&mut c, "t") > 0);
        let d = c.cmd(&["DEBUG", "DIGEST-VALUE", "t"]);
        // The digest reads the live state without compressing it.
        assert!(
            unmerged(&mut c, "t") > 0,
            "{flavor:?}: DEBUG DIGEST-VALUE compressed"
        );
        assert_eq!(c.cmd(&["COPY", "t", "copy"]), int(1));
        assert_eq!(c.cmd(&["DEBUG", "DIGEST-VALUE", "copy"]), d);
        assert_eq!(
            c.cmd(&["TDIGEST.INFO", "copy"]),
            c.cmd(&["TDIGEST.INFO", "t"])
        );
        // Independent, and the digest covers the unmerged nodes: compressing
        // one of the two (same saved form) tells them apart.
        c.cmd(&["TDIGEST.QUANTILE", "copy", "0.5"]);
        assert_ne!(c.cmd(&["DEBUG", "DIGEST-VALUE", "copy"]), d);
        assert_eq!(c.cmd(&["DUMP", "copy"]), c.cmd(&["DUMP", "t"]));
        assert_eq!(
            c.cmd(&["DEBUG", "DIGEST-VALUE", "copy"]),
            c.cmd(&["DEBUG", "DIGEST-VALUE", "t"])
        );
        c.cmd(&["TDIGEST.ADD", "copy", "1000"]);
        assert_ne!(
            c.cmd(&["TDIGEST.INFO", "copy"]),
            c.cmd(&["TDIGEST.INFO", "t"])
        );
    }
}

#[test]
fn tdigest_info_section_and_keyspace_events() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let field = |c: &mut Conn, name: &str| info::field(c, "bf", name);
        assert_eq!(field(&mut c, "bf_tdigest_keys"), "0");
        let mut sub = subscribe_keyspace(&s, &mut c);
        let writes: &[&[&str]] = &[
            &["TDIGEST.CREATE", "t", "COMPRESSION", "5"],
            &["TDIGEST.ADD", "t", "1", "2", "3"],
            &["TDIGEST.MERGE", "m", "1", "t"],
            &["TDIGEST.RESET", "t"],
        ];
        for w in writes {
            assert_eq!(c.cmd(w), ok(), "{w:?}");
            assert_event(&mut sub, w);
        }
        // Reads (even those that compress) and failed writes publish nothing.
        assert_silent(
            &mut c,
            &mut sub,
            &[
                &["TDIGEST.QUANTILE", "m", "0.5"],
                &["TDIGEST.ADD", "t", "x"],
            ],
        );
        assert_eq!(field(&mut c, "bf_tdigest_keys"), "2");
        let memory = |c: &mut Conn, k: &str| c.cmd(&["TDIGEST.INFO", k]).as_array()[17].as_int();
        let total = memory(&mut c, "t") + memory(&mut c, "m");
        assert_eq!(field(&mut c, "bf_tdigest_memory"), total.to_string());
        assert_eq!(field(&mut c, "bf_cmd_tdigest_add"), "calls=2,failed=1");
        assert_eq!(field(&mut c, "bf_cmd_tdigest_quantile"), "calls=1,failed=0");
        c.cmd(&["DEL", "t", "m"]);
        assert_eq!(field(&mut c, "bf_tdigest_keys"), "0");
        assert_eq!(field(&mut c, "bf_tdigest_memory"), "0");
    }
}

/// APBF (docs/apbf.md §7): COPY, DEBUG DIGEST-VALUE, a keyspace event for
/// every write (the APBF.TICK an add replicates fires none of its own),
/// INFO `bf_apbf_*` matching APBF.INFO's Size.
#[test]
fn apbf_copy_digest_events_and_info() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let mut sub = subscribe_keyspace(&s, &mut c);
        let writes: &[&[&str]] = &[
            &["APBF.RESERVE", "a", "COUNT", "0.01", "1000"],
            &["APBF.RESERVE", "t", "TIME", "0.1", "100", "60"],
            &["APBF.ADD", "a", "x", "y"],
            &["APBF.ADD", "t", "x"],
            &["APBF.TICK", "t", "1"],
        ];
        for w in &writes[..4] {
            assert!(!c.cmd(w).is_error(), "{w:?}");
            assert_event(&mut sub, w);
        }
        let scan = c.cmd(&["APBF.SCANDUMP", "a", "0"]);
        let header = scan.as_array()[1].as_bytes().to_vec();
        let load = args!["APBF.LOADCHUNK", "b", "1", header];
        assert_eq!(c.cmd(&load), ok());
        assert_event(&mut sub, &["APBF.LOADCHUNK", "b"]);
        assert_silent(
            &mut c,
            &mut sub,
            &[
                writes[4],
                &["APBF.EXISTS", "a", "x"],
                &["APBF.INFO", "a"],
                &["APBF.SCANDUMP", "a", "1"],
                &["APBF.RESERVE", "a", "COUNT", "0.01", "10"],
                &["APBF.ADD", "missing", "x"],
                &["APBF.LOADCHUNK", "a", "2", "short"],
            ],
        );
        assert_copy_diverges(&mut c, "a", "a2", &["APBF.ADD", "a2", "only-in-copy"]);
        assert_eq!(
            c.cmd(&["APBF.EXISTS", "a", "only-in-copy"]),
            arr(vec![int(0)])
        );
        let size = |c: &mut Conn, k: &str| common::apbf::info_int(c, k, "Size");
        let bytes: i64 = ["a", "a2", "t", "b"].iter().map(|k| size(&mut c, k)).sum();
        let info = info::wait_for(&mut c, "bf", wait::STATE, |i| {
            i.contains("bf_apbf_keys:4\r")
        });
        assert!(
            info.contains(&format!("bf_apbf_memory:{bytes}\r")),
            "{info}"
        );
        assert_eq!(
            info::field(&mut c, "bf", "bf_cmd_apbf_add"),
            "calls=4,failed=1"
        );
        let usage = c.cmd(&["MEMORY", "USAGE", "a"]).as_int();
        assert!(usage >= size(&mut c, "a"), "{usage}");
        c.cmd(&["DEL", "a", "a2", "t", "b"]);
        assert_eq!(info::field(&mut c, "bf", "bf_apbf_keys"), "0");
        assert_eq!(info::field(&mut c, "bf", "bf_apbf_memory"), "0");
    }
}

/// Every integer counter of `INFO bf` that sums values (keys, memory,
/// valkey-bloom's objects, filters, items, capacity): not the version, the
/// defrag counts or the per-command calls.
fn value_counters(c: &mut Conn) -> std::collections::BTreeMap<String, i64> {
    info::text(c, "bf")
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, _)| !name.contains("version") && !name.contains("defrag"))
        .filter_map(|(name, v)| Some((name.to_string(), v.trim().parse().ok()?)))
        .collect()
}

/// INFO bf counts what is in the keyspace, at the moment it leaves it
/// (issue 39): values of every type, large enough to be freed in the
/// background, removed with every lazy-free option on, each way a key can
/// go (RENAME over it, UNLINK, DEL, MOVE then FLUSHDB ASYNC of a database
/// beside another non-empty one, expiry, FLUSHALL ASYNC, eviction); INFO
/// is read right after each, and once more after the background frees.
#[test]
fn info_counts_leave_with_the_key_under_lazy_free() {
    type Counters = std::collections::BTreeMap<String, i64>;
    fn sum(values: &[(&str, Counters)], base: &Counters) -> Counters {
        let mut total = base.clone();
        for (_, delta) in values {
            for (name, v) in delta {
                *total.entry(name.clone()).or_default() += v;
            }
        }
        total
    }
    fn delta(after: &Counters, before: &Counters) -> Counters {
        after
            .iter()
            .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
            .collect()
    }
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        for option in [
            "lazyfree-lazy-user-del",
            "lazyfree-lazy-user-flush",
            "lazyfree-lazy-expire",
            "lazyfree-lazy-eviction",
            "lazyfree-lazy-server-del",
        ] {
            assert_eq!(c.cmd(&["CONFIG", "SET", option, "yes"]), ok());
        }
        let base = value_counters(&mut c);
        let creations: [(&str, &[&[&str]]); 9] = [
            ("a", &[&["BF.RESERVE", "a", "0.001", "2917251"]]),
            ("b", &[&["CF.RESERVE", "b", "8000000"]]),
            ("c", &[&["CMS.INITBYDIM", "c", "1000000", "2"]]),
            ("d", &[&["TOPK.RESERVE", "d", "50", "100000", "5", "0.9"]]),
            (
                "e",
                &[&["TDIGEST.CREATE", "e"], &["TDIGEST.ADD", "e", "1", "2"]],
            ),
            ("f", &[&["APBF.RESERVE", "f", "COUNT", "0.001", "1000000"]]),
            (
                "g",
                &[
                    &["CONFIG", "SET", "bf.bloom-flavor", "valkey-bloom"],
                    &["BF.RESERVE", "g", "0.001", "2917251"],
                    &["CONFIG", "SET", "bf.bloom-flavor", "redisbloom"],
                ],
            ),
            ("h", &[&["BF.ADD", "h", "x"]]),
            (
                "w",
                &[&[
                    "CMS.INITBYDIM",
                    "w",
                    "100000",
                    "5",
                    "WINDOW",
                    "60000",
                    "BUCKETS",
                    "4",
                ]],
            ),
        ];
        let mut live: Vec<(&str, Counters)> = Vec::new();
        for (key, commands) in creations {
            let before = value_counters(&mut c);
            for cmd in commands {
                let r = c.cmd(cmd);
                assert!(!r.is_error(), "{flavor:?} {cmd:?}: {r:?}");
            }
            live.push((key, delta(&value_counters(&mut c), &before)));
        }
        let gone = |c: &mut Conn, live: &mut Vec<(&str, Counters)>, keys: &[&str], how: &str| {
            live.retain(|(k, _)| !keys.contains(k));
            assert_eq!(
                value_counters(c),
                sum(live, &base),
                "{flavor:?}: after {how}"
            );
        };
        // h's value lives on as a; a's leaves.
        assert_eq!(c.cmd(&["RENAME", "h", "a"]), ok());
        live.retain(|(k, _)| *k != "a");
        if let Some(h) = live.iter_mut().find(|(k, _)| *k == "h") {
            h.0 = "a";
        }
        gone(&mut c, &mut live, &[], "RENAME h a");
        assert_eq!(c.cmd(&["UNLINK", "b"]), int(1));
        gone(&mut c, &mut live, &["b"], "UNLINK");
        assert_eq!(c.cmd(&["DEL", "c"]), int(1));
        gone(&mut c, &mut live, &["c"], "DEL");
        assert_eq!(c.cmd(&["MOVE", "d", "1"]), int(1));
        gone(&mut c, &mut live, &[], "MOVE (still in the keyspace)");
        assert_eq!(c.cmd(&["SELECT", "1"]), ok());
        assert_eq!(c.cmd(&["FLUSHDB", "ASYNC"]), ok());
        assert_eq!(c.cmd(&["SELECT", "0"]), ok());
        gone(&mut c, &mut live, &["d"], "FLUSHDB ASYNC of db 1");
        assert_eq!(c.cmd(&["PEXPIRE", "e", "1"]), int(1));
        wait::until("e expired", wait::STATE, || match c.cmd(&["EXISTS", "e"]) {
            r if r == int(0) => Ok(()),
            r => Err(format!("EXISTS e {r:?}")),
        });
        gone(&mut c, &mut live, &["e"], "expiry");
        assert_eq!(c.cmd(&["FLUSHALL", "ASYNC"]), ok());
        gone(&mut c, &mut live, &["a", "f", "g", "w"], "FLUSHALL ASYNC");
        // Eviction: everything goes to make room, nothing is left to free.
        let before = value_counters(&mut c);
        assert_eq!(c.cmd(&["BF.RESERVE", "x", "0.001", "2917251"]), ok());
        live.push(("x", delta(&value_counters(&mut c), &before)));
        c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
        c.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
        c.cmd(&["SET", "y", "1"]);
        c.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
        assert_eq!(c.cmd(&["DBSIZE"]), int(0));
        gone(&mut c, &mut live, &["x"], "eviction");
        // The background frees, once done, take nothing more off.
        wait::until("background frees done", wait::STATE, || {
            match info::num::<i64>(&mut c, "memory", "lazyfree_pending_objects") {
                0 => Ok(()),
                n => Err(format!("{n} pending")),
            }
        });
        assert_eq!(value_counters(&mut c), base, "{flavor:?}: after the frees");
    }
}

/// INFO's totals follow every write: after each type's tour on a few keys,
/// and writes that grow a value (new links, sub-filters, heap items), a
/// flush takes every counter back to 0 (a value leaves the totals with its
/// size at that moment). A type whose size may change without the write
/// path measuring it (declared fixed, but growing) would leave them apart.
#[test]
fn info_totals_follow_writes_back_to_zero() {
    for flavor in all_flavors() {
        info_totals_back_to_zero(flavor);
    }
}

fn info_totals_back_to_zero(flavor: Flavor) {
    let s = Server::start(flavor, Module::Rsbloom);
    let mut c = s.conn();
    for t in common::families::TYPES {
        common::families::configure(&mut c, t);
        for n in 0..3 {
            let key = format!("{}:{n}", t.family);
            for cmd in common::families::tour_on(t, &key) {
                let r = c.cmd(&cmd);
                assert!(!r.is_error(), "{cmd:?}: {r:?}");
            }
        }
    }
    let grow: Vec<Vec<String>> = (0..2000)
        .flat_map(|i| {
            let item = format!("grown-{i}");
            [
                vec!["BF.ADD".into(), "bloom:0".into(), item.clone()],
                vec!["BF.ADD".into(), "valkey-bloom:0".into(), item.clone()],
                vec!["CF.ADD".into(), "cuckoo:0".into(), item.clone()],
                vec!["TOPK.ADD".into(), "topk:0".into(), item.clone()],
                vec!["TOPK.ADD".into(), "topkw:0".into(), item.clone()],
                vec!["CMS.INCRBY".into(), "cms:0".into(), item, "1".into()],
                vec!["TDIGEST.ADD".into(), "tdigest:0".into(), i.to_string()],
            ]
        })
        .collect();
    for (cmd, r) in grow.iter().zip(c.pipeline(&grow)) {
        assert!(
            !r.is_error() || cmd[1].starts_with("cuckoo"),
            "{cmd:?}: {r:?}"
        );
    }
    // Deletes let compaction free the newer sub-filters: a value shrinks.
    // CF.INFO's "Number of filters" (RESP2).
    let filters = |c: &mut Conn| c.cmd(&["CF.INFO", "cuckoo:0"]).as_array()[5].as_int();
    let grown = filters(&mut c);
    let delete: Vec<Vec<String>> = (0..2000)
        .map(|i| vec!["CF.DEL".into(), "cuckoo:0".into(), format!("grown-{i}")])
        .collect();
    c.pipeline(&delete);
    assert!(filters(&mut c) < grown, "{flavor:?}: no sub-filter freed");
    // INFO sums the sizes the keys report, after growing and shrinking.
    let bloom = |c: &mut Conn, key: &str| c.cmd(&["BF.INFO", key, "SIZE"]).as_array()[0].as_int();
    let cuckoo = |c: &mut Conn, key: &str| c.cmd(&["CF.INFO", key]).as_array()[1].as_int();
    for (family, size, field) in [
        (
            "bloom",
            &bloom as &dyn Fn(&mut Conn, &str) -> i64,
            "bf_bloom_memory",
        ),
        ("cuckoo", &cuckoo, "bf_cuckoo_memory"),
    ] {
        let sizes: i64 = (0..3).map(|n| size(&mut c, &format!("{family}:{n}"))).sum();
        let info = info::field(&mut c, "bf", field);
        assert_eq!(info, sizes.to_string(), "{flavor:?}: {field}");
    }
    assert_eq!(c.cmd(&["FLUSHALL", "SYNC"]), ok());
    let left: Vec<_> = value_counters(&mut c)
        .into_iter()
        .filter(|(_, v)| *v != 0)
        .collect();
    assert!(
        left.is_empty(),
        "{flavor:?}: counters after the flush {left:?}"
    );
}
