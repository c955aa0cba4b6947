//! Bloom filters (BF.*, RedisBloom's type): replies and errors, defects answered,
//! persistence. The BF/CF differential against the reference is in
//! `tests/shared/differential.rs`.

mod commands;
mod hardening;
mod persistence;
