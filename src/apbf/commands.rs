//! APBF.* command handlers (docs/apbf.md §5): argument count, key, numbers
//! (parsed in the core), the filter operation, the reply, replication.
//!
//! Time windows shift by the master's clock only: a write on the master
//! first ages the filter to its clock and replicates that as
//! `APBF.TICK key <ms>` before the write itself, so replicas and AOF
//! replays apply the same shifts; reads age the filter virtually.

use rsbloom_core::apbf::args::{
    parse_loadchunk_iter, parse_reserve, parse_scandump_iter, BAD_TIMESTAMP,
};
use rsbloom_core::apbf::{Apbf, ChunkError, CountFull, CreateError, Header};
use rsbloom_core::args::parse_tick_ms;

use crate::clock::age_to_clock;
use crate::ffi::{arg, loadchunk_args, CmdResult, Ctx, Lookup, RStr, ReplyError};

const KEY_MISSING: ReplyError = ReplyError::Text("ERR APBF: key does not exist");
const KEY_EXISTS: ReplyError = ReplyError::Text("ERR APBF: key already exists");
const NO_MEMORY: ReplyError =
    ReplyError::Text("ERR APBF: insufficient memory to create the filter");
const BAD_HEADER: ReplyError = ReplyError::Text("ERR APBF: received bad data");
const BAD_CHUNK_ITER: ReplyError = ReplyError::Text("ERR APBF: invalid iterator");
const BAD_CHUNK_LEN: ReplyError = ReplyError::Text("ERR APBF: chunk length does not match");
const NOT_TIME: ReplyError = ReplyError::Text("ERR APBF: not a time window");
/// An item refused because the inserts count is at 2^63 − 1 (docs/apbf.md
/// §5.2): only a restored value gets there.
const COUNT_FULL: &str = "ERR APBF: inserts count at its maximum";
const FUTURE: ReplyError =
    ReplyError::Text("ERR APBF: timestamp is more than 60 s past the server's clock");

// ---- APBF.RESERVE ----

