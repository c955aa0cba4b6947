//! TOPK.* command handlers (docs/topk.md §4): arity, key lookup, a call into
//! the core, the reply, and replication as §1.2 prescribes. Parsing and the
//! algorithm live in `rsbloom-core`.

use rsbloom_core::prefetch::pipelined;
use rsbloom_core::topk::args::{
    check_incrby_arity, parse_increment, parse_reserve, parse_topk_list, reserve_arity_of,
    INCREMENT_ERROR,
};
use rsbloom_core::topk::{cstr, hash_item, ItemHash, TopK, WindowedTopK};

use super::replies::{reply_item, NO_KEY, NO_MEMORY, OUT_OF_MEMORY};
use super::window;
use crate::ffi::{CmdResult, Ctx, Key, Lookup, RStr, ReplyError};

const KEY_EXISTS: &str = "TopK: key already exists";

fn arg(args: &[RStr], i: usize) -> Result<&RStr, ReplyError> {
    args.get(i).ok_or(ReplyError::WrongArity)
}

fn min_arity(args: &[RStr], n: usize) -> CmdResult {
    if args.len() >= n {
        Ok(())
    } else {
        Err(ReplyError::WrongArity)
    }
}

/// One add's reply element: the expelled item or null.
fn reply_added(ctx: &Ctx, t: &mut TopK, item: &[u8], hash: &ItemHash, inc: u32) {
    match t.add_hashed(item, hash, inc) {
        Ok(expelled) => reply_item(ctx, expelled.as_deref().map(cstr)),
        Err(_) => ctx.reply_error(OUT_OF_MEMORY),
    }
}

// ---------------------------------------------------------------------------
// TOPK.RESERVE (§4.1)

