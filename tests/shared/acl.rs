//! ACL categories (docs/module.md §2.2, §2.1, docs/differences.md §2). On a
//! server with module ACL categories (Redis ≥ 7.4, Valkey) every BF.* command
//! is in `@bloom` and every CF.* command in `@cuckoo`, plus exactly the
//! read/write/fast categories of the docs/module.md §2.1 ACL column
//! (CF.COMPACT in `@read`), so users can be limited to one family. On Redis
//! 7.0 the categories do not exist and the module says so once in its log;
//! Redis 7.0 also gives module commands no flag-derived category, so category
//! rules (`+@read`, `+@write`) neither grant nor deny them: operators must
//! name the commands or use `+@all`.
use common::diff::{sargs, Args};
use common::families::{configure, tick, tour_on, ModuleType, TYPES};
use common::*;

/// RedisBloom's eleven (its test_acl.py): BF.LOAD, registered for the AOF of
/// valkey-bloom filters, and BF.MERGE, rsbloom's, are in `@write` only.
const BF_COMMANDS: [&str; 11] = [
    "bf.add",
    "bf.card",
    "bf.debug",
    "bf.exists",
    "bf.info",
    "bf.insert",
    "bf.loadchunk",
    "bf.madd",
    "bf.mexists",
    "bf.reserve",
    "bf.scandump",
];

const CF_COMMANDS: [&str; 14] = [
    "cf.add",
    "cf.addnx",
    "cf.compact",
    "cf.count",
    "cf.debug",
    "cf.del",
    "cf.exists",
    "cf.info",
    "cf.insert",
    "cf.insertnx",
    "cf.loadchunk",
    "cf.mexists",
    "cf.reserve",
    "cf.scandump",
];

/// One valid call of every command of a family (keys `<p>1`, `<p>2`),
/// header for LOADCHUNK taken from the family's own SCANDUMP.
fn bloom_calls(c: &mut Conn) -> Vec<Args> {
    let mut v: Vec<Args> = [
        "BF.RESERVE b1 0.01 100",
        "BF.ADD b1 a",
        "BF.MADD b1 b c",
        "BF.INSERT b1 ITEMS d",
        "BF.EXISTS b1 a",
        "BF.MEXISTS b1 a b",
        "BF.INFO b1",
        "BF.CARD b1",
        "BF.DEBUG b1",
        "BF.SCANDUMP b1 0",
    ]
    .iter()
    .map(|s| sargs(&s.split(' ').collect::<Vec<_>>()))
    .collect();
    let header = header_of(c, "BF.SCANDUMP");
    v.push(vec![
        b"BF.LOADCHUNK".to_vec(),
        b"b2".to_vec(),
        b"1".to_vec(),
        header,
    ]);
    v
}

fn cuckoo_calls(c: &mut Conn) -> Vec<Args> {
    let mut v: Vec<Args> = [
        "CF.RESERVE c1 100",
        "CF.ADD c1 a",
        "CF.ADDNX c1 b",
        "CF.INSERT c1 ITEMS c",
        "CF.INSERTNX c1 ITEMS d",
        "CF.EXISTS c1 a",
        "CF.MEXISTS c1 a b",
        "CF.COUNT c1 a",
        "CF.DEL c1 a",
        "CF.COMPACT c1",
        "CF.INFO c1",
        "CF.DEBUG c1",
        "CF.SCANDUMP c1 0",
    ]
    .iter()
    .map(|s| sargs(&s.split(' ').collect::<Vec<_>>()))
    .collect();
    let header = header_of(c, "CF.SCANDUMP");
    v.push(vec![
        b"CF.LOADCHUNK".to_vec(),
        b"c2".to_vec(),
        b"1".to_vec(),
        header,
    ]);
    v
}

/// A SCANDUMP header of a scratch filter built by the default user.
fn header_of(c: &mut Conn, scandump: &str) -> Vec<u8> {
    let (create, key) = if scandump.starts_with("BF") {
        (["BF.ADD", "hdr-b", "x"], "hdr-b")
    } else {
        (["CF.ADD", "hdr-c", "x"], "hdr-c")
    };
    c.cmd(&create);
    c.cmd(&[scandump, key, "0"]).as_array()[1]
        .as_bytes()
        .to_vec()
}

