//! The families the tool copies: one row each. A new module type (e.g. the
//! sliding-window filter) is one more row: its `TYPE` name and, if it has a
//! chunked dump, its SCANDUMP/LOADCHUNK pair.

/// A chunked dump: `SCANDUMP key 0` gives `[1, header]`, `SCANDUMP key it`
/// gives `[next, chunk]` until `[0, …]`, and `LOADCHUNK key next chunk`
/// replays each, `next` being the position after the chunk. Any sub-range
/// of a chunk loads the same way (docs/bloom.md §10, docs/cuckoo.md §14),
/// which is what keeps every command under the target's size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunked {
    pub scandump: &'static str,
    pub loadchunk: &'static str,
}

/// Bytes of a saved value that each writer fills with its own data, left
/// out when two values are compared: in primitive `prim` (a string of
/// `record`-byte records), `bytes` of each record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Volatile {
    pub prim: usize,
    pub record: usize,
    pub bytes: std::ops::Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// Short name in reports.
    pub name: &'static str,
    /// The module type name: the `TYPE` reply and the id in a DUMP payload.
    pub type_name: &'static str,
    pub chunked: Option<Chunked>,
    pub volatile: Option<Volatile>,
}

pub const FAMILIES: &[Family] = &[
    Family {
        name: "bloom",
        type_name: "MBbloom--",
        chunked: Some(Chunked {
            scandump: "BF.SCANDUMP",
            loadchunk: "BF.LOADCHUNK",
        }),
        volatile: None,
    },
    Family {
        name: "cuckoo",
        type_name: "MBbloomCF",
        chunked: Some(Chunked {
            scandump: "CF.SCANDUMP",
            loadchunk: "CF.LOADCHUNK",
        }),
        volatile: None,
    },
    Family {
        name: "cms",
        type_name: "CMSk-TYPE",
        chunked: None,
        volatile: None,
    },
    Family {
        name: "topk",
        type_name: "TopK-TYPE",
        chunked: None,
        // The heap's 24-byte records: RedisBloom saves a memory address in
        // bytes 8..16 and never reads it back (docs/topk.md §5.2).
        volatile: Some(Volatile {
            prim: 5,
            record: 24,
            bytes: 8..16,
        }),
    },
    Family {
        name: "tdigest",
        type_name: "TDIS-TYPE",
        chunked: None,
        volatile: None,
    },
];

/// The family of a `TYPE` reply.
pub fn by_type(type_name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.type_name == type_name)
}

/// Splits a chunk that ends at position `next` into pieces of at most `max`
/// bytes: `(position after the piece, byte range in the chunk)`.
pub fn pieces(
    next: i64,
    len: usize,
    max: usize,
) -> impl Iterator<Item = (i64, std::ops::Range<usize>)> {
    let start = next - len as i64;
    let max = max.max(1);
    (0..len).step_by(max).map(move |a| {
        let b = (a + max).min(len);
        (start + b as i64, a..b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_module_type_ids() {
        for f in FAMILIES {
            assert_eq!(f.type_name.len(), 9, "{}", f.name);
            assert_eq!(by_type(f.type_name), Some(f));
        }
        assert_eq!(by_type("string"), None);
    }

    #[test]
    fn pieces_cover_the_chunk_and_end_where_it_ends() {
        // A 16 MiB chunk read at position 1 ends at 16777217.
        let p: Vec<_> = pieces(16_777_217, 16 << 20, 5 << 20).collect();
        assert_eq!(p.len(), 4);
        assert_eq!(p[0], (1 + (5 << 20), 0..5 << 20));
        assert_eq!(p[3], (16_777_217, 15 << 20..16 << 20));
        assert!(p.windows(2).all(|w| w[0].1.end == w[1].1.start));
        // Fits: one piece, the chunk itself.
        assert_eq!(
            pieces(145, 144, 1 << 20).collect::<Vec<_>>(),
            vec![(145, 0..144)]
        );
        assert_eq!(pieces(145, 0, 10).count(), 0);
    }
}
