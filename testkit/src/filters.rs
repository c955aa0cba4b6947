//! Filter-level helpers shared by the BF.* and CF.* tests: the family enum,
//! full SCANDUMP walks, LOADCHUNK replays, observable snapshots and the
//! CF.LOADCHUNK header layout.

use super::ok;
use super::resp::{Conn, Reply};

/// A filter family: Bloom (`BF.*`) or Cuckoo (`CF.*`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fam {
    Bf,
    Cf,
}

impl Fam {
    /// The command prefix, `BF` or `CF`.
    pub fn prefix(self) -> &'static str {
        match self {
            Fam::Bf => "BF",
            Fam::Cf => "CF",
        }
    }

    /// `<prefix>.<name>`, e.g. `Fam::Cf.cmd("SCANDUMP")` = `CF.SCANDUMP`.
    pub fn cmd(self, name: &str) -> String {
        format!("{}.{name}", self.prefix())
    }
}

/// The `(iterator, data)` pairs of a SCANDUMP walk, header first: the order
/// a client replays them in with LOADCHUNK.
pub type Chunks = Vec<(i64, Vec<u8>)>;

/// Walks SCANDUMP from iterator 0 to the end marker (iterator 0). Returns the
/// pairs read and the complete end-marker reply, whose data is not checked
/// here (see [`try_scandump`]). An error or malformed reply (or data that is
/// null before the end) is returned as `Err`; so is a walk that does not end.
pub fn scandump_raw(
    c: &mut Conn,
    fam: Fam,
    key: impl AsRef<[u8]>,
) -> Result<(Chunks, Reply), Reply> {
    let cmd = fam.cmd("SCANDUMP").into_bytes();
    let key = key.as_ref();
    let mut out = Vec::new();
    let mut it: i64 = 0;
    for _ in 0..1_000_000 {
        let r = c.cmd(&[cmd.clone(), key.to_vec(), it.to_string().into_bytes()]);
        let (next, data) = match &r {
            Reply::Array(a) if a.len() == 2 => match (&a[0], &a[1]) {
                (Reply::Int(n), Reply::Bulk(d)) => (*n, Some(d.clone())),
                (Reply::Int(n), Reply::Nil | Reply::Null) => (*n, None),
                _ => return Err(r),
            },
            _ => return Err(r),
        };
        if next == 0 {
            return Ok((out, r));
        }
        let Some(data) = data else { return Err(r) };
        out.push((next, data));
        it = next;
    }
    Err(Reply::Error("SCANDUMP does not terminate".into()))
}

/// Whether `end` (a `[0, data]` SCANDUMP reply) carries the family's end
/// marker: BF an empty bulk string, CF a null (RESP2 nil or RESP3 null).
pub fn is_end_marker(fam: Fam, end: &Reply) -> bool {
    let Reply::Array(a) = end else { return false };
    match (fam, a.get(1)) {
        (Fam::Bf, Some(Reply::Bulk(d))) => d.is_empty(),
        (Fam::Cf, Some(Reply::Nil | Reply::Null)) => true,
        _ => false,
    }
}

/// A complete SCANDUMP whose end marker must be the family's (see
/// [`is_end_marker`]). An empty vector for a CF filter without items (its
/// SCANDUMP 0 is the end marker). Any error or malformed reply is `Err`.
pub fn try_scandump(c: &mut Conn, fam: Fam, key: impl AsRef<[u8]>) -> Result<Chunks, Reply> {
    let (chunks, end) = scandump_raw(c, fam, key)?;
    if is_end_marker(fam, &end) {
        Ok(chunks)
    } else {
        Err(end)
    }
}

/// [`try_scandump`] that panics on failure (a malformed reply or the wrong
/// end marker).
pub fn scandump(c: &mut Conn, fam: Fam, key: &str) -> Chunks {
    try_scandump(c, fam, key).unwrap_or_else(|r| panic!("{} {key}: {r:?}", fam.cmd("SCANDUMP")))
}

/// [`scandump_raw`] that panics on a malformed reply: the pairs and the
/// unchecked end-marker reply.
pub fn scandump_with_end(c: &mut Conn, fam: Fam, key: &str) -> (Chunks, Reply) {
    scandump_raw(c, fam, key).unwrap_or_else(|r| panic!("{} {key}: {r:?}", fam.cmd("SCANDUMP")))
}

/// Replays SCANDUMP pairs with LOADCHUNK (pipelined); returns every reply.
pub fn loadchunks(
    c: &mut Conn,
    fam: Fam,
    key: impl AsRef<[u8]>,
    pairs: &[(i64, Vec<u8>)],
) -> Vec<Reply> {
    let cmd = fam.cmd("LOADCHUNK").into_bytes();
    let key = key.as_ref();
    let cmds: Vec<Vec<Vec<u8>>> = pairs
        .iter()
        .map(|(it, d)| {
            vec![
                cmd.clone(),
                key.to_vec(),
                it.to_string().into_bytes(),
                d.clone(),
            ]
        })
        .collect();
    c.pipeline(&cmds)
}

/// [`loadchunks`] where every chunk must be accepted.
pub fn load_ok(c: &mut Conn, fam: Fam, key: &str, pairs: &[(i64, Vec<u8>)]) {
    for ((iter, _), r) in pairs.iter().zip(loadchunks(c, fam, key, pairs)) {
        assert_eq!(r, ok(), "chunk at {iter}");
    }
}

/// Everything observable about a filter on a RESP2 connection: the
/// `<prefix>.DEBUG` and `<prefix>.INFO` replies and the full SCANDUMP.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub debug: Reply,
    pub info: Reply,
    pub dump: Chunks,
}

/// Takes a [`Snapshot`], checking the RESP2 forms: BF.DEBUG is an array of
/// bulk strings, the BF end marker an empty bulk and the CF one a nil.
pub fn snapshot(c: &mut Conn, fam: Fam, key: &str) -> Snapshot {
    let (dump, end) = scandump_with_end(c, fam, key);
    let marker = &end.as_array()[1];
    match fam {
        Fam::Bf => assert_eq!(marker, &Reply::Bulk(Vec::new()), "{key}: end marker"),
        Fam::Cf => assert_eq!(marker, &Reply::Nil, "{key}"),
    }
    let debug = c.cmd(&[fam.cmd("DEBUG").as_str(), key]);
    if fam == Fam::Bf {
        for line in debug.as_array() {
            assert!(
                matches!(line, Reply::Bulk(_)),
                "BF.DEBUG line not a bulk string: {line:?}"
            );
        }
    }
    Snapshot {
        debug,
        info: c.cmd(&[fam.cmd("INFO").as_str(), key]),
        dump,
    }
}

/// A 38-byte CF.LOADCHUNK / CF.SCANDUMP header (docs/cuckoo.md §14).
pub fn cf_header(
    items: u64,
    buckets: u64,
    deletes: u64,
    filters: u64,
    bs: u16,
    mi: u16,
    x: u16,
) -> Vec<u8> {
    let mut h = Vec::new();
    for v in [items, buckets, deletes, filters] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    for v in [bs, mi, x] {
        h.extend_from_slice(&v.to_le_bytes());
    }
    h
}
