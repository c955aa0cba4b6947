//! Chain-level tests: the verified examples of docs/bloom.md and docs/differences.md §1,
//! round trips, rejection of malformed data and a no-false-negative property.

use super::sizing::{bits_per_entry, hash_count};
use super::*;
use crate::alloc::size_class;
use crate::rdb::{Primitive, PrimitiveSource};
use proptest::prelude::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn set_bits(data: &[u8]) -> Vec<u64> {
    (0..data.len() as u64 * 8)
        .filter(|&x| data[(x >> 3) as usize] & (1 << (x & 7)) != 0)
        .collect()
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

/// A link record of a dump header.
#[derive(Clone, Copy)]
struct Rec {
    bytes: u64,
    bits: u64,
    size: u64,
    error: f64,
    bpe: f64,
    hashes: u32,
    entries: u64,
    n2: u8,
}

impl Rec {
    /// A record as a genuine NOROUND link of `bytes` bytes would have it.
    fn genuine(bytes: u64, error: f64, entries: u64, size: u64) -> Rec {
        let bpe = bits_per_entry(error);
        Rec {
            bytes,
            bits: bytes * 8,
            size,
            error,
            bpe,
            hashes: hash_count(bpe) as u32,
            entries,
            n2: 0,
        }
    }
}

fn header(size: u64, options: u32, growth: u32, recs: &[Rec]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&size.to_le_bytes());
    h.extend_from_slice(&(recs.len() as u32).to_le_bytes());
    h.extend_from_slice(&options.to_le_bytes());
    h.extend_from_slice(&growth.to_le_bytes());
    for r in recs {
        h.extend_from_slice(&r.bytes.to_le_bytes());
        h.extend_from_slice(&r.bits.to_le_bytes());
        h.extend_from_slice(&r.size.to_le_bytes());
        h.extend_from_slice(&r.error.to_le_bytes());
        h.extend_from_slice(&r.bpe.to_le_bytes());
        h.extend_from_slice(&r.hashes.to_le_bytes());
        h.extend_from_slice(&r.entries.to_le_bytes());
        h.push(r.n2);
    }
    h
}

/// `BF.RESERVE ex 0.01 100` + `BF.ADD ex foo`.
fn reserve_ex_foo() -> Box<Chain> {
    let mut c = Chain::new(100, 0.01, 2, false).unwrap();
    assert_eq!(c.add(b"foo"), AddOutcome::Added);
    c
}

/// A chain of several links with items "0".."n".
fn scaled_chain(n: u32) -> Box<Chain> {
    let mut c = Chain::new(10, 0.01, 2, false).unwrap();
    for i in 0..n {
        c.add(i.to_string().as_bytes());
    }
    c
}

/// Every data chunk of a full SCANDUMP iteration.
fn dump_chunks(c: &Chain) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut iter = 1;
    while let Some((next, chunk)) = c.scandump_chunk(iter) {
        out.push((next, chunk.to_vec()));
        iter = next;
    }
    out
}

fn same_chain(x: &Chain, y: &Chain) {
    assert_eq!(x.encode_header(), y.encode_header());
    for (lx, ly) in x.links().iter().zip(y.links().iter()) {
        assert_eq!(lx.data(), ly.data());
    }
}

fn save(c: &Chain) -> Vec<Primitive> {
    let mut p = Vec::new();
    c.rdb_save(&mut p);
    p
}

fn load(p: &[Primitive], encver: i32) -> Result<Box<Chain>, LoadError> {
    Chain::rdb_load(&mut PrimitiveSource::new(p), encver)
}

/// A one-link chain whose fields fit 16 bytes is one block: those 16
/// bytes, then the bit array; the keyspace points to it (issue 40). A
/// filter of capacity 100 takes 160 bytes (RedisBloom: 32 + 64 + 160).
#[test]
fn one_link_chains_take_one_block() {
    assert_eq!(std::mem::size_of::<Link>(), 56);
    for (capacity, bytes, usage) in [(100, 144, 24 + 160), (1000, 1384, 24 + 1536)] {
        let c = Chain::new(capacity, 0.01, 2, false).unwrap();
        assert_eq!(std::mem::size_of_val(&*c), 16 + bytes as usize);
        assert_eq!(c.links()[0].bytes(), bytes);
        assert_eq!(c.memory_usage(), usage, "capacity {capacity}");
        assert_eq!(
            c.size_bytes(),
            32 + 64 + bytes,
            "BF.INFO Size is RedisBloom's"
        );
    }
    // Scaled: the link records go apart (16 + 2 × 56 bytes), the new bit
    // array is its own; the first stays in the block.
    let mut c = Chain::new(10, 0.01, 2, false).unwrap();
    for i in 0..15u32 {
        c.add(&i.to_le_bytes());
    }
    assert_eq!(c.num_links(), 2);
    let second = c.links()[1].bytes();
    assert_eq!(c.memory_usage(), 24 + 32 + 128 + size_class(second));
    // Five links: 16 + 5 × 56 = 296 bytes of records, in the 320-byte class
    // that RedisBloom's five 64-byte link records alone fill.
    for i in 15..1000u32 {
        if c.num_links() == 5 {
            break;
        }
        c.add(&i.to_le_bytes());
    }
    assert_eq!(c.num_links(), 5);
    let arrays: u64 = c.links()[1..].iter().map(|l| size_class(l.bytes())).sum();
    assert_eq!(c.memory_usage(), 24 + 32 + 320 + arrays);
}

