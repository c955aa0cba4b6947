//! Helpers of the APBF.* tests: items, batched adds and checks, INFO fields.

use std::collections::HashMap;

use super::diff::{sargs, Args};
use super::resp::{Conn, Reply};

/// Item `i` of a stream named `prefix`.
pub fn item(prefix: &str, i: u64) -> Vec<u8> {
    format!("{prefix}:{i}").into_bytes()
}

/// `cmd key item(prefix, from) .. item(prefix, to - 1)`.
pub fn with_items(cmd: &str, key: &str, prefix: &str, from: u64, to: u64) -> Args {
    let mut a = sargs(&[cmd, key]);
    a.extend((from..to).map(|i| item(prefix, i)));
    a
}

/// Adds items `from..to` in commands of 100; panics on an error reply.
pub fn add_range(c: &mut Conn, key: &str, prefix: &str, from: u64, to: u64) {
    let cmds: Vec<Args> = (from..to)
        .step_by(100)
        .map(|s| with_items("APBF.ADD", key, prefix, s, (s + 100).min(to)))
        .collect();
    for r in c.pipeline(&cmds) {
        assert!(!r.is_error(), "{r:?}");
    }
}

/// How many of items `from..to` APBF.EXISTS reports present.
pub fn present(c: &mut Conn, key: &str, prefix: &str, from: u64, to: u64) -> usize {
    let r = c.cmd(&with_items("APBF.EXISTS", key, prefix, from, to));
    r.as_array().iter().filter(|v| v.as_int() == 1).count()
}

/// APBF.INFO as field → reply (RESP2 flat array or RESP3 map).
pub fn info(c: &mut Conn, key: &str) -> HashMap<String, Reply> {
    let pairs: Vec<(Reply, Reply)> = match c.cmd(&["APBF.INFO", key]) {
        Reply::Map(m) => m,
        Reply::Array(a) => a.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect(),
        other => panic!("APBF.INFO {key}: {other:?}"),
    };
    pairs
        .into_iter()
        .map(|(k, v)| (String::from_utf8_lossy(k.as_bytes()).into_owned(), v))
        .collect()
}

/// An integer field of APBF.INFO.
pub fn info_int(c: &mut Conn, key: &str, field: &str) -> i64 {
    info(c, key)[field].as_int()
}

/// The commands a client copying `key` by SCANDUMP would send to rebuild
/// it under `to`.
pub fn scandump_copy(c: &mut Conn, key: &str, to: &str) -> Vec<Args> {
    let mut out = Vec::new();
    let mut iter = 0i64;
    loop {
        let r = c.cmd(&["APBF.SCANDUMP", key, &iter.to_string()]);
        let a = r.as_array();
        iter = a[0].as_int();
        if iter == 0 {
            return out;
        }
        let mut cmd = sargs(&["APBF.LOADCHUNK", to, &iter.to_string()]);
        cmd.push(a[1].as_bytes().to_vec());
        out.push(cmd);
    }
}
