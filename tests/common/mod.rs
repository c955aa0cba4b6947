//! Shared integration-test harness (each test binary includes it with `mod common;`).
#![allow(dead_code, unused_imports)] // each test binary uses a different part

pub mod bloom;
pub mod client;
pub mod cluster;
pub mod cms;
pub mod diff;
pub mod dump;
pub mod filters;
pub mod info;
pub mod resp;
pub mod server;
pub mod stream;
pub mod tdigest;
pub mod topk;
pub mod wait;

pub use filters::Fam;
pub use resp::{Conn, Reply};
pub use server::{all_flavors, flavors, Flavor, Module, Server};

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// `Reply::Simple("OK")`.
pub fn ok() -> Reply {
    Reply::Simple("OK".into())
}

pub fn err(text: &str) -> Reply {
    Reply::Error(text.into())
}

pub fn int(i: i64) -> Reply {
    Reply::Int(i)
}

pub fn bulk(b: impl AsRef<[u8]>) -> Reply {
    Reply::Bulk(b.as_ref().to_vec())
}

pub fn arr(items: Vec<Reply>) -> Reply {
    Reply::Array(items)
}

pub fn simple(s: &str) -> Reply {
    Reply::Simple(s.into())
}

/// Sends a command line split on single spaces.
pub fn line(c: &mut Conn, cmd: &str) -> Reply {
    c.cmd(&cmd.split(' ').collect::<Vec<_>>())
}

/// Asserts the server still answers PING.
pub fn alive(c: &mut Conn) {
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

/// CONFIG SET of a module config, unprefixed (Redis ≥ 8) or `bf.`-prefixed.
pub fn config_set(c: &mut Conn, name: &str, value: &str) {
    if c.cmd(&["CONFIG", "SET", name, value]) != ok() {
        let r = c.cmd(&["CONFIG", "SET", &format!("bf.{name}"), value]);
        assert_eq!(r, ok(), "CONFIG SET {name} {value}");
    }
}
