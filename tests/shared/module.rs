//! Module identity, capability degradation and configs on every server flavor.
use common::info;
use common::server::SlotMigration;
use common::*;

/// Names of the loaded modules other than the server's own static ones
/// (Redis 8's vectorset, Valkey 9's lua).
fn loaded_modules(s: &Server) -> Vec<Vec<Reply>> {
    let list = s.conn().cmd(&["MODULE", "LIST"]);
    list.as_array()
        .iter()
        .map(|m| m.as_array().to_vec())
        .filter(|m| {
            let name = String::from_utf8_lossy(m[1].as_bytes()).to_string();
            !s.flavor().builtin_modules().contains(&name.as_str())
        })
        .collect()
}

#[test]
fn loads_with_redisbloom_identity_on_every_server() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let modules = loaded_modules(&s);
        assert_eq!(modules.len(), 1, "{flavor:?}: {modules:?}");
        let entry = &modules[0];
        assert_eq!(entry[1], bulk("bf"), "{flavor:?}");
        assert_eq!(entry[3], int(81181), "{flavor:?}");
        assert!(s
            .log()
            .contains("rsbloom 0.1.0 loaded (RedisBloom 8.11.81 compatible)"));
    }
}

#[test]
fn configs_are_readable_and_settable_with_range_errors() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        // Unprefixed on Redis ≥ 8, `bf.`-prefixed where the server only
        // knows prefixed module configs (Redis 7.x, Valkey).
        let name = |n: &str| flavor.config_name(n);
        let other = |n: &str| {
            if flavor.unprefixed_configs() {
                format!("bf.{n}")
            } else {
                n.to_string()
            }
        };
        let r = c.cmd(&["CONFIG", "GET", &name("bf-error-rate")]);
        assert_eq!(
            r,
            Reply::Array(vec![bulk(name("bf-error-rate")), bulk("0.01")]),
            "{flavor:?}"
        );
        let r = c.cmd(&["CONFIG", "GET", &other("bf-error-rate")]);
        assert_eq!(r, Reply::Array(vec![]), "{flavor:?}: one name only");
        assert_eq!(
            c.cmd(&["CONFIG", "SET", &name("bf-error-rate"), "2e-2"]),
            ok()
        );
        assert_eq!(
            c.cmd(&["CONFIG", "GET", &name("bf-error-rate")]).as_array()[1],
            bulk("2e-2")
        );
        let e = c.cmd(&["CONFIG", "SET", &name("cf-max-iterations"), "0"]);
        assert!(
            e.error_text()
                .contains("Value for `cf-max-iterations` must be in the range [1, 65535]"),
            "{e:?}"
        );
        let e = c.cmd(&["CONFIG", "SET", &name("bf-initial-size"), "x"]);
        assert!(
            e.error_text()
                .contains("Invalid value for `bf-initial-size`"),
            "{e:?}"
        );
        // rsbloom's own setting is prefixed everywhere.
        let r = c.cmd(&["CONFIG", "GET", "bf.huge-pages"]);
        assert_eq!(r.as_array().len(), 2, "{flavor:?}: {r:?}");
    }
}

#[test]
fn legacy_load_arguments_set_defaults_and_bad_ones_refuse_to_load() {
    for flavor in all_flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .module_arg("INITIAL_SIZE")
            .module_arg("500")
            .start();
        let r = s
            .conn()
            .cmd(&["CONFIG", "GET", &flavor.config_name("bf-initial-size")]);
        assert_eq!(r.as_array()[1], bulk("500"));
        drop(s);
        let s = Server::start(flavor, Module::None);
        let path = common::server::module_path(Module::Rsbloom).unwrap();
        let r = s
            .conn()
            .cmd(&["MODULE", "LOAD", path.to_str().unwrap(), "ERROR_RATE", "7"]);
        assert!(r.is_error(), "{r:?}");
        assert_eq!(loaded_modules(&s), Vec::<Vec<Reply>>::new());
    }
}

#[test]
fn acl_categories_where_the_server_supports_them() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let cats = s.conn().cmd(&["ACL", "CAT"]);
        let has = cats.as_array().contains(&bulk("bloom"));
        if flavor.acl_categories() {
            assert!(
                has && cats.as_array().contains(&bulk("cuckoo")),
                "{flavor:?}"
            );
        } else {
            assert!(!has);
            assert!(s.log().contains("server has no module ACL categories"));
        }
    }
}

/// Doubles are parsed as the server's own parser does (RedisBloom uses it):
/// hexadecimal floats are numbers for C strtod (Redis, Valkey 8.0), not for
/// Valkey ≥ 8.1's fast_float.
#[test]
fn double_syntax_follows_the_server() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        // ZADD scores go through the server's double parser.
        let server_reads_hex = !c.cmd(&["ZADD", "z", "0x1p-7", "m"]).is_error();
        let r = c.cmd(&["BF.RESERVE", "b", "0x1p-7", "100"]);
        if server_reads_hex {
            assert_eq!(r, ok(), "{flavor:?}");
        } else {
            assert_eq!(r, err("ERR bad error rate"), "{flavor:?}");
        }
        assert_eq!(flavor == Flavor::Valkey9, !server_reads_hex, "{flavor:?}");
    }
}

/// Atomic slot migration is detected exactly where the server has it, and
/// declared where the server asks for that (Valkey; Redis asks nothing).
#[test]
fn atomic_slot_migration_declared_where_offered() {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let modules = info::text(&mut s.conn(), "modules");
        let bf = modules
            .lines()
            .find(|l| l.starts_with("module:name=bf,"))
            .unwrap_or_else(|| panic!("{flavor:?}: {modules}"));
        let declared = bf.contains("handle-atomic-slot-migration");
        let asks = flavor.slot_migration() == Some(SlotMigration::MigrateSlots);
        assert_eq!(declared, asks, "{flavor:?}: {bf}");
        let logged = s.log().contains("rsbloom: atomic slot migration supported");
        assert_eq!(logged, flavor.atomic_slot_migration(), "{flavor:?}");
    }
}
