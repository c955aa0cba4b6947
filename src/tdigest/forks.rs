//! Compression when the server forks a snapshot (docs/tdigest.md §8.4).
//!
//! A snapshot (BGSAVE, full sync, AOF rewrite) is written by a forked child,
//! which saves each digest compressed: RedisBloom's layout has no room for
//! unmerged nodes. A replica loading it, or a server replaying that AOF,
//! would start from compressed digests while the master kept its unmerged
//! nodes, and their later compressions — hence every later answer — would
//! differ. So right after the fork a master compresses every digest with a
//! merge pending, exactly as the child did, and replicates it: the master,
//! the replicas that were already in sync and the new snapshot agree.
//!
//! Finding those digests: a command that gives a digest a pending merge
//! notes its key here. Names can go stale (RENAME, MOVE, SWAPDB, COPY, DEL),
//! so the core's exact count of pending digests decides: when the named
//! ones do not account for all of them, every database is scanned.
//!
//! The commands replicate the compressions they cause through here too.

use std::collections::BTreeSet;
use std::ffi::c_int;
use std::sync::Mutex;

use rsbloom_core::tdigest::{pending_merges, TDigest};

use crate::ffi::slot_migration::owns_key;
use crate::ffi::{Ctx, Lookup, RStr};

static NAMES: Mutex<BTreeSet<(c_int, Vec<u8>)>> = Mutex::new(BTreeSet::new());

/// Names beyond this (plus twice the pending digests) are stale: dropped,
/// the count still finds their digests.
const SPARE_NAMES: usize = 4096;

/// Remembers the key of a digest that just got a merge pending.
pub fn note(ctx: &Ctx, key: &RStr) {
    if let Ok(mut names) = NAMES.lock() {
        if names.len() >= SPARE_NAMES + 2 * pending_merges() {
            names.clear();
        }
        names.insert((ctx.selected_db(), key.as_ref().to_vec()));
    }
}

/// The fork handler: on a master, compress and replicate every digest with
/// a merge pending. A replica leaves its digests to its master's stream.
pub fn compress_pending(ctx: &Ctx) {
    let names = NAMES
        .lock()
        .map(|mut n| std::mem::take(&mut *n))
        .unwrap_or_default();
    // Not while replication is paused: the server would abort on the
    // propagation (docs/tdigest.md §8.6).
    if pending_merges() == 0 || !ctx.is_master() || ctx.replication_paused() {
        return;
    }
    for (db, name) in names {
        if !ctx.select_db(db) {
            continue;
        }
        let owned = ctx.string(&name);
        let key = RStr::from_ptr(owned.as_ptr());
        if let Lookup::Found(td) = ctx.open_key(&key, false).get::<TDigest>() {
            compress(ctx, &key, td);
        }
    }
    let mut db = 0;
    while pending_merges() > 0 && ctx.select_db(db) {
        ctx.for_each_value(|key, td: &mut TDigest| compress(ctx, key, td));
        db += 1;
    }
}

/// Replicates `n` compressions of `key`: `TDIGEST.CDF key 0 ... 0` with
/// `n` values compresses `n` times in rsbloom and RedisBloom alike.
pub fn replicate_compressions(ctx: &Ctx, key: &RStr, n: usize) {
    if n > 0 {
        let zero = ctx.string(b"0");
        ctx.replicate(c"TDIGEST.CDF", key, &vec![zero.as_ptr(); n]);
    }
}

/// Digests being imported by an atomic slot migration are left to their
/// source, whose own compression reaches them through the migration stream.
fn compress(ctx: &Ctx, key: &RStr, td: &mut TDigest) {
    if td.pending_merge() && owns_key(key.as_ptr()) && td.compress().changed() {
        replicate_compressions(ctx, key, 1);
    }
}
