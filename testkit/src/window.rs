//! The scenarios the tests of every windowed type share (the windowed
//! CMS, Top-K and T-Digest: one ring of time buckets, one clock; APBF where
//! it fits), each one function over a [`Windowed`] description, on all five
//! servers. A family's `tests/<family>/window.rs` keeps only its own
//! replies, errors and accuracy facts.

use std::collections::BTreeMap;

use rsbloom_core::ModuleType;

use super::dump::{parse, payload, rdb_version, Prim};
use super::families::tour_on;
use super::info::{bgsave_and_wait, wait_replica_synced};
use super::server::{all_flavors, Builder, Flavor, Module, Server};
use super::{alive, arity, bulk, each_of, err, int, line, ok, simple, Conn, Reply, WRONGTYPE};
use crate::args;

/// One windowed type as the shared scenarios drive it.
pub struct Windowed {
    /// The type: `TYPE`'s reply, and `commands` prefixes INFO and TICK.
    pub ty: &'static ModuleType,
    /// What every error of the family starts with.
    pub errors: &'static str,
    /// A plain key's creation, `{}` standing for the key, and a small one
    /// of another shape (the scenarios append WINDOW and BUCKETS).
    pub creates: [&'static str; 2],
    /// The writes of round `r` on `key` (r ≥ 1), small enough for any
    /// cell size, each answering no error.
    pub write: fn(&str, i64) -> Vec<String>,
    /// The replies that depend on what the window holds (two keys holding
    /// the same observations the same way answer them alike; no clock).
    pub read: fn(&mut Conn, &str) -> Vec<Reply>,
}

impl Windowed {
    /// The family's command `name` (`INFO`, `TICK`).
    pub fn cmd(&self, name: &str) -> String {
        format!("{}{name}", self.ty.commands)
    }

    /// Creation `shape` of `creates` on `key`, with window `options`.
    pub fn create(&self, shape: usize, key: &str, options: &str) -> String {
        format!("{} {options}", self.creates[shape].replace("{}", key))
    }

    /// An integer field of the family's INFO.
    pub fn info_int(&self, c: &mut Conn, key: &str, field: &str) -> i64 {
        match info(c, &self.cmd("INFO"), key).remove(field) {
            Some(Reply::Int(v)) => v,
            r => panic!("{field}: {r:?}"),
        }
    }

    /// `TICK key t`.
    pub fn tick(&self, c: &mut Conn, key: &str, t: i64) -> Reply {
        line(c, &format!("{} {key} {t}", self.cmd("TICK")))
    }

    fn writes(&self, c: &mut Conn, key: &str, round: i64) {
        for cmd in (self.write)(key, round) {
            let r = line(c, &cmd);
            assert!(!r.is_error(), "{cmd}: {r:?}");
        }
    }

    fn err(&self, text: &str) -> Reply {
        err(&format!("{}{text}", self.errors))
    }

    /// WINDOW and BUCKETS as every family takes them (the ring's sizes in
    /// INFO, the one set of errors), and TICK's errors; both protocols.
    pub fn options_and_tick_errors(&self) {
        each_of(all_flavors(), |c, _| {
            assert_eq!(
                line(c, &self.create(0, "w", "WINDOW 60000 BUCKETS 6")),
                ok()
            );
            assert_eq!(c.cmd(&["TYPE", "w"]), simple(self.ty.name()));
            assert_eq!(line(c, &self.create(0, "p", "window 3600000")), ok());
            // Fewer milliseconds than the default buckets: one bucket a ms.
            assert_eq!(line(c, &self.create(0, "s", "WINDOW 5")), ok());
            assert_eq!(line(c, &self.create(0, "s2", "BUCKETS 5 WINDOW 5")), ok());
            let ring = |c: &mut Conn, k: &str| {
                ["window", "buckets", "bucket_ms", "last_shift_ms"].map(|f| self.info_int(c, k, f))
            };
            assert_eq!(ring(c, "p"), [3_600_000, 60, 60_000, 0]);
            for k in ["s", "s2"] {
                assert_eq!(ring(c, k), [5, 5, 1, 0], "{k}");
            }
            let bad_window =
                self.err("WINDOW must be an integer number of milliseconds in [1, 315360000000]");
            let bad_buckets = self.err("BUCKETS must be an integer in [1, 1024]");
            for (options, reply) in [
                ("WINDOW 0", &bad_window),
                ("WINDOW -1", &bad_window),
                ("WINDOW 1h", &bad_window),
                ("WINDOW 315360000001", &bad_window),
                ("WINDOW 1000 BUCKETS 0", &bad_buckets),
                ("WINDOW 1000 BUCKETS 1025", &bad_buckets),
                (
                    "WINDOW 10 BUCKETS 20",
                    &self.err("WINDOW must be at least BUCKETS milliseconds"),
                ),
                ("WINDOW 10 WINDOW 10", &self.err("duplicate argument")),
            ] {
                let cmd = self.create(0, "x", options);
                assert_eq!(&line(c, &cmd), reply, "{cmd}");
            }
            let again = self.create(0, "w", "WINDOW 100");
            assert_eq!(line(c, &again), self.err("key already exists"));
            assert_eq!(c.cmd(&["EXISTS", "x"]), int(0));
            // Ticks: a window's only, at a valid time not far ahead.
            assert_eq!(line(c, &self.creates[0].replace("{}", "plain")), ok());
            assert_eq!(self.tick(c, "plain", 1000), err(WRONGTYPE));
            assert_eq!(self.tick(c, "nokey", 1000), self.err("key does not exist"));
            assert_eq!(self.tick(c, "w", 0), self.err("invalid timestamp"));
            let tick = self.cmd("TICK");
            assert_eq!(
                line(c, &format!("{tick} w x")),
                self.err("invalid timestamp")
            );
            assert_eq!(line(c, &format!("{tick} w")), arity(&tick.to_lowercase()));
            let far = now_ms(c) as i64 + 120_000;
            let future = "timestamp is more than 60 s past the server's clock";
            assert_eq!(self.tick(c, "w", far), self.err(future));
        });
    }

