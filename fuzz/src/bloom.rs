//! Fuzz checks of the Bloom core (docs/bloom.md): the header and RDB
//! decoders on arbitrary bytes, LOADCHUNK sequences, and random operations
//! against a model.

use rsbloom_core::bitunion::MergeError;
use rsbloom_core::bloom::{
    size_link, AddOutcome, Chain, ChunkError as BloomChunkError, LoadError as BloomLoadError,
    NO_SCALING,
};
use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};

use super::{
    alloc_ok, chunk_input, encode_primitives, le_f64, le_u32, le_u64, ops_seed, too_big, Input,
    ALLOC_IMPOSSIBLE, PROBE_ITEMS,
};

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
    for l in links.iter() {
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
    let links = c.links();
    let Some(cur) = links.last() else {
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
                let links = c.links();
                let cur = links.last().unwrap();
                assert!(cur.size() >= cur.entries());
                assert_eq!((c.items(), c.num_links()), (before_items, before_links));
            }
            AddOutcome::Error => {
                assert_eq!((c.items(), c.num_links()), (before_items, before_links));
            }
            AddOutcome::OverLimit => unreachable!("no limit given"),
        }
    }
    check_chain(c);
    assert!(c.counts_agree(), "counters disagree after adds");
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
        let entries = le_u64(data, at + 44);
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
            && hashes as f64 == (LN2C * bpe).ceil()
            && lsize <= entries.max(1); // a capacity-0 link holds the add that made it
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
fn genuine_chain(inp: &mut Input) -> (Box<Chain>, Vec<Vec<u8>>) {
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
    assert!(c.counts_agree(), "loaded counters disagree");
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
    let before = c.try_clone().expect("copy of a loaded chain");
    bloom_exercise(&mut c, &PROBE_ITEMS);
    // Then items of the input itself.
    let items: Vec<&[u8]> = rest.chunks(3).take(64).collect();
    bloom_exercise(&mut c, &items);
    bloom_merge_check(&before, &c);
}

/// BF.MERGE (docs/bloom.md §12) of `a` and `b`, `b` being `a` after adds: a
/// copy and a self-merge are the source; the union has `b`'s bits (adds
/// only set bits), link counts at least `b`'s and within capacity (or the
/// source's count), and round-trips; a scaled-out `b` is refused as of
/// another shape.
fn bloom_merge_check(a: &Chain, b: &Chain) {
    // Compared as header and bits: a loaded NaN field is never `==`.
    let same = |x: &Chain, y: &Chain| {
        assert_eq!(x.encode_header(), y.encode_header());
        assert_eq!(bloom_data(x), bloom_data(y));
    };
    same(&Chain::merge(a, &[]).unwrap(), a);
    same(&Chain::merge(a, &[a, a]).unwrap(), a);
    match Chain::merge(a, &[b]) {
        Ok(u) => {
            assert_eq!(a.num_links(), b.num_links());
            check_chain(&u);
            assert!(u.counts_agree(), "merged counters disagree");
            assert_eq!(bloom_data(&u), bloom_data(b));
            for (l, m) in u.links().iter().zip(b.links().iter()) {
                assert!(l.size() >= m.size());
                assert!(l.size() <= l.entries().max(m.size()));
            }
            let mut saved: Vec<Primitive> = Vec::new();
            u.rdb_save(&mut saved);
            let r = Chain::rdb_load(&mut PrimitiveSource::new(&saved), 4).expect("merged RDB");
            same(&r, &u);
        }
        Err(MergeError::Differs(d)) => {
            assert_ne!(a.num_links(), b.num_links(), "{d:?}");
            assert_eq!(d.field, "number of links");
        }
        Err(e) => assert_eq!(e, MergeError::Overflow),
    }
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
            AddOutcome::OverLimit => unreachable!("no limit given"),
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
                c.add_batch(&items, None, |o| {
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
    for l in c.links().iter() {
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

/// Seeds: genuine chains (headers, RDB images at encodings 2–4) and
/// parameter bytes followed by operations.
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
    let ops = ops_seed();
    for params in [
        vec![100u8, 0, 2, 2, 0, 50, 0],
        vec![4, 0, 1, 2, 0, 8, 0],
        vec![3, 0, 2, 0, 1, 3, 0],
        vec![1, 0, 0, 1, 0, 200, 0],
    ] {
        out.push(("bloom_chunks", [params.clone(), ops.clone()].concat()));
    }
    for params in [
        vec![10u8, 2, 2, 0, 64],
        vec![0, 1, 1, 0, 255],
        vec![5, 0, 0, 1, 30],
    ] {
        out.push(("bloom_model", [params.clone(), ops.clone()].concat()));
    }
    out
}
