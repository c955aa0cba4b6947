//! `bf.max-key-memory` (docs/operations.md "Per-key memory limit"), one
//! table of every family: creations and growths above the limit are refused
//! with the error and change nothing, a multi-item command stopped part-way
//! answers each item truly, a replica with a tighter limit of its own ends
//! identical, and the master's AOF (written without a limit) loads whole
//! into a server whose limit refuses every key.
use common::families::{configure, ModuleType, TYPES};
use common::*;

const LIMIT: &str = "4096";
const OVER: &str = "ERR operation exceeds the key memory limit (bf.max-key-memory)";
/// valkey-bloom's own text: its filters obey both limits, with its error.
const VB_OVER: &str = "ERR operation exceeds bloom object memory limit";

/// One type's commands (`name` is its `family` in the type table, whose
/// `config` makes it); `K` is a key made within the limit, `K2` and `K3`
/// keys the limit refuses (created once it is lifted).
struct Case {
    name: &'static str,
    error: &'static str,
    small: &'static [&'static str],
    refused: &'static [&'static [&'static str]],
    /// A multi-item command that grows `K` past the limit (items appended).
    grow: Option<(&'static [&'static str], usize)>,
    /// A single-item add that needs `K` to grow (a fresh item appended).
    add: Option<&'static [&'static str]>,
}

const CASES: &[Case] = &[
    Case {
        name: "bloom",
        error: OVER,
        small: &["BF.RESERVE", "K", "0.01", "100"],
        refused: &[
            &["BF.RESERVE", "K2", "0.01", "100000"],
            &["BF.INSERT", "K3", "CAPACITY", "100000", "ITEMS", "a"],
        ],
        grow: Some((&["BF.MADD", "K"], 2000)),
        add: Some(&["BF.ADD", "K"]),
    },
    Case {
        name: "valkey-bloom",
        error: VB_OVER,
        small: &["BF.RESERVE", "K", "0.01", "100"],
        refused: &[&["BF.RESERVE", "K2", "0.01", "100000"]],
        grow: Some((&["BF.MADD", "K"], 2000)),
        add: Some(&["BF.ADD", "K"]),
    },
    Case {
        name: "cuckoo",
        error: OVER,
        small: &["CF.RESERVE", "K", "64", "EXPANSION", "2"],
        refused: &[
            &["CF.RESERVE", "K2", "100000"],
            &["CF.INSERT", "K3", "CAPACITY", "100000", "ITEMS", "a"],
        ],
        grow: Some((&["CF.INSERT", "K", "ITEMS"], 3000)),
        add: Some(&["CF.ADD", "K"]),
    },
    Case {
        name: "cms",
        error: OVER,
        small: &["CMS.INITBYDIM", "K", "10", "5"],
        refused: &[
            &["CMS.INITBYDIM", "K2", "1000", "10"],
            &["CMS.INITBYPROB", "K3", "0.0001", "0.01"],
        ],
        grow: None,
        add: None,
    },
    Case {
        name: "cmsw",
        error: OVER,
        small: &[
            "CMS.INITBYDIM",
            "K",
            "10",
            "5",
            "WINDOW",
            "60000",
            "BUCKETS",
            "2",
        ],
        refused: &[
            &["CMS.INITBYDIM", "K2", "100", "10", "WINDOW", "60000"],
            &["CMS.INITBYPROB", "K3", "0.01", "0.01", "WINDOW", "60000"],
        ],
        grow: None,
        add: None,
    },
    Case {
        name: "topk",
        error: OVER,
        small: &["TOPK.RESERVE", "K", "5", "8", "7", "0.9"],
        refused: &[&["TOPK.RESERVE", "K2", "10", "100", "10", "0.9"]],
        grow: None,
        add: None,
    },
    // One bucket: each has the plain sketch's 2088-byte record.
    Case {
        name: "topkw",
        error: OVER,
        small: &[
            "TOPK.RESERVE",
            "K",
            "5",
            "8",
            "7",
            "0.9",
            "WINDOW",
            "60000",
            "BUCKETS",
            "1",
        ],
        refused: &[
            &["TOPK.RESERVE", "K2", "5", "WINDOW", "60000"],
            &[
                "TOPK.RESERVE",
                "K3",
                "5",
                "8",
                "7",
                "0.9",
                "WINDOW",
                "60000",
                "BUCKETS",
                "2",
            ],
        ],
        grow: None,
        add: None,
    },
    Case {
        name: "tdigest",
        error: OVER,
        small: &["TDIGEST.CREATE", "K", "COMPRESSION", "10"],
        refused: &[
            &["TDIGEST.CREATE", "K2"],
            &["TDIGEST.MERGE", "K3", "1", "K", "COMPRESSION", "1000"],
        ],
        grow: None,
        add: None,
    },
    Case {
        name: "tdigestw",
        error: OVER,
        small: &[
            "TDIGEST.CREATE",
            "K",
            "COMPRESSION",
            "5",
            "WINDOW",
            "60000",
            "BUCKETS",
            "2",
        ],
        refused: &[&["TDIGEST.CREATE", "K2", "WINDOW", "60000"]],
        grow: None,
        add: None,
    },
    Case {
        name: "apbf",
        error: OVER,
        small: &["APBF.RESERVE", "K", "COUNT", "0.01", "10"],
        refused: &[&["APBF.RESERVE", "K2", "COUNT", "0.01", "100000"]],
        grow: None,
        add: None,
    },
];