    /// A key idle past its window: reads age it by the clock until it
    /// answers as an empty window, without a write (the value unchanged).
    pub fn reads_age_an_idle_window(&self) {
        each_of(all_flavors(), |c, _| {
            for k in ["w", "empty"] {
                assert_eq!(line(c, &self.create(0, k, "WINDOW 200 BUCKETS 4")), ok());
            }
            self.writes(c, "w", 1);
            let dump = c.cmd(&["DUMP", "w"]);
            let empty = (self.read)(c, "empty");
            super::wait::until(
                "the idle window expired",
                super::wait::STATE,
                || match (self.read)(c, "w") {
                    r if r == empty => Ok(()),
                    r => Err(format!("{r:?}")),
                },
            );
            assert_eq!(c.cmd(&["DUMP", "w"]), dump);
        });
    }

    /// DEBUG RELOAD, restart, DUMP/RESTORE and COPY keep a window that
    /// shifted exactly, and its answers (the aggregate rebuilt from the
    /// buckets).
    pub fn persistence_keeps_the_window(&self) {
        for flavor in all_flavors() {
            let mut s = Server::start(flavor, Module::Rsbloom);
            let mut c = s.conn();
            let keys = ["w", "p"];
            // Buckets of 36 s and of 10 s: one shift and five at +59 s.
            let windows = ["WINDOW 3600000 BUCKETS 100", "WINDOW 600000"];
            for (shape, (k, window)) in keys.iter().zip(windows).enumerate() {
                assert_eq!(line(&mut c, &self.create(shape, k, window)), ok());
                self.writes(&mut c, k, 1);
                let t = self.info_int(&mut c, k, "last_shift_ms");
                let shifts = [1, 5][shape];
                assert_eq!(self.tick(&mut c, k, t + 59_000), int(shifts), "{k}");
                self.writes(&mut c, k, 2);
            }
            let before = dumps(&mut c, &keys);
            let answers: Vec<_> = keys.iter().map(|k| (self.read)(&mut c, k)).collect();
            let reads = |c: &mut Conn| keys.map(|k| (self.read)(c, k)).to_vec();
            assert_eq!(line(&mut c, "DEBUG RELOAD"), ok());
            assert_eq!(dumps(&mut c, &keys), before, "{flavor:?} reload");
            assert_eq!(reads(&mut c), answers, "{flavor:?} reload");
            drop(c);
            s.restart(true);
            let mut c = s.conn();
            assert_eq!(dumps(&mut c, &keys), before, "{flavor:?} restart");
            assert_eq!(reads(&mut c), answers, "{flavor:?} restart");
            for ((k, d), a) in keys.iter().zip(&before).zip(&answers) {
                let (restored, copied) = (format!("{k}-r"), format!("{k}-c"));
                let restore = args!["RESTORE", &restored, "0", d.as_bytes()];
                assert_eq!(c.cmd(&restore), ok());
                assert_eq!(c.cmd(&["COPY", k, &copied]), int(1));
                for key in [&restored, &copied] {
                    assert_eq!(&c.cmd(&["DUMP", key]), d, "{flavor:?} {key}");
                    assert_eq!(&(self.read)(&mut c, key), a, "{flavor:?} {key}");
                }
            }
        }
    }

