//! Fuzz checks over `rsbloom-core`.
//!
//! Every target function takes the raw fuzzer input, drives the real core code
//! (the same decoders and filters the Redis module runs) and panics when an
//! invariant breaks; libFuzzer reports the panic as a crash. Nothing here uses
//! libFuzzer types, so the root test `tests/fuzz_replay.rs` includes this file
//! (`#[path]`) to replay the seed corpora and `fuzz/regressions/` on stable.
//!
//! Allocation policy: sizes come from the inputs. A request that could succeed
//! but is larger than `ALLOC_CAP` is skipped (libFuzzer would report it as an
//! out-of-memory crash, and the server-side limits are covered by
//! `tests/limits.rs`); requests of at least `ALLOC_IMPOSSIBLE` bytes are made
//! and must fail cleanly.
#![allow(clippy::manual_range_contains, dead_code)]

use std::collections::HashMap;

mod cms;
pub use cms::{cms_args, cms_model, cms_rdb};
mod topk;
pub use topk::{topk_args, topk_model, topk_rdb};
mod tdigest;
pub use tdigest::{tdigest_args, tdigest_model, tdigest_rdb};
mod apbf;
pub use apbf::{apbf_args, apbf_rdb};

use rsbloom_core::args::bloom::{
    parse_bf_insert, parse_bf_reserve, parse_info_field, parse_loadchunk_iter, parse_scandump_iter,
};
use rsbloom_core::args::cuckoo::{
    parse_cf_insert, parse_cf_reserve, parse_loadchunk_pos, parse_scandump_pos,
};
use rsbloom_core::args::{parse_f64, parse_i64, ArgError};
use rsbloom_core::bloom::{
    size_link, AddOutcome, Chain, ChunkError as BloomChunkError, LoadError as BloomLoadError,
    NO_SCALING,
};
use rsbloom_core::config::{Config, NAMES};
use rsbloom_core::cuckoo::{
    hash_item, CuckooFilter, CuckooHash, HeaderError, InsertOutcome, LegacyDefaults,
    LoadError as CfLoadError, HEADER_LEN,
};
use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};

/// Largest allocation a check lets the core attempt when it could succeed.
pub const ALLOC_CAP: u128 = 16 << 20;
/// Allocations this big cannot succeed on x86-64 (47-bit user address space).
pub const ALLOC_IMPOSSIBLE: u128 = 1 << 47;

/// A fuzz target: one input, panics on a finding.
pub type Target = fn(&[u8]);

/// Every target by name (the names of `fuzz/fuzz_targets/*.rs`).
pub const TARGETS: [(&str, Target); 20] = [
    ("bloom_header", bloom_header),
    ("bloom_chunks", bloom_chunks),
    ("bloom_rdb", bloom_rdb),
    ("cuckoo_header", cuckoo_header),
    ("cuckoo_chunks", cuckoo_chunks),
    ("cuckoo_rdb", cuckoo_rdb),
    ("args", args),
    ("bloom_model", bloom_model),
    ("cuckoo_model", cuckoo_model),
    ("cms_rdb", cms_rdb),
    ("cms_args", cms_args),
    ("cms_model", cms_model),
    ("topk_rdb", topk_rdb),
    ("topk_args", topk_args),
    ("topk_model", topk_model),
    ("tdigest_rdb", tdigest_rdb),
    ("tdigest_args", tdigest_args),
    ("tdigest_model", tdigest_model),
    ("apbf_rdb", apbf_rdb),
    ("apbf_args", apbf_args),
];

// ---------------------------------------------------------------------------
// Input decoding
// ---------------------------------------------------------------------------

/// Consumes fuzzer bytes; reads past the end yield zeros.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        head
    }
    fn word<const N: usize>(&mut self) -> [u8; N] {
        let mut w = [0u8; N];
        let b = self.bytes(N);
        w[..b.len()].copy_from_slice(b);
        w
    }
    pub fn u8(&mut self) -> u8 {
        self.word::<1>()[0]
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.word())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.word())
    }
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.word())
    }
    pub fn rest(&mut self) -> &'a [u8] {
        self.bytes(self.data.len())
    }
}

/// Encodes primitives the way `ByteSource` reads them: 8 little-endian bytes
/// per unsigned or double, a u32 length and the bytes per buffer.
pub fn encode_primitives(items: &[Primitive]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in items {
        match p {
            Primitive::Unsigned(v) => out.extend_from_slice(&v.to_le_bytes()),
            Primitive::Double(v) => out.extend_from_slice(&v.to_le_bytes()),
            Primitive::Buffer(b) => {
                out.extend_from_slice(&(b.len() as u32).to_le_bytes());
                out.extend_from_slice(b);
            }
        }
    }
    out
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap()))
}
fn le_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap()))
}
fn le_u16(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes(s.try_into().unwrap()))
}
fn le_f64(b: &[u8], at: usize) -> f64 {
    f64::from_bits(le_u64(b, at))
}

/// Whether an allocation of `bytes` may be attempted by a check.
fn alloc_ok(bytes: u128) -> bool {
    bytes <= ALLOC_CAP || bytes >= ALLOC_IMPOSSIBLE
}

/// Whether building a filter of these storage sizes would allocate more
/// than ALLOC_CAP in all (sizes that cannot be allocated at all fail fast).
fn too_big(sizes: impl IntoIterator<Item = u128>) -> bool {
    let possible: u128 = sizes.into_iter().filter(|&b| b < ALLOC_IMPOSSIBLE).sum();
    possible > ALLOC_CAP
}

/// Items the header/RDB targets probe filters with.
const PROBE_ITEMS: [&[u8]; 8] = [b"", b"a", b"foo", b"k0", b"\x00\xff", b"item-7", b"x", b"9"];

// ---------------------------------------------------------------------------
// Bloom helpers
// ---------------------------------------------------------------------------

/// Exact doubles of docs/bloom.md §1.
#[allow(clippy::approx_constant)]
const LN2C: f64 = 0.693147180559945;
const LN2SQC: f64 = 0.480453013918201;
/// rsbloom's bounds on loaded chains (core/src/bloom/{dump,link}.rs).
const BLOOM_MAX_LINKS: u64 = 1100;
const BLOOM_MAX_HASHES: u64 = 1100;

/// All bit arrays concatenated, read through SCANDUMP iteration; checks the
/// iteration itself against docs/bloom.md §10.
pub fn bloom_data(c: &Chain) -> Vec<u8> {
    let direct: Vec<u8> = c.links().iter().flat_map(|l| l.data()).copied().collect();
    let mut out = Vec::with_capacity(direct.len());
    let mut it = 1i64;
    while let Some((next, chunk)) = c.scandump_chunk(it) {
        assert!(!chunk.is_empty(), "empty SCANDUMP chunk at {it}");
        assert!(chunk.len() as u64 <= rsbloom_core::bloom::CHUNK_MAX);
        assert_eq!(next, it + chunk.len() as i64, "iterator after chunk");
        out.extend_from_slice(chunk);
        it = next;
    }
    assert_eq!(out, direct, "SCANDUMP chunks differ from the bit arrays");
    for end in [0, -1, i64::MIN, direct.len() as i64 + 1, i64::MAX] {
        assert!(c.scandump_chunk(end).is_none(), "iterator {end} not an end");
    }
    // A chunk from inside a link runs to the end of that link (or 16 MiB).
    if direct.len() > 1 {
        let (next, chunk) = c.scandump_chunk(2).expect("iterator 2");
        assert_eq!(next, 2 + chunk.len() as i64);
        assert_eq!(chunk, &direct[1..1 + chunk.len()]);
    }
    out
}