/// The case of every type of the table, in its order: a type without one fails.
fn cases() -> impl Iterator<Item = (&'static ModuleType, &'static Case)> {
    TYPES.iter().map(|t| {
        let case = CASES.iter().find(|c| c.name == t.family);
        (
            *t,
            case.unwrap_or_else(|| panic!("no key-limit case for {}", t.family)),
        )
    })
}

impl Case {
    /// `cmd` with `K`, `K2`, `K3` named after the family.
    fn on(&self, cmd: &[&str]) -> Vec<String> {
        cmd.iter()
            .map(|a| match *a {
                "K" | "K2" | "K3" => format!("{}:{a}", self.name),
                _ => a.to_string(),
            })
            .collect()
    }

    fn key(&self, k: &str) -> String {
        format!("{}:{k}", self.name)
    }
}

fn dump(c: &mut Conn, key: &str) -> Reply {
    c.cmd(&["DUMP", key])
}

/// Every key with its DUMP.
fn dumps(c: &mut Conn) -> Vec<(String, Reply)> {
    let mut keys: Vec<String> = c
        .cmd(&["KEYS", "*"])
        .as_array()
        .iter()
        .map(|k| String::from_utf8_lossy(k.as_bytes()).into_owned())
        .collect();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let d = dump(c, &k);
            (k, d)
        })
        .collect()
}

/// Runs the case's writes under the limit on `c`.
fn refused_under_limit(c: &mut Conn, case: &Case) {
    let small = case.on(case.small);
    assert_eq!(c.cmd(&small), ok(), "{}: {small:?}", case.name);
    let k = case.key("K");
    for cmd in case.refused {
        let before = dump(c, &k);
        let cmd = case.on(cmd);
        assert_eq!(c.cmd(&cmd), err(case.error), "{cmd:?}");
        assert_eq!(dump(c, &k), before, "{cmd:?} changed {k}");
    }
    for gone in ["K2", "K3"] {
        assert_eq!(c.cmd(&["EXISTS", &case.key(gone)]), int(0), "{gone}");
    }
    if let Some((head, n)) = case.grow {
        let mut cmd = case.on(head);
        cmd.extend((0..n).map(|i| format!("item{i}")));
        let replies = c.cmd(&cmd).as_array().to_vec();
        let refused = replies.iter().filter(|r| r.is_error()).count();
        assert!(
            refused > 0,
            "{}: {n} items never reached the limit",
            case.name
        );
        for r in &replies {
            assert!(
                !r.is_error() || *r == err(case.error),
                "{}: {r:?}",
                case.name
            );
        }
        // Each item answered as added is there.
        let added: Vec<&String> = cmd
            .iter()
            .skip(head.len())
            .zip(&replies)
            .filter(|(_, r)| **r == int(1))
            .map(|(i, _)| i)
            .collect();
        let check = if case.name == "cuckoo" {
            "CF.EXISTS"
        } else {
            "BF.EXISTS"
        };
        for item in added {
            assert_eq!(c.cmd(&[check, &k, item]), int(1), "{}: {item}", case.name);
        }
    }
    if let Some(add) = case.add {
        let refused = (0..200).any(|i| {
            let before = dump(c, &k);
            let mut cmd = case.on(add);
            cmd.push(format!("fresh{i}"));
            let r = c.cmd(&cmd);
            r == err(case.error) && {
                assert_eq!(dump(c, &k), before, "{cmd:?} changed {k}");
                true
            }
        });
        assert!(refused, "{}: no single add was refused", case.name);
    }
}