/// Fields that do not fit the compact head (here a growth factor above
/// 255) take the records apart from the start; everything works alike,
/// and the persisted form does not show which.
#[test]
fn chains_too_wide_for_the_compact_head() {
    let mut wide = Chain::new(100, 0.01, 256, false).unwrap();
    let mut compact = Chain::new(100, 0.01, 255, false).unwrap();
    assert_eq!(wide.memory_usage(), 24 + 160 + 80);
    assert_eq!(compact.memory_usage(), 24 + 160);
    for i in 0..150u32 {
        assert_eq!(wide.add(&i.to_le_bytes()), compact.add(&i.to_le_bytes()));
    }
    assert_eq!((wide.num_links(), compact.num_links()), (2, 2));
    assert_eq!(wide.growth(), 256);
    assert_eq!(compact.growth(), 255);
    assert_eq!(wide.links()[0], compact.links()[0]);
    for c in [&wide, &compact] {
        assert!((0..150u32).all(|i| c.contains(&i.to_le_bytes())));
        assert_eq!(&load(&save(c), ENCODING_VERSION).unwrap(), c);
        assert_eq!(&c.try_clone().unwrap(), c);
    }
    // A loaded one-link chain compacts when its fields follow from the
    // four it keeps, and only then.
    let one = Chain::new(100, 0.01, 2, true).unwrap();
    let mut p = save(&one);
    assert_eq!(load(&p, ENCODING_VERSION).unwrap().memory_usage(), 24 + 160);
    p[7] = Primitive::Double(f64::from_bits(one.links()[0].bpe().to_bits() + 1));
    let odd = load(&p, ENCODING_VERSION).unwrap();
    assert_eq!(odd.memory_usage(), 24 + 160 + 80);
    assert_eq!(
        odd.links()[0].bpe(),
        f64::from_bits(one.links()[0].bpe().to_bits() + 1)
    );
    assert_eq!(save(&odd), p);
}

/// A first bit array above 64 KiB is an allocation of its own; everything
/// else works alike.
#[test]
fn large_first_links_stay_apart() {
    let mut c = Chain::new(100_000, 0.01, 2, false).unwrap();
    let bytes = c.links()[0].bytes();
    assert!(bytes > 64 * 1024);
    assert_eq!(c.memory_usage(), 24 + 16 + 80 + size_class(bytes));
    for i in 0..1000u32 {
        c.add(&i.to_le_bytes());
    }
    let mut n = 1000u32;
    while c.num_links() < 2 && n < 200_000 {
        c.add(&n.to_le_bytes());
        n += 1;
    }
    assert_eq!(c.num_links(), 2, "scaled out past a first link kept apart");
    let copy = c.try_clone().unwrap();
    assert_eq!(copy, c);
    let back = load(&save(&c), ENCODING_VERSION).unwrap();
    assert_eq!(back, c);
    assert!((0..n).all(|i| back.contains(&i.to_le_bytes())));
    let mut small = Chain::new(1, 0.01, 2, false).unwrap();
    for i in 0..200u32 {
        small.add(&i.to_le_bytes());
    }
    let grown = small.num_links();
    assert!(grown > 5);
    assert!((0..200u32).all(|i| small.contains(&i.to_le_bytes())));
    assert_eq!(
        small.items(),
        small.links().iter().map(Link::size).sum::<u64>()
    );
    assert_eq!(load(&save(&small), ENCODING_VERSION).unwrap(), small);
}

#[test]
fn new_chain_parameters() {
    let c = Chain::new(100, 0.001, 2, false).unwrap();
    assert_eq!(c.options(), FORCE64 | NOROUND);
    assert_eq!(
        (c.capacity(), c.size_bytes(), c.num_links(), c.items()),
        (100, 296, 1, 0)
    );
    assert_eq!(c.expansion(), Some(2));
    let n = Chain::new(3, 0.01, 0, true).unwrap();
    assert_eq!(n.options(), FORCE64 | NOROUND | NO_SCALING);
    assert_eq!(n.expansion(), None);
    // Non-scaling keeps the requested error.
    assert_eq!(
        (n.links()[0].error(), n.links()[0].bits(), n.size_bytes()),
        (0.01, 64, 104)
    );
    assert_eq!(
        Chain::new(0, 0.01, 2, false).unwrap_err(),
        CreateError::Invalid
    );
    assert_eq!(
        Chain::new(1, 1.0, 2, false).unwrap_err(),
        CreateError::Invalid
    );
    assert_eq!(
        Chain::new(1, 0.0, 2, false).unwrap_err(),
        CreateError::Invalid
    );
    // The half of 5e-324 underflows to 0.
    assert_eq!(
        Chain::new(1, 5e-324, 2, false).unwrap_err(),
        CreateError::Invalid
    );
}

