//! The families the tool copies: one row each. A new module type is one
//! more row: its core `ModuleType`, a command that tells whether the target has
//! the type and, if it has a chunked dump, its SCANDUMP/LOADCHUNK pair.
//! Two rows are Bloom filters served by the same `BF.*` commands:
//! RedisBloom's `MBbloom--` and valkey-bloom's `bloomfltr` (a `Flavour`
//! each); neither is ever converted into the other.

use rsbloom_core::ModuleType;

/// A chunked dump: `SCANDUMP key 0` gives `[1, header]`, `SCANDUMP key it`
/// gives `[next, chunk]` until `[0, …]`, and `LOADCHUNK key next chunk`
/// replays each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunked {
    pub scandump: &'static str,
    pub loadchunk: &'static str,
    /// `next` is the byte position after the chunk and any sub-range of a
    /// chunk loads at the position after it (Bloom, Cuckoo: docs/bloom.md
    /// §10, docs/cuckoo.md §14), so chunks split to the target's size
    /// limit. Otherwise `next` numbers whole chunks (APBF: docs/apbf.md
    /// §5.5), each sent as it is.
    pub splits: bool,
}

/// A field that a later encoding version of the type added: in older
/// encodings primitive `prim` is absent and stands for `legacy`. Module
/// versions below `readers_from` (`MODULE LIST` ver of `bf`) cannot load
/// the newer encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddedField {
    pub since: u16,
    pub prim: usize,
    pub legacy: u64,
    pub readers_from: u64,
    /// What the field is, in reports.
    pub what: &'static str,
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

/// One of several module types served by the same commands (the two Bloom
/// filter types): a target that knows `shared` but not the family's own
/// `command` has another flavour of them, and the value is not converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavour {
    /// Whose type it is, in reports ("RedisBloom", "valkey-bloom").
    pub module: &'static str,
    /// A command that every flavour has.
    pub shared: &'static str,
    /// Why a value of one flavour cannot become one of another.
    pub why: &'static str,
}

/// Why the two Bloom types are never converted into each other: a filter
/// keeps bits, not the items, and the two modules hash and size otherwise
/// (COMPAT-VALKEY-BLOOM §7), so no bit of one means anything to the other.
pub const BLOOM_FLAVOURS: &str =
    "valkey-bloom and RedisBloom filters cannot be converted into each other \
     (the items are not stored)";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Family {
    /// Short name in reports.
    pub name: &'static str,
    /// The module type: its name is the `TYPE` reply and in a DUMP's id.
    pub kind: &'static ModuleType,
    /// A command of the family: the target has the type if it knows it.
    pub command: &'static str,
    pub chunked: Option<Chunked>,
    pub volatile: Option<Volatile>,
    pub added: Option<AddedField>,
    pub flavour: Option<Flavour>,
}

