//! Top-K (TOPK.*): replies and errors, persistence and moves with the
//! reference, the differential against the reference.

mod commands;
mod differential;
mod persistence;
mod window;