fn user_conn(s: &Server, user: &str) -> Conn {
    let mut c = s.conn();
    assert_eq!(c.cmd(&["AUTH", user, "pw"]), ok());
    c
}

fn is_noperm(r: &Reply) -> bool {
    matches!(r, Reply::Error(e) if e.starts_with("NOPERM"))
}

fn names(r: &Reply) -> Vec<String> {
    let mut v: Vec<String> = r
        .as_array()
        .iter()
        .map(|n| String::from_utf8_lossy(n.as_bytes()).to_lowercase())
        .collect();
    v.sort();
    v
}

/// The module's commands in an ACL category, by the server's own filter.
fn module_commands_in(c: &mut Conn, category: &str) -> Vec<String> {
    names(&c.cmd(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", category]))
        .into_iter()
        .filter(|n| n.starts_with("bf.") || n.starts_with("cf."))
        .collect()
}

/// docs/module.md §2.1, "ACL (8.x)" column: the `read` / `write` / `fast` words.
const READ: [&str; 13] = [
    "bf.card",
    "bf.debug",
    "bf.exists",
    "bf.info",
    "bf.mexists",
    "bf.scandump",
    "cf.compact",
    "cf.count",
    "cf.debug",
    "cf.exists",
    "cf.info",
    "cf.mexists",
    "cf.scandump",
];
const WRITE: [&str; 14] = [
    "bf.add",
    "bf.insert",
    "bf.load",
    "bf.loadchunk",
    "bf.madd",
    "bf.merge",
    "bf.reserve",
    "cf.add",
    "cf.addnx",
    "cf.del",
    "cf.insert",
    "cf.insertnx",
    "cf.loadchunk",
    "cf.reserve",
];
const FAST: [&str; 5] = ["bf.card", "bf.info", "bf.reserve", "cf.info", "cf.reserve"];

fn family_user_can_use_only_its_family(s: &Server, admin: &mut Conn) {
    let bloom = bloom_calls(admin);
    let cuckoo = cuckoo_calls(admin);
    for (user, category, allowed, denied) in [
        ("b", "+@bloom", &bloom, &cuckoo),
        ("c", "+@cuckoo", &cuckoo, &bloom),
    ] {
        assert_eq!(
            admin.cmd(&["ACL", "SETUSER", user, "on", ">pw", "~*", category]),
            ok()
        );
        let mut u = user_conn(s, user);
        admin.cmd(&["DEL", "b1", "b2", "c1", "c2"]);
        for call in allowed.iter() {
            let r = u.cmd(call);
            assert!(
                !r.is_error(),
                "user {user} ({category}): {:?} -> {r:?}",
                String::from_utf8_lossy(&call[0])
            );
        }
        for call in denied.iter() {
            let r = u.cmd(call);
            assert!(
                is_noperm(&r),
                "user {user} ({category}): {:?} -> {r:?}",
                String::from_utf8_lossy(&call[0])
            );
        }
        // Nothing else either.
        assert!(is_noperm(&u.cmd(&["SET", "x", "1"])));
    }
}

#[test]
fn module_acl_categories() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let has_api = c.cmd(&["ACL", "CAT"]).as_array().contains(&bulk("bloom"));
        let notice = "server has no module ACL categories";
        let logged = s.log().matches(notice).count();
        match flavor.acl_categories() {
            true => {
                assert!(has_api, "{flavor:?} has module ACL categories");
                assert!(c.cmd(&["ACL", "CAT"]).as_array().contains(&bulk("cuckoo")));
                assert_eq!(logged, 0);
                assert_eq!(module_commands_in(&mut c, "bloom"), BF_COMMANDS);
                assert_eq!(module_commands_in(&mut c, "cuckoo"), CF_COMMANDS);
                // Exactly the categories of docs/module.md §2.1 (CF.COMPACT: read).
                assert_eq!(module_commands_in(&mut c, "read"), READ);
                assert_eq!(module_commands_in(&mut c, "write"), WRITE);
                assert_eq!(module_commands_in(&mut c, "fast"), FAST);
                // Valkey's `ACL CAT <category>` lists built-in commands
                // only (none of any module); where it lists module
                // commands, it must list exactly ours.
                for (cat, expected) in [("bloom", &BF_COMMANDS[..]), ("cuckoo", &CF_COMMANDS[..])] {
                    let listed = names(&c.cmd(&["ACL", "CAT", cat]));
                    assert!(
                        listed.is_empty() || listed == expected,
                        "ACL CAT {cat}: {listed:?}"
                    );
                }
                family_user_can_use_only_its_family(&s, &mut c);
                // `+@bloom` does not grant BF.LOAD, as under RedisBloom, nor
                // rsbloom's BF.MERGE.
                assert!(is_noperm(&user_conn(&s, "b").cmd(&["BF.LOAD", "b3", "x"])));
                assert!(is_noperm(
                    &user_conn(&s, "b").cmd(&["BF.MERGE", "b3", "b1"])
                ));
                bloom_category_of_valkey_bloom_flavor(flavor);
                // CF.COMPACT is in @read (docs/differences.md §2 quirk): a read-only
                // user can run it, but no CF write.
                assert_eq!(
                    c.cmd(&["ACL", "SETUSER", "r", "on", ">pw", "~*", "+@read"]),
                    ok()
                );
                c.cmd(&["CF.ADD", "c1", "x"]);
                let mut u = user_conn(&s, "r");
                assert_eq!(u.cmd(&["CF.COMPACT", "c1"]), ok());
                assert_eq!(u.cmd(&["CF.EXISTS", "c1", "x"]), int(1));
                assert!(is_noperm(&u.cmd(&["CF.ADD", "c1", "y"])));
                assert!(is_noperm(&u.cmd(&["BF.ADD", "b1", "y"])));
            }
            false => {
                // Redis 7.0: no RedisModule_AddACLCategory (7.4) and no
                // RedisModule_SetCommandACLCategories (7.2).
                assert!(!has_api);
                assert_eq!(logged, 1, "the module logs the missing API once");
                let r = c.cmd(&["ACL", "SETUSER", "x", "+@bloom"]);
                assert!(r.is_error(), "{r:?}");
                assert!(c.cmd(&["ACL", "CAT", "cuckoo"]).is_error());
                // Redis 7.0 derives no category from a module command's
                // flags either: the commands are in no category at all.
                for cat in ["read", "write", "fast", "slow"] {
                    assert_eq!(
                        module_commands_in(&mut c, cat),
                        Vec::<String>::new(),
                        "@{cat}"
                    );
                }
                let info = c.cmd(&["COMMAND", "INFO", "bf.add", "cf.compact"]);
                for cmd in info.as_array() {
                    assert_eq!(cmd.as_array()[6], Reply::Array(vec![]), "{cmd:?}");
                }
                // So category rules neither grant nor deny them; operators
                // name the commands (or use +@all).
                for (user, rule) in [("r", "+@read"), ("e", "+bf.add"), ("a", "+@all")] {
                    assert_eq!(
                        c.cmd(&["ACL", "SETUSER", user, "on", ">pw", "~*", rule]),
                        ok()
                    );
                }
                c.cmd(&["CF.ADD", "c1", "x"]);
                let mut r = user_conn(&s, "r");
                assert!(is_noperm(&r.cmd(&["CF.COMPACT", "c1"])));
                assert!(is_noperm(&r.cmd(&["BF.EXISTS", "b1", "x"])));
                let mut e = user_conn(&s, "e");
                assert_eq!(e.cmd(&["BF.ADD", "b1", "x"]), int(1));
                assert!(is_noperm(&e.cmd(&["BF.EXISTS", "b1", "x"])));
                let mut a = user_conn(&s, "a");
                assert_eq!(a.cmd(&["CF.COMPACT", "c1"]), ok());
                assert_eq!(a.cmd(&["BF.EXISTS", "b1", "x"]), int(1));
            }
        }
    }
}

