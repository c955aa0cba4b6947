//! Count-Min Sketch (`CMS.*`, type `CMSk-TYPE`): the command table
//! (docs/cms.md §1.2), the handlers and the data type callbacks.
mod commands;
mod datatype;
mod docs;
mod replies;
mod window;

use crate::family::Family;
use crate::ffi::command::CommandSpec;

/// Plain sketches, and windowed ones beside them (`CMSw-rsbl`, served by
/// the same commands).
pub static FAMILY: Family =
    Family::of::<rsbloom_core::cms::CountMinSketch>(c"cms", COMMANDS, docs::DOCS)
        .with_second_type::<rsbloom_core::cms::WindowedCms>("cms_window");

/// Flags and ACL categories exactly as RedisBloom 8.x registers them:
/// the INIT commands are in `@fast` without the `fast` flag. CMS.TICK
/// (rsbloom's) carries the master's clock to a window's replicas.
static COMMANDS: &[CommandSpec] = commands!("cms";
    "cms.initbydim" => commands::initbydim, write "deny-oom", acl fast;
    "cms.initbyprob" => commands::initbyprob, write "deny-oom", acl fast;
    "cms.incrby" => commands::incrby, write "deny-oom";
    "cms.query" => commands::query, readonly;
    "cms.merge" => commands::merge, write "deny-oom";
    "cms.info" => commands::info, readonly, acl fast;
    // rsbloom's: outside @cms, which holds RedisBloom's six (issue 39).
    "cms.tick" => window::tick, write, acl fast, category "";
);
