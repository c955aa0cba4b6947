//! CMS.* command handlers (docs/cms.md §5): argument count, key, numbers
//! (parsed in the core), the sketch operation, the reply, replication.

use rsbloom_core::cms::args::{
    incrby_arity, init_arity_of, parse_dims, parse_error_prob, parse_init_options, parse_merge,
    parse_weight,
};
use rsbloom_core::cms::{
    check_dims, dims_for_error, CellSize, CountMinSketch, CreateError, MergeError, Source,
    WindowedCms,
};

use super::replies::{create_error, pair_item, reply_incremented, Increments, KEY_MISSING};
use super::window;
use crate::ffi::{CmdResult, Ctx, Lookup, RStr, ReplyError};

const KEY_EXISTS: ReplyError = ReplyError::Text("CMS: key already exists");
const MERGE_OVERFLOW: ReplyError = ReplyError::Text("CMS: MERGE overflow");
const SHAPE_DIFFERS: ReplyError = ReplyError::Text("CMS: width/depth is not equal");
const CELL_SIZE_DIFFERS: ReplyError = ReplyError::Text("CMS: cell size is not equal");
/// Under `bf.cms-rdb-encoding 0` only 4-byte sketches can be saved.
const LEGACY_CELL_SIZE: ReplyError =
    ReplyError::Text("CMS: CELL_SIZE must be 4 while bf.cms-rdb-encoding is 0");

// ---- CMS.INITBYDIM / CMS.INITBYPROB (§5.2, §5.3) ----