pub const FAMILIES: &[Family] = &[
    Family {
        name: "bloom",
        kind: &rsbloom_core::bloom::TYPE,
        chunked: Some(Chunked {
            scandump: "BF.SCANDUMP",
            loadchunk: "BF.LOADCHUNK",
            splits: true,
        }),
        // valkey-bloom knows BF.ADD but has no MBbloom-- (and no BF.SCANDUMP);
        // rsbloom has BF.SCANDUMP in both its Bloom flavours.
        command: "BF.SCANDUMP",
        volatile: None,
        added: None,
        flavour: Some(Flavour {
            module: "RedisBloom",
            shared: "BF.ADD",
            why: BLOOM_FLAVOURS,
        }),
    },
    // valkey-bloom 1.0.1's filters (COMPAT-VALKEY-BLOOM §1.1, §5.1): no
    // chunked form; values are at most 128 MiB (its default
    // bf.bloom-memory-usage-limit), so DUMP/RESTORE carries them.
    Family {
        name: "valkey-bloom",
        kind: &rsbloom_core::valkey_bloom::TYPE,
        // RedisBloom knows BF.ADD but not BF.LOAD (valkey-bloom's AOF form,
        // which rsbloom has in both flavours).
        command: "BF.LOAD",
        chunked: None,
        volatile: None,
        added: None,
        flavour: Some(Flavour {
            module: "valkey-bloom",
            shared: "BF.ADD",
            why: BLOOM_FLAVOURS,
        }),
    },
    Family {
        name: "cuckoo",
        kind: &rsbloom_core::cuckoo::TYPE,
        chunked: Some(Chunked {
            scandump: "CF.SCANDUMP",
            loadchunk: "CF.LOADCHUNK",
            splits: true,
        }),
        command: "CF.ADD",
        volatile: None,
        added: None,
        flavour: None,
    },
    Family {
        name: "cms",
        kind: &rsbloom_core::cms::TYPE,
        command: "CMS.QUERY",
        chunked: None,
        volatile: None,
        // Redis 8.12's encoding 1 saves the cell size after the total;
        // encoding 0 has 4-byte cells (docs/cms.md §6.1, §6.5).
        added: Some(AddedField {
            since: 1,
            prim: 3,
            legacy: 4,
            readers_from: 81181,
            what: "cell size",
        }),
        flavour: None,
    },
    Family {
        name: "topk",
        kind: &rsbloom_core::topk::TYPE,
        command: "TOPK.ADD",
        chunked: None,
        // The heap's 24-byte records: RedisBloom saves a memory address in
        // bytes 8..16 and never reads it back (docs/topk.md §5.2).
        volatile: Some(Volatile {
            prim: 5,
            record: 24,
            bytes: 8..16,
        }),
        added: None,
        flavour: None,
    },
    Family {
        name: "tdigest",
        kind: &rsbloom_core::tdigest::TYPE,
        command: "TDIGEST.ADD",
        chunked: None,
        volatile: None,
        added: None,
        flavour: None,
    },
    Family {
        name: "apbf",
        kind: &rsbloom_core::apbf::TYPE,
        command: "APBF.ADD",
        chunked: Some(Chunked {
            scandump: "APBF.SCANDUMP",
            loadchunk: "APBF.LOADCHUNK",
            splits: false,
        }),
        volatile: None,
        added: None,
        flavour: None,
    },
];

/// The other families served by `f`'s shared command (the other Bloom type).
pub fn other_flavours(f: &Family) -> impl Iterator<Item = &'static Family> + '_ {
    FAMILIES.iter().filter(move |g| {
        g.name != f.name
            && g.flavour.is_some()
            && g.flavour.map(|x| x.shared) == f.flavour.map(|x| x.shared)
    })
}

/// The family of a `TYPE` reply.
pub fn by_type(type_name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.kind.name() == type_name)
}

/// The LOADCHUNKs for a chunk that SCANDUMP gave with `next`: `(iterator,
/// byte range in the chunk)`. Splitting chunks go in pieces of at most
/// `max` bytes; others whole, whatever their length (the caller checks it).
pub fn pieces(
    c: Chunked,
    next: i64,
    len: usize,
    max: usize,
) -> impl Iterator<Item = (i64, std::ops::Range<usize>)> {
    let start = next - len as i64;
    let max = if c.splits { max.max(1) } else { len.max(1) };
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
            assert_eq!(by_type(f.kind.name()), Some(f));
        }
        assert_eq!(FAMILIES.len(), rsbloom_core::TYPES.len());
        assert_eq!(by_type("string"), None);
    }

    #[test]
    fn pieces_cover_the_chunk_and_end_where_it_ends() {
        // A 16 MiB chunk read at position 1 ends at 16777217.
        let bf = FAMILIES[0].chunked.unwrap();
        let p: Vec<_> = pieces(bf, 16_777_217, 16 << 20, 5 << 20).collect();
        assert_eq!(p.len(), 4);
        assert_eq!(p[0], (1 + (5 << 20), 0..5 << 20));
        assert_eq!(p[3], (16_777_217, 15 << 20..16 << 20));
        assert!(p.windows(2).all(|w| w[0].1.end == w[1].1.start));
        // Fits: one piece, the chunk itself.
        assert_eq!(
            pieces(bf, 145, 144, 1 << 20).collect::<Vec<_>>(),
            vec![(145, 0..144)]
        );
        assert_eq!(pieces(bf, 145, 0, 10).count(), 0);
    }

    #[test]
    fn chunks_numbered_by_index_go_whole() {
        let apbf = by_type("APBF-rsbl").and_then(|f| f.chunked).unwrap();
        // APBF.SCANDUMP gives chunk 3 with iterator 5, however long it is.
        assert_eq!(
            pieces(apbf, 5, 16 << 20, 1 << 20).collect::<Vec<_>>(),
            vec![(5, 0..16 << 20)]
        );
        assert_eq!(pieces(apbf, 5, 0, 10).count(), 0);
    }
}
