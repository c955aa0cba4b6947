//! The only place that talks to the server's C API. Everything above this
//! layer works with safe wrappers: `Ctx` (replies, keys, replication),
//! `RStr` (zero-copy argument bytes), `IoSource`/`IoSink` (RDB primitives).

#[macro_use]
pub mod api;
pub mod alloc;
pub mod barrier;
#[macro_use]
pub mod command;
pub mod context;
#[macro_use]
pub mod datatype;
pub mod events;
pub mod io;
pub mod log;
pub mod release;
pub mod slot_migration;
pub mod stats;

pub use context::{
    arg, loadchunk_args, CmdResult, Ctx, Key, KeyKind, Lookup, RStr, ReplyError, Value,
};
