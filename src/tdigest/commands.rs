//! TDIGEST.* command handlers (docs/tdigest.md §5): arity, key lookup, the
//! arguments, a call into the core, the reply, and replication.
//!
//! Replication (docs/tdigest.md §8): writes replicate verbatim on success,
//! as RedisBloom does. A read that compresses the stored digest replicates
//! `TDIGEST.CDF key 0` once per compression that changed it (a CDF of one
//! value compresses exactly once, in RedisBloom too), so replicas and the
//! AOF take the same compressions at the same point of the stream; a failed
//! write replicates what it did change. A replica answering its own clients
//! never changes a digest: it answers from a compressed copy.

use rsbloom_core::args::ArgError;
use rsbloom_core::tdigest::args::{
    create_arity, create_asks_for_window, create_window_arity, exact_arity, min_arity, parse_add,
    parse_cdf, parse_create, parse_create_window, parse_merge, parse_quantiles, parse_rank_values,
    parse_ranks, parse_trimmed_mean, ALLOC_FAILED, DEST_ALLOC_FAILED, KEY_EXISTS, KEY_MISSING,
    OVERFLOW,
};
use rsbloom_core::tdigest::{c_i64, Compressions, Emit, TDigest, WindowedTDigest};

use super::forks::{self, replicate_compressions};
use super::window;
use crate::ffi::{arg, CmdResult, Ctx, Key, Lookup, RStr, ReplyError};

// ---------------------------------------------------------------------------
// Writes