    /// [`hostile_restore_payloads`] of a small window that shifted.
    pub fn hostile_restore_payloads(&self) -> Vec<usize> {
        hostile_restore_payloads(self.ty, self.read, |c| {
            let create = self.create(1, "k", "WINDOW 60000 BUCKETS 3");
            assert_eq!(line(c, &create), ok());
            self.writes(c, "k", 1);
            let t = self.info_int(c, "k", "last_shift_ms");
            assert_eq!(self.tick(c, "k", t + 20_000), int(1));
            self.writes(c, "k", 2);
        })
    }

    /// Writes while ticks move the window: the replica (fed the master's
    /// ticks) and a replay of the master's AOF end byte-identical to the
    /// master, and answer alike; reads between writes change nothing, nor
    /// does a snapshot forked meanwhile. One key also ages by the master's
    /// own clock (a 300 ms window).
    pub fn replicas_and_aof_replays_are_identical_while_the_window_moves(&self) {
        for flavor in all_flavors() {
            let (mut master, replica) = master_and_replica(replicated(flavor));
            let (mut mc, mut rc) = (master.conn(), replica.conn());
            let keys = ["w", "fast"];
            let windows = ["WINDOW 10000 BUCKETS 10", "WINDOW 300 BUCKETS 3"];
            for (shape, (k, window)) in keys.iter().zip(windows).enumerate() {
                assert_eq!(line(&mut mc, &self.create(shape, k, window)), ok());
                self.writes(&mut mc, k, 1);
            }
            let t = self.info_int(&mut mc, "w", "last_shift_ms");
            let f0 = self.info_int(&mut mc, "fast", "last_shift_ms");
            for round in 2..42i64 {
                assert!(!self.tick(&mut mc, "w", t + round * 700).is_error());
                for k in keys {
                    self.writes(&mut mc, k, round);
                }
                (self.read)(&mut mc, "w");
                if round % 10 == 0 {
                    std::thread::sleep(std::time::Duration::from_millis(120));
                }
            }
            let f1 = self.info_int(&mut mc, "fast", "last_shift_ms");
            assert!(f1 > f0, "{flavor:?}: no shift by the clock");
            bgsave_and_wait(&mut mc);
            let on_master = replica_identical(&mut mc, &mut rc, &keys, flavor);
            assert_eq!((self.read)(&mut rc, "w"), (self.read)(&mut mc, "w"));
            drop((mc, rc, replica));
            replay_identical(&mut master, &keys, &on_master);
        }
    }
}

/// `cmd key` (an INFO command) as field → reply, in either protocol.
pub fn info(c: &mut Conn, cmd: &str, key: &str) -> BTreeMap<String, Reply> {
    let pairs: Vec<(Reply, Reply)> = match c.cmd(&[cmd, key]) {
        Reply::Map(m) => m,
        Reply::Array(a) => a.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect(),
        r => panic!("{cmd} {key}: {r:?}"),
    };
    pairs
        .into_iter()
        .map(|(k, v)| (String::from_utf8_lossy(k.as_bytes()).into_owned(), v))
        .collect()
}

/// The server's clock (Unix ms).
pub fn now_ms(c: &mut Conn) -> u64 {
    let t = c.cmd(&["TIME"]);
    let n = |r: &Reply| -> u64 { String::from_utf8_lossy(r.as_bytes()).parse().unwrap() };
    n(&t.as_array()[0]) * 1000 + n(&t.as_array()[1]) / 1000
}

/// Every key's DUMP.
pub fn dumps(c: &mut Conn, keys: &[&str]) -> Vec<Reply> {
    keys.iter().map(|k| c.cmd(&["DUMP", k])).collect()
}

/// A master whose AOF (no RDB preamble) replays what it propagated, and
/// which serves a replica at once (no diskless-sync delay).
pub fn replicated(flavor: Flavor) -> Builder {
    Server::builder(flavor, Module::Rsbloom)
        .aof_fsync_always("no")
        .arg("--repl-diskless-sync-delay")
        .arg("0")
}

/// The master `b` starts and its replica, linked.
pub fn master_and_replica(b: Builder) -> (Server, Server) {
    let master = b.start();
    let replica = master.start_replica();
    (master, replica)
}

/// Once the replica has everything, its `keys` are byte-identical to the
/// master's: their DUMPs, returned.
pub fn replica_identical(
    master: &mut Conn,
    replica: &mut Conn,
    keys: &[&str],
    flavor: Flavor,
) -> Vec<Reply> {
    wait_replica_synced(master, replica);
    let on_master = dumps(master, keys);
    assert_eq!(dumps(replica, keys), on_master, "{flavor:?} replica");
    on_master
}

/// After a restart from its AOF alone, the master's `keys` are those DUMPs.
pub fn replay_identical(master: &mut Server, keys: &[&str], on_master: &[Reply]) {
    master.restart(false);
    let flavor = master.flavor();
    let dumped = dumps(&mut master.conn(), keys);
    assert_eq!(dumped, on_master, "{flavor:?} AOF replay");
}

/// Crafted variants of a genuine value of type `ty` (key `k`, made by
/// `setup`). Those of another shape (another module id, primitives dropped,
/// added or emptied, a string cut) are refused with the server's error and
/// no key; of those changing one integer, double or string primitive in
/// place, some and fewer than half load, and the key then answers its tour
/// and `read` without an error. The server lives, other keys stay.
/// Returns the primitives whose changed value loaded.
pub fn hostile_restore_payloads(
    ty: &ModuleType,
    read: fn(&mut Conn, &str) -> Vec<Reply>,
    setup: impl Fn(&mut Conn),
) -> Vec<usize> {
    let mut loaded = Vec::new();
    for flavor in all_flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .uncompressed_rdb()
            .start();
        let mut c = s.conn();
        assert_eq!(c.cmd(&["SET", "str", "bystander"]), ok());
        setup(&mut c);
        let genuine = c.cmd(&["DUMP", "k"]).as_bytes().to_vec();
        let version = rdb_version(&genuine);
        let (id, prims) = parse(&genuine);
        let restore = |c: &mut Conn, key: &str, id: u64, p: &[Prim]| {
            c.cmd(&args!["RESTORE", key, "0", payload(id, p, version)])
        };
        assert_eq!(restore(&mut c, "same", id, &prims), ok());
        assert_eq!(c.cmd(&["DUMP", "same"]).as_bytes(), genuine);
        // (module id, primitives, the primitive changed in place)
        let mut variants: Vec<(u64, Vec<Prim>, Option<usize>)> = vec![
            (id | 1, prims.clone(), None),
            (id, prims[..prims.len() - 1].to_vec(), None),
            (id, [prims.clone(), vec![Prim::U(0)]].concat(), None),
            (id, vec![], None),
        ];
        for (field, prim) in prims.iter().enumerate() {
            let values: Vec<Prim> = match prim {
                Prim::U(_) => [0, 1, 2, 3, 13, 1 << 33, 1 << 40, 1 << 53, u64::MAX]
                    .into_iter()
                    .chain([f64::NAN.to_bits()])
                    .map(Prim::U)
                    .collect(),
                Prim::D(_) => [f64::NAN, f64::INFINITY, -1e300, 0.5, 1e300]
                    .map(Prim::D)
                    .to_vec(),
                Prim::S(b) => {
                    for n in [0, 1, 7, b.len() / 2].into_iter().filter(|&n| n < b.len()) {
                        let mut p = prims.clone();
                        p[field] = Prim::S(b[..n].to_vec());
                        variants.push((id, p, None));
                    }
                    let mut flipped = b.clone();
                    if let Some(first) = flipped.first_mut() {
                        *first ^= 1;
                    }
                    vec![Prim::S(flipped)]
                }
            };
            for v in values {
                let mut p = prims.clone();
                p[field] = v;
                variants.push((id, p, Some(field)));
            }
        }
        let mut accepted = 0;
        for (i, (vid, p, field)) in variants.iter().enumerate() {
            if *p == prims && *vid == id {
                continue;
            }
            let key = format!("h{i}");
            match restore(&mut c, &key, *vid, p) {
                r if r == ok() => {
                    accepted += 1;
                    let Some(field) = field else {
                        panic!("{flavor:?}: variant {i} of another shape loads");
                    };
                    loaded.push(*field);
                    let mut cmds = tour_on(ty, &key).split_off(1);
                    if let Some(chunked) = ty.chunked {
                        cmds.push(vec![chunked.scandump.into(), key.clone(), "0".into()]);
                    }
                    for cmd in cmds {
                        let r = c.cmd(&cmd);
                        assert!(!r.is_error(), "{flavor:?} variant {i}: {cmd:?} {r:?}");
                    }
                    for r in read(&mut c, &key) {
                        assert!(!r.is_error(), "{flavor:?} variant {i}: {r:?}");
                    }
                }
                r => {
                    assert_eq!(r, err("ERR Bad data format"), "{flavor:?} variant {i}");
                    assert_eq!(c.cmd(&["EXISTS", &key]), int(0));
                }
            }
        }
        let n = variants.len();
        assert!(
            accepted > 0 && accepted < n / 2,
            "{flavor:?}: {accepted} of {n}"
        );
        alive(&mut c);
        assert_eq!(c.cmd(&["GET", "str"]), bulk("bystander"));
        assert_eq!(c.cmd(&["DUMP", "k"]).as_bytes(), genuine);
    }
    loaded.sort_unstable();
    loaded.dedup();
    loaded
}
