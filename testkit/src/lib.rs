//! The integration tests' harness, compiled once for every test binary
//! (`tests/*/main.rs` name it `common`: the root package's dev-dependency).

pub mod apbf;
pub mod bloom;
pub mod client;
pub mod cluster;
pub mod cms;
pub mod diff;
pub mod dump;
pub mod families;
pub mod filters;
pub mod info;
pub mod resp;
pub mod server;
pub mod stream;
pub mod tdigest;
pub mod topk;
pub mod wait;
pub mod window;

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

/// Null bulk in RESP2, null in RESP3.
pub fn null(resp3: bool) -> Reply {
    if resp3 {
        Reply::Null
    } else {
        Reply::Nil
    }
}

/// Sends a command line split on single spaces.
pub fn line(c: &mut Conn, cmd: &str) -> Reply {
    c.cmd(&cmd.split(' ').collect::<Vec<_>>())
}

/// Asserts the server still answers PING.
pub fn alive(c: &mut Conn) {
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

/// The server's error for a wrong number of arguments to `name`.
pub fn arity(name: &str) -> Reply {
    err(&format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// Runs `f` on a fresh server of each of `flavors`, once per protocol
/// (`true`: RESP3); the server must still answer after.
pub fn each_of(flavors: Vec<Flavor>, f: impl Fn(&mut Conn, bool)) {
    for flavor in flavors {
        for resp3 in [false, true] {
            let s = Server::start(flavor, Module::Rsbloom);
            let mut c = if resp3 { s.conn3() } else { s.conn() };
            f(&mut c, resp3);
            alive(&mut c);
        }
    }
}

/// [`each_of`] the servers of the current matrix.
pub fn each(f: impl Fn(&mut Conn, bool)) {
    each_of(flavors(), f)
}

/// CONFIG SET of a module config, unprefixed (Redis ≥ 8) or `bf.`-prefixed.
pub fn config_set(c: &mut Conn, name: &str, value: &str) {
    if c.cmd(&["CONFIG", "SET", name, value]) != ok() {
        let r = c.cmd(&["CONFIG", "SET", &format!("bf.{name}"), value]);
        assert_eq!(r, ok(), "CONFIG SET {name} {value}");
    }
}