/// Structural invariants every chain must keep (docs/bloom.md §7, §9).
pub fn check_chain(c: &Chain) {
    let links = c.links();
    assert!(!links.is_empty() && links.len() as u64 <= BLOOM_MAX_LINKS);
    assert_eq!(c.num_links(), links.len());
    let mut size = 32u64;
    let mut cap = 0u64;
    for l in links {
        assert_eq!(l.bytes(), l.data().len() as u64);
        assert_eq!(l.bits(), l.bytes() * 8, "bits = 8 * bytes");
        assert!(l.error() > 0.0 && l.error() < 1.0);
        assert!(l.n2() <= 63);
        assert!(l.n2() == 0 || l.bits() >= 1u64 << l.n2());
        let h = u64::from(l.hashes());
        assert!(h >= 1 && h <= BLOOM_MAX_HASHES);
        assert_eq!(h as f64, (LN2C * l.bpe()).ceil(), "hashes = ceil(LN2c*bpe)");
        size = size.wrapping_add(64).wrapping_add(l.bytes());
        cap = cap.wrapping_add(l.entries());
    }
    assert_eq!(c.size_bytes(), size, "BF.INFO Size");
    assert_eq!(c.capacity(), cap, "BF.INFO Capacity");
    assert_eq!(c.debug_lines().len(), 1 + links.len());
    assert_eq!(
        c.expansion().is_none(),
        c.options() & NO_SCALING != 0,
        "Expansion rate null iff NO_SCALING"
    );
    assert_eq!(c.encode_header().len(), 20 + 53 * links.len());
}

/// Whether adding may make the chain grow by more than `ALLOC_CAP` bytes.
fn bloom_add_alloc_ok(c: &Chain) -> bool {
    let Some(cur) = c.links().last() else {
        return true;
    };
    if cur.size() < cur.entries() || c.options() & NO_SCALING != 0 {
        return true;
    }
    let entries = cur.entries().wrapping_mul(u64::from(c.growth()));
    match size_link(entries, cur.error() * 0.5, c.options()) {
        Ok(s) => alloc_ok(u128::from(s.bytes)),
        Err(_) => true,
    }
}

/// Adds and probes `items`, checking the outcome rules of docs/bloom.md §6.
fn bloom_exercise(c: &mut Chain, items: &[&[u8]]) {
    for item in items {
        if !bloom_add_alloc_ok(c) {
            return;
        }
        let before_items = c.items();
        let before_links = c.num_links();
        let was_present = c.contains(item);
        let out = c.add(item);
        match out {
            AddOutcome::Added => {
                assert!(!was_present);
                assert_eq!(c.items(), before_items.wrapping_add(1));
                assert!(c.num_links() == before_links || c.num_links() == before_links + 1);
                assert!(c.contains(item), "false negative right after add");
            }
            AddOutcome::Present => {
                assert!(was_present);
                assert_eq!(c.items(), before_items);
            }
            AddOutcome::Full => {
                assert!(c.options() & NO_SCALING != 0);
                let cur = c.links().last().unwrap();
                assert!(cur.size() >= cur.entries());
                assert_eq!((c.items(), c.num_links()), (before_items, before_links));
            }
            AddOutcome::Error => {
                assert_eq!((c.items(), c.num_links()), (before_items, before_links));
            }
        }
    }
    check_chain(c);
}

/// docs/bloom.md §10 header validation, written from the spec (plus rsbloom's
/// link/hash bounds and the exact-bpe rule of docs/differences.md §1 item 11). Returns the
/// per-link byte counts when valid.
fn spec_bloom_header(data: &[u8]) -> Option<Vec<u64>> {
    if data.len() < 20 {
        return None;
    }
    let size = le_u64(data, 0);
    let n = u64::from(le_u32(data, 8));
    let options = le_u32(data, 12);
    if n == 0 || n > BLOOM_MAX_LINKS || data.len() as u64 != 20 + 53 * n {
        return None;
    }
    if options & !0xF != 0 {
        return None;
    }
    let mut sizes = 0u64;
    let mut bytes_list = Vec::new();
    for k in 0..n as usize {
        let at = 20 + 53 * k;
        let bytes = le_u64(data, at);
        let bits = le_u64(data, at + 8);
        let lsize = le_u64(data, at + 16);
        let error = le_f64(data, at + 24);
        let bpe = le_f64(data, at + 32);
        let hashes = u64::from(le_u32(data, at + 40));
        let n2 = u64::from(data[at + 52]);
        let ok = error > 0.0
            && error < 1.0
            && n2 <= 63
            && bits != 0
            && (n2 == 0 || bits >= 1u64 << n2)
            && bytes.checked_mul(8) == Some(bits)
            && bpe == -(error.ln() / LN2SQC)
            && hashes >= 1
            && hashes <= BLOOM_MAX_HASHES
            && hashes as f64 == (LN2C * bpe).ceil();
        if !ok {
            return None;
        }
        sizes = sizes.checked_add(lsize)?;
        bytes_list.push(bytes);
    }
    (sizes == size).then_some(bytes_list)
}

/// Chunk outcome per docs/bloom.md §10 step 4, from the link lengths: the byte
/// offset the chunk is copied to.
fn spec_bloom_chunk(links: &[u64], iter: i64, len: usize) -> Result<u64, BloomChunkError> {
    let len = len as i64;
    if iter <= 0 || iter < len {
        return Err(BloomChunkError::BadData);
    }
    let start = iter - len;
    if start < 1 {
        return Err(BloomChunkError::InvalidOffset);
    }
    let off = (start - 1) as u64;
    let mut link_start = 0u64;
    for &l in links {
        if off < link_start + l {
            return if len as u64 > link_start + l - off {
                Err(BloomChunkError::TooBig)
            } else {
                Ok(off)
            };
        }
        link_start += l;
    }
    Err(BloomChunkError::InvalidOffset)
}

const BLOOM_ERRORS: [f64; 6] = [0.25, 0.1, 0.01, 0.001, 1e-5, 0.05];

/// A genuine chain from a few input bytes, and the items added to it.
fn genuine_chain(inp: &mut Input) -> (Chain, Vec<Vec<u8>>) {
    let capacity = 1 + u64::from(inp.u16() % 1000);
    let error = BLOOM_ERRORS[usize::from(inp.u8()) % BLOOM_ERRORS.len()];
    let growth = u32::from(inp.u8() % 5);
    let nonscaling = inp.u8() & 1 == 1;
    let n_items = inp.u16() % 1500;
    let mut c = Chain::new(capacity, error, growth, nonscaling).expect("valid parameters");
    let mut added = Vec::new();
    for i in 0..n_items {
        let item = format!("item:{i}").into_bytes();
        if c.add(&item) == AddOutcome::Added {
            added.push(item);
        }
    }
    (c, added)
}

// ---------------------------------------------------------------------------
// Bloom targets
// ---------------------------------------------------------------------------

