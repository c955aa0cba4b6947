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

mod args;
pub use args::args;
mod bloom;
pub use bloom::{bloom_chunks, bloom_header, bloom_model, bloom_rdb};
mod cuckoo;
pub use cuckoo::{cuckoo_chunks, cuckoo_header, cuckoo_model, cuckoo_rdb};
mod cms;
pub use cms::{cms_args, cms_model, cms_rdb};
mod cms_window;
pub use cms_window::{cms_window_model, cms_window_rdb};
mod topk;
pub use topk::{topk_args, topk_model, topk_rdb};
mod topk_window;
pub use topk_window::{topk_window_model, topk_window_rdb};
mod tdigest;
pub use tdigest::{tdigest_args, tdigest_model, tdigest_rdb};
mod tdigest_window;
pub use tdigest_window::{tdigest_window_model, tdigest_window_rdb};
mod apbf;
pub use apbf::{apbf_args, apbf_rdb};
mod valkey_bloom;
pub use valkey_bloom::{valkey_bloom_args, valkey_bloom_load, valkey_bloom_rdb};
mod dump;
pub use dump::dump_payload;
mod rdb_file;
pub use rdb_file::rdb_file;
/// What the windowed types' checks share.
mod window;

use rsbloom_core::args::ArgError;
use rsbloom_core::rdb::Primitive;

/// Largest allocation a check lets the core attempt when it could succeed.
pub const ALLOC_CAP: u128 = 16 << 20;
/// Allocations this big cannot succeed on x86-64 (47-bit user address space).
pub const ALLOC_IMPOSSIBLE: u128 = 1 << 47;

/// A fuzz target: one input, panics on a finding.
pub type Target = fn(&[u8]);

/// Every target by name (the names of `fuzz/src/bin/*.rs`).
pub const TARGETS: [(&str, Target); 31] = [
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
    ("cms_window_rdb", cms_window_rdb),
    ("cms_window_model", cms_window_model),
    ("topk_rdb", topk_rdb),
    ("topk_args", topk_args),
    ("topk_model", topk_model),
    ("topk_window_rdb", topk_window_rdb),
    ("topk_window_model", topk_window_model),
    ("tdigest_rdb", tdigest_rdb),
    ("tdigest_args", tdigest_args),
    ("tdigest_model", tdigest_model),
    ("tdigest_window_rdb", tdigest_window_rdb),
    ("tdigest_window_model", tdigest_window_model),
    ("apbf_rdb", apbf_rdb),
    ("apbf_args", apbf_args),
    ("valkey_bloom_rdb", valkey_bloom_rdb),
    ("valkey_bloom_load", valkey_bloom_load),
    ("valkey_bloom_args", valkey_bloom_args),
    ("dump_payload", dump_payload),
    ("rdb_file", rdb_file),
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
// Helpers shared by the targets
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

fn check_arg_error(e: ArgError) {
    if let ArgError::Reply(text) = e {
        assert!(!text.is_empty() && !text.contains('\n') && !text.contains('\r'));
    }
}

/// Operation bytes the structured targets' seeds run after their parameters.
fn ops_seed() -> Vec<u8> {
    (0..=255u8)
        .flat_map(|b| [b, b.wrapping_mul(7), 0])
        .collect()
}

/// Seed inputs per target (written to fuzz/corpus by `tests/fuzz_replay.rs`),
/// derived from genuine encodings.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = bloom::seeds();
    out.extend(cuckoo::seeds());
    out.extend(args::seeds());
    out.extend(cms::seeds());
    out.extend(cms_window::seeds());
    out.extend(topk::seeds());
    out.extend(topk_window::seeds());
    out.extend(tdigest::seeds());
    out.extend(tdigest_window::seeds());
    out.extend(apbf::seeds());
    out.extend(valkey_bloom::seeds());
    out.extend(dump::seeds());
    out.extend(rdb_file::seeds());
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