pub fn create(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    // WINDOW only where RedisBloom answers an error (docs/tdigest-window.md §4).
    let asks_window = create_asks_for_window(args);
    if asks_window {
        create_window_arity(args.len())?;
    } else {
        create_arity(args.len())?;
    }
    let mut key = ctx.open_key(arg(args, 1)?, true);
    if key.kind().is::<WindowedTDigest>() {
        return Err(ReplyError::Text(KEY_EXISTS));
    }
    key.get::<TDigest>().vacant(ReplyError::Text(KEY_EXISTS))?;
    if asks_window {
        let (compression, w) = parse_create_window(args)?;
        return window::create(ctx, key, compression, w);
    }
    let compression = parse_create(args)?;
    if let Some(size) = TDigest::new_size(compression as f64) {
        crate::config::check_key_size(ctx, size)?;
    }
    let td = TDigest::new(compression as f64).map_err(|_| ReplyError::Text(ALLOC_FAILED))?;
    key.set(Box::new(td));
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

pub fn reset(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args.len(), 2)?;
    let mut key = ctx.open_key(arg(args, 1)?, true);
    if key.kind().is::<WindowedTDigest>() {
        return window::reset(ctx, key);
    }
    key.get::<TDigest>()
        .or_missing(ReplyError::Text(KEY_MISSING))?
        .reset();
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

pub fn add(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    min_arity(args.len(), 3)?;
    let name = arg(args, 1)?;
    let mut key = ctx.open_key(name, true);
    // The plain digest first: one lookup on the common path.
    let td = match key.get::<TDigest>() {
        Lookup::Found(td) => td,
        Lookup::Missing => return Err(ReplyError::Text(KEY_MISSING)),
        Lookup::WrongType(kind) if kind.is::<WindowedTDigest>() => {
            let values = parse_add(args)?;
            return window::add(ctx, name, key, &values);
        }
        Lookup::WrongType(_) => return Err(ReplyError::WrongType),
    };
    let values = parse_add(args)?;
    let was_pending = td.pending_merge();
    if let Err(failure) = td.add_values(&values) {
        // The values before the failing one stay added (§5.3), and so does
        // the compression it may have started with.
        let added: Vec<_> = args
            .iter()
            .skip(2)
            .take(failure.added)
            .map(RStr::as_ptr)
            .collect();
        if !added.is_empty() {
            ctx.replicate(c"TDIGEST.ADD", name, &added);
        }
        replicate_compressions(ctx, name, usize::from(failure.compressed));
        return Err(ReplyError::Text(OVERFLOW));
    }
    if !was_pending && td.pending_merge() {
        forks::note(ctx, name);
    }
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

/// A digest taking part in a merge, and the compressions it underwent.
struct Part<'a> {
    name: &'a RStr,
    td: *mut TDigest,
    compressions: usize,
}

pub fn merge(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    min_arity(args.len(), 4)?;
    let dest_name = arg(args, 1)?;
    let mut dest_key = ctx.open_key(dest_name, true);
    if dest_key.kind().is::<WindowedTDigest>() {
        return Err(window::NO_MERGE);
    }
    let dest: Option<*mut TDigest> = dest_key
        .get::<TDigest>()
        .optional()?
        .map(std::ptr::from_mut);
    let opts = parse_merge(args)?;
    let names = args.get(3..3 + opts.numkeys).unwrap_or_default();
    let use_max = opts.use_max(dest.is_some());
    // Sources are looked up before anything is built (§5.4 step 5); their
    // keys stay open until the merge is done.
    let mut source_keys: Vec<Key<'_>> = Vec::new();
    let mut parts: Vec<Part<'_>> = Vec::new();
    let mut compression = match (opts.compression, dest) {
        (Some(c), _) => c,
        // SAFETY: the destination key is open and holds this digest.
        (None, Some(d)) if !use_max => c_i64(unsafe { &*d }.compression()),
        _ => 0,
    };
    for name in names {
        let td = if name.as_ref() == dest_name.as_ref() {
            dest.ok_or(ReplyError::Text(KEY_MISSING))?
        } else {
            let mut key = ctx.open_key(name, false);
            if key.kind().is::<WindowedTDigest>() {
                return Err(window::NO_MERGE);
            }
            let td: *mut TDigest = key
                .get::<TDigest>()
                .or_missing(ReplyError::Text(KEY_MISSING))?;
            source_keys.push(key);
            td
        };
        if use_max {
            // SAFETY: `td` belongs to a key that is open.
            compression = compression.max(c_i64(unsafe { &*td }.compression().trunc()));
        }
        parts.push(Part {
            name,
            td,
            compressions: 0,
        });
    }
    if let Some(size) = TDigest::new_size(compression as f64) {
        crate::config::check_key_size(ctx, size)?;
    }
    let mut merged =
        TDigest::new(compression as f64).map_err(|_| ReplyError::Text(DEST_ALLOC_FAILED))?;
    let mut old_dest = dest.filter(|_| !opts.override_dest).map(|td| Part {
        name: dest_name,
        td,
        compressions: 0,
    });
    // The old destination first; its failure is ignored (§5.4 step 7).
    if let Some(p) = old_dest.as_mut() {
        merge_part(&mut merged, p);
    }
    for i in 0..parts.len() {
        if let Some(p) = parts.get_mut(i) {
            if !merge_part(&mut merged, p) {
                replicate_merge_compressions(ctx, old_dest.iter().chain(&parts));
                return Err(ReplyError::Text(OVERFLOW));
            }
        }
    }
    drop(source_keys);
    if merged.pending_merge() {
        forks::note(ctx, dest_name);
    }
    dest_key.set(Box::new(merged));
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

/// `merge_into(merged, part)`; false on overflow.
fn merge_part(merged: &mut TDigest, part: &mut Part<'_>) -> bool {
    // SAFETY: the part's key is open; no other reference to it is live.
    let (compressed, result) = merged.merge_from(unsafe { &mut *part.td });
    if compressed.changed() {
        part.compressions += 1;
    }
    result.is_ok()
}

/// A failed merge is not replicated, but the digests it compressed stay
/// compressed: replicate those compressions, once per digest.
fn replicate_merge_compressions<'a>(ctx: &Ctx, parts: impl Iterator<Item = &'a Part<'a>>) {
    let mut seen: Vec<(*mut TDigest, &RStr, usize)> = Vec::new();
    for p in parts {
        match seen.iter_mut().find(|s| s.0 == p.td) {
            Some(s) => s.2 += p.compressions,
            None => seen.push((p.td, p.name, p.compressions)),
        }
    }
    for (_, name, n) in seen {
        replicate_compressions(ctx, name, n);
    }
}

// ---------------------------------------------------------------------------
// Reads

enum Arity {
    Exact(usize),
    AtLeast(usize),
}

impl Arity {
    fn check(self, argc: usize) -> Result<(), ArgError> {
        match self {
            Arity::Exact(n) => exact_arity(argc, n),
            Arity::AtLeast(n) => min_arity(argc, n),
        }
    }
}

/// Arity, key, arguments, then `compute` on the digest (which replies as it
/// goes): on the stored one, replicating the compressions it makes, or — on
/// a replica answering its own client, or while replication is paused — on
/// a copy, which gives the same answer (§8.2).
fn read<P>(
    ctx: &Ctx,
    args: &[RStr],
    arity: Arity,
    parse: fn(&[RStr]) -> Result<P, ArgError>,
    compute: impl FnOnce(&mut TDigest, P, &mut Compressions),
) -> CmdResult {
    arity.check(args.len())?;
    let name = arg(args, 1)?;
    let mut key = ctx.open_key(name, false);
    // The plain digest first: one lookup on the common path.
    let td = match key.get::<TDigest>() {
        Lookup::Found(td) => td,
        Lookup::Missing => return Err(ReplyError::Text(KEY_MISSING)),
        Lookup::WrongType(_) => {
            let w = key
                .get_shared::<WindowedTDigest>()
                .or_missing(ReplyError::WrongType)?;
            let params = parse(args)?;
            let mut v = window::view(ctx, w)?;
            compute(&mut v, params, &mut Compressions::default());
            return Ok(());
        }
    };
    let params = parse(args)?;
    let mut c = Compressions::default();
    // While replication is paused (CLIENT PAUSE WRITE, failover, slot
    // hand-over) nothing may be propagated: the server would abort.
    if td.has_unmerged() && (ctx.is_replica_serving_client() || ctx.replication_paused()) {
        let mut copy = td.try_clone().map_err(|_| ReplyError::Text(ALLOC_FAILED))?;
        compute(&mut copy, params, &mut c);
        return Ok(());
    }
    compute(td, params, &mut c);
    replicate_compressions(ctx, name, c.0);
    Ok(())
}

/// MIN / MAX: no compression (a window's view is compressed already).
fn inspect<R>(ctx: &Ctx, args: &[RStr], f: impl FnOnce(&TDigest) -> R) -> Result<R, ReplyError> {
    exact_arity(args.len(), 2)?;
    let mut key = ctx.open_key(arg(args, 1)?, false);
    if let Some(w) = key.get_shared::<WindowedTDigest>().found() {
        return Ok(f(&*window::view(ctx, w)?));
    }
    Ok(f(key
        .get::<TDigest>()
        .or_missing(ReplyError::Text(KEY_MISSING))?))
}

pub fn min(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    ctx.reply_double(inspect(ctx, args, TDigest::min_reply)?);
    Ok(())
}

pub fn max(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    ctx.reply_double(inspect(ctx, args, TDigest::max_reply)?);
    Ok(())
}

pub fn quantile(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    read(
        ctx,
        args,
        Arity::AtLeast(3),
        parse_quantiles,
        |td, qs, c| {
            ctx.reply_array(qs.len());
            td.quantiles(&qs, &mut Emit(|v| ctx.reply_double(v)), c);
        },
    )
}

pub fn cdf(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    read(ctx, args, Arity::AtLeast(3), parse_cdf, |td, vs, c| {
        ctx.reply_array(vs.len());
        vs.iter().for_each(|&v| ctx.reply_double(td.cdf(v, c)));
    })
}

fn rank_common(ctx: &Ctx, args: &[RStr], reverse: bool) -> CmdResult {
    read(
        ctx,
        args,
        Arity::AtLeast(3),
        parse_rank_values,
        |td, vs, c| {
            ctx.reply_array(vs.len());
            td.ranks(&vs, reverse, &mut Emit(|r| ctx.reply_int(r)), c);
        },
    )
}

pub fn rank(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    rank_common(ctx, args, false)
}

pub fn revrank(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    rank_common(ctx, args, true)
}

fn by_rank_common(ctx: &Ctx, args: &[RStr], reverse: bool) -> CmdResult {
    read(ctx, args, Arity::AtLeast(3), parse_ranks, |td, rs, c| {
        ctx.reply_array(rs.len());
        td.by_ranks(&rs, reverse, &mut Emit(|v| ctx.reply_double(v)), c);
    })
}

pub fn byrank(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    by_rank_common(ctx, args, false)
}

pub fn byrevrank(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    by_rank_common(ctx, args, true)
}

pub fn trimmed_mean(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    read(
        ctx,
        args,
        Arity::Exact(4),
        parse_trimmed_mean,
        |td, (lo, hi), c| ctx.reply_double(td.trimmed_mean(lo, hi, c)),
    )
}

pub fn info(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args.len(), 2)?;
    let key = ctx.open_key(arg(args, 1)?, false);
    if let Some(w) = key.get_shared::<WindowedTDigest>().found() {
        return window::info(ctx, w);
    }
    drop(key);
    let fields = inspect(ctx, args, |td| {
        [
            ("Compression", c_i64(td.compression())),
            ("Capacity", i64::from(td.capacity())),
            ("Merged nodes", i64::from(td.merged_nodes())),
            ("Unmerged nodes", i64::from(td.unmerged_nodes())),
            ("Merged weight", td.merged_weight()),
            ("Unmerged weight", td.unmerged_weight()),
            ("Observations", td.size()),
            ("Total compressions", td.total_compressions()),
            ("Memory usage", td.memory_usage() as i64),
        ]
    })?;
    ctx.reply_map(fields.len());
    for (name, value) in fields {
        ctx.reply_simple(name);
        ctx.reply_int(value);
    }
    Ok(())
}