/// `Chain::from_header` on the whole input, against the spec's validation;
/// accepted headers round-trip byte for byte and give a working filter.
pub fn bloom_header(data: &[u8]) {
    let spec = spec_bloom_header(data);
    if spec
        .as_ref()
        .is_some_and(|links| too_big(links.iter().map(|&b| u128::from(b))))
    {
        return;
    }
    match Chain::from_header(data) {
        Ok(mut c) => {
            let links = spec.expect("from_header accepted a header the spec rejects");
            assert!(
                links.iter().all(|&b| u128::from(b) < ALLOC_IMPOSSIBLE),
                "impossible allocation succeeded"
            );
            assert_eq!(c.encode_header(), data, "header round trip");
            check_chain(&c);
            assert!(
                bloom_data(&c).iter().all(|&b| b == 0),
                "fresh bits not zero"
            );
            bloom_exercise(&mut c, &PROBE_ITEMS);
        }
        Err(e) => {
            if let Some(links) = spec {
                assert!(
                    e == BloomLoadError::OutOfMemory
                        && links.iter().any(|&b| u128::from(b) >= ALLOC_IMPOSSIBLE),
                    "spec-valid header rejected: {e:?}"
                );
            }
        }
    }
}

/// A genuine header (optionally bit-flipped), then a sequence of LOADCHUNK
/// calls checked against the spec's chunk rules and a byte model; finally the
/// genuine chunks restore the original filter exactly.
pub fn bloom_chunks(data: &[u8]) {
    let mut inp = Input::new(data);
    let (orig, added) = genuine_chain(&mut inp);
    let orig_data = bloom_data(&orig);
    let mut header = orig.encode_header();
    for _ in 0..inp.u8() % 4 {
        let at = usize::from(inp.u16()) % header.len();
        header[at] ^= inp.u8();
    }
    let mutated = header != orig.encode_header();
    if mutated {
        // Mutated headers go through the same checks as bloom_header, which
        // also covers the huge ones: loading chunks into those would only
        // slow every run down.
        bloom_header(&header);
        let spec = spec_bloom_header(&header);
        if spec.is_some_and(|links| too_big(links.into_iter().map(u128::from))) {
            return;
        }
    }
    let Ok(mut c) = Chain::from_header(&header) else {
        assert!(mutated, "genuine header rejected");
        return;
    };
    let links: Vec<u64> = c.links().iter().map(|l| l.bytes()).collect();
    let total: u64 = links.iter().sum();
    let mut model = vec![0u8; total as usize];
    let mut genuine = Vec::new();
    let mut it = 1;
    while let Some((next, chunk)) = orig.scandump_chunk(it) {
        genuine.push((next, chunk.to_vec()));
        it = next;
    }
    for _ in 0..64 {
        if inp.is_empty() {
            break;
        }
        let specials = [0, 1, -1, i64::MIN, i64::MAX, total as i64, total as i64 + 1];
        let (iter, chunk) = chunk_input(&mut inp, &genuine, &orig_data, &specials);
        let expected = spec_bloom_chunk(&links, iter, chunk.len());
        let got = c.load_chunk(iter, &chunk);
        assert_eq!(
            got,
            expected.map(|_| ()),
            "LOADCHUNK {iter} len {}",
            chunk.len()
        );
        if let Ok(off) = expected {
            model[off as usize..off as usize + chunk.len()].copy_from_slice(&chunk);
        }
    }
    assert_eq!(bloom_data(&c), model, "bit arrays differ from the model");
    if !mutated {
        for (iter, chunk) in &genuine {
            assert_eq!(c.load_chunk(*iter, chunk), Ok(()));
        }
        assert_eq!(bloom_data(&c), orig_data, "restored bits differ");
        assert_eq!(c.encode_header(), orig.encode_header());
        assert_eq!(c.items(), orig.items());
        for item in &added {
            assert!(c.contains(item), "restored filter lost an item");
        }
    }
    check_chain(&c);
    bloom_exercise(&mut c, &PROBE_ITEMS);
}

/// `Chain::rdb_load` over raw bytes at encoding 0..=5; loaded values save and
/// reload identically, and (encoding 4) save exactly what was read.
pub fn bloom_rdb(data: &[u8]) {
    let Some((&ver, rest)) = data.split_first() else {
        return;
    };
    let encver = i32::from(ver % 6);
    let result = Chain::rdb_load(&mut ByteSource::new(rest), encver);
    let mut c = match result {
        Ok(c) => c,
        Err(e) => {
            if encver > 4 {
                assert_eq!(e, BloomLoadError::Version);
            }
            return;
        }
    };
    assert!(encver <= 4, "version {encver} accepted");
    check_chain(&c);
    let mut saved: Vec<Primitive> = Vec::new();
    c.rdb_save(&mut saved);
    let again = Chain::rdb_load(&mut PrimitiveSource::new(&saved), 4).expect("reload of a save");
    let mut saved2: Vec<Primitive> = Vec::new();
    again.rdb_save(&mut saved2);
    assert_eq!(saved, saved2, "RDB save/load is not the identity");
    let bytes = encode_primitives(&saved);
    let via_bytes = Chain::rdb_load(&mut ByteSource::new(&bytes), 4).expect("byte reload");
    assert_eq!(via_bytes.encode_header(), c.encode_header());
    if encver == 4
        && le_u64(rest, 16) <= u64::from(u32::MAX)
        && le_u64(rest, 24) <= u64::from(u32::MAX)
    {
        assert!(
            rest.starts_with(&bytes),
            "encoding-4 value not saved as read"
        );
    }
    bloom_data(&c);
    bloom_exercise(&mut c, &PROBE_ITEMS);
}

/// Random BF operations against a model: no false negatives, BF.CARD equals
/// the number of `Added` outcomes, link sizes add up, and SCANDUMP+LOADCHUNK
/// and RDB round trips are the identity at any point.
pub fn bloom_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let capacity = 1 + u64::from(inp.u8() % 200);
    let error = BLOOM_ERRORS[usize::from(inp.u8()) % BLOOM_ERRORS.len()];
    let growth = u32::from(inp.u8() % 5);
    let nonscaling = inp.u8() & 1 == 1;
    let universe = 1 + u16::from(inp.u8());
    let mut c = Chain::new(capacity, error, growth, nonscaling).expect("valid parameters");
    let mut present: Vec<bool> = vec![false; usize::from(universe)];
    let mut added = 0u64;
    let item = |i: u16| format!("m{i}").into_bytes();
    for _ in 0..2000 {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let i = inp.u16() % universe;
        let mut record = |outcome: AddOutcome, i: u16, links: usize, c: &Chain| match outcome {
            AddOutcome::Added => {
                added += 1;
                present[usize::from(i)] = true;
            }
            // Already added, or a false positive: nothing changes.
            AddOutcome::Present => {}
            AddOutcome::Full => {
                assert!(nonscaling, "Full from a scaling chain");
                assert_eq!(c.num_links(), 1);
            }
            AddOutcome::Error => {
                assert!(!nonscaling && growth == 0, "unexpected add error");
                assert_eq!(c.num_links(), links);
            }
        };
        match op % 8 {
            0..=2 => {
                let links = c.num_links();
                let outcome = c.add(&item(i));
                record(outcome, i, links, &c);
            }
            3 => {
                // BF.MADD's path: blocks, prefetches, one pass per item.
                let batch: Vec<u16> = (0..i % 40).map(|_| inp.u16() % universe).collect();
                let items: Vec<Vec<u8>> = batch.iter().map(|&j| item(j)).collect();
                let mut outcomes = Vec::new();
                let links = c.num_links();
                c.add_batch(&items, |o| {
                    outcomes.push(o);
                    !matches!(o, AddOutcome::Full)
                });
                for (&j, o) in batch.iter().zip(outcomes) {
                    record(o, j, links, &c);
                }
            }
            4 => {
                if present[usize::from(i)] {
                    assert!(c.contains(&item(i)), "false negative for m{i}");
                }
            }
            5 => {
                // BF.MEXISTS's path: prefetch modes, answers as one by one.
                let items: Vec<Vec<u8>> = (0..i % 40).map(|_| item(inp.u16() % universe)).collect();
                let mut answers = Vec::new();
                c.contains_batch(&items, |p| answers.push(p));
                let expected: Vec<bool> = items.iter().map(|it| c.contains(it)).collect();
                assert_eq!(answers, expected, "batch check differs from single checks");
            }
            6 => {
                // SCANDUMP / LOADCHUNK round trip.
                let mut r = Chain::from_header(&c.encode_header()).expect("own header");
                let mut it = 1;
                while let Some((next, chunk)) = c.scandump_chunk(it) {
                    r.load_chunk(next, chunk).expect("own chunk");
                    it = next;
                }
                assert_eq!(r.encode_header(), c.encode_header());
                assert_eq!(bloom_data(&r), bloom_data(&c));
                c = r;
            }
            _ => {
                let mut saved: Vec<Primitive> = Vec::new();
                c.rdb_save(&mut saved);
                let r = Chain::rdb_load(&mut PrimitiveSource::new(&saved), 4).expect("own RDB");
                assert_eq!(r.encode_header(), c.encode_header());
                assert_eq!(bloom_data(&r), bloom_data(&c));
                c = r;
            }
        }
        assert_eq!(c.items(), added, "BF.CARD differs from the model");
    }
    check_chain(&c);
    let link_sizes: u64 = c.links().iter().map(|l| l.size()).sum();
    assert_eq!(link_sizes, added, "link sizes do not add up");
    for l in c.links() {
        assert!(l.size() <= l.entries(), "link over capacity");
    }
    if nonscaling {
        assert_eq!(c.num_links(), 1);
    }
    for i in 0..universe {
        if present[usize::from(i)] {
            assert!(c.contains(&item(i)), "false negative for m{i}");
        }
    }
}