/// With `WINDOW ms [BUCKETS n]` after the numbers, a windowed Top-K
/// (docs/topk-window.md §3.1).
pub fn reserve(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    reserve_arity_of(args)?;
    let mut key = ctx.open_key(arg(args, 1)?, true);
    // Any existing key, whatever its type, is refused before parsing.
    if !key.get::<TopK>().is_missing() {
        return Err(ReplyError::Text(KEY_EXISTS));
    }
    let (p, w) = parse_reserve(args)?;
    if let Some(w) = w {
        return window::reserve(ctx, key, p, w);
    }
    if let Some(size) = TopK::new_size(p.k, p.width, p.depth) {
        crate::config::check_key_size(ctx, size)?;
    }
    let t = TopK::new(p.k, p.width, p.depth, p.decay).map_err(|_| ReplyError::Text(NO_MEMORY))?;
    key.set(Box::new(t));
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

// ---------------------------------------------------------------------------
// TOPK.ADD / TOPK.INCRBY (§4.2, §4.3): replicated whenever the key holds a
// Top-K, also after a rejected increment.

pub fn add(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    min_arity(args, 3)?;
    let name = arg(args, 1)?;
    let mut key = ctx.open_key(name, true);
    let items = args.get(2..).unwrap_or_default();
    window::write(ctx, name, &mut key, |t| add_items(ctx, t, items))?;
    ctx.propagate();
    Ok(())
}

fn add_items(ctx: &Ctx, t: &mut TopK, items: &[RStr]) {
    ctx.reply_array(items.len());
    if !t.buckets_exceed_cache() {
        for item in items {
            let item = item.as_ref();
            reply_added(ctx, t, item, &hash_item(item), 1);
        }
    } else {
        add_prefetched(ctx, t, items);
    }
}

/// [`add_items`] on a sketch beyond the cache: items hashed and prefetched
/// by blocks ahead of their adds, so the buckets' cache misses overlap.
/// Out of line: its stack frame and code stay off the usual path.
#[inline(never)]
fn add_prefetched(ctx: &Ctx, t: &mut TopK, items: &[RStr]) {
    let mut adding = items.iter();
    pipelined(
        t,
        items,
        |_, item| hash_item(item.as_ref()),
        |t, h| t.prefetch(&h),
        // Called once per item, in order.
        |t, h| {
            adding.next().is_some_and(|item| {
                reply_added(ctx, t, item.as_ref(), &h, 1);
                true
            })
        },
    );
}

/// Pairs after a rejected increment are not applied, and their elements
/// repeat the error: RedisBloom leaves them out and so breaks the protocol
/// (docs/topk.md §4.3). Only the applied pairs are replicated: a replica,
/// the AOF or an atomic slot migration target re-running the rejected
/// increment would answer an error to its source (RedisBloom replicates the
/// command verbatim); the state is the same either way.
pub fn incrby(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    check_incrby_arity(args.len())?;
    let name = arg(args, 1)?;
    let mut key = ctx.open_key(name, true);
    let pairs = args.get(2..).unwrap_or_default();
    let rejected_at = window::write(ctx, name, &mut key, |t| increment_pairs(ctx, t, pairs))?;
    match rejected_at {
        None => ctx.propagate(),
        Some(0) => {}
        Some(n) => {
            let head = args.get(..2 + 2 * n).unwrap_or_default();
            ctx.propagate_as(&head.iter().collect::<Vec<_>>());
        }
    }
    Ok(())
}

/// Applies `item increment` pairs up to the first rejected increment, a
/// reply element each; returns the index of that pair, if any.
fn increment_pairs(ctx: &Ctx, t: &mut TopK, pairs: &[RStr]) -> Option<usize> {
    let pairs = pairs.chunks_exact(2);
    ctx.reply_array(pairs.len());
    // The first rejected pair: as many were applied.
    let mut rejected_at = None;
    for (n, pair) in pairs.enumerate() {
        let [item, increment] = pair else { continue };
        match parse_increment(increment.as_ref())
            .ok()
            .filter(|_| rejected_at.is_none())
        {
            Some(inc) => {
                let item = item.as_ref();
                reply_added(ctx, t, item, &hash_item(item), inc)
            }
            None => {
                rejected_at.get_or_insert(n);
                ctx.reply_error(INCREMENT_ERROR);
            }
        }
    }
    rejected_at
}

// ---------------------------------------------------------------------------
// TOPK.QUERY / TOPK.COUNT (§4.4)

pub fn query(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    per_item(ctx, args, window::query, |t, item| {
        ctx.reply_bool(t.query(item))
    })
}

pub fn count(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    per_item(ctx, args, window::count, |t, item| {
        ctx.reply_int(i64::from(t.count(item)))
    })
}

/// A reply element per item of a key read (`key item [item ...]`); a
/// window's items all by `windowed`.
fn per_item(
    ctx: &Ctx,
    args: &[RStr],
    windowed: fn(&Ctx, &Key, &[RStr]) -> CmdResult,
    reply: impl Fn(&TopK, &[u8]),
) -> CmdResult {
    min_arity(args, 3)?;
    let key = ctx.open_key(arg(args, 1)?, false);
    let items = args.get(2..).unwrap_or_default();
    // A window is looked for only in a key of another type: the usual
    // call looks its key up once.
    let t = match key.get_shared::<TopK>() {
        Lookup::WrongType(kind) if kind.is::<WindowedTopK>() => {
            return windowed(ctx, &key, items);
        }
        found => found.or_missing(ReplyError::Text(NO_KEY))?,
    };
    ctx.reply_array(items.len());
    for item in items {
        reply(t, item.as_ref());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// TOPK.LIST / TOPK.INFO (§4.5, §4.6)

pub fn list(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let with_count = parse_topk_list(args)?;
    let key = ctx.open_key(arg(args, 1)?, false);
    let t = match key.get_shared::<TopK>() {
        Lookup::WrongType(kind) if kind.is::<WindowedTopK>() => {
            return window::list(ctx, &key, with_count);
        }
        found => found.or_missing(ReplyError::Text(NO_KEY))?,
    };
    let listed = t.list().map_err(|_| ReplyError::Text(OUT_OF_MEMORY))?;
    ctx.reply_array(listed.len() * if with_count { 2 } else { 1 });
    for e in listed.iter() {
        reply_item(ctx, e.item_cstr());
        if with_count {
            ctx.reply_int(i64::from(e.count()));
        }
    }
    Ok(())
}

pub fn info(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    if args.len() != 2 {
        return Err(ReplyError::WrongArity);
    }
    let mut key = ctx.open_key(arg(args, 1)?, false);
    if key.kind().is::<WindowedTopK>() {
        return window::info(ctx, &key);
    }
    let t = key.get::<TopK>().or_missing(ReplyError::Text(NO_KEY))?;
    ctx.reply_map(4);
    for (name, value) in [("k", t.k()), ("width", t.width()), ("depth", t.depth())] {
        ctx.reply_simple(name);
        ctx.reply_int(i64::from(value));
    }
    ctx.reply_simple("decay");
    ctx.reply_double(t.decay());
    Ok(())
}