#[test]
fn worked_example_64_bit() {
    let c = reserve_ex_foo();
    assert_eq!(
        c.hash(b"foo"),
        HashPair {
            a: 0x822b4f99b121f10d,
            b: 0x9d63d52a557f61c2
        }
    );
    let link = &c.links()[0];
    assert_eq!((link.bits(), link.hashes(), link.bytes()), (1152, 8, 144));
    assert_eq!(
        set_bits(link.data()),
        sorted(vec![269, 847, 145, 723, 21, 599, 25, 475])
    );
    assert!(c.contains(b"foo"));
}

#[test]
fn worked_example_32_bit_noround() {
    let mut h = reserve_ex_foo().encode_header();
    h[12] = NOROUND as u8;
    let mut c = Chain::from_header(&h).unwrap();
    assert_eq!(
        c.hash(b"foo"),
        HashPair {
            a: 0x23a256d0,
            b: 0x9fbc0655
        }
    );
    assert_eq!(c.add(b"foo"), AddOutcome::Added);
    assert_eq!(
        set_bits(c.links()[0].data()),
        sorted(vec![848, 677, 506, 335, 164, 1145, 974, 803])
    );
    assert!(c.debug_lines()[1].contains("hashwidth:32"));
}

#[test]
fn header_example_73_bytes() {
    let expected = hex(
        "0100000000000000 01000000 05000000 02000000 9000000000000000 8004000000000000
         0100000000000000 7b14ae47e17a743f e9862fb2350e2640 08000000 6400000000000000 00",
    );
    let c = reserve_ex_foo();
    assert_eq!(c.encode_header(), expected);
    let back = Chain::from_header(&expected).unwrap();
    assert_eq!(back.encode_header(), expected);
    assert!(back.links()[0].data().iter().all(|&b| b == 0));
}

#[test]
fn chunk_example() {
    let mut c = Chain::new(4, 0.1, 2, false).unwrap();
    for item in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        assert_eq!(c.add(item.as_bytes()), AddOutcome::Added, "{item}");
    }
    let expected = hex("0800000000000000 02000000 05000000 02000000
         0800000000000000 4000000000000000 0400000000000000 9a9999999999a93f 4af7d49edef01840
         05000000 0400000000000000 00
         0800000000000000 4000000000000000 0400000000000000 9a9999999999993f 0bd81f7830b61e40
         06000000 0800000000000000 00");
    assert_eq!(c.encode_header(), expected);
    assert_eq!(
        dump_chunks(&c),
        vec![(9, hex("3045a08c50922120")), (17, hex("3199c0c04449098c"))]
    );
    assert_eq!(c.scandump_chunk(17), None);
}

#[test]
fn scaling_example() {
    let c = scaled_chain(100);
    let links: Vec<_> = c
        .links()
        .iter()
        .map(|l| {
            (
                l.bytes(),
                l.bits(),
                l.hashes(),
                l.entries(),
                l.size(),
                l.error(),
            )
        })
        .collect();
    assert_eq!(
        links,
        vec![
            (16, 128, 8, 10, 10, 0.005),
            (32, 256, 9, 20, 20, 0.0025),
            (72, 576, 10, 40, 40, 0.00125),
            (160, 1280, 11, 80, 29, 0.000625),
        ]
    );
    assert_eq!(c.items(), 99);
    assert_eq!(c.capacity(), 150);
    assert_eq!(c.size_bytes(), 32 + 4 * 64 + 280);
    assert!((0..100).all(|i| c.contains(i.to_string().as_bytes())));
}

#[test]
fn debug_example() {
    let mut c = Chain::new(50000, 0.001, 2, false).unwrap();
    c.add(b"foo");
    assert_eq!(
        c.debug_lines(),
        vec![
            "size:1",
            "bytes:98880 bits:791040 hashes:11 hashwidth:64 capacity:50000 size:1 ratio:0.0005"
        ]
    );
    let lines = scaled_chain(100).debug_lines();
    assert_eq!(lines.len(), 5);
    assert!(lines[4].ends_with("capacity:80 size:29 ratio:0.000625"));
}

#[test]
fn rdb_example() {
    let mut c = Chain::new(5, 0.1, 3, false).unwrap();
    let mut i = 0;
    while c.items() < 8 {
        c.add(format!("item{i}").as_bytes());
        i += 1;
    }
    let p = save(&c);
    use Primitive::{Double as D, Unsigned as U};
    let shape: Vec<Primitive> = p
        .iter()
        .map(|x| match x {
            Primitive::Buffer(b) => U(b.len() as u64 + 1000),
            other => other.clone(),
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            U(8),
            U(2),
            U(5),
            U(3),
            U(5),
            D(0.05),
            U(5),
            D(6.2352242295726885),
            U(64),
            U(0),
            U(1008),
            U(5),
            U(15),
            D(0.025),
            U(6),
            D(7.677919270461653),
            U(128),
            U(0),
            U(1016),
            U(3),
        ]
    );
}

#[test]
fn scandump_iteration_one_link() {
    let c = reserve_ex_foo();
    let len = |v| c.scandump_chunk(v).map(|(next, d)| (next, d.len()));
    assert_eq!(len(1), Some((145, 144)));
    assert_eq!(len(2), Some((145, 143)));
    assert_eq!(len(144), Some((145, 1)));
    assert_eq!(len(145), None);
    assert_eq!(len(-5), None);
    assert_eq!(len(0), None);
    assert_eq!(len(i64::MIN), None);
    assert_eq!(len(i64::MAX), None);
    assert_eq!(c.scandump_chunk(2).unwrap().1, &c.links()[0].data()[1..]);
}