// ---------------------------------------------------------------------------
// Cuckoo helpers
// ---------------------------------------------------------------------------

const CF_MAX_BUCKETS: u128 = (1 << 56) - 1;

/// docs/cuckoo.md §14 step 2 validation (with the recommended power-of-two
/// expansion): the per-sub-filter byte sizes when valid.
fn spec_cf_params(nb: u64, nf: u16, bs: u16, mi: u16, exp: u16, max_bs: u16) -> Option<Vec<u128>> {
    let ok = nf >= 1
        && bs >= 1
        && bs <= max_bs
        && mi >= 1
        && exp <= 32768
        && (exp == 0 || exp.is_power_of_two())
        && !(exp == 0 && nf > 1)
        && nb >= 1
        && u128::from(nb) <= CF_MAX_BUCKETS
        && nb.is_power_of_two();
    if !ok {
        return None;
    }
    let mut sizes = Vec::new();
    let mut n = u128::from(nb);
    for i in 0..nf {
        if i > 0 {
            n *= u128::from(exp);
        }
        if n == 0 || n > CF_MAX_BUCKETS {
            return None;
        }
        sizes.push(n * u128::from(bs));
    }
    Some(sizes)
}

/// The slot bytes through CF.SCANDUMP iteration, checked against docs/cuckoo.md §14
/// (whole sub-filters for positions inside small ones, null end marker).
/// `(position, (next position, chunk))` of a full SCANDUMP from position 1.
/// Iterating SCANDUMP walks from the first sub-filter at every step, which
/// is quadratic for a crafted header with thousands of them: there the
/// one-pass AOF chunks (equal to it, unit-tested in the core) stand in, and
/// [`cf_data`]'s sampled positions still go through `scandump_chunk`.
fn cf_chunks(c: &CuckooFilter) -> Vec<(i64, (i64, &[u8]))> {
    let chunks: Vec<(i64, &[u8])> = if c.num_filters() > 512 {
        c.aof_chunks().collect()
    } else {
        let mut pos = 1i64;
        std::iter::from_fn(|| {
            let found = c.scandump_chunk(pos)?;
            pos = found.0;
            Some(found)
        })
        .collect()
    };
    let mut at = 1i64;
    chunks
        .into_iter()
        .map(|(next, chunk)| (std::mem::replace(&mut at, next), (next, chunk)))
        .collect()
}

pub fn cf_data(c: &CuckooFilter) -> Vec<u8> {
    let mut out = Vec::new();
    let mut sizes = Vec::new();
    for (it, (next, chunk)) in cf_chunks(c) {
        assert!(!chunk.is_empty());
        assert_eq!(next, it + chunk.len() as i64);
        out.extend_from_slice(chunk);
        sizes.push(chunk.len());
    }
    for end in [0, -1, i64::MIN, out.len() as i64 + 1, i64::MAX] {
        assert!(c.scandump_chunk(end).is_none(), "position {end} not an end");
    }
    // A position inside a small sub-filter returns that whole sub-filter
    // (sampled: each lookup walks the sub-filters, up to 65535 of them).
    let mut start = 0usize;
    for (k, &s) in sizes.iter().enumerate() {
        // Chunks of 16 MiB may be parts of a bigger sub-filter.
        if (k >= 4 && k + 4 < sizes.len()) || s as u64 >= rsbloom_core::cuckoo::CHUNK_MAX {
            start += s;
            continue;
        }
        let pos = (start + s / 2 + 1) as i64;
        let (next, chunk) = c.scandump_chunk(pos).expect("inner position");
        assert!(
            chunk == &out[start..start + s],
            "pos {pos}: chunk of {} bytes, sub-filter {k} is {s} bytes at {start}",
            chunk.len()
        );
        assert_eq!(next, pos + s as i64);
        start += s;
    }
    assert_eq!(
        c.size_bytes(),
        40 + 16 * u64::from(c.num_filters()) + out.len() as u64,
        "CF.INFO Size"
    );
    assert!(sizes.len() >= usize::from(c.num_filters()));
    out
}

fn nonzero(b: &[u8]) -> u64 {
    b.iter().filter(|&&x| x != 0).count() as u64
}

/// Invariants of any filter (docs/cuckoo.md §1, §11).
fn check_cf(c: &CuckooFilter) {
    assert!(c.num_filters() >= 1);
    assert!(c.bucket_size() >= 1);
    assert!(c.max_iterations() >= 1);
    assert!(c.num_buckets().is_power_of_two());
    assert!(c.expansion() == 0 || c.expansion().is_power_of_two());
    let d = c.debug_string();
    assert!(
        d.starts_with(&format!("bktsize:{} ", c.bucket_size())),
        "{d}"
    );
    assert!(d.ends_with(&format!("expansion:{}", c.expansion())), "{d}");
    let h = c.encode_header();
    assert_eq!(le_u64(&h, 0), c.num_items());
    assert_eq!(le_u64(&h, 8), c.num_buckets());
    assert_eq!(le_u64(&h, 24), u64::from(c.num_filters()));
}

/// Bytes the next growth would allocate (0 if it cannot grow).
fn cf_growth_bytes(c: &CuckooFilter) -> u128 {
    if c.expansion() == 0 {
        return 0;
    }
    let mut n = u128::from(c.num_buckets());
    for _ in 0..c.num_filters() {
        n = n.saturating_mul(u128::from(c.expansion()));
        if n > CF_MAX_BUCKETS {
            return 0;
        }
    }
    n * u128::from(c.bucket_size())
}

