//! Helpers of the valkey-bloom tests: servers of both sides, config names,
//! the observable state of a key.

use common::dump::{crc64, rdb_version};
use common::server::{oracle_notice, valkey_bloom_oracle};
use common::{Conn, Flavor, Module, Reply, Server};

/// Starts rsbloom with the valkey-bloom flavour set at load.
pub fn rsbloom(flavor: Flavor) -> Server {
    Server::builder(flavor, Module::Rsbloom)
        .valkey_bloom_flavor()
        .start()
}

/// Whether the valkey-bloom oracle loads on `flavor`; when it cannot be
/// found, prints the loud notice naming `what` is skipped.
pub fn have_oracle(flavor: Flavor, what: &str) -> bool {
    if !flavor.is_valkey() {
        return false;
    }
    let there = valkey_bloom_oracle(flavor).is_some();
    if !there {
        oracle_notice(&format!("{what} on {}", flavor.name()));
    }
    there
}

/// Valkey 9.x if the matrix has it (the oracle comparisons run there).
pub fn valkey9() -> Option<Flavor> {
    common::all_flavors()
        .into_iter()
        .find(|f| *f == Flavor::Valkey9)
}

/// The name of valkey-bloom config `name` (`bloom-capacity`, …) on the server
/// `c` is connected to: `bf.bloom-capacity` on Valkey (module prefix); on
/// Redis whichever of the prefixed and unprefixed forms exists.
pub fn config_name(c: &mut Conn, name: &str) -> String {
    let prefixed = format!("bf.{name}");
    for n in [prefixed.as_str(), name] {
        let found = match c.cmd(&["CONFIG", "GET", n]) {
            Reply::Array(a) => !a.is_empty(),
            Reply::Map(m) => !m.is_empty(),
            _ => false,
        };
        if found {
            return n.to_string();
        }
    }
    prefixed
}

/// The RDB version this server writes (from the DUMP of a string).
pub fn server_rdb_version(c: &mut Conn) -> u16 {
    c.cmd(&["SET", "__rdbver", "x"]);
    let d = c.cmd(&["DUMP", "__rdbver"]);
    c.cmd(&["DEL", "__rdbver"]);
    rdb_version(d.as_bytes())
}

/// A DUMP payload's body (without the RDB version and CRC footer) framed
/// for an RDB version.
pub fn reframe(payload: &[u8], version: u16) -> Vec<u8> {
    let mut out = payload[..payload.len() - 10].to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Everything a client can see of one key: full BF.INFO in RESP2 and RESP3,
/// BF.CARD, BF.MEXISTS of the probes, DUMP, DEBUG DIGEST-VALUE.
#[derive(Debug, PartialEq, Clone)]
pub struct State {
    pub info2: Reply,
    pub info3: Reply,
    pub card: Reply,
    pub exists: Reply,
    pub dump: Reply,
    pub digest: Reply,
}

pub fn observe(c2: &mut Conn, c3: &mut Conn, key: &[u8], probes: &[Vec<u8>]) -> State {
    let mut mexists: Vec<Vec<u8>> = vec![b"BF.MEXISTS".to_vec(), key.to_vec()];
    mexists.extend(probes.iter().cloned());
    State {
        info2: c2.cmd(&[b"BF.INFO".as_slice(), key]),
        info3: c3.cmd(&[b"BF.INFO".as_slice(), key]),
        card: c2.cmd(&[b"BF.CARD".as_slice(), key]),
        exists: c2.cmd(&mexists),
        dump: c2.cmd(&[b"DUMP".as_slice(), key]),
        digest: c2.cmd(&[b"DEBUG".as_slice(), b"DIGEST-VALUE", key]),
    }
}

/// The keys of a server (SCAN), sorted.
pub fn keys(c: &mut Conn) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cursor = b"0".to_vec();
    loop {
        let r = c.cmd(&[b"SCAN".as_slice(), &cursor, b"COUNT", b"1000"]);
        let a = r.as_array();
        cursor = a[0].as_bytes().to_vec();
        out.extend(a[1].as_array().iter().map(|k| k.as_bytes().to_vec()));
        if cursor == b"0" {
            break;
        }
    }
    out.sort();
    out
}

/// The RESP bytes of a reply (RESP2 `$-1` for `Nil`).
pub fn wire(r: &Reply) -> Vec<u8> {
    let mut out = Vec::new();
    match r {
        Reply::Simple(s) => out.extend(format!("+{s}\r\n").bytes()),
        Reply::Error(s) => out.extend(format!("-{s}\r\n").bytes()),
        Reply::Int(i) => out.extend(format!(":{i}\r\n").bytes()),
        Reply::Bulk(b) => {
            out.extend(format!("${}\r\n", b.len()).bytes());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
        Reply::Null => out.extend_from_slice(b"_\r\n"),
        Reply::Double(d) => out.extend(format!(",{d}\r\n").bytes()),
        Reply::Array(a) => {
            out.extend(format!("*{}\r\n", a.len()).bytes());
            for x in a {
                out.extend(wire(x));
            }
        }
        other => panic!("no wire form for {other:?} here"),
    }
    out
}
