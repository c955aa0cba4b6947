//! CMS.* command handlers (docs/cms.md §5): argument count, key, numbers
//! (parsed in the core), the sketch operation, the reply, replication.

use rsbloom_core::args::cms::{
    incrby_arity, parse_dims, parse_error_prob, parse_increment, parse_merge, parse_weight,
};
use rsbloom_core::cms::{CountMinSketch, CreateError, MergeError, Source, SATURATED};

use crate::ffi::{Ctx, Key, Lookup, RStr, ReplyError};

const KEY_MISSING: ReplyError = ReplyError::Text("CMS: key does not exist");
const KEY_EXISTS: ReplyError = ReplyError::Text("CMS: key already exists");
const INCRBY_OVERFLOW: &str = "CMS: INCRBY overflow";
const MERGE_OVERFLOW: ReplyError = ReplyError::Text("CMS: MERGE overflow");
const SHAPE_DIFFERS: ReplyError = ReplyError::Text("CMS: width/depth is not equal");

type Reply = Result<(), ReplyError>;

/// The sketch of a key opened for writing (§5.1 key errors).
fn sketch_mut<'k>(key: &'k mut Key<'_>) -> Result<&'k mut CountMinSketch, ReplyError> {
    found(key.get::<CountMinSketch>())
}

/// The sketch of a key, read only.
fn sketch<'k>(key: &'k Key<'_>) -> Result<&'k CountMinSketch, ReplyError> {
    found(key.get_shared::<CountMinSketch>())
}

fn found<R>(lookup: Lookup<R>) -> Result<R, ReplyError> {
    match lookup {
        Lookup::Found(s) => Ok(s),
        Lookup::Missing => Err(KEY_MISSING),
        Lookup::WrongType => Err(ReplyError::WrongType),
    }
}

// ---- CMS.INITBYDIM / CMS.INITBYPROB (§5.2, §5.3) ----

/// The shared path: exactly two numbers after the key, which must not exist
/// (of any type, checked before the numbers).
fn init(
    ctx: &Ctx,
    args: &[RStr],
    create: impl FnOnce(&[u8], &[u8]) -> Result<CountMinSketch, ReplyError>,
) -> Reply {
    let [_, name, a, b] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut key = ctx.open_key(name, true);
    if !matches!(key.get::<CountMinSketch>(), Lookup::Missing) {
        return Err(KEY_EXISTS);
    }
    key.set(Box::new(create(a.as_ref(), b.as_ref())?));
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

fn created(r: Result<CountMinSketch, CreateError>) -> Result<CountMinSketch, ReplyError> {
    r.map_err(|e| {
        ReplyError::Text(match e {
            CreateError::Invalid => "CMS: invalid init arguments",
            CreateError::OutOfMemory => "CMS: Insufficient memory to create the key",
        })
    })
}

/// CMS.INITBYDIM key width depth
pub fn initbydim(ctx: &Ctx, args: &[RStr]) -> Reply {
    init(ctx, args, |w, d| {
        let (width, depth) = parse_dims(w, d)?;
        created(CountMinSketch::new(width, depth))
    })
}

/// CMS.INITBYPROB key error probability
pub fn initbyprob(ctx: &Ctx, args: &[RStr]) -> Reply {
    init(ctx, args, |e, p| {
        let (error, probability) = parse_error_prob(e, p)?;
        created(CountMinSketch::for_error(error, probability))
    })
}

// ---- CMS.INCRBY (§5.4) ----

fn pair_item(p: &[RStr; 2]) -> &[u8] {
    p[0].as_ref()
}

/// An increment already validated by the first pass.
fn pair_increment(p: &[RStr; 2]) -> u64 {
    parse_increment(p[1].as_ref()).unwrap_or(0)
}

/// CMS.INCRBY key item increment [item increment ...]: every increment is
/// checked before any is applied; the reply has one element per pair.
pub fn incrby(ctx: &Ctx, args: &[RStr]) -> Reply {
    incrby_arity(args.len())?;
    let [_, name, rest @ ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    let (pairs, _) = rest.as_chunks::<2>();
    // Opened for writing: WATCH and client-side caching see the change.
    let mut key = ctx.open_key(name, true);
    let s = sketch_mut(&mut key)?;
    for [_, inc] in pairs {
        parse_increment(inc.as_ref())?;
    }
    ctx.reply_array(pairs.len());
    s.increment_batch(pairs, pair_item, pair_increment, |v| {
        if v == SATURATED {
            ctx.reply_error(INCRBY_OVERFLOW);
        } else {
            ctx.reply_int(i64::from(v));
        }
    });
    ctx.propagate();
    Ok(())
}

// ---- CMS.QUERY (§5.5) ----

/// CMS.QUERY key item [item ...]
pub fn query(ctx: &Ctx, args: &[RStr]) -> Reply {
    let [_, name, items @ ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    if items.is_empty() {
        return Err(ReplyError::WrongArity);
    }
    let key = ctx.open_key(name, false);
    let s = sketch(&key)?;
    ctx.reply_array(items.len());
    s.query_batch(items, |v| ctx.reply_int(i64::from(v)));
    Ok(())
}

// ---- CMS.MERGE (§5.6) ----

/// CMS.MERGE destination numKeys source [source ...] [WEIGHTS weight ...]:
/// the destination, the shape of the call, then per source its weight, its
/// key and its dimensions, in that order.
pub fn merge(ctx: &Ctx, args: &[RStr]) -> Reply {
    let [_, name, _, _, ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut dest_key = ctx.open_key(name, true);
    sketch(&dest_key)?;
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
        if !sketch(&key)?.same_shape(sketch(&dest_key)?) {
            return Err(SHAPE_DIFFERS);
        }
        sources.push((key, weight));
    }
    // A source naming the destination is read through it: no other
    // reference to the destination may exist while it is written.
    let is_dest: Vec<bool> = sources
        .iter()
        .map(|(k, _)| k.same_value(&dest_key))
        .collect();
    let dest = sketch_mut(&mut dest_key)?;
    let mut list = Vec::with_capacity(sources.len());
    for ((key, weight), is_dest) in sources.iter().zip(is_dest) {
        let s = if is_dest {
            Source::Destination
        } else {
            Source::Other(sketch(key)?)
        };
        list.push((s, *weight));
    }
    dest.merge(&list).map_err(|e| match e {
        MergeError::Overflow => MERGE_OVERFLOW,
        MergeError::Shape => SHAPE_DIFFERS,
    })?;
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

// ---- CMS.INFO (§5.7) ----

/// CMS.INFO key: width, depth and the total (signed).
pub fn info(ctx: &Ctx, args: &[RStr]) -> Reply {
    let [_, name] = args else {
        return Err(ReplyError::WrongArity);
    };
    let key = ctx.open_key(name, false);
    let s = sketch(&key)?;
    let fields = [
        ("width", s.width() as i64),
        ("depth", s.depth() as i64),
        ("count", s.count()),
    ];
    ctx.reply_map(fields.len());
    for (name, value) in fields {
        ctx.reply_simple(name);
        ctx.reply_int(value);
    }
    Ok(())
}