/// Inserts, probes, deletes and compacts `items` on a (possibly crafted)
/// filter, checking the outcome rules of docs/cuckoo.md §5–§10.
fn cf_exercise(c: &mut CuckooFilter, items: &[&[u8]]) {
    for (k, item) in items.iter().enumerate() {
        let h = hash_item(item);
        assert!(h.fp != 0);
        let items_before = c.num_items();
        if alloc_ok(cf_growth_bytes(c)) {
            let out = if k % 2 == 0 {
                c.insert(h)
            } else {
                c.insert_unique(h)
            };
            match out {
                InsertOutcome::Inserted => {
                    assert_eq!(c.num_items(), items_before.wrapping_add(1));
                    assert!(c.contains(h), "false negative right after insert");
                    assert!(c.count(h) >= 1);
                }
                InsertOutcome::Exists => assert!(c.contains(h)),
                InsertOutcome::NoSpace => assert_eq!(c.expansion(), 0),
                InsertOutcome::AllocFailed => {}
            }
        }
        let _ = c.count(h);
        if k % 3 == 0 {
            let had = c.contains(h);
            let deleted = c.delete(h);
            assert!(!deleted || had, "deleted an absent fingerprint");
        }
    }
    let slots = nonzero(&cf_data(c));
    let filters = c.num_filters();
    let items = c.num_items();
    c.compact(true);
    assert_eq!(c.num_deletes(), 0, "compaction resets deletes");
    assert_eq!(c.num_items(), items, "compaction changed the item count");
    assert!(c.num_filters() <= filters);
    assert_eq!(nonzero(&cf_data(c)), slots, "compaction lost fingerprints");
    check_cf(c);
}

/// Chunk outcome per docs/cuckoo.md §14 step 4 from the sub-filter sizes: the offset.
fn spec_cf_chunk(sizes: &[u64], pos: i64, len: usize) -> Option<u64> {
    let len = len as i64;
    if len == 0 || pos < 0 || pos - 1 < len {
        return None;
    }
    let mut off = (pos - len - 1) as u64;
    let mut start = 0u64;
    for &s in sizes {
        if off < s {
            return (off + len as u64 <= s).then_some(start + off);
        }
        off -= s;
        start += s;
    }
    None
}

// ---------------------------------------------------------------------------
// Cuckoo targets
// ---------------------------------------------------------------------------

/// `CuckooFilter::from_header`: input bytes 0..38 are the header, byte 38
/// (if any) the current bucket-size maximum. Checked against the spec's
/// validation; accepted headers round-trip and give a working filter.
/// The sub-filter sizes the spec gives a 38-byte header, if valid.
fn spec_cf_header(header: &[u8], max_bs: u16) -> Option<Vec<u128>> {
    let nb = le_u64(header, 8);
    let nf = le_u64(header, 24) as u16;
    let (bs, mi, exp) = (le_u16(header, 32), le_u16(header, 34), le_u16(header, 36));
    spec_cf_params(nb, nf, bs, mi, exp, max_bs)
}

pub fn cuckoo_header(data: &[u8]) {
    if data.len() != HEADER_LEN {
        assert_eq!(
            CuckooFilter::from_header(data, 255),
            Err(HeaderError::InvalidHeader)
        );
    }
    if data.len() < HEADER_LEN {
        return;
    }
    let header = &data[..HEADER_LEN];
    let max_bs = data.get(HEADER_LEN).map_or(255, |&b| u16::from(b));
    let nf = le_u64(header, 24) as u16;
    let spec = spec_cf_header(header, max_bs);
    if spec
        .as_ref()
        .is_some_and(|sizes| too_big(sizes.iter().copied()))
    {
        return;
    }
    match CuckooFilter::from_header(header, max_bs) {
        Ok(mut c) => {
            let sizes = spec.expect("from_header accepted a header the spec rejects");
            assert!(sizes.iter().all(|&s| s < ALLOC_IMPOSSIBLE));
            let enc = c.encode_header();
            assert_eq!(enc[..24], header[..24]);
            assert_eq!(le_u64(&enc, 24), u64::from(nf), "numFilters mod 2^16");
            assert_eq!(enc[32..], header[32..]);
            check_cf(&c);
            if c.num_filters() > 512 {
                // Iterating SCANDUMP is quadratic in the sub-filter count
                // (each call walks from the first): check the ends only.
                let first = sizes[0] as usize;
                let (next, chunk) = c.scandump_chunk(1).expect("first chunk");
                assert_eq!((next, chunk.len()), (1 + first as i64, first));
                let total: u128 = sizes.iter().sum();
                let last = *sizes.last().unwrap();
                let (next, chunk) = c.scandump_chunk(total as i64).expect("last chunk");
                assert_eq!(next as u128, total + last);
                assert_eq!(chunk.len() as u128, last);
                assert!(c.scandump_chunk(total as i64 + 1).is_none());
                return;
            }
            let d = cf_data(&c);
            assert_eq!(d.len() as u128, sizes.iter().sum::<u128>());
            assert!(d.iter().all(|&b| b == 0));
            cf_exercise(&mut c, &PROBE_ITEMS);
        }
        Err(e) => {
            assert_eq!(e, HeaderError::CannotCreate);
            if let Some(sizes) = spec {
                assert!(
                    sizes.iter().any(|&s| s >= ALLOC_IMPOSSIBLE),
                    "spec-valid header rejected"
                );
            }
        }
    }
}

/// A genuine filter's header (optionally bit-flipped), LOADCHUNK sequences
/// against the spec and a byte model, then the genuine chunks restore the
/// original exactly (`PartialEq` over all fields and slots).
pub fn cuckoo_chunks(data: &[u8]) {
    let mut inp = Input::new(data);
    let bs = 1 + u16::from(inp.u8() % 8);
    let capacity = 2 * u64::from(bs) + u64::from(inp.u16() % 4000);
    let mi = 1 + u16::from(inp.u8() % 64);
    let exp = u16::from(inp.u8() % 5);
    let mut orig = CuckooFilter::new(capacity, bs, mi, exp).expect("valid parameters");
    let mut added = Vec::new();
    for i in 0..inp.u16() % 2000 {
        let h = hash_item(format!("c{i}").as_bytes());
        if orig.insert(h) == InsertOutcome::Inserted {
            added.push(h);
        }
    }
    let orig_data = cf_data(&orig);
    let mut header = orig.encode_header();
    for _ in 0..inp.u8() % 4 {
        let at = usize::from(inp.u8()) % HEADER_LEN;
        header[at] ^= inp.u8();
    }
    let mutated = header != orig.encode_header();
    if mutated {
        // As in bloom_chunks: huge filters are cuckoo_header's business.
        cuckoo_header(&header);
        if spec_cf_header(&header, 255).is_some_and(too_big) {
            return;
        }
    }
    let Ok(mut c) = CuckooFilter::from_header(&header, 255) else {
        assert!(mutated, "genuine header rejected");
        return;
    };
    let sizes: Vec<u64> = cf_chunks(&c)
        .iter()
        .map(|(_, (_, chunk))| chunk.len() as u64)
        .collect();
    let total: u64 = sizes.iter().sum();
    let mut model = vec![0u8; total as usize];
    let genuine: Vec<(i64, Vec<u8>)> = orig.aof_chunks().map(|(p, d)| (p, d.to_vec())).collect();
    for _ in 0..64 {
        if inp.is_empty() {
            break;
        }
        let specials = [
            0,
            1,
            2,
            -1,
            i64::MIN,
            i64::MAX,
            total as i64,
            total as i64 + 1,
            total as i64 + 2,
        ];
        let (pos, chunk) = chunk_input(&mut inp, &genuine, &orig_data, &specials);
        let expected = spec_cf_chunk(&sizes, pos, chunk.len());
        let got = c.load_chunk(pos, &chunk);
        assert_eq!(
            got.is_ok(),
            expected.is_some(),
            "CF.LOADCHUNK {pos} len {}",
            chunk.len()
        );
        if let Some(off) = expected {
            model[off as usize..off as usize + chunk.len()].copy_from_slice(&chunk);
        }
    }
    assert_eq!(cf_data(&c), model, "slots differ from the model");
    if !mutated {
        for (pos, chunk) in &genuine {
            assert!(c.load_chunk(*pos, chunk).is_ok());
        }
        assert!(c == orig, "header + chunks did not restore the filter");
        for h in &added {
            assert!(c.contains(*h), "restored filter lost an item");
        }
    }
    check_cf(&c);
    cf_exercise(&mut c, &PROBE_ITEMS);
}