/// Loaded as valkey-bloom (`bf.bloom-flavor valkey-bloom`), `@bloom` is
/// valkey-bloom's: its eight commands and BF.LOAD, plus RedisBloom's
/// chunk and debug commands that stay for RedisBloom's filters, and
/// rsbloom's BF.MERGE.
fn bloom_category_of_valkey_bloom_flavor(flavor: Flavor) {
    let s = Server::builder(flavor, Module::Rsbloom)
        .module_arg("bloom-flavor")
        .module_arg("valkey-bloom")
        .start();
    let mut c = s.conn();
    let mut expected: Vec<&str> = BF_COMMANDS.to_vec();
    expected.extend(["bf.load", "bf.merge"]);
    expected.sort();
    assert_eq!(module_commands_in(&mut c, "bloom"), expected);
    assert_eq!(
        c.cmd(&["ACL", "SETUSER", "b", "on", ">pw", "~*", "+@bloom"]),
        ok()
    );
    let r = user_conn(&s, "b").cmd(&["BF.LOAD", "b3", "x"]);
    assert!(!is_noperm(&r), "{r:?}");
    let r = user_conn(&s, "b").cmd(&["BF.MERGE", "b3", "b1"]);
    assert!(!is_noperm(&r), "{r:?}");
}

/// RedisBloom's six (its test_acl.py): CMS.TICK, the clock of windowed
/// sketches, is in `@write @fast` only.
const CMS_COMMANDS: [&str; 6] = [
    "cms.incrby",
    "cms.info",
    "cms.initbydim",
    "cms.initbyprob",
    "cms.merge",
    "cms.query",
];

