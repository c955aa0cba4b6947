//! T-Digest (TDIGEST.*): replies and errors, persistence and moves with the
//! reference, the differential against the reference, replication, and
//! windowed digests.

mod commands;
mod differential;
mod persistence;
mod replication;
mod window;