/// `CuckooFilter::rdb_load` over raw bytes: byte 0 picks the encoding
/// (0..=5), bytes 1..6 the legacy defaults, byte 6 the bucket-size maximum.
pub fn cuckoo_rdb(data: &[u8]) {
    if data.len() < 7 {
        return;
    }
    let encver = i32::from(data[0] % 6);
    let legacy = LegacyDefaults {
        bucket_size: u16::from(data[1]),
        max_iterations: le_u16(data, 2),
        expansion: le_u16(data, 4),
    };
    let max_bs = if data[6] == 0 {
        255
    } else {
        u16::from(data[6])
    };
    let rest = &data[7..];
    let mut c = match CuckooFilter::rdb_load(&mut ByteSource::new(rest), encver, legacy, max_bs) {
        Ok(c) => c,
        Err(e) => {
            if encver > 4 {
                assert_eq!(e, CfLoadError::UnsupportedVersion);
            }
            return;
        }
    };
    assert!(encver <= 4);
    check_cf(&c);
    assert!(c.bucket_size() <= max_bs);
    let mut saved: Vec<Primitive> = Vec::new();
    c.rdb_save(&mut saved);
    let again = CuckooFilter::rdb_load(&mut PrimitiveSource::new(&saved), 4, legacy, max_bs)
        .expect("reload");
    assert!(again == c, "RDB save/load is not the identity");
    let bytes = encode_primitives(&saved);
    if encver == 4 && [0, 32, 40, 48].iter().all(|&at| le_u64(rest, at) <= 0xFFFF) {
        assert!(
            rest.starts_with(&bytes),
            "encoding-4 value not saved as read"
        );
    }
    // Header + chunks reproduce the loaded filter too.
    let mut r = CuckooFilter::from_header(&c.encode_header(), 255).expect("own header");
    for (pos, chunk) in c.aof_chunks() {
        r.load_chunk(pos, chunk).expect("own chunk");
    }
    assert!(r == c, "dump round trip of a loaded filter");
    cf_exercise(&mut c, &PROBE_ITEMS);
}

/// Random CF operations against a multiset model. For items whose
/// fingerprint no other item of the run shares: no false negatives,
/// `count` between the model count and twice it (docs/differences.md §2 double count), DEL
/// succeeds iff a copy is held, ADDNX answers Exists iff one is. Always:
/// numItems/numDeletes follow the model (incl. automatic compaction), the
/// number of occupied slots equals numItems, and header+chunks and RDB round
/// trips are the identity.
pub fn cuckoo_model(data: &[u8]) {
    let mut inp = Input::new(data);
    let bs = 1 + u16::from(inp.u8() % 4);
    let capacity = 2 * u64::from(bs) + u64::from(inp.u8());
    let mi = 1 + u16::from(inp.u8() % 32);
    let exp = u16::from(inp.u8() % 4);
    let universe = 1 + u16::from(inp.u8());
    let mut c = CuckooFilter::new(capacity, bs, mi, exp).expect("valid parameters");
    let hashes: Vec<CuckooHash> = (0..universe)
        .map(|i| hash_item(format!("u{i}").as_bytes()))
        .collect();
    let mut fp_users: HashMap<u8, usize> = HashMap::new();
    for h in &hashes {
        *fp_users.entry(h.fp).or_default() += 1;
    }
    let unique = |i: usize| fp_users[&hashes[i].fp] == 1;
    let mut copies = vec![0u64; usize::from(universe)];
    let (mut items, mut deletes) = (0u64, 0u64);
    for _ in 0..2000 {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let i = usize::from(inp.u16() % universe);
        let h = hashes[i];
        // Keep executions fast: no growth past 1 MiB sub-filters.
        let may_grow = cf_growth_bytes(&c) <= 1 << 20;
        match op % 10 {
            0..=3 if !may_grow => {}
            0..=2 => match c.insert(h) {
                InsertOutcome::Inserted => {
                    copies[i] += 1;
                    items += 1;
                }
                InsertOutcome::NoSpace => assert_eq!(exp, 0),
                other => panic!("insert gave {other:?}"),
            },
            3 => match c.insert_unique(h) {
                InsertOutcome::Inserted => {
                    assert!(!unique(i) || copies[i] == 0, "ADDNX inserted a duplicate");
                    copies[i] += 1;
                    items += 1;
                }
                InsertOutcome::Exists => {
                    assert!(!unique(i) || copies[i] > 0, "ADDNX: phantom Exists");
                }
                InsertOutcome::NoSpace => assert_eq!(exp, 0),
                InsertOutcome::AllocFailed => panic!("allocation failed"),
            },
            4 | 5 => {
                let filters = c.num_filters();
                let deleted = c.delete(h);
                if unique(i) {
                    assert_eq!(deleted, copies[i] > 0, "CF.DEL of u{i}");
                }
                if deleted {
                    // Which item's copy went is unknown for shared fingerprints.
                    if copies[i] > 0 {
                        copies[i] -= 1;
                    } else if let Some(j) =
                        (0..copies.len()).find(|&j| copies[j] > 0 && hashes[j].fp == h.fp)
                    {
                        copies[j] -= 1;
                    }
                    items -= 1;
                    deletes += 1;
                    if filters > 1 && deletes as f64 > items as f64 * 0.10 {
                        deletes = 0;
                    }
                }
            }
            6 => {
                if unique(i) {
                    let n = c.count(h);
                    assert!(
                        n >= copies[i] && n <= 2 * copies[i],
                        "CF.COUNT u{i} = {n}, model {}",
                        copies[i]
                    );
                    assert_eq!(c.contains(h), copies[i] > 0, "CF.EXISTS u{i}");
                }
            }
            7 => {
                c.compact(op & 0x80 != 0);
                deletes = 0;
            }
            8 => {
                let mut r = CuckooFilter::from_header(&c.encode_header(), 255).expect("header");
                for (pos, chunk) in c.aof_chunks() {
                    r.load_chunk(pos, chunk).expect("own chunk");
                }
                assert!(r == c, "SCANDUMP/LOADCHUNK round trip");
                c = r;
            }
            _ => {
                let mut saved: Vec<Primitive> = Vec::new();
                c.rdb_save(&mut saved);
                let legacy = LegacyDefaults {
                    bucket_size: 2,
                    max_iterations: 20,
                    expansion: 1,
                };
                let r = CuckooFilter::rdb_load(&mut PrimitiveSource::new(&saved), 4, legacy, 255)
                    .expect("own RDB");
                assert!(r == c, "RDB round trip");
                c = r;
            }
        }
        assert_eq!(c.num_items(), items, "CF.INFO items");
        assert_eq!(c.num_deletes(), deletes, "CF.INFO deletes");
    }
    check_cf(&c);
    assert_eq!(nonzero(&cf_data(&c)), items, "occupied slots != numItems");
    for (i, h) in hashes.iter().enumerate() {
        if unique(i) && copies[i] > 0 {
            assert!(c.contains(*h), "false negative for u{i}");
        }
    }
}

