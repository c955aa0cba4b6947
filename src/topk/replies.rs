//! What the plain and the windowed Top-K's handlers answer alike
//! (docs/topk.md §4): the missing key, memory errors, an item.

use crate::ffi::Ctx;

pub const NO_KEY: &str = "TopK: key does not exist";
pub const NO_MEMORY: &str = "ERR Insufficient memory to create topk data structure";
/// A heap item or a LIST could not be allocated (RedisBloom would abort).
pub const OUT_OF_MEMORY: &str = "ERR Insufficient memory";

/// An item as replies show it: bulk string up to its first NUL, or null.
pub fn reply_item(ctx: &Ctx, item: Option<&[u8]>) {
    match item {
        Some(bytes) => ctx.reply_bulk(bytes),
        None => ctx.reply_null(),
    }
}
