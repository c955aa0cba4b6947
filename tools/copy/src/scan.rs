//! A chunked family's value read from a file, as the family's SCANDUMP
//! would give it: the core loads the RDB value (any encoding version it
//! reads) and makes the header and chunks, so a value above the target's
//! limits goes in LOADCHUNKs as from a live source. Memory: the value, once.

use std::borrow::Cow;

use rsbloom_core::apbf::Apbf;
use rsbloom_core::bloom::Chain;
use rsbloom_core::cuckoo::{CuckooFilter, LegacyDefaults};
use rsbloom_core::dump::{module_header, read_prim, Prim};
use rsbloom_core::rdb::{RdbSource, ReadError};
use rsbloom_core::ModuleType;

/// Encodings before Cuckoo's 4 did not save these: RedisBloom's defaults
/// (a file says nothing of its server's configuration).
const CUCKOO_LEGACY: LegacyDefaults = LegacyDefaults {
    bucket_size: 2,
    max_iterations: 20,
    expansion: 1,
};
/// The type's own bound, as the module loads RDB values (src/cuckoo/datatype.rs).
const CUCKOO_MAX_BUCKET_SIZE: u16 = 255;

pub enum Scan {
    Bloom(Box<Chain>),
    Cuckoo(CuckooFilter),
    Apbf(Apbf),
}

/// The primitives of a module value body, for the core's loaders.
struct Body<'a>(&'a [u8]);

impl Body<'_> {
    fn next(&mut self) -> Result<Prim, ReadError> {
        read_prim(&mut self.0).ok().flatten().ok_or(ReadError)
    }
}

impl RdbSource for Body<'_> {
    fn read_unsigned(&mut self) -> Result<u64, ReadError> {
        match self.next()? {
            Prim::Int(n) => Ok(n),
            _ => Err(ReadError),
        }
    }
    fn read_double(&mut self) -> Result<f64, ReadError> {
        match self.next()? {
            Prim::Double(bits) => Ok(f64::from_bits(bits)),
            _ => Err(ReadError),
        }
    }
    fn read_buffer(&mut self) -> Result<Box<[u8]>, ReadError> {
        match self.next()? {
            Prim::Str(s) => Ok(s.into_boxed_slice()),
            _ => Err(ReadError),
        }
    }
}

impl Scan {
    /// The value `body` (type byte first, as in a DUMP payload) of
    /// `family` as chunks. `Ok(None)`: the value has no chunked form (an
    /// empty Cuckoo filter, as CF.SCANDUMP says) or the family has none
    /// this tool can make from a file.
    pub fn of(family: &ModuleType, body: &[u8]) -> Result<Option<Scan>, String> {
        let mut r = body;
        let id = module_header(&mut r).map_err(|e| e.to_string())?;
        let encver = (id & 1023) as i32;
        let mut src = Body(r);
        let refused = |e: &dyn std::fmt::Debug| format!("the value does not load: {e:?}");
        let scan = match family.family {
            "bloom" => Scan::Bloom(Chain::rdb_load(&mut src, encver).map_err(|e| refused(&e))?),
            "cuckoo" => {
                let cf =
                    CuckooFilter::rdb_load(&mut src, encver, CUCKOO_LEGACY, CUCKOO_MAX_BUCKET_SIZE)
                        .map_err(|e| refused(&e))?;
                if cf.num_items() == 0 {
                    return Ok(None);
                }
                Scan::Cuckoo(cf)
            }
            "apbf" => Scan::Apbf(Apbf::rdb_load(&mut src, encver).map_err(|e| refused(&e))?),
            _ => return Ok(None),
        };
        if !matches!(read_prim(&mut src.0), Ok(None)) || !src.0.is_empty() {
            return Err("the value does not load: bytes after its fields".into());
        }
        Ok(Some(scan))
    }

    /// `SCANDUMP key 0`'s reply.
    pub fn header(&self) -> Vec<u8> {
        match self {
            Scan::Bloom(c) => c.encode_header(),
            Scan::Cuckoo(c) => c.encode_header().to_vec(),
            Scan::Apbf(a) => a
                .scandump(0)
                .map(|(_, h)| h.into_owned())
                .unwrap_or_default(),
        }
    }

    /// Every data chunk, `(next, bytes)` as SCANDUMP gives them after the header.
    pub fn chunks(&self) -> Box<dyn Iterator<Item = (i64, Cow<'_, [u8]>)> + '_> {
        match self {
            Scan::Bloom(c) => Box::new(
                std::iter::successors(c.scandump_chunk(1), |(next, _)| c.scandump_chunk(*next))
                    .map(|(n, d)| (n, Cow::Borrowed(d))),
            ),
            Scan::Cuckoo(c) => Box::new(c.aof_chunks().map(|(n, d)| (n, Cow::Borrowed(d)))),
            Scan::Apbf(a) => Box::new(
                std::iter::successors(a.scandump(1), |(next, _)| a.scandump(*next))
                    .map_while(|(n, d)| Some((i64::try_from(n).ok()?, d))),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsbloom_core::dump::{module_value, Prim};
    use rsbloom_core::rdb::Primitive;

    /// The DUMP body of `prims` under `family`'s current id.
    fn body(family: &ModuleType, prims: Vec<Primitive>) -> Vec<u8> {
        let prims: Vec<Prim> = prims
            .into_iter()
            .map(|p| match p {
                Primitive::Unsigned(n) => Prim::Int(n),
                Primitive::Double(d) => Prim::Double(d.to_bits()),
                Primitive::Buffer(b) => Prim::Str(b),
            })
            .collect();
        module_value(family.current_id(), &prims)
    }

    #[test]
    fn a_bloom_filter_of_several_links_in_chunks_as_scandump_gives() {
        let mut chain = Chain::new(1000, 0.01, 2, false).unwrap();
        for i in 0..5000u32 {
            chain.add(&i.to_le_bytes());
        }
        let mut prims = Vec::new();
        chain.rdb_save(&mut prims);
        let b = body(&rsbloom_core::bloom::TYPE, prims);
        let Some(scan) = Scan::of(&rsbloom_core::bloom::TYPE, &b).unwrap() else {
            panic!("no chunks")
        };
        assert_eq!(scan.header(), chain.encode_header());
        let mut copy = Chain::from_header(&scan.header()).unwrap();
        let mut n = 0;
        for (next, data) in scan.chunks() {
            copy.load_chunk(next, &data).unwrap();
            n += 1;
        }
        assert!(n >= 2, "{n} chunks");
        assert!((0..5000u32).all(|i| copy.contains(&i.to_le_bytes())));
        // Truncated or trailing bytes: an error, never a panic.
        for cut in 0..b.len() {
            assert!(
                Scan::of(&rsbloom_core::bloom::TYPE, &b[..cut]).is_err(),
                "{cut}"
            );
        }
        let mut longer = b.clone();
        longer.insert(longer.len() - 1, 2);
        longer.insert(longer.len() - 1, 1);
        assert!(Scan::of(&rsbloom_core::bloom::TYPE, &longer).is_err());
    }

    #[test]
    fn every_chunked_family_is_made_from_a_file() {
        for f in rsbloom_core::TYPES.iter().filter(|f| f.chunked.is_some()) {
            assert!(
                ["bloom", "cuckoo", "apbf"].contains(&f.family),
                "{}: Scan::of has no case for it: large values from files would be refused",
                f.family
            );
        }
    }
}
