//! Pure-Rust core of rsbloom. Nothing here knows about Redis: the Redis layer
//! (the `rsbloom` crate) calls into these types and maps results to replies.
//!
//! Specification: the reference in `docs/` (cited as `docs/<file>.md §N`).

pub mod alloc;
pub mod apbf;
pub mod args;
pub mod bitunion;
pub mod bloom;
pub mod clock;
pub mod cms;
pub mod config;
pub mod cuckoo;
pub mod dump;
pub mod hash;
pub mod limit;
pub mod module_type;
pub mod prefetch;
pub mod rdb;
pub mod rdb_file;
pub mod reshape;
pub mod tdigest;
pub mod topk;
pub mod valkey_bloom;
pub mod window;

pub use module_type::ModuleType;

/// Every data type of the module, in the order the copy tool and the
/// table-driven tests take them (the two Bloom types first): a new family
/// is one more `pub mod` and one more entry here.
pub const TYPES: &[&ModuleType] = &[
    &bloom::TYPE,
    &valkey_bloom::TYPE,
    &cuckoo::TYPE,
    &cms::TYPE,
    &cms::WINDOW_TYPE,
    &topk::TYPE,
    &topk::WINDOW_TYPE,
    &tdigest::TYPE,
    &tdigest::WINDOW_TYPE,
    &apbf::TYPE,
];