// ---------------------------------------------------------------------------
// Argument parsing and configuration
// ---------------------------------------------------------------------------

/// Reference for Redis' strict integer syntax.
fn ref_i64(s: &[u8]) -> Option<i64> {
    let t = std::str::from_utf8(s).ok()?;
    let digits = t.strip_prefix('-').unwrap_or(t);
    let canonical = t == "0"
        || (!digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0'));
    if canonical {
        t.parse().ok()
    } else {
        None
    }
}

/// Plain decimals (`-?[0-9]+(\.[0-9]+)?`, short): both Rust and strtod are
/// correctly rounded, so they must agree.
fn plain_decimal(s: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(s).ok()?;
    let body = t.strip_prefix('-').unwrap_or(t);
    let mut parts = body.splitn(2, '.');
    let int = parts.next()?;
    let frac = parts.next();
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if t.len() <= 30 && digits(int) && frac.is_none_or(digits) {
        t.parse().ok()
    } else {
        None
    }
}

fn check_config(cfg: &Config) {
    assert!(cfg.bf_error_rate > 0.0 && cfg.bf_error_rate <= 0.25);
    assert!((1..=1 << 30).contains(&cfg.bf_initial_size));
    assert!((0..=32768).contains(&cfg.bf_expansion_factor));
    assert!((1..=255).contains(&cfg.cf_bucket_size));
    assert!(cfg.cf_bucket_size <= cfg.cf_bucket_size_max());
    assert!(cfg.cf_initial_size >= cfg.cf_initial_size_min());
    assert!(2 * cfg.cf_bucket_size <= cfg.cf_initial_size, "{cfg:?}");
    assert!(cfg.cf_initial_size <= 1 << 30);
    assert!((1..=65535).contains(&cfg.cf_max_iterations));
    assert!((0..=32768).contains(&cfg.cf_expansion_factor));
    assert!((1..=65536).contains(&cfg.cf_max_expansions));
    for name in NAMES {
        assert!(cfg.get(name).is_some());
    }
}

fn check_arg_error(e: ArgError) {
    if let ArgError::Reply(text) = e {
        assert!(!text.is_empty() && !text.contains('\n') && !text.contains('\r'));
    }
}

/// Every parser of `core::args` and `core::config` on argument vectors cut
/// from the input (separator `\n`), checked against the ranges of
/// docs/bloom.md §8, docs/cuckoo.md §12 and docs/module.md §5, and against
/// reference number parsers.
pub fn args(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut cfg = Config::default();
    for _ in 0..inp.u8() % 4 {
        let name = NAMES[usize::from(inp.u8()) % NAMES.len()];
        let len = usize::from(inp.u8() % 24);
        let value = inp.bytes(len);
        let before = cfg.clone();
        match cfg.set(name, value) {
            Ok(()) => {
                let text = cfg.get(name).unwrap();
                assert!(text == String::from_utf8_lossy(value) || text == "0.25");
            }
            Err(e) => {
                assert_eq!(cfg, before, "failed CONFIG SET changed the configuration");
                assert!(e.contains(name), "{e}");
            }
        }
        check_config(&cfg);
    }
    let rest = inp.rest();
    let parts: Vec<&[u8]> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split(|&b| b == b'\n').collect()
    };
    for p in &parts {
        assert_eq!(parse_i64(p), ref_i64(p), "parse_i64 {p:?}");
        match parse_f64(p) {
            Some(v) => {
                assert!(!v.is_nan());
                if let Some(r) = plain_decimal(p) {
                    assert_eq!(v, r, "parse_f64 {p:?}");
                }
            }
            None => assert_eq!(plain_decimal(p), None, "parse_f64 rejected {p:?}"),
        }
        let _ = parse_info_field(p);
        for (got, min) in [
            (parse_scandump_iter(p), i64::MIN),
            (parse_scandump_pos(p), 0),
        ] {
            if let Ok(v) = got {
                assert_eq!(Some(v), parse_i64(p));
                assert!(v >= min);
            }
        }
        for got in [parse_loadchunk_iter(p), parse_loadchunk_pos(p)] {
            match got {
                Ok(v) => assert_eq!(Some(v), parse_i64(p)),
                Err(e) => check_arg_error(e),
            }
        }
        if let Ok(v) = parse_loadchunk_pos(p) {
            assert_ne!(v, 0);
        }
    }
    let argv = |name: &'static [u8]| -> Vec<&[u8]> {
        std::iter::once(name).chain(parts.iter().copied()).collect()
    };
    let a = argv(b"BF.RESERVE");
    match parse_bf_reserve(&a, &cfg) {
        Ok(r) => {
            assert!((4..=7).contains(&a.len()));
            let e = parse_f64(a[2]).unwrap();
            assert_eq!(r.error_rate, e.min(0.25));
            assert!(r.error_rate > 0.0 && r.error_rate <= 0.25);
            assert_eq!(Some(r.capacity as i64), parse_i64(a[3]));
            assert!((1..=1 << 30).contains(&r.capacity));
            assert!(r.expansion <= 32768);
            assert!(r.expansion != 0 || r.nonscaling);
        }
        Err(e) => check_arg_error(e),
    }
    let a = argv(b"BF.INSERT");
    match parse_bf_insert(&a, &cfg) {
        Ok(r) => {
            assert!(r.items_at >= 3 && r.items_at < a.len());
            assert_eq!(
                a[r.items_at - 1].first().map(u8::to_ascii_lowercase),
                Some(b'i')
            );
            assert!(r.error_rate > 0.0 && r.error_rate <= 0.25);
            assert!((1..=1 << 30).contains(&r.capacity));
            assert!(r.expansion <= 32768);
            assert!(r.expansion != 0 || r.nonscaling);
            let res = r.reserve();
            assert_eq!(res.capacity, r.capacity);
        }
        Err(e) => check_arg_error(e),
    }
    let a = argv(b"CF.RESERVE");
    match parse_cf_reserve(&a, &cfg) {
        Ok(r) => {
            assert!(a.len() >= 3 && a.len() % 2 == 1);
            assert_eq!(Some(r.capacity as i64), parse_i64(a[2]));
            assert!(r.bucket_size >= 1 && i64::from(r.bucket_size) <= cfg.cf_bucket_size_max());
            assert!(2 * u64::from(r.bucket_size) <= r.capacity && r.capacity <= 1 << 30);
            assert!(r.max_iterations >= 1);
            assert!(r.expansion <= 32768);
            // Such a reservation can be created (small ones only: no huge allocations).
            if r.capacity / u64::from(r.bucket_size) <= 4096 {
                let f = CuckooFilter::new(r.capacity, r.bucket_size, r.max_iterations, r.expansion)
                    .expect("parsed CF.RESERVE must be creatable");
                check_cf(&f);
            }
        }
        Err(e) => check_arg_error(e),
    }
    let a = argv(b"CF.INSERT");
    match parse_cf_insert(&a, &cfg) {
        Ok(r) => {
            assert!(r.items_at >= 3 && r.items_at < a.len());
            assert!(r.capacity <= 1 << 30);
            assert!(
                r.capacity as i64 >= cfg.cf_initial_size_min()
                    || r.capacity as i64 == cfg.cf_initial_size
            );
            let res = r.reserve(&cfg);
            assert!(
                2 * u64::from(res.bucket_size) <= res.capacity,
                "{res:?} {cfg:?}"
            );
        }
        Err(e) => check_arg_error(e),
    }
    let mut c2 = cfg.clone();
    if c2.apply_module_args(&parts).is_ok() {
        assert!(parts.len().is_multiple_of(2) || (parts.len() == 1 && parts[0].is_empty()));
    }
    check_config(&c2);
}