#[test]
fn scandump_16_mib_boundary() {
    let bytes = 27569384;
    let h = header(0, 5, 2, &[Rec::genuine(bytes, 0.01, 1000, 0)]);
    let c = Chain::from_header(&h).unwrap();
    let len = |v| c.scandump_chunk(v).map(|(next, d)| (next, d.len()));
    assert_eq!(len(1), Some((16777217, 16777216)));
    assert_eq!(len(16777217), Some((27569385, 10792168)));
    assert_eq!(len(27569385), None);
}

#[test]
fn load_chunk_errors() {
    let mut c = Chain::new(4, 0.1, 2, false).unwrap(); // one 8-byte link
    grow(&mut c.links_mut(), None).unwrap(); // and a second one: 16 bytes of data space
    assert_eq!(c.load_chunk(0, b""), Err(ChunkError::BadData));
    assert_eq!(c.load_chunk(-1, b"x"), Err(ChunkError::BadData));
    assert_eq!(c.load_chunk(3, b"abcde"), Err(ChunkError::BadData));
    assert_eq!(c.load_chunk(5, b"abcde"), Err(ChunkError::InvalidOffset));
    assert_eq!(c.load_chunk(18, b"x"), Err(ChunkError::InvalidOffset));
    assert_eq!(c.load_chunk(i64::MAX, b"x"), Err(ChunkError::InvalidOffset));
    // Starting at byte 7 of link 0 (1 byte left): crossing links is refused.
    assert_eq!(c.load_chunk(10, b"ab"), Err(ChunkError::TooBig));
    assert_eq!(c.load_chunk(25, &[1; 16]), Err(ChunkError::TooBig));
    assert_eq!(c.load_chunk(1, b""), Ok(()));
    assert_eq!(c.load_chunk(17, b"\x01\x02"), Ok(()));
    assert_eq!(&c.links()[1].data()[6..], &[1, 2]);
    assert_eq!(ChunkError::BadData.message(), "ERR received bad data");
    assert_eq!(
        ChunkError::InvalidOffset.message(),
        "ERR invalid offset - no link found"
    );
    assert_eq!(
        ChunkError::TooBig.message(),
        "ERR invalid chunk - Too big for current filter"
    );
}

#[test]
fn non_scaling_full() {
    let mut c = Chain::new(3, 0.01, 2, true).unwrap();
    let mut added = Vec::new();
    let mut i = 0;
    while c.items() < 3 {
        let item = format!("k{i}");
        if c.add(item.as_bytes()) == AddOutcome::Added {
            added.push(item);
        }
        i += 1;
    }
    let before = c.encode_header();
    let data = c.links()[0].data().to_vec();
    assert_eq!(c.add(added[0].as_bytes()), AddOutcome::Present);
    let absent = (0..)
        .map(|j| format!("absent{j}"))
        .find(|s| !c.contains(s.as_bytes()))
        .unwrap();
    assert_eq!(c.add(absent.as_bytes()), AddOutcome::Full);
    assert_eq!(c.encode_header(), before);
    assert_eq!(c.links()[0].data(), &data[..]);
}

#[test]
fn failed_scaling_leaves_chain_unchanged() {
    // Growth 0: entries 1 * 0 = 0 cannot make a link.
    let h = header(1, 5, 0, &[Rec::genuine(8, 0.05, 1, 1)]);
    // Entries 0: the link is full at once and 0 * 2 = 0.
    let h0 = header(0, 5, 2, &[Rec::genuine(8, 0.05, 0, 0)]);
    for h in [h, h0] {
        let mut c = Chain::from_header(&h).unwrap();
        for _ in 0..2 {
            assert_eq!(c.add(b"x"), AddOutcome::Error);
            assert_eq!(c.encode_header(), h);
            assert!(c.links()[0].data().iter().all(|&b| b == 0));
            assert!(!c.contains(b"x"));
        }
    }
}

#[test]
fn rdb_round_trip() {
    let mut c = scaled_chain(300);
    let p = save(&c);
    let mut back = load(&p, ENCODING_VERSION).unwrap();
    same_chain(&c, &back);
    for i in 0..600 {
        let item = i.to_string();
        assert_eq!(back.contains(item.as_bytes()), c.contains(item.as_bytes()));
        assert_eq!(back.add(item.as_bytes()), c.add(item.as_bytes()));
    }
    same_chain(&c, &back);
}

#[test]
fn dump_round_trip() {
    let c = scaled_chain(300);
    let mut back = Chain::from_header(&c.encode_header()).unwrap();
    for (iter, chunk) in dump_chunks(&c) {
        back.load_chunk(iter, &chunk).unwrap();
    }
    same_chain(&c, &back);
    assert!((0..300).all(|i| back.contains(i.to_string().as_bytes())));
}