/// The commands named `prefix*` in ACL category `category`, sorted.
fn prefixed_in(c: &mut Conn, prefix: &str, category: &str) -> Vec<String> {
    names(&c.cmd(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", category]))
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// docs/cms.md §1.2: every CMS.* command in `@cms` plus exactly its read /
/// write / fast categories (the INIT commands in `@fast`). CMS.MERGE's
/// sources are declared keys (Redis 8.12), so key patterns cover them
/// too. Without the server API (Redis 7.0) there is no `@cms` at all.
#[test]
fn cms_acl_category() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        if !c.cmd(&["ACL", "CAT"]).as_array().contains(&bulk("cms")) {
            assert!(c.cmd(&["ACL", "SETUSER", "x", "+@cms"]).is_error());
            assert_eq!(prefixed_in(&mut c, "cms.", "write"), Vec::<String>::new());
            continue;
        }
        assert_eq!(
            prefixed_in(&mut c, "cms.", "cms"),
            CMS_COMMANDS,
            "{flavor:?}"
        );
        assert_eq!(
            prefixed_in(&mut c, "cms.", "read"),
            ["cms.info", "cms.query"]
        );
        assert_eq!(
            prefixed_in(&mut c, "cms.", "write"),
            [
                "cms.incrby",
                "cms.initbydim",
                "cms.initbyprob",
                "cms.merge",
                "cms.tick"
            ]
        );
        assert_eq!(
            prefixed_in(&mut c, "cms.", "fast"),
            ["cms.info", "cms.initbydim", "cms.initbyprob", "cms.tick"]
        );
        for (user, rules) in [
            ("m", &["~*", "+@cms"][..]),
            ("r", &["~*", "+@read"]),
            ("d", &["~d*", "+@cms"]),
        ] {
            let mut setuser = vec!["ACL", "SETUSER", user, "on", ">pw"];
            setuser.extend(rules);
            assert_eq!(c.cmd(&setuser), ok());
        }
        let mut m = user_conn(&s, "m");
        for call in [
            "CMS.INITBYDIM s 10 2",
            "CMS.INITBYPROB p 0.1 0.1",
            "CMS.INCRBY s a 1",
            "CMS.QUERY s a",
            "CMS.INFO s",
            "CMS.INITBYDIM d 10 2",
            "CMS.MERGE d 1 s",
        ] {
            let r = line(&mut m, call);
            assert!(!r.is_error(), "{flavor:?} {call}: {r:?}");
        }
        assert!(is_noperm(&line(&mut m, "BF.ADD b x")));
        let mut r = user_conn(&s, "r");
        assert_eq!(line(&mut r, "CMS.QUERY s a"), arr(vec![int(1)]));
        assert!(is_noperm(&line(&mut r, "CMS.INCRBY s a 1")));
        // Key patterns see the destination and the sources.
        let mut d = user_conn(&s, "d");
        assert_eq!(line(&mut c, "CMS.INITBYDIM d2 10 2"), ok());
        assert_eq!(line(&mut d, "CMS.MERGE d 1 d2"), ok());
        assert!(is_noperm(&line(&mut d, "CMS.MERGE d 1 s")));
        assert!(is_noperm(&line(&mut d, "CMS.QUERY s a")));
        assert!(is_noperm(&line(&mut d, "CMS.MERGE s 1 d")));
    }
}

/// The Top-K commands (docs/topk.md §1.2): category `topk` plus exactly
/// the read/write/fast words of RedisBloom 8.x (TOPK.COUNT in `@read`);
/// TOPK.TICK, the clock of windowed Top-Ks, is in `@write @fast` only.
#[test]
fn topk_acl_category() {
    const TOPK: [&str; 7] = [
        "topk.add",
        "topk.count",
        "topk.incrby",
        "topk.info",
        "topk.list",
        "topk.query",
        "topk.reserve",
    ];
    let topk_in = |c: &mut Conn, cat: &str| prefixed_in(c, "topk.", cat);
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        if !c.cmd(&["ACL", "CAT"]).as_array().contains(&bulk("topk")) {
            // Redis 7.0: no module ACL categories (the module logs it once).
            assert!(c.cmd(&["ACL", "SETUSER", "x", "+@topk"]).is_error());
            assert_eq!(topk_in(&mut c, "read"), Vec::<String>::new());
            continue;
        }
        assert_eq!(topk_in(&mut c, "topk"), TOPK);
        assert_eq!(
            topk_in(&mut c, "read"),
            ["topk.count", "topk.info", "topk.list", "topk.query"]
        );
        assert_eq!(
            topk_in(&mut c, "write"),
            ["topk.add", "topk.incrby", "topk.reserve", "topk.tick"]
        );
        assert_eq!(
            topk_in(&mut c, "fast"),
            ["topk.info", "topk.reserve", "topk.tick"]
        );
        assert_eq!(
            c.cmd(&["ACL", "SETUSER", "t", "on", ">pw", "~*", "+@topk"]),
            ok()
        );
        assert_eq!(
            c.cmd(&["ACL", "SETUSER", "r", "on", ">pw", "~*", "+@read"]),
            ok()
        );
        let mut t = user_conn(&s, "t");
        assert_eq!(t.cmd(&["TOPK.RESERVE", "k", "3"]), ok());
        assert!(!t.cmd(&["TOPK.ADD", "k", "x"]).is_error());
        assert!(is_noperm(&t.cmd(&["BF.ADD", "b", "x"])));
        assert!(is_noperm(&t.cmd(&["SET", "x", "1"])));
        let mut r = user_conn(&s, "r");
        assert_eq!(r.cmd(&["TOPK.COUNT", "k", "x"]), arr(vec![int(1)]));
        assert!(is_noperm(&r.cmd(&["TOPK.ADD", "k", "x"])));
    }
}

