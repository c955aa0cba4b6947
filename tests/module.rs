//! Module identity, capability degradation and configs on every server flavor.
mod common;
use common::*;

fn module_list_entry(s: &Server) -> Vec<Reply> {
    let list = s.conn().cmd(&["MODULE", "LIST"]);
    list.as_array()[0].as_array().to_vec()
}

#[test]
fn loads_with_redisbloom_identity_on_every_server() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let entry = module_list_entry(&s);
        assert_eq!(entry[1], bulk("bf"), "{flavor:?}");
        assert_eq!(entry[3], int(80400), "{flavor:?}");
        assert!(s
            .log()
            .contains("rsbloom 0.1.0 loaded (RedisBloom 8.4.0 compatible)"));
    }
}

#[test]
fn configs_are_readable_and_settable_with_range_errors() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let mut c = s.conn();
        // Redis 7.x and Valkey 8 only know prefixed module configs.
        let r = c.cmd(&["CONFIG", "GET", "bf.bf-error-rate"]);
        assert_eq!(
            r,
            Reply::Array(vec![bulk("bf.bf-error-rate"), bulk("0.01")]),
            "{flavor:?}"
        );
        assert_eq!(c.cmd(&["CONFIG", "SET", "bf.bf-error-rate", "2e-2"]), ok());
        assert_eq!(
            c.cmd(&["CONFIG", "GET", "bf.bf-error-rate"]).as_array()[1],
            bulk("2e-2")
        );
        let e = c.cmd(&["CONFIG", "SET", "bf.cf-max-iterations", "0"]);
        assert!(
            e.error_text()
                .contains("Value for `cf-max-iterations` must be in the range [1, 65535]"),
            "{e:?}"
        );
        let e = c.cmd(&["CONFIG", "SET", "bf.bf-initial-size", "x"]);
        assert!(
            e.error_text()
                .contains("Invalid value for `bf-initial-size`"),
            "{e:?}"
        );
    }
}

#[test]
fn legacy_load_arguments_set_defaults_and_bad_ones_refuse_to_load() {
    for flavor in flavors() {
        let s = Server::builder(flavor, Module::Rsbloom)
            .module_arg("INITIAL_SIZE")
            .module_arg("500")
            .start();
        let r = s.conn().cmd(&["CONFIG", "GET", "bf.bf-initial-size"]);
        assert_eq!(r.as_array()[1], bulk("500"));
        drop(s);
        let s = Server::start(flavor, Module::None);
        let path = common::server::module_path(Module::Rsbloom).unwrap();
        let r = s
            .conn()
            .cmd(&["MODULE", "LOAD", path.to_str().unwrap(), "ERROR_RATE", "7"]);
        assert!(r.is_error(), "{r:?}");
        assert_eq!(s.conn().cmd(&["MODULE", "LIST"]), Reply::Array(vec![]));
    }
}

#[test]
fn acl_categories_where_the_server_supports_them() {
    for flavor in flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let cats = s.conn().cmd(&["ACL", "CAT"]);
        let has = cats.as_array().contains(&bulk("bloom"));
        match flavor {
            Flavor::Valkey => assert!(has && cats.as_array().contains(&bulk("cuckoo"))),
            Flavor::Redis => {
                assert!(!has);
                assert!(s.log().contains("server has no module ACL categories"));
            }
        }
    }
}