/// A legacy 32-bit power-of-two chain, as old versions created it.
fn legacy_chain() -> Box<Chain> {
    let s = size_link(100, 0.005, 0).unwrap();
    let rec = Rec {
        bytes: s.bytes,
        bits: s.bits,
        size: 0,
        error: s.error,
        bpe: s.bpe,
        hashes: s.hashes,
        entries: s.entries,
        n2: s.n2,
    };
    Chain::from_header(&header(0, 0, 2, &[rec])).unwrap()
}

#[test]
fn legacy_power_of_two_chain_grows_from_enlarged_entries() {
    let mut c = legacy_chain();
    assert_eq!((c.links()[0].n2(), c.links()[0].entries()), (11, 185));
    for i in 0..400 {
        c.add(i.to_string().as_bytes());
    }
    let second = &c.links()[1];
    // 370 entries at 0.0025: 2^13 bits and extra capacity from the rounding.
    assert_eq!(size_link(370, 0.0025, 0).unwrap().n2, second.n2());
    assert_eq!(second.bits(), 8192);
    assert!(second.entries() > 370);
    // Only the low 2^n2 bits are ever touched.
    assert!(set_bits(c.links()[0].data()).iter().all(|&x| x < 2048));
    assert!((0..400).all(|i| c.contains(i.to_string().as_bytes())));
}

/// Rewrites a version-4 primitive list into the layout of `encver`.
fn downgrade(p: &[Primitive], encver: i32) -> Vec<Primitive> {
    let n = match p[1] {
        Primitive::Unsigned(n) => n as usize,
        _ => unreachable!(),
    };
    let mut out = p[..2].to_vec();
    if encver >= 2 {
        out.push(p[2].clone()); // options; growth only from version 4
    }
    for k in 0..n {
        let link = &p[4 + 8 * k..4 + 8 * (k + 1)];
        out.extend_from_slice(&link[..4]);
        if encver >= 1 {
            out.extend_from_slice(&link[4..6]); // bits, n2
        }
        out.extend_from_slice(&link[6..]);
    }
    out
}

#[test]
fn rdb_versions_2_and_3() {
    let mut c = Chain::new(10, 0.01, 7, false).unwrap();
    for i in 0..50 {
        c.add(i.to_string().as_bytes());
    }
    let p = downgrade(&save(&c), 3);
    for v in [2, 3] {
        let back = load(&p, v).unwrap();
        assert_eq!((back.options(), back.growth()), (c.options(), 2));
        assert_eq!(back.links().len(), c.links().len());
        assert!((0..50).all(|i| back.contains(i.to_string().as_bytes())));
    }
}

#[test]
fn rdb_version_1_legacy_chain() {
    let mut c = legacy_chain();
    for i in 0..300 {
        c.add(i.to_string().as_bytes());
    }
    let mut back = load(&downgrade(&save(&c), 1), 1).unwrap();
    assert_eq!((back.options(), back.growth()), (0, 2));
    same_chain(&c, &back);
    for i in 300..600 {
        let item = i.to_string();
        assert_eq!(back.add(item.as_bytes()), c.add(item.as_bytes()));
    }
    same_chain(&c, &back);
}

#[test]
fn rdb_version_0() {
    // Version 0 loads only when trunc(entries·bpe) is a whole number of bytes.
    let error = 0.01;
    let bpe = bits_per_entry(error);
    let entries = (1..10_000u64)
        .find(|&e| ((e as f64 * bpe) as u64).is_multiple_of(64))
        .unwrap();
    let bytes = (entries as f64 * bpe) as u64 / 8;
    let mut c =
        Chain::from_header(&header(0, 0, 2, &[Rec::genuine(bytes, error, entries, 0)])).unwrap();
    for i in 0..entries {
        c.add(i.to_string().as_bytes());
    }
    let back = load(&downgrade(&save(&c), 0), 0).unwrap();
    same_chain(&c, &back);
    // One more entry makes bits disagree with the buffer.
    let mut p = downgrade(&save(&c), 0);
    p[2] = Primitive::Unsigned(entries + 100);
    assert!(load(&p, 0).is_err());
}

#[test]
fn rdb_rejections() {
    let good = save(&scaled_chain(30));
    assert!(load(&good, 4).is_ok());
    assert_eq!(load(&good, 5).unwrap_err(), LoadError::Version);
    assert_eq!(load(&good, -1).unwrap_err(), LoadError::Version);
    // Every truncation fails cleanly.
    for cut in 0..good.len() {
        assert!(load(&good[..cut], 4).is_err(), "prefix {cut}");
    }
    // Field k of link 0 replaced by a bad value.
    let bad = |k: usize, v: Primitive| {
        let mut p = good.clone();
        p[k] = v;
        load(&p, 4)
    };
    use Primitive::{Buffer as B, Double as D, Unsigned as U};
    assert!(bad(1, U(0)).is_err()); // no links
    assert!(bad(1, U(1101)).is_err()); // too many links
    assert!(bad(5, D(0.0)).is_err()); // error
    assert!(bad(5, D(1.0)).is_err());
    assert!(bad(5, D(f64::NAN)).is_err());
    assert!(bad(6, U(9)).is_err()); // hashes vs bpe
    assert!(bad(6, U(0)).is_err());
    assert!(bad(7, D(1e8)).is_err()); // bpe vs hashes
    assert!(bad(8, U(64)).is_err()); // bits vs buffer
    assert!(bad(8, U(0)).is_err());
    assert!(bad(9, U(64)).is_err()); // n2 > 63
    assert!(bad(9, U(8)).is_err()); // bits 128 < 2^8
    assert!(bad(10, B(vec![0; 15])).is_err()); // short buffer
    assert!(bad(10, B(vec![0; 17])).is_err()); // long buffer
    assert!(bad(10, U(16)).is_err()); // wrong primitive kind
                                      // A consistent but absurd hash count
                                      // (docs/differences.md §1 item 11).
    let mut p = good.clone();
    p[6] = U(69314719);
    p[7] = D(1e8);
    assert!(load(&p, 4).is_err());
    // n2 within range and bits ≥ 2^n2 is fine: legacy layout of 128 bits.
    assert!(bad(9, U(7)).is_ok());
}