const TD_READ: [&str; 10] = [
    "tdigest.byrank",
    "tdigest.byrevrank",
    "tdigest.cdf",
    "tdigest.info",
    "tdigest.max",
    "tdigest.min",
    "tdigest.quantile",
    "tdigest.rank",
    "tdigest.revrank",
    "tdigest.trimmed_mean",
];
const TD_WRITE: [&str; 4] = [
    "tdigest.add",
    "tdigest.create",
    "tdigest.merge",
    "tdigest.reset",
];

fn tdigest_commands_in(c: &mut Conn, category: &str) -> Vec<String> {
    prefixed_in(c, "tdigest.", category)
}

/// Every TDIGEST.* command is in `@tdigest` and in the read/write/fast
/// categories of docs/tdigest.md §3 where the server has module categories;
/// a `+@tdigest` user can use the family and nothing else.
#[test]
fn tdigest_acl_category() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        let cats = c.cmd(&["ACL", "CAT"]);
        if !cats.as_array().contains(&bulk("bloom")) {
            // No module categories on this server (Redis 7.0).
            assert!(!cats.as_array().contains(&bulk("tdigest")));
            assert!(c.cmd(&["ACL", "SETUSER", "t", "+@tdigest"]).is_error());
            continue;
        }
        assert!(cats.as_array().contains(&bulk("tdigest")), "{flavor:?}");
        let mut all: Vec<String> = TD_READ
            .iter()
            .chain(&TD_WRITE)
            .map(|s| s.to_string())
            .collect();
        all.sort();
        assert_eq!(tdigest_commands_in(&mut c, "tdigest"), all);
        assert_eq!(tdigest_commands_in(&mut c, "read"), TD_READ);
        // TDIGEST.TICK (rsbloom's, windows) is outside @tdigest.
        let mut write = TD_WRITE.to_vec();
        write.push("tdigest.tick");
        assert_eq!(tdigest_commands_in(&mut c, "write"), write);
        let mut fast: Vec<&str> = all
            .iter()
            .map(String::as_str)
            .filter(|n| !["tdigest.add", "tdigest.merge", "tdigest.trimmed_mean"].contains(n))
            .collect();
        fast.push("tdigest.tick");
        assert_eq!(tdigest_commands_in(&mut c, "fast"), fast);
        assert_eq!(
            c.cmd(&["ACL", "SETUSER", "t", "on", ">pw", "~*", "+@tdigest"]),
            ok()
        );
        let mut u = user_conn(&s, "t");
        for call in [
            "TDIGEST.CREATE t1",
            "TDIGEST.ADD t1 1 2 3",
            "TDIGEST.MERGE t2 1 t1",
            "TDIGEST.QUANTILE t1 0.5",
            "TDIGEST.TRIMMED_MEAN t1 0.1 0.9",
            "TDIGEST.RESET t2",
        ] {
            let r = u.cmd(&call.split(' ').collect::<Vec<_>>());
            assert!(!r.is_error(), "{call}: {r:?}");
        }
        assert!(is_noperm(&u.cmd(&["BF.ADD", "b", "x"])));
        assert!(is_noperm(&u.cmd(&["GET", "x"])));
    }
}

