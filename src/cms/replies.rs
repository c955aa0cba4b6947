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

/// INCRBY's increments, every one checked before any is applied (§5.4).
/// A single pair, the usual call, keeps the value it was checked as; a
/// batch parses each again as it is applied rather than buffer them.
pub enum Increments {
    One(i64),
    Checked,
}

impl Increments {
    pub fn check(pairs: &[[RStr; 2]]) -> Result<Increments, ReplyError> {
        if let [[_, inc]] = pairs {
            return Ok(Increments::One(parse_increment(inc.as_ref())?));
        }
        for [_, inc] in pairs {
            parse_increment(inc.as_ref())?;
        }
        Ok(Increments::Checked)
    }

    /// The increment of `p`, one of the checked pairs.
    pub fn of(&self, p: &[RStr; 2]) -> i64 {
        match self {
            Increments::One(v) => *v,
            Increments::Checked => parse_increment(p[1].as_ref()).unwrap_or(0),
        }
    }
}

pub fn reply_incremented(ctx: &Ctx, r: Incremented) {
    match r {
        // Counters are at most 2^63 − 1.
        Ok(v) => ctx.reply_int(i64::try_from(v).unwrap_or(i64::MAX)),
        Err(Rejected::Overflow) => ctx.reply_error(INCRBY_OVERFLOW),
        Err(Rejected::Underflow) => ctx.reply_error(INCRBY_UNDERFLOW),
    }
}