#[test]
fn header_rejections() {
    let good = scaled_chain(30).encode_header();
    assert!(Chain::from_header(&good).is_ok());
    for cut in 0..good.len() {
        assert!(Chain::from_header(&good[..cut]).is_err(), "prefix {cut}");
    }
    let mut longer = good.clone();
    longer.push(0);
    assert!(Chain::from_header(&longer).is_err());
    let patched = |offset: usize, bytes: &[u8]| {
        let mut h = good.clone();
        h[offset..offset + bytes.len()].copy_from_slice(bytes);
        Chain::from_header(&h)
    };
    assert!(patched(8, &0u32.to_le_bytes()).is_err()); // n = 0
    assert!(patched(12, &0x15u32.to_le_bytes()).is_err()); // unknown option
    assert!(patched(0, &31u64.to_le_bytes()).is_err()); // chain size differs from link sizes
    assert!(patched(20, &17u64.to_le_bytes()).is_err()); // bytes vs bits
    assert!(patched(20 + 24, &0.5f64.to_le_bytes()).is_err()); // bpe vs error
    assert!(patched(20 + 32, &11.0f64.to_le_bytes()).is_err()); // bpe inexact
    assert!(patched(20 + 40, &9u32.to_le_bytes()).is_err()); // hashes
    assert!(patched(20 + 52, &[64]).is_err()); // n2 > 63
    assert!(patched(20 + 52, &[8]).is_err()); // bits 128 < 2^8
    assert!(patched(20 + 52, &[7]).is_ok());
    // Link sizes overflowing u64.
    let r = Rec::genuine(8, 0.05, 5, u64::MAX);
    assert!(Chain::from_header(&header(u64::MAX, 5, 2, &[r, r])).is_err());
    // Too many links, even when each is valid.
    let r = Rec::genuine(8, 0.05, 5, 0);
    assert!(Chain::from_header(&header(0, 5, 2, &[r; 1100])).is_ok());
    assert!(Chain::from_header(&header(0, 5, 2, &[r; 1101])).is_err());
    // Absurd bit array: validated, then the allocation fails.
    let huge = Rec::genuine(1 << 60, 0.05, 5, 0);
    assert_eq!(
        Chain::from_header(&header(0, 5, 2, &[huge])).unwrap_err(),
        LoadError::OutOfMemory
    );
}

#[test]
fn header_hash_bound() {
    // The smallest positive error needs 1075 hashes and is accepted.
    let r = Rec::genuine(8, 5e-324, 1, 0);
    assert_eq!(r.hashes, 1075);
    assert!(Chain::from_header(&header(0, 5, 2, &[r])).is_ok());
    // bpe 1e8 with its matching hash count (docs/differences.md §1 item 11).
    let mut r = Rec::genuine(8, 0.05, 1, 0);
    r.bpe = 1e8;
    r.hashes = 69314719;
    assert!(Chain::from_header(&header(0, 5, 2, &[r])).is_err());
}

#[test]
fn genuine_chain_link_count_is_bounded() {
    // Expansion 1, capacity 1: every add past the first needs a new link,
    // until the halved error underflows and growth fails.
    let mut c = Chain::new(1, 0.25, 1, false).unwrap();
    let mut i = 0u64;
    while c.add(&i.to_le_bytes()) != AddOutcome::Error {
        i += 1;
    }
    assert!(c.num_links() <= 1100, "{}", c.num_links());
    assert!(c.num_links() > 1000);
    let back = Chain::from_header(&c.encode_header()).unwrap();
    assert_eq!(back.num_links(), c.num_links());
    assert!(load(&save(&c), 4).is_ok());
}

proptest! {
    #[test]
    fn no_false_negatives(
        items in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 1..400),
        capacity in 1u64..50,
        growth in 1u32..4,
    ) {
        let mut c = Chain::new(capacity, 0.01, growth, false).unwrap();
        let mut added = 0u64;
        for item in &items {
            match c.add(item) {
                AddOutcome::Added => added += 1,
                AddOutcome::Present => {}
                other => prop_assert!(false, "unexpected {:?}", other),
            }
            prop_assert!(c.contains(item));
        }
        prop_assert!(items.iter().all(|i| c.contains(i)));
        prop_assert_eq!(c.items(), added);
        let link_sizes: u64 = c.links().iter().map(|l| l.size()).sum();
        prop_assert_eq!(link_sizes, added);
    }
}

