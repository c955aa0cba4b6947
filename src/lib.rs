//! rsbloom: a drop-in replacement for RedisBloom's Bloom (`BF.*`) and Cuckoo
//! (`CF.*`) filters.
//!
//! Layout: `rsbloom-core` (the `core/` crate) holds every algorithm, format
//! and parser with no Redis types; this crate is the thin server layer:
//! `ffi` (the C API), `config`, and per family `commands` (parsing → core →
//! reply) and `datatype` (RDB, AOF, memory).

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
mod tdigest;
mod topk;

#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: ffi::alloc::ServerAllocator = ffi::alloc::ServerAllocator;
