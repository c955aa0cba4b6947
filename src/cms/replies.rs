//! What the plain and the windowed sketch's handlers answer alike
//! (docs/cms.md §5): the missing key, creation errors, INCRBY's pairs and
//! their reply elements.

use rsbloom_core::cms::args::parse_increment;
use rsbloom_core::cms::{CreateError, Incremented, Rejected};

use crate::ffi::{Ctx, RStr, ReplyError};

pub const KEY_MISSING: ReplyError = ReplyError::Text("CMS: key does not exist");
const INCRBY_OVERFLOW: &str = "CMS: INCRBY overflow";
const INCRBY_UNDERFLOW: &str = "CMS: INCRBY underflow";

pub fn create_error(e: CreateError) -> ReplyError {
    ReplyError::Text(match e {
        CreateError::Invalid => "CMS: invalid init arguments",
        CreateError::OutOfMemory => "CMS: Insufficient memory to create the key",
    })
}

pub fn pair_item(p: &[RStr; 2]) -> &[u8] {
    p[0].as_ref()
}

/// An increment already validated by the first pass.
pub fn pair_increment(p: &[RStr; 2]) -> i64 {
    parse_increment(p[1].as_ref()).unwrap_or(0)
}

pub fn reply_incremented(ctx: &Ctx, r: Incremented) {
    match r {
        // Counters are at most 2^63 − 1.
        Ok(v) => ctx.reply_int(i64::try_from(v).unwrap_or(i64::MAX)),
        Err(Rejected::Overflow) => ctx.reply_error(INCRBY_OVERFLOW),
        Err(Rejected::Underflow) => ctx.reply_error(INCRBY_UNDERFLOW),
    }
}