/// The APBF commands (docs/apbf.md §5): category `apbf` plus read / write /
/// fast; a read-only user can test but not add.
#[test]
fn apbf_acl_category() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        if !c.cmd(&["ACL", "CAT"]).as_array().contains(&bulk("apbf")) {
            assert!(c.cmd(&["ACL", "SETUSER", "x", "+@apbf"]).is_error());
            continue;
        }
        let apbf_in = |c: &mut Conn, cat: &str| prefixed_in(c, "apbf.", cat);
        assert_eq!(
            apbf_in(&mut c, "apbf"),
            [
                "apbf.add",
                "apbf.exists",
                "apbf.info",
                "apbf.loadchunk",
                "apbf.reserve",
                "apbf.scandump",
                "apbf.tick"
            ]
        );
        assert_eq!(
            apbf_in(&mut c, "read"),
            ["apbf.exists", "apbf.info", "apbf.scandump"]
        );
        assert_eq!(
            apbf_in(&mut c, "write"),
            ["apbf.add", "apbf.loadchunk", "apbf.reserve", "apbf.tick"]
        );
        assert_eq!(
            apbf_in(&mut c, "fast"),
            ["apbf.info", "apbf.reserve", "apbf.tick"]
        );
        for (user, cat) in [("w", "+@apbf"), ("r", "+@read")] {
            assert_eq!(
                c.cmd(&["ACL", "SETUSER", user, "on", ">pw", "~*", cat]),
                ok()
            );
        }
        let mut w = user_conn(&s, "w");
        assert_eq!(line(&mut w, "APBF.RESERVE k COUNT 0.01 10"), ok());
        assert_eq!(line(&mut w, "APBF.ADD k x"), arr(vec![int(1)]));
        assert!(is_noperm(&line(&mut w, "BF.ADD b x")));
        let mut r = user_conn(&s, "r");
        assert_eq!(line(&mut r, "APBF.EXISTS k x"), arr(vec![int(1)]));
        assert!(is_noperm(&line(&mut r, "APBF.ADD k x")));
    }
}

