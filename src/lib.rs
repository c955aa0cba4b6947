//! rsbloom: a drop-in replacement for RedisBloom's probabilistic data
//! structures: Bloom filter (`BF.*`), Cuckoo filter (`CF.*`), Count-Min
//! Sketch (`CMS.*`), Top-K (`TOPK.*`) and T-Digest (`TDIGEST.*`).
//!
//! Layout: `rsbloom-core` (the `core/` crate) holds every algorithm, format
//! and parser with no Redis types; this crate is the thin server layer:
//! `ffi` (the C API), `config`, and per family `commands` (parsing → core →
//! reply), `datatype` (RDB, AOF, memory) and `docs` (COMMAND DOCS).
//! Dependencies point one way: families provide tables (`family`,
//! `command_docs` types), `registry` lists them, `module`, `info` and
//! `command_docs::apply` consume them; `tests/layout.rs` checks it.

#[macro_use]
mod ffi;
mod apbf;
mod bloom;
mod cms;
mod command_docs;
mod config;
mod cuckoo;
mod family;
mod info;
mod module;
mod registry;
mod tdigest;
mod topk;
mod valkey_bloom;

#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: ffi::alloc::ServerAllocator = ffi::alloc::ServerAllocator;
