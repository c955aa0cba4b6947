//! Module-wide checks, and the checks that are the same for every family
//! (table-driven over `common::families::TYPES` where they iterate
//! families). Per-family suites are `tests/<family>/main.rs`.

mod acl;
mod aof;
mod beyond;
mod clients;
mod cluster;
mod command_docs;
mod container;
mod copy;
mod corrupt_payloads;
mod defrag;
mod differential;
mod eviction;
mod examples;
mod exchange;
mod faults;
mod key_limit;
mod limits;
mod memory_parity;
mod module;
mod panic_barrier;
mod replication;
mod restore;
mod slot_migration;
