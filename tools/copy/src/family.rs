//! What the tool does with the families: each is a core `ModuleType`
//! (`rsbloom_core::TYPES`), which says whether the target has the type (its
//! `probe` command) and, if it has a chunked dump, its SCANDUMP/LOADCHUNK
//! pair; a new module type needs nothing here.
//! Two types are Bloom filters served by the same `BF.*` commands:
//! RedisBloom's `MBbloom--` and valkey-bloom's `bloomfltr` (a `Flavour`
//! each); neither is ever converted into the other.

use rsbloom_core::module_type::Chunked;
use rsbloom_core::ModuleType;

/// Every family, in `rsbloom_core::TYPES`'s order.
pub fn families() -> impl Iterator<Item = &'static ModuleType> {
    rsbloom_core::TYPES.iter().copied()
}

/// The other families served by `f`'s shared command (the other Bloom type).
pub fn other_flavours(f: &ModuleType) -> impl Iterator<Item = &'static ModuleType> + '_ {
    families().filter(move |g| {
        g.family != f.family
            && g.flavour.is_some()
            && g.flavour.map(|x| x.shared) == f.flavour.map(|x| x.shared)
    })
}

/// The family of a `TYPE` reply.
pub fn by_type(type_name: &str) -> Option<&'static ModuleType> {
    families().find(|f| f.name() == type_name)
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
        for f in families() {
            assert_eq!(by_type(f.name()), Some(f));
        }
        assert_eq!(by_type("string"), None);
    }

    #[test]
    fn pieces_cover_the_chunk_and_end_where_it_ends() {
        // A 16 MiB chunk read at position 1 ends at 16777217.
        let bf = by_type("MBbloom--").and_then(|f| f.chunked).unwrap();
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
