//! Sliding-window filters (APBF.*): replies and errors, persistence, cluster
//! routing and slot migration. No oracle: no differential.

mod cluster;
mod commands;
mod persistence;
