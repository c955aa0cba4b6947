//! valkey-bloom 1.0.1's Bloom filters (type `bloomfltr`), the second Bloom
//! flavour: its data type, its handlers (which the Bloom family's `BF.*`
//! commands call for its keys) and its INFO sections
//! (COMPAT-VALKEY-BLOOM, docs/valkey-bloom.md).
mod commands;
mod datatype;
mod info;

pub use commands::{
    add, card, exists, info as info_reply, insert, insert_existing, is_bloom,
    is_replicated_creation, load, merge, parse_insert_checked, reserve,
};
pub use info::sections as info_sections;

use redis_module::raw::RedisModuleCtx;
use rsbloom_core::valkey_bloom::Object;

use crate::ffi::datatype::create;

/// Registers the `bloomfltr` data type.
pub fn create_type(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    create::<Object>(ctx)
}
