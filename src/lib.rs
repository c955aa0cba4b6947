//! rsbloom: a drop-in replacement for RedisBloom's probabilistic data
//! structures: Bloom filter (`BF.*`, also valkey-bloom's flavour), Cuckoo
//! filter (`CF.*`), Count-Min Sketch (`CMS.*`), Top-K (`TOPK.*`) and
//! T-Digest (`TDIGEST.*`), plus rsbloom's sliding-window filters (`APBF.*`).
//!
//! Layout: `rsbloom-core` (the `core/` crate) holds every algorithm, format
//! and parser with no Redis types; this crate is the thin server layer:
//! `ffi` (the C API), `config`, and per family `commands` (parsing → core →
//! reply), `datatype` (RDB, AOF, memory) and `docs` (COMMAND DOCS).
//! Dependencies point one way: families provide tables (`family`,
//! `command_docs` types), `families!` below lists them, `module`, `info` and
//! `command_docs::apply` consume them; `tests/layout.rs` checks it.

#[macro_use]
mod ffi;
#[macro_use]
mod family;
mod clock;
mod command_docs;
mod config;
mod info;
mod module;
mod registry;
mod valkey_bloom;

// RedisBloom's families in its registration order, then rsbloom's own.
families!(bloom, cuckoo, cms, topk, tdigest, apbf);

#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: ffi::alloc::ServerAllocator = ffi::alloc::ServerAllocator;