proptest! {
    #[test]
    fn garbage_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..300),
        encver in -1i32..6,
        iter in any::<i64>(),
    ) {
        let _ = Chain::from_header(&bytes);
        let _ = Chain::rdb_load(&mut crate::rdb::ByteSource::new(&bytes), encver);
        let mut c = scaled_chain(30);
        let _ = c.scandump_chunk(iter);
        let _ = c.load_chunk(iter, &bytes);
        // A header whose link fields are mutated: accepted or rejected, never a panic.
        let mut h = c.encode_header();
        for (i, b) in bytes.iter().enumerate().take(h.len()) {
            if let Some(dst) = h.get_mut((i * 7 + usize::from(*b)) % 73) { *dst ^= b; }
        }
        if let Ok(mut d) = Chain::from_header(&h) {
            d.add(b"x");
            let _ = d.contains(b"y");
        }
    }
}

proptest! {
    /// Batches (blocks, prefetches, breadth-first checks) answer exactly as
    /// the items one by one, for chains of many links and full links.
    #[test]
    fn batches_answer_as_items_one_by_one(
        added in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..300),
        asked in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..120),
        capacity in 1u64..40,
        error in 0.001f64..0.3,
        growth in 1u32..3,
    ) {
        let mut batched = Chain::new(capacity, error, growth, false).unwrap();
        let mut single = Chain::new(capacity, error, growth, false).unwrap();
        let mut outcomes = Vec::new();
        batched.add_batch(&added, None, |o| { outcomes.push(o); true });
        let one_by_one: Vec<AddOutcome> = added.iter().map(|i| single.add(i)).collect();
        prop_assert_eq!(outcomes, one_by_one);
        prop_assert_eq!(&batched, &single);
        let queries: Vec<&Vec<u8>> = asked.iter().chain(added.iter().step_by(3)).collect();
        let mut answers = Vec::new();
        batched.contains_batch(&queries, |p| answers.push(p));
        let expected: Vec<bool> = queries.iter().map(|q| single.contains(q)).collect();
        prop_assert_eq!(answers, expected);
    }
}

#[test]
fn new_size_is_the_size_of_the_new_chain() {
    for (cap, err, nonscaling) in [(100, 0.01, false), (1000, 0.001, true), (7, 0.25, false)] {
        let c = Chain::new(cap, err, 2, nonscaling).unwrap();
        assert_eq!(Chain::new_size(cap, err, nonscaling), Ok(c.size_bytes()));
    }
    assert_eq!(Chain::new_size(0, 0.01, false), Err(CreateError::Invalid));
}

#[test]
fn a_scale_out_above_the_limit_is_refused_and_changes_nothing() {
    let mut c = Chain::new(10, 0.01, 2, false).unwrap();
    let items: Vec<Vec<u8>> = (0..200u32).map(|i| i.to_le_bytes().to_vec()).collect();
    let cap = c.size_bytes() + 64;
    let limit = Some(cap);
    let mut outcomes = Vec::new();
    c.add_batch(&items, limit, |o| {
        outcomes.push(o);
        true
    });
    assert_eq!(c.num_links(), 1);
    assert!(c.size_bytes() <= cap);
    let refused = outcomes
        .iter()
        .filter(|o| **o == AddOutcome::OverLimit)
        .count();
    let added = outcomes.iter().filter(|o| **o == AddOutcome::Added).count();
    assert!(refused > 0);
    assert_eq!(c.items(), added as u64);
    // The same items without a limit scale out.
    let mut free = Chain::new(10, 0.01, 2, false).unwrap();
    free.add_batch(&items, None, |_| true);
    assert!(free.num_links() > 1);
}

/// Issue 30: link counts within their capacities and summing to the
/// chain's, on RDB load and in a dump header.
#[test]
fn loaders_refuse_counts_that_disagree() {
    let c = scaled_chain(30);
    assert!(c.num_links() > 1);
    let p = save(&c);
    assert!(load(&p, 4).is_ok());
    let with = |i: usize, v: u64| {
        let mut q = p.clone();
        q[i] = Primitive::Unsigned(v);
        q
    };
    let Primitive::Unsigned(total) = p[0] else {
        panic!()
    };
    let invalid = |r: Result<Box<Chain>, LoadError>| matches!(r, Err(LoadError::Invalid(_)));
    assert!(invalid(load(&with(0, total + 1), 4)));
    assert!(invalid(load(&with(0, u64::MAX), 4)));
    // Link 0: entries at 4, count at 11.
    let Primitive::Unsigned(entries) = p[4] else {
        panic!()
    };
    let mut q = with(11, entries + 1);
    q[0] = Primitive::Unsigned(total + 1 + entries - c.links()[0].size());
    assert!(invalid(load(&q, 4)));
    let mut h = c.encode_header();
    h[36..44].copy_from_slice(&(entries + 1).to_le_bytes());
    h[..8].copy_from_slice(&(total + 1 + entries - c.links()[0].size()).to_le_bytes());
    assert!(invalid(Chain::from_header(&h)));
}