// ---------------------------------------------------------------------------
// Seed inputs (written to fuzz/corpus by `tests/fuzz_replay.rs`)
// ---------------------------------------------------------------------------

/// Seed inputs per target, derived from genuine encodings.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    // Genuine Bloom chains.
    let mut chains = Vec::new();
    for (cap, err, growth, nonscaling, n) in [
        (100u64, 0.01, 2u32, false, 1u32),
        (4, 0.1, 2, false, 8),
        (10, 0.01, 2, false, 100),
        (5, 0.1, 3, false, 8),
        (3, 0.01, 0, true, 3),
        (1, 0.25, 1, false, 40),
    ] {
        let mut c = Chain::new(cap, err, growth, nonscaling).unwrap();
        for i in 0..n {
            c.add(format!("{i}").as_bytes());
        }
        chains.push(c);
    }
    for c in &chains {
        out.push(("bloom_header", c.encode_header()));
        let mut saved: Vec<Primitive> = Vec::new();
        c.rdb_save(&mut saved);
        let bytes = encode_primitives(&saved);
        for v in [4u8, 3, 2] {
            // Versions 2 and 3 lack the growth field; the stream is reread.
            let body = if v == 4 {
                bytes.clone()
            } else {
                let mut legacy = saved.clone();
                legacy.remove(3);
                encode_primitives(&legacy)
            };
            out.push(("bloom_rdb", [vec![v], body].concat()));
        }
    }
    // Genuine Cuckoo filters.
    for (cap, bs, mi, exp, n) in [
        (1000u64, 2u16, 20u16, 1u16, 1u32),
        (8, 2, 20, 2, 20),
        (4, 1, 5, 1, 10),
        (64, 4, 500, 4, 100),
        (4, 2, 20, 0, 4),
    ] {
        let mut c = CuckooFilter::new(cap, bs, mi, exp).unwrap();
        for i in 0..n {
            c.insert(hash_item(format!("k{i}").as_bytes()));
        }
        out.push(("cuckoo_header", c.encode_header().to_vec()));
        let mut saved: Vec<Primitive> = Vec::new();
        c.rdb_save(&mut saved);
        let mut seed = vec![4u8, 2, 20, 0, 1, 0, 0];
        seed.extend(encode_primitives(&saved));
        out.push(("cuckoo_rdb", seed));
        if c.num_filters() == 1 {
            // Encoding 2: no deletes/parameters, no per-sub-filter count.
            let legacy: Vec<Primitive> = saved
                .iter()
                .enumerate()
                .filter(|(k, _)| !(3..=7).contains(k))
                .map(|(_, p)| p.clone())
                .collect();
            let mut seed = vec![2u8, bs as u8, mi as u8, (mi >> 8) as u8, exp as u8, 0, 0];
            seed.extend(encode_primitives(&legacy));
            out.push(("cuckoo_rdb", seed));
        }
    }
    // Structured targets: parameter bytes, then operations.
    let ops: Vec<u8> = (0..=255u8)
        .flat_map(|b| [b, b.wrapping_mul(7), 0])
        .collect();
    for params in [
        vec![100u8, 0, 2, 2, 0, 50, 0],
        vec![4, 0, 1, 2, 0, 8, 0],
        vec![3, 0, 2, 0, 1, 3, 0],
        vec![1, 0, 0, 1, 0, 200, 0],
    ] {
        out.push(("bloom_chunks", [params.clone(), ops.clone()].concat()));
    }
    for params in [
        vec![1u8, 0, 4, 20, 1, 100, 0],
        vec![0, 200, 0, 5, 2, 200, 3],
        vec![3, 10, 0, 50, 0, 50, 0],
    ] {
        out.push(("cuckoo_chunks", [params.clone(), ops.clone()].concat()));
    }
    for params in [
        vec![10u8, 2, 2, 0, 64],
        vec![0, 1, 1, 0, 255],
        vec![5, 0, 0, 1, 30],
    ] {
        out.push(("bloom_model", [params.clone(), ops.clone()].concat()));
    }
    for params in [
        vec![1u8, 8, 20, 1, 64],
        vec![0, 2, 5, 0, 255],
        vec![3, 0, 1, 2, 30],
    ] {
        out.push(("cuckoo_model", [params.clone(), ops.clone()].concat()));
    }
    for line in [
        &b"\x00k\n0.01\n100\nEXPANSION\n2\nNONSCALING"[..],
        b"\x01\x00\x040.02k\nCAPACITY\n1000\nERROR\n0.001\nEXPANSION\n4\nITEMS\na\nb",
        b"\x02\x03\x03255\x04\x03510k\n1000\nBUCKETSIZE\n4\nMAXITERATIONS\n50\nEXPANSION\n2",
        b"\x00k\nCAPACITY\n4\nNOCREATE\nITEMS\nx",
        b"\x00ERROR_RATE\n0.5\nINITIAL_SIZE\n400\nCF_MAX_EXPANSIONS\n64",
        b"\x00-9223372036854775808\n9223372036854775807\n0x1p-3\n1e-400\ninf\n-0\n01\n",
        b"\x00k\n100\nx\nMAXITERATIONS",
    ] {
        out.push(("args", line.to_vec()));
    }
    out.extend(cms::seeds());
    out.extend(topk::seeds());
    out.extend(tdigest::seeds());
    out.extend(apbf::seeds());
    out
}

/// One LOADCHUNK call for the chunk targets: a genuine chunk, a genuine
/// chunk at a shifted iterator, arbitrary data at a special iterator
/// (`specials` plus one fuzzed value), a slice of the original data at its
/// own or a nearby iterator, or anything.
fn chunk_input(
    inp: &mut Input,
    genuine: &[(i64, Vec<u8>)],
    orig_data: &[u8],
    specials: &[i64],
) -> (i64, Vec<u8>) {
    match inp.u8() % 5 {
        0 if !genuine.is_empty() => genuine[usize::from(inp.u8()) % genuine.len()].clone(),
        1 if !genuine.is_empty() => {
            let (i, d) = genuine[usize::from(inp.u8()) % genuine.len()].clone();
            (i.wrapping_add(i64::from(inp.u8() as i8)), d)
        }
        2 => {
            let mut specials = specials.to_vec();
            specials.push(inp.u64() as i64);
            let iter = specials[usize::from(inp.u8()) % specials.len()];
            let len = usize::from(inp.u8());
            (iter, inp.bytes(len).to_vec())
        }
        3 if !orig_data.is_empty() => {
            let from = usize::from(inp.u16()) % orig_data.len();
            let len = usize::from(inp.u16()) % (orig_data.len() - from + 1);
            let iter = (from + len + 1) as i64 + i64::from(inp.u8() as i8 % 3);
            (iter, orig_data[from..from + len].to_vec())
        }
        _ => {
            let len = usize::from(inp.u8() % 32);
            (i64::from(inp.u32()), inp.bytes(len).to_vec())
        }
    }
}