/// A type's ACL category: its commands' prefix, but for the two Bloom
/// types' and Cuckoo's (RedisBloom's names).
fn category(t: &ModuleType) -> String {
    match t.commands {
        "BF." => "bloom".into(),
        "CF." => "cuckoo".into(),
        p => p.trim_end_matches('.').to_lowercase(),
    }
}

/// The families whose TICK is in their own category (APBF's: docs/apbf.md
/// §5); the windowed sketches' TICK is outside theirs.
const TICK_IN_CATEGORY: &[&str] = &["apbf"];

/// Every type of the table (`TYPES`), by its tour: a `+@<category>` user
/// runs every command of it but a TICK outside the category, a `+@read`
/// user exactly those without the `write` flag. A family's TICK, the clock
/// of its windows, is in `@write` and `@fast`.
#[test]
fn every_type_by_category_and_read() {
    for flavor in flavors() {
        if !flavor.acl_categories() {
            continue;
        }
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        for user in ["fam", "r"] {
            assert_eq!(c.cmd(&["ACL", "SETUSER", user, "on", ">pw", "~*"]), ok());
        }
        assert_eq!(c.cmd(&["ACL", "SETUSER", "r", "+@read"]), ok());
        let (mut fam, mut r) = (user_conn(&s, "fam"), user_conn(&s, "r"));
        for t in TYPES {
            configure(&mut c, t);
            let cat = category(t);
            let rule = format!("+@{cat}");
            assert_eq!(c.cmd(&["ACL", "SETUSER", "fam", "-@all", &rule]), ok());
            let prefix = t.commands.to_lowercase();
            let in_cat = prefixed_in(&mut c, &prefix, &cat);
            let tick = tick(t).to_lowercase();
            let tick_in_cat = TICK_IN_CATEGORY.contains(&t.family);
            let ctx = format!("{flavor:?} {}", t.family);
            if c.cmd(&["COMMAND", "INFO", &tick]).as_array()[0] != Reply::Nil {
                for other in ["write", "fast"] {
                    let listed = prefixed_in(&mut c, &prefix, other);
                    assert!(listed.contains(&tick), "{ctx}: {tick} not in @{other}");
                }
                assert_eq!(
                    in_cat.contains(&tick),
                    tick_in_cat,
                    "{ctx}: {tick} in @{cat}"
                );
            }
            for cmd in tour_on(t, &format!("{}:k", t.family)) {
                let name = cmd[0].to_lowercase();
                let ctx = format!("{ctx}: {cmd:?}");
                let in_category = name != tick || tick_in_cat;
                assert_eq!(in_cat.contains(&name), in_category, "{ctx} in @{cat}");
                let info = c.cmd(&["COMMAND", "INFO", &name]);
                let flags = info.as_array()[0].as_array()[2].clone();
                let writes = flags.as_array().contains(&simple("write"));
                let by_reader = r.cmd(&cmd);
                assert_eq!(
                    is_noperm(&by_reader),
                    writes,
                    "{ctx} by +@read: {by_reader:?}"
                );
                let by_family = fam.cmd(&cmd);
                assert_eq!(is_noperm(&by_family), !in_category, "{ctx}: {by_family:?}");
                let by = if in_category { by_family } else { c.cmd(&cmd) };
                assert!(!by.is_error(), "{ctx}: {by:?}");
            }
        }
    }
}