#[test]
fn key_limit_per_family_replicas_and_aof() {
    for flavor in flavors() {
        let mut master = Server::builder(flavor, Module::Rsbloom)
            .arg("--appendonly")
            .arg("yes")
            .start();
        let replica = master.start_replica();
        let (mut c, mut r) = (master.conn(), replica.conn());
        // The replica would refuse everything: it must obey its master.
        assert_eq!(r.cmd(&["CONFIG", "SET", "bf.max-key-memory", "1"]), ok());
        assert_eq!(c.cmd(&["CONFIG", "SET", "bf.max-key-memory", "4kb"]), ok());
        assert_eq!(
            c.cmd(&["CONFIG", "GET", "bf.max-key-memory"]),
            arr(vec![bulk("bf.max-key-memory"), bulk(LIMIT)])
        );
        for (t, case) in cases() {
            configure(&mut c, t);
            refused_under_limit(&mut c, case);
        }
        info::wait_replica_synced(&mut c, &mut r);
        assert_eq!(dumps(&mut r), dumps(&mut c), "{flavor:?}: replica differs");

        // Without the limit the refused writes go through; the AOF has them.
        assert_eq!(c.cmd(&["CONFIG", "SET", "bf.max-key-memory", "0"]), ok());
        for (t, case) in cases() {
            configure(&mut c, t);
            for cmd in case.refused {
                let cmd = case.on(cmd);
                assert!(!c.cmd(&cmd).is_error(), "{cmd:?}");
            }
        }
        let written = dumps(&mut c);
        info::wait_replica_synced(&mut c, &mut r);
        assert_eq!(dumps(&mut r), written, "{flavor:?}: replica differs");
        drop(c);
        master.stop(false);
        let replayed = Server::builder(flavor, Module::Rsbloom)
            .dir(master.dir())
            .arg("--appendonly")
            .arg("yes")
            .arg("--bf.max-key-memory")
            .arg("1")
            .start();
        let mut a = replayed.conn();
        assert_eq!(dumps(&mut a), written, "{flavor:?}: AOF replay differs");

        // LOADCHUNK of a header above the limit is refused, nothing created.
        for (t, case) in cases() {
            let Some(chunked) = t.chunked else { continue };
            // K3 holds an item: an empty Cuckoo filter dumps no header.
            let big = ["K3", "K2"]
                .map(|k| case.key(k))
                .into_iter()
                .find(|k| a.cmd(&["EXISTS", k]) == int(1))
                .expect("a refused key, created without the limit");
            let header = a.cmd(&[chunked.scandump, &big, "0"]).as_array()[1].clone();
            let r = a.cmd(&args![chunked.loadchunk, "copy", "1", header.as_bytes()]);
            assert_eq!(r, err(OVER), "{flavor:?} {}", chunked.loadchunk);
            assert_eq!(a.cmd(&["EXISTS", "copy"]), int(0));
        }
        alive(&mut a);
        alive(&mut r);
    }
}