/// APBF.RESERVE key COUNT|TIME error capacity [timespan]: the arguments,
/// then the key, which must not exist.
pub fn reserve(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let p = parse_reserve(args)?;
    let name = arg(args, 1)?;
    let mut key = ctx.open_key(name, true);
    if !key.get::<Apbf>().is_missing() {
        return Err(KEY_EXISTS);
    }
    if let Ok(h) = Apbf::plan(p.window, p.error, p.capacity) {
        crate::config::check_key_size(ctx, Apbf::size_for(&h))?;
    }
    let f = Apbf::new(p.window, p.error, p.capacity).map_err(|e| match e {
        CreateError::OutOfMemory => NO_MEMORY,
        // The parser's ranges exclude both.
        CreateError::ErrorRate | CreateError::Invalid => BAD_HEADER,
    })?;
    key.set(Box::new(f));
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

// ---- APBF.ADD / APBF.EXISTS ----

/// `CMD key item [item ...]`: the key and at least one item.
fn key_and_items(args: &[RStr]) -> Result<(&RStr, &[RStr]), ReplyError> {
    match args {
        [_, name, items @ ..] if !items.is_empty() => Ok((name, items)),
        _ => Err(ReplyError::WrongArity),
    }
}

/// APBF.ADD key item [item ...]: inserts every item; per item 1 if it was
/// absent before, 0 if already present (it is inserted again either way,
/// which renews it), or the error of a full inserts count.
pub fn add(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let (name, items) = key_and_items(args)?;
    let mut key = ctx.open_key(name, true);
    let f = key.get::<Apbf>().or_missing(KEY_MISSING)?;
    age_to_clock(ctx, c"APBF.TICK", name, f);
    ctx.reply_array(items.len());
    let mut added = 0;
    f.add_batch(items, |outcome| match outcome {
        Ok(present) => {
            added += 1;
            ctx.reply_int(i64::from(!present));
        }
        Err(CountFull) => ctx.reply_error(COUNT_FULL),
    });
    // Refused items are the last ones (a full count stays full): replicate
    // the items added, which a replica, the AOF or a slot migration's
    // target adds without an error reply, and nothing if none was.
    if added == items.len() {
        ctx.propagate();
    } else if added > 0 {
        let done = args.get(..2 + added).unwrap_or_default();
        ctx.propagate_as(&done.iter().collect::<Vec<_>>());
    }
    Ok(())
}

/// APBF.EXISTS key item [item ...]: per item 1 if added within the
/// window; a missing key remembers nothing (all 0).
pub fn exists(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let (name, items) = key_and_items(args)?;
    let key = ctx.open_key(name, false);
    let f = key.get_shared::<Apbf>().optional()?;
    let now = ctx.now_ms();
    ctx.reply_array(items.len());
    match f {
        Some(f) => f.contains_batch(items, now, |present| ctx.reply_int(i64::from(present))),
        None => items.iter().for_each(|_| ctx.reply_int(0)),
    }
    Ok(())
}

// ---- APBF.INFO ----

enum Field {
    Int(u64),
    Double(f64),
    Text(&'static str),
}

/// APBF.INFO key: parameters and state as a map (docs/apbf.md §5.4).
pub fn info(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name] = args else {
        return Err(ReplyError::WrongArity);
    };
    let key = ctx.open_key(name, false);
    let f = key.get_shared::<Apbf>().or_missing(KEY_MISSING)?;
    let h = f.header();
    let time = h.is_time();
    let fields = [
        (
            "Window type",
            Field::Text(if time { "time" } else { "count" }),
        ),
        ("Capacity", Field::Int(h.capacity)),
        ("Timespan", Field::Int(h.span_ms / 1000)),
        ("Error rate", Field::Double(h.error)),
        ("Computed error rate", Field::Double(f.computed_error())),
        ("Hash functions count", Field::Int(h.k)),
        ("Extra slices", Field::Int(h.l)),
        ("Slices count", Field::Int(h.slices())),
        ("Slice bits", Field::Int(h.slice_bits)),
        ("Generation size", Field::Int(h.gen_size)),
        ("Window items", Field::Int(f.window_items())),
        (
            "Period ms",
            Field::Int(if time { h.period_ms() } else { 0 }),
        ),
        ("Items in generation", Field::Int(h.gen_items)),
        ("Inserts count", Field::Int(h.inserts)),
        ("Shifts count", Field::Int(h.shifts)),
        ("Last shift ms", Field::Int(h.last_shift_ms)),
        ("Pending shifts", Field::Int(f.due_shifts(ctx.now_ms()))),
        ("Size", Field::Int(f.size_bytes())),
    ];
    ctx.reply_map(fields.len());
    for (name, value) in fields {
        ctx.reply_simple(name);
        match value {
            Field::Int(v) => ctx.reply_u64(v),
            Field::Double(v) => ctx.reply_double(v),
            Field::Text(t) => ctx.reply_simple(t),
        }
    }
    Ok(())
}

// ---- APBF.SCANDUMP / APBF.LOADCHUNK ----

/// APBF.SCANDUMP key iterator: arity → key → iterator; `[next, data]`,
/// `[0, ""]` past the end.
pub fn scandump(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name, iter] = args else {
        return Err(ReplyError::WrongArity);
    };
    let key = ctx.open_key(name, false);
    let f = key.get_shared::<Apbf>().or_missing(KEY_MISSING)?;
    let iter = parse_scandump_iter(iter.as_ref())?;
    ctx.reply_array(2);
    match f.scandump(iter) {
        Some((next, data)) => {
            ctx.reply_u64(next);
            ctx.reply_bulk(&data);
        }
        None => {
            ctx.reply_int(0);
            ctx.reply_bulk(&[]);
        }
    }
    Ok(())
}

/// APBF.LOADCHUNK key iterator data: arity → iterator → key. Iterator 1
/// (the header) creates the filter, replacing an APBF value there; the
/// others fill an existing one.
pub fn loadchunk(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let (mut key, iter, data) = loadchunk_args(ctx, args, parse_loadchunk_iter)?;
    if iter == 1 {
        if let Lookup::WrongType(_) = key.get::<Apbf>() {
            return Err(ReplyError::WrongType);
        }
        if let Some(h) = Header::decode(data) {
            crate::config::check_key_size(ctx, Apbf::size_for(&h))?;
        }
        key.set(Box::new(Apbf::from_header(data).map_err(chunk_error)?));
    } else {
        key.get::<Apbf>()
            .or_missing(KEY_MISSING)?
            .load_chunk(iter, data)
            .map_err(chunk_error)?;
    }
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

fn chunk_error(e: ChunkError) -> ReplyError {
    match e {
        ChunkError::Header => BAD_HEADER,
        ChunkError::Iterator => BAD_CHUNK_ITER,
        ChunkError::Length => BAD_CHUNK_LEN,
        ChunkError::OutOfMemory => NO_MEMORY,
    }
}

// ---- APBF.TICK ----

/// APBF.TICK key unix-ms: ages a time window to that time; the number of
/// shifts applied (`clock::tick`: at most 60 s past the clock).
pub fn tick(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name, ms] = args else {
        return Err(ReplyError::WrongArity);
    };
    let ms = parse_tick_ms(ms.as_ref(), BAD_TIMESTAMP)?;
    let mut key = ctx.open_key(name, true);
    let f = key.get::<Apbf>().or_missing(KEY_MISSING)?;
    if !f.header().is_time() {
        return Err(NOT_TIME);
    }
    crate::clock::tick(ctx, f, ms, FUTURE)
}
