//! rsbloom's valkey-bloom flavour (`bf.bloom-flavor valkey-bloom`, type
//! `bloomfltr`) against valkey-bloom 1.0.1, whose behaviour is specified in
//! the shared COMPAT-VALKEY-BLOOM.md:
//!
//! * `vectors`: the six recorded vectors (tests/data/valkey-bloom/) replayed,
//!   restored and BF.LOADed; every recorded reply, DUMP byte and digest;
//! * `differential`: seeded random command streams against the oracle on the
//!   same Valkey 9.1 binary, every reply compared byte for byte (RESP2, RESP3);
//! * `moves`: RDB files, AOF files without preamble and DUMP/RESTORE moved
//!   both ways between rsbloom and the oracle.
//!
//! The oracle (`../shared/oracles/valkey-bloom/` or
//! `$RSBLOOM_VALKEY_BLOOM_ORACLE`) is only run as a black box; without it the
//! oracle parts print a loud notice and are skipped, the rest still runs on
//! the committed expectations.

mod departures;
mod differential;
mod files;
mod moves;
mod vb;
mod vector;
mod vectors;