/// The shared path: two numbers after the key, which must not exist (of
/// any type, checked before the numbers), then the dimensions' checks,
/// the CELL_SIZE option (or a window's options), and the allocation (§5.2
/// order).
fn init(
    ctx: &Ctx,
    args: &[RStr],
    dims: impl FnOnce(&[u8], &[u8]) -> Result<(u64, u64), ReplyError>,
) -> CmdResult {
    init_arity_of(args)?;
    let [_, name, a, b, options @ ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut key = ctx.open_key(name, true);
    if !key.get::<CountMinSketch>().is_missing() {
        return Err(KEY_EXISTS);
    }
    let (width, depth) = dims(a.as_ref(), b.as_ref())?;
    check_dims(width, depth).map_err(create_error)?;
    let o = parse_init_options(options)?;
    if let Some(w) = o.window {
        return window::init(ctx, key, width, depth, o.cell_size, w);
    }
    let cell_size = o.cell_size;
    if cell_size != CellSize::Four && crate::config::cms_legacy_encoding() {
        return Err(LEGACY_CELL_SIZE);
    }
    if let Some(size) = CountMinSketch::new_size(width, depth, cell_size) {
        crate::config::check_key_size(ctx, size)?;
    }
    let sketch = CountMinSketch::new(width, depth, cell_size).map_err(create_error)?;
    key.set(Box::new(sketch));
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

/// CMS.INITBYDIM key width depth [CELL_SIZE size]
pub fn initbydim(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    init(ctx, args, |w, d| Ok(parse_dims(w, d)?))
}

/// CMS.INITBYPROB key error probability [CELL_SIZE size]
pub fn initbyprob(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    init(ctx, args, |e, p| {
        let (error, probability) = parse_error_prob(e, p)?;
        dims_for_error(error, probability).ok_or(create_error(CreateError::Invalid))
    })
}

// ---- CMS.INCRBY (§5.4) ----

/// CMS.INCRBY key item increment [item increment ...]: every increment is
/// checked before any is applied; the reply has one element per pair, and
/// the command is replicated even when every pair was refused.
pub fn incrby(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    incrby_arity(args.len())?;
    let [_, name, rest @ ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    let (pairs, _) = rest.as_chunks::<2>();
    // Opened for writing: WATCH and client-side caching see the change.
    let mut key = ctx.open_key(name, true);
    // The plain sketch first, a window in a key of another type: one
    // type query either way.
    let s = match key.get::<CountMinSketch>() {
        Lookup::WrongType(kind) if kind.is::<WindowedCms>() => {
            return window::incrby(ctx, name, key, pairs);
        }
        found => found.or_missing(KEY_MISSING)?,
    };
    let incs = Increments::check(pairs)?;
    ctx.reply_array(pairs.len());
    s.increment_batch(
        pairs,
        pair_item,
        |p| incs.of(p),
        |r| reply_incremented(ctx, r),
    );
    ctx.propagate();
    Ok(())
}

// ---- CMS.QUERY (§5.5) ----

/// CMS.QUERY key item [item ...]
pub fn query(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name, items @ ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    if items.is_empty() {
        return Err(ReplyError::WrongArity);
    }
    let key = ctx.open_key(name, false);
    // As in INCRBY: the plain sketch first.
    let s = match key.get_shared::<CountMinSketch>() {
        Lookup::WrongType(kind) if kind.is::<WindowedCms>() => {
            return window::query(ctx, &key, items);
        }
        found => found.or_missing(KEY_MISSING)?,
    };
    ctx.reply_array(items.len());
    s.query_batch(items, |v| {
        ctx.reply_int(i64::try_from(v).unwrap_or(i64::MAX))
    });
    Ok(())
}

// ---- CMS.MERGE (§5.6) ----

/// CMS.MERGE destination numKeys source [source ...] [WEIGHTS weight ...]:
/// the destination, the shape of the call, then per source its weight, its
/// key, its dimensions and its cell size, in that order.
pub fn merge(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name, _, _, ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut dest_key = ctx.open_key(name, true);
    if dest_key.kind().is::<WindowedCms>() {
        return Err(window::NO_MERGE);
    }
    dest_key
        .get_shared::<CountMinSketch>()
        .or_missing(KEY_MISSING)?;
    let shape = parse_merge(args)?;
    let arg = |i: usize| args.get(i).map_or(&[][..], AsRef::as_ref);
    let mut sources = Vec::with_capacity(shape.num_keys);
    for i in 0..shape.num_keys {
        let weight = match shape.weight_at(i) {
            Some(at) => parse_weight(arg(at))?,
            None => 1,
        };
        let source = args.get(shape.source_at(i)).ok_or(ReplyError::WrongArity)?;
        let key = ctx.open_key(source, false);
        if key.kind().is::<WindowedCms>() {
            return Err(window::NO_MERGE);
        }
        dest_key
            .get_shared::<CountMinSketch>()
            .or_missing(KEY_MISSING)?
            .mergeable(key.get_shared::<CountMinSketch>().or_missing(KEY_MISSING)?)
            .map_err(merge_error)?;
        sources.push((key, weight));
    }
    // A source naming the destination is read through it: no other
    // reference to the destination may exist while it is written.
    let is_dest: Vec<bool> = sources
        .iter()
        .map(|(k, _)| k.same_value(&dest_key))
        .collect();
    let dest = dest_key.get::<CountMinSketch>().or_missing(KEY_MISSING)?;
    let mut list = Vec::with_capacity(sources.len());
    for ((key, weight), is_dest) in sources.iter().zip(is_dest) {
        let s = if is_dest {
            Source::Destination
        } else {
            Source::Other(key.get_shared::<CountMinSketch>().or_missing(KEY_MISSING)?)
        };
        list.push((s, *weight));
    }
    dest.merge(&list).map_err(merge_error)?;
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

fn merge_error(e: MergeError) -> ReplyError {
    match e {
        MergeError::Overflow => MERGE_OVERFLOW,
        MergeError::Shape => SHAPE_DIFFERS,
        MergeError::CellSize => CELL_SIZE_DIFFERS,
    }
}

// ---- CMS.INFO (§5.7) ----

/// CMS.INFO key: width, depth, the total and the cell size (a window's:
/// docs/cms-window.md §4).
pub fn info(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name] = args else {
        return Err(ReplyError::WrongArity);
    };
    let key = ctx.open_key(name, false);
    if key.kind().is::<WindowedCms>() {
        return window::info(ctx, &key);
    }
    let s = key.get_shared::<CountMinSketch>().or_missing(KEY_MISSING)?;
    let fields = [
        ("width", s.width() as i64),
        ("depth", s.depth() as i64),
        ("count", s.count()),
        ("cell_size", s.cell_size().bytes() as i64),
    ];
    ctx.reply_map(fields.len());
    for (name, value) in fields {
        ctx.reply_simple(name);
        ctx.reply_int(value);
    }
    Ok(())
}
