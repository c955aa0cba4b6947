//! Helpers for the Bloom (BF.*) tests: other-type keys, BF.DEBUG / BF.INFO
//! access and the BF.SCANDUMP header layout (docs/bloom.md §10).

use super::{all_flavors, line, ok, simple, Conn, Module, Reply, Server};
use crate::args;

/// DUMP payload of `CF.RESERVE c 4` taken from RedisBloom 2.8.2 on Redis
/// 7.0.15 (RDB 10): a Cuckoo key, "another type" for BF.* commands.
pub const CF_DUMP: &str =
    "07813016e5a28982140402010202020002000202021402010202050400000000000a00dd7d2b2c82efcbda";

/// Bytes of a hex string; whitespace is ignored.
pub fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Runs `f` on each server of the full matrix (replies are encoded by the server)
/// with a RESP2 and a RESP3 connection, then checks the server still answers.
pub fn each_server(f: impl Fn(&mut Conn, &mut Conn)) {
    for flavor in all_flavors() {
        let s = Server::start(flavor, Module::Rsbloom);
        let (mut c2, mut c3) = (s.conn(), s.conn3());
        f(&mut c2, &mut c3);
        assert_eq!(line(&mut c2, "PING"), simple("PONG"), "{flavor:?}");
    }
}

/// Makes `str` a string key and `cf` a Cuckoo key.
pub fn other_types(c: &mut Conn) {
    assert_eq!(line(c, "SET str v"), ok());
    assert_eq!(c.cmd(&args!["RESTORE", "cf", "0", hex(CF_DUMP)]), ok());
    assert_eq!(line(c, "TYPE cf"), simple("MBbloomCF"));
}

pub fn debug_lines(c: &mut Conn, key: &str) -> Vec<String> {
    c.cmd(&["BF.DEBUG", key])
        .as_array()
        .iter()
        .map(|r| match r {
            Reply::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("BF.DEBUG line not a bulk string: {other:?}"),
        })
        .collect()
}

/// RESP2 single-field BF.INFO value.
pub fn info_field(c: &mut Conn, key: &str, field: &str) -> Reply {
    let r = c.cmd(&["BF.INFO", key, field]);
    match r {
        Reply::Array(mut v) if v.len() == 1 => v.remove(0),
        other => panic!("BF.INFO {key} {field}: {other:?}"),
    }
}

/// Header field offsets (docs/bloom.md §10); link fields are relative to `link(k)`.
pub mod header {
    pub const SIZE: usize = 0;
    pub const LINKS: usize = 8;
    pub const OPTIONS: usize = 12;
    pub const GROWTH: usize = 16;
    pub fn link(k: usize) -> usize {
        20 + 53 * k
    }
    pub const BYTES: usize = 0;
    pub const BITS: usize = 8;
    pub const LINK_SIZE: usize = 16;
    pub const ERROR: usize = 24;
    pub const BPE: usize = 32;
    pub const HASHES: usize = 40;
    pub const ENTRIES: usize = 44;
    pub const N2: usize = 52;
}

/// Overwrites `bytes.len()` header bytes at `at`.
pub fn patch(h: &mut [u8], at: usize, bytes: &[u8]) {
    h[at..at + bytes.len()].copy_from_slice(bytes);
}