/// A chain count at u64::MAX (the links' sum, which a load allows) takes
/// no further item: the add fails before setting a bit.
#[test]
fn chain_count_never_wraps() {
    let c = Chain::new(u64::MAX >> 40, 0.5, 2, false).unwrap();
    let mut p = save(&c);
    p[0] = Primitive::Unsigned(u64::MAX - 1);
    p[11] = Primitive::Unsigned(u64::MAX - 1);
    p[4] = Primitive::Unsigned(u64::MAX);
    let mut c = load(&p, 4).unwrap();
    assert_eq!(c.add(b"a"), AddOutcome::Added);
    assert_eq!(c.items(), u64::MAX);
    let before = save(&c);
    assert_eq!(c.add(b"b"), AddOutcome::Error);
    assert_eq!(save(&c), before);
}

/// A legacy ENTS_IS_BITS chain scales out to a link whose 2^n2 bits hold
/// less than one entry (capacity 0); the add that made it still counts, as
/// in RedisBloom, so the loaders take a count of 1 there (found by the
/// bloom_rdb fuzz property: such a chain must reload).
#[test]
fn a_capacity_zero_link_holds_its_first_item_and_reloads() {
    let mut p = save(&Chain::new(1, 0.25, 1, false).unwrap());
    p[2] = Primitive::Unsigned(u64::from(NOROUND | ENTS_IS_BITS));
    let mut c = load(&p, 4).unwrap();
    assert_eq!(c.add(b"a"), AddOutcome::Added);
    assert_eq!(c.add(b"b"), AddOutcome::Added);
    let links = c.links();
    let newest = links.last().unwrap();
    assert_eq!((c.num_links(), newest.entries(), newest.size()), (2, 0, 1));
    assert!(c.counts_agree());
    let reloaded = load(&save(&c), 4).unwrap();
    same_chain(&c, &reloaded);
    let mut h = c.encode_header();
    assert!(Chain::from_header(&h).is_ok());
    // A count of 2 in that link is more than any add leaves there.
    // The newest link's record starts 20 + 53 bytes in; its size at +16.
    h[89..97].copy_from_slice(&2u64.to_le_bytes());
    h[..8].copy_from_slice(&3u64.to_le_bytes());
    assert!(Chain::from_header(&h).is_err());
}

/// A chain's check (its links side by side, by groups of `GROUP`)
/// answers as its links checked one by one, for chains longer than a group,
/// nearly full links (probes running for many rounds) and legacy links.
#[test]
fn checks_answer_as_links_one_by_one() {
    let mut long = Chain::new(2, 0.1, 1, false).unwrap();
    for i in 0..90u32 {
        long.add(&i.to_le_bytes());
    }
    assert!(long.num_links() > 2 * GROUP, "{}", long.num_links());
    let mut legacy = legacy_chain();
    for i in 0..3000u32 {
        legacy.add(&i.to_le_bytes());
    }
    assert!(legacy.links().iter().all(|l| l.n2() > 0));
    assert!(legacy.num_links() >= 3, "{}", legacy.num_links());
    for c in [&long, &legacy] {
        let mut found = 0;
        for i in 0..20_000u32 {
            let h = c.hash(&i.to_le_bytes());
            let want = c.links().iter().any(|l| l.contains(h));
            assert_eq!(c.contains_hashed(h), want, "item {i}");
            found += usize::from(want);
        }
        // Every added item (0..90 or 0..3000) and some false positives.
        assert!((90..20_000).contains(&found), "{found}");
    }
}

/// BF.INFO Size read from the store's arrays is the per-link sum of
/// docs/bloom.md §7, for a compact chain, the general one it grows into,
/// and a first link too large to be inline.
#[test]
fn size_bytes_is_the_per_link_sum() {
    let per_link = |c: &Chain| c.links().iter().fold(32u64, |acc, l| acc + 64 + l.bytes());
    let mut c = Chain::new(10, 0.01, 2, false).unwrap();
    assert_eq!(c.size_bytes(), per_link(&c));
    for i in 0..100 {
        c.add(i.to_string().as_bytes());
    }
    assert!(c.num_links() > 1);
    assert_eq!(c.size_bytes(), per_link(&c));
    let big = Chain::new(1_000_000, 0.01, 2, false).unwrap();
    assert_eq!(big.size_bytes(), per_link(&big));
}

/// What a write accounts from (the Redis layer's INFO totals): the size a
/// chain had at each earlier number of links, from the first inline link
/// through the growth that makes a compact chain general, and the reshape
/// count moves with every link added.
#[test]
fn size_bytes_at_each_earlier_link_count() {
    for capacity in [10, 100_000] {
        let mut c = Chain::new(capacity, 0.01, 2, false).unwrap();
        let mut sizes = vec![c.size_bytes()];
        let mut i = 0u64;
        while c.num_links() < 5 {
            let (links, reshapes) = (c.num_links(), crate::reshape::reshapes());
            c.add(i.to_string().as_bytes());
            i += 1;
            if c.num_links() > links {
                assert!(crate::reshape::reshapes() > reshapes);
                sizes.push(c.size_bytes());
            }
        }
        for (links, &size) in sizes.iter().enumerate() {
            assert_eq!(c.size_bytes_at(links + 1), size, "{capacity}: {links}");
        }
    }
}
