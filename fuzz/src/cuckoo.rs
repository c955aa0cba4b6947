//! Fuzz checks of the Cuckoo core (docs/cuckoo.md): the header and RDB
//! decoders on arbitrary bytes, LOADCHUNK sequences, and random operations
//! against a multiset model.

use std::collections::HashMap;

use rsbloom_core::cuckoo::{
    hash_item, CuckooFilter, CuckooHash, HeaderError, InsertOutcome, LegacyDefaults,
    LoadError as CfLoadError, HEADER_LEN,
};
use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};

use super::{
    alloc_ok, chunk_input, encode_primitives, le_u16, le_u64, ops_seed, too_big, Input,
    ALLOC_IMPOSSIBLE, PROBE_ITEMS,
};

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

/// Issue 30: numItems lies between the fingerprints held and the slots,
/// counted here from the slot bytes (and the filter's own count agrees).
fn check_counts(c: &CuckooFilter) {
    let data = cf_data(c);
    let held = nonzero(&data);
    assert_eq!(c.occupied(), held, "the filter's count of occupied slots");
    assert!(
        held <= c.num_items() && c.num_items() <= data.len() as u64,
        "numItems {} outside [{held}, {}]",
        c.num_items(),
        data.len()
    );
    assert!(c.counts_agree());
}

/// `c` saved to RDB and loaded back (current encoding).
fn reloaded(c: &CuckooFilter) -> Result<CuckooFilter, CfLoadError> {
    let mut saved: Vec<Primitive> = Vec::new();
    c.rdb_save(&mut saved);
    let legacy = LegacyDefaults {
        bucket_size: 2,
        max_iterations: 20,
        expansion: 1,
    };
    CuckooFilter::rdb_load(&mut PrimitiveSource::new(&saved), 4, legacy, 255)
}

/// What memory holds, the RDB loader takes back (issue 30's crucial rule).
fn check_reloads(c: &CuckooFilter) {
    assert!(
        reloaded(c).as_ref() == Ok(c),
        "the value in memory does not reload"
    );
}

/// Invariants of any filter (docs/cuckoo.md §1, §11).
pub(crate) fn check_cf(c: &CuckooFilter) {
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
                    assert_eq!(c.num_items(), items_before.saturating_add(1));
                    assert!(c.contains(h), "false negative right after insert");
                    assert!(c.count(h) >= 1);
                }
                InsertOutcome::Exists => assert!(c.contains(h)),
                InsertOutcome::NoSpace => assert_eq!(c.expansion(), 0),
                InsertOutcome::AllocFailed => {}
                InsertOutcome::OverLimit => unreachable!("no limit given"),
            }
        }
        assert!(c.counts_agree(), "counts after an insert");
        let _ = c.count(h);
        if k % 3 == 0 {
            let had = c.contains(h);
            let deleted = c.delete(h);
            assert!(!deleted || had, "deleted an absent fingerprint");
            assert!(c.counts_agree(), "counts after a delete");
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
    check_counts(c);
    check_reloads(c);
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

/// `CuckooFilter::from_header`: input bytes 0..38 are the header, byte 38
/// (if any) the current bucket-size maximum. Checked against the spec's
/// validation; accepted headers round-trip and give a working filter.
/// The sub-filter sizes the spec gives a 38-byte header, if valid: the
/// parameters, and numItems at most the slots (issue 30).
fn spec_cf_header(header: &[u8], max_bs: u16) -> Option<Vec<u128>> {
    let nb = le_u64(header, 8);
    let nf = le_u64(header, 24) as u16;
    let (bs, mi, exp) = (le_u16(header, 32), le_u16(header, 34), le_u16(header, 36));
    spec_cf_params(nb, nf, bs, mi, exp, max_bs)
        .filter(|sizes| u128::from(le_u64(header, 0)) <= sizes.iter().sum::<u128>())
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
    // Fingerprints in the model, which may never exceed the header's count.
    let (mut held, items) = (0u64, c.num_items());
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
        let expected = spec_cf_chunk(&sizes, pos, chunk.len()).and_then(|off| {
            let range = off as usize..off as usize + chunk.len();
            let after = held - nonzero(&model[range.clone()]) + nonzero(&chunk);
            (after <= items).then_some((range, after))
        });
        let got = c.load_chunk(pos, &chunk);
        assert_eq!(
            got.is_ok(),
            expected.is_some(),
            "CF.LOADCHUNK {pos} len {}",
            chunk.len()
        );
        if let Some((range, after)) = expected {
            model[range].copy_from_slice(&chunk);
            held = after;
        }
        assert_eq!(
            c.occupied(),
            held,
            "occupied slots after CF.LOADCHUNK {pos}"
        );
        assert!(c.counts_agree());
    }
    assert_eq!(cf_data(&c), model, "slots differ from the model");
    check_counts(&c);
    check_reloads(&c);
    if !mutated {
        // A chunk taking fingerprints out always fits, and once those are
        // in every other one does: two passes restore the original.
        let refused: Vec<_> = genuine
            .iter()
            .filter(|(pos, chunk)| c.load_chunk(*pos, chunk).is_err())
            .collect();
        for (pos, chunk) in refused {
            assert!(
                c.load_chunk(*pos, chunk).is_ok(),
                "genuine chunk {pos} refused twice"
            );
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
    check_counts(&c);
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
    // Then items of the input itself: no counter wraps, and the counts stay
    // within what the slots allow after every command.
    let items: Vec<&[u8]> = rest.chunks(3).take(64).collect();
    cf_exercise(&mut c, &items);
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
                InsertOutcome::OverLimit => unreachable!("no limit given"),
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
                let r = reloaded(&c).expect("own RDB");
                assert!(r == c, "RDB round trip");
                c = r;
            }
        }
        assert_eq!(c.num_items(), items, "CF.INFO items");
        assert_eq!(c.num_deletes(), deletes, "CF.INFO deletes");
        assert_eq!(c.occupied(), items, "occupied slots");
    }
    check_cf(&c);
    assert_eq!(nonzero(&cf_data(&c)), items, "occupied slots != numItems");
    for (i, h) in hashes.iter().enumerate() {
        if unique(i) && copies[i] > 0 {
            assert!(c.contains(*h), "false negative for u{i}");
        }
    }
}

/// Seeds: genuine filters (headers, RDB images at encodings 2 and 4) and
/// parameter bytes followed by operations.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
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
    let ops = ops_seed();
    for params in [
        vec![1u8, 0, 4, 20, 1, 100, 0],
        vec![0, 200, 0, 5, 2, 200, 3],
        vec![3, 10, 0, 50, 0, 50, 0],
    ] {
        out.push(("cuckoo_chunks", [params.clone(), ops.clone()].concat()));
    }
    for params in [
        vec![1u8, 8, 20, 1, 64],
        vec![0, 2, 5, 0, 255],
        vec![3, 0, 1, 2, 30],
    ] {
        out.push(("cuckoo_model", [params.clone(), ops.clone()].concat()));
    }
    out
}
