//! Shared integration-test harness (each test binary includes it with `mod common;`).
#![allow(dead_code, unused_imports)] // each test binary uses a different part

pub mod cluster;
pub mod diff;
pub mod dump;
pub mod resp;
pub mod server;
pub mod stream;

pub use resp::{Conn, Reply};
pub use server::{flavors, Flavor, Module, Server};

/// `Reply::Simple("OK")`.
pub fn ok() -> Reply {
    Reply::Simple("OK".into())
}

pub fn err(text: &str) -> Reply {
    Reply::Error(text.into())
}

pub fn int(i: i64) -> Reply {
    Reply::Int(i)
}

pub fn bulk(b: impl AsRef<[u8]>) -> Reply {
    Reply::Bulk(b.as_ref().to_vec())
}
