//! Pure-Rust core of rsbloom. Nothing here knows about Redis: the Redis layer
//! (the `rsbloom` crate) calls into these types and maps results to replies.
//!
//! Specification: the reference in `docs/` (cited as `docs/<file>.md §N`).

pub mod alloc;
pub mod apbf;
pub mod args;
pub mod bloom;
pub mod cms;
pub mod config;
pub mod cuckoo;
pub mod hash;
pub mod prefetch;
pub mod rdb;
pub mod tdigest;
pub mod topk;
pub mod valkey_bloom;
