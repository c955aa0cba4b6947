//! CF.* command handlers (docs/cuckoo.md §12, §14): arity, key lookup, a call
//! into the core, the reply, and replication exactly as docs/module.md §2.1 prescribes.
//! Parsing and every filter algorithm live in `rsbloom-core`.

use rsbloom_core::cuckoo::args::{
    cf_autocreate, parse_cf_insert, parse_cf_reserve, parse_loadchunk_pos, parse_scandump_pos,
    CfReserve,
};
use rsbloom_core::cuckoo::{
    hash_item, CreateError, CuckooFilter, CuckooHash, HeaderError, InsertOutcome,
};
use rsbloom_core::limit::{self, OVER_LIMIT};
use rsbloom_core::prefetch::pipelined;

use crate::config;
use crate::ffi::{arg, loadchunk_args, CmdResult, Ctx, RStr, ReplyError, Value};

const NOT_FOUND: ReplyError = ReplyError::Text("ERR not found");
const ITEM_EXISTS: ReplyError = ReplyError::Text("ERR item exists");

/// Runs `each` on the hash of every item in order (`each` false: stop),
/// the next items' buckets prefetched: both for a check, the first for an
/// insert (CuckooFilter::prefetch).
fn for_each_hashed<F: std::borrow::Borrow<CuckooFilter>>(
    cf: F,
    items: &[RStr],
    check: bool,
    each: impl FnMut(&mut F, CuckooHash) -> bool,
) {
    pipelined(
        cf,
        items,
        |_, item| hash_item(item.as_ref()),
        |cf, h| cf.borrow().prefetch(h, check),
        each,
    );
}

fn exact_arity(args: &[RStr], n: usize) -> CmdResult {
    if args.len() == n {
        Ok(())
    } else {
        Err(ReplyError::WrongArity)
    }
}

// ---------------------------------------------------------------------------
// CF.RESERVE

pub fn reserve(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let params = parse_cf_reserve(args, &config::get())?;
    let mut key = ctx.open_key(arg(args, 1)?, true);
    key.get::<CuckooFilter>().vacant(ITEM_EXISTS)?;
    key.set(Box::new(create(params, config::key_limit(ctx))?));
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

/// A new filter for CF.RESERVE or auto-creation (docs/cuckoo.md §12.1 step 6, §12.3 step 1),
/// unless it would be above `limit` (checked before allocating).
fn create(p: CfReserve, limit: Option<u64>) -> Result<CuckooFilter, ReplyError> {
    if let Some(size) = CuckooFilter::new_size(p.capacity, p.bucket_size) {
        limit::check(limit, size).map_err(ReplyError::Text)?;
    }
    CuckooFilter::new(p.capacity, p.bucket_size, p.max_iterations, p.expansion).map_err(|e| {
        ReplyError::Text(match e {
            CreateError::Invalid => "ERR Could not create filter",
            CreateError::OutOfMemory => "ERR Insufficient memory to create filter",
        })
    })
}

// ---------------------------------------------------------------------------
// CF.ADD / CF.ADDNX / CF.INSERT / CF.INSERTNX (docs/cuckoo.md §12.2, §12.3)

#[derive(Clone, Copy, PartialEq, Eq)]
enum InsertKind {
    Add,
    AddNx,
    Insert,
    InsertNx,
}

impl InsertKind {
    fn unique(self) -> bool {
        matches!(self, InsertKind::AddNx | InsertKind::InsertNx)
    }

    fn multi(self) -> bool {
        matches!(self, InsertKind::Insert | InsertKind::InsertNx)
    }
}

/// The reply element for one item (the table of docs/cuckoo.md §12.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemReply {
    /// RESP2 1/0, RESP3 true/false.
    Bool(bool),
    /// An integer in both protocols (CF.INSERTNX).
    Int(i64),
    /// CF.INSERT on a full filter: RESP2 -1, RESP3 false.
    Failed,
    /// Single-item commands: the error ends the command (not replicated).
    Error(&'static str),
    /// Multi-item commands: an error element, the command goes on.
    Refused(&'static str),
}

fn item_reply(kind: InsertKind, outcome: InsertOutcome) -> ItemReply {
    use InsertKind::*;
    use InsertOutcome::*;
    match (kind, outcome) {
        (InsertNx, Inserted) => ItemReply::Int(1),
        (InsertNx, Exists) => ItemReply::Int(0),
        (InsertNx, NoSpace | AllocFailed) => ItemReply::Int(-1),
        (_, Inserted) => ItemReply::Bool(true),
        (_, Exists) => ItemReply::Bool(false),
        (Insert, NoSpace | AllocFailed) => ItemReply::Failed,
        (Add | AddNx, NoSpace) => ItemReply::Error("Filter is full"),
        (Add | AddNx, AllocFailed) => ItemReply::Error("ERR Insufficient memory"),
        (Add | AddNx, OverLimit) => ItemReply::Error(OVER_LIMIT),
        (Insert | InsertNx, OverLimit) => ItemReply::Refused(OVER_LIMIT),
    }
}

/// Whether an item failed for a reason a replica or an AOF replay would
/// not meet (they obey no limit, and may have the memory): it must not be
/// replicated.
fn not_replayable(outcome: InsertOutcome) -> bool {
    matches!(
        outcome,
        InsertOutcome::AllocFailed | InsertOutcome::OverLimit
    )
}

/// The insert routine shared by the four commands (`args[items_at..]` are
/// the items). `create_params` holds the parameters for a missing key
/// (None = NOCREATE); `max_expansions` is cf-max-expansions at the time of
/// the call.
fn insert_items(
    ctx: &Ctx,
    kind: InsertKind,
    args: &[RStr],
    items_at: usize,
    create_params: Option<impl FnOnce() -> CfReserve>,
    max_expansions: i64,
) -> CmdResult {
    let items = args.get(items_at..).unwrap_or_default();
    let limit = config::key_limit(ctx);
    let mut key = ctx.open_key(arg(args, 1)?, true);
    let value = key.get_or_create(|| {
        let params = create_params.ok_or(NOT_FOUND)?;
        create(params(), limit).map(Box::new)
    })?;
    let Value::Found(cf) = value else {
        return Err(ReplyError::WrongType);
    };
    // Checked once per command, before any item (docs/cuckoo.md §4).
    if i64::from(cf.num_filters()) >= max_expansions {
        return Err(ReplyError::Text("Maximum expansions reached"));
    }
    let resp3 = kind == InsertKind::Insert && ctx.is_resp3();
    if kind.multi() {
        ctx.reply_array(items.len());
    }
    let mut failure = None;
    let mut seen = 0;
    let mut dropped = Vec::new();
    for_each_hashed(cf, items, false, |cf, h| {
        let outcome = cf.insert_within(h, kind.unique(), limit);
        if not_replayable(outcome) {
            dropped.push(seen);
        }
        seen += 1;
        match item_reply(kind, outcome) {
            ItemReply::Bool(b) => ctx.reply_bool(b),
            ItemReply::Int(i) => ctx.reply_int(i),
            ItemReply::Failed if resp3 => ctx.reply_bool(false),
            ItemReply::Failed => ctx.reply_int(-1),
            ItemReply::Refused(text) => ctx.reply_error(text),
            ItemReply::Error(text) => failure = Some(text),
        }
        failure.is_none()
    });
    if let Some(text) = failure {
        return Err(ReplyError::Text(text));
    }
    if dropped.is_empty() {
        ctx.propagate();
    } else {
        propagate_kept(
            ctx,
            args.get(..items_at).unwrap_or_default(),
            items,
            seen,
            &dropped,
        );
    }
    Ok(())
}

/// Replicates the items of an insert (`head` then `items`, the first
/// `seen` of them answered) whose outcome a replica reproduces: the
/// `dropped` ones changed nothing. Cold: they fail only on memory.
#[cold]
#[inline(never)]
fn propagate_kept(ctx: &Ctx, head: &[RStr], items: &[RStr], seen: usize, dropped: &[usize]) {
    // A filter just created always takes its first item, so some remain
    // whenever the creation must be replicated.
    let kept: Vec<&RStr> = (0..seen)
        .filter(|i| !dropped.contains(i))
        .filter_map(|i| items.get(i))
        .collect();
    if !kept.is_empty() {
        ctx.propagate_as(&head.iter().chain(kept).collect::<Vec<_>>());
    }
}

fn add_common(ctx: &Ctx, args: &[RStr], kind: InsertKind) -> CmdResult {
    exact_arity(args, 3)?;
    // The configuration's lock only when a filter is created.
    let autocreate = || cf_autocreate(&config::get());
    insert_items(
        ctx,
        kind,
        args,
        2,
        Some(autocreate),
        config::cf_max_expansions(),
    )
}

fn insert_common(ctx: &Ctx, args: &[RStr], kind: InsertKind) -> CmdResult {
    let (opts, params, max_expansions) = {
        let cfg = config::get();
        let opts = parse_cf_insert(args, &cfg)?;
        (opts, opts.reserve(&cfg), cfg.cf_max_expansions)
    };
    let create_params = (!opts.nocreate).then_some(move || params);
    insert_items(
        ctx,
        kind,
        args,
        opts.items_at,
        create_params,
        max_expansions,
    )
}

pub fn add(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    add_common(ctx, args, InsertKind::Add)
}

pub fn addnx(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    add_common(ctx, args, InsertKind::AddNx)
}

pub fn insert(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    insert_common(ctx, args, InsertKind::Insert)
}

pub fn insertnx(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    insert_common(ctx, args, InsertKind::InsertNx)
}

// ---------------------------------------------------------------------------
// CF.EXISTS / CF.MEXISTS / CF.COUNT (docs/cuckoo.md §12.4): a missing key or one of another
// type answers 0 / false.

pub fn exists(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args, 3)?;
    let h = hash_item(arg(args, 2)?.as_ref());
    let mut key = ctx.open_key(arg(args, 1)?, false);
    let found = key
        .get::<CuckooFilter>()
        .found()
        .is_some_and(|cf| cf.contains(h));
    ctx.reply_bool(found);
    Ok(())
}

pub fn mexists(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    if args.len() < 3 {
        return Err(ReplyError::WrongArity);
    }
    let mut key = ctx.open_key(arg(args, 1)?, false);
    let cf = key.get::<CuckooFilter>().found();
    let items = args.get(2..).unwrap_or_default();
    ctx.reply_array(items.len());
    let Some(cf) = cf.as_deref() else {
        items.iter().for_each(|_| ctx.reply_bool(false));
        return Ok(());
    };
    for_each_hashed(cf, items, true, |cf, h| {
        ctx.reply_bool(cf.contains(h));
        true
    });
    Ok(())
}

pub fn count(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args, 3)?;
    let h = hash_item(arg(args, 2)?.as_ref());
    let mut key = ctx.open_key(arg(args, 1)?, false);
    let n = key
        .get::<CuckooFilter>()
        .found()
        .map_or(0, |cf| cf.count(h));
    ctx.reply_u64(n);
    Ok(())
}

// ---------------------------------------------------------------------------
// CF.DEL / CF.COMPACT (docs/cuckoo.md §12.5, §12.6)

pub fn del(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args, 3)?;
    let mut key = ctx.open_key(arg(args, 1)?, true);
    let cf = key
        .get::<CuckooFilter>()
        .found()
        .ok_or(ReplyError::Text("Not found"))?;
    ctx.propagate();
    let deleted = cf.delete(hash_item(arg(args, 2)?.as_ref()));
    ctx.reply_bool(deleted);
    Ok(())
}

pub fn compact(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args, 2)?;
    let mut key = ctx.open_key(arg(args, 1)?, true);
    let cf = key
        .get::<CuckooFilter>()
        .found()
        .ok_or(ReplyError::Text("Cuckoo filter was not found"))?;
    // Flagged readonly (as in RedisBloom), so it runs while writes are
    // paused, when it may not replicate: compaction only changes the
    // layout, so it is skipped then.
    if !ctx.replication_paused() {
        cf.compact(true);
        ctx.propagate();
    }
    ctx.reply_ok();
    Ok(())
}

// ---------------------------------------------------------------------------
// CF.INFO / CF.DEBUG (docs/cuckoo.md §12.7)

pub fn info(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args, 2)?;
    let mut key = ctx.open_key(arg(args, 1)?, false);
    let cf = key.get::<CuckooFilter>().or_missing(NOT_FOUND)?;
    let fields = [
        ("Size", cf.size_bytes()),
        ("Number of buckets", cf.num_buckets()),
        ("Number of filters", u64::from(cf.num_filters())),
        ("Number of items inserted", cf.num_items()),
        ("Number of items deleted", cf.num_deletes()),
        ("Bucket size", u64::from(cf.bucket_size())),
        ("Expansion rate", u64::from(cf.expansion())),
        ("Max iterations", u64::from(cf.max_iterations())),
    ];
    ctx.reply_map(fields.len());
    for (name, value) in fields {
        ctx.reply_simple(name);
        ctx.reply_u64(value);
    }
    Ok(())
}

pub fn debug(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args, 2)?;
    let mut key = ctx.open_key(arg(args, 1)?, false);
    let cf = key.get::<CuckooFilter>().or_missing(NOT_FOUND)?;
    ctx.reply_bulk(cf.debug_string().as_bytes());
    Ok(())
}

// ---------------------------------------------------------------------------
// CF.SCANDUMP / CF.LOADCHUNK (docs/cuckoo.md §14)

pub fn scandump(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    exact_arity(args, 3)?;
    let pos = parse_scandump_pos(arg(args, 2)?.as_ref())?;
    let mut key = ctx.open_key(arg(args, 1)?, false);
    let cf = key.get::<CuckooFilter>().or_missing(NOT_FOUND)?;
    ctx.reply_array(2);
    let chunk = if cf.num_items() == 0 {
        None
    } else if pos == 0 {
        ctx.reply_int(1);
        ctx.reply_bulk(&cf.encode_header());
        return Ok(());
    } else {
        cf.scandump_chunk(pos)
    };
    match chunk {
        Some((next, data)) => {
            ctx.reply_int(next);
            ctx.reply_bulk(data);
        }
        None => {
            ctx.reply_int(0);
            ctx.reply_null();
        }
    }
    Ok(())
}

pub fn loadchunk(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let (mut key, pos, data) = loadchunk_args(ctx, args, parse_loadchunk_pos)?;
    if pos == 1 {
        key.get::<CuckooFilter>().vacant(ITEM_EXISTS)?;
        let max_bucket_size = u16::try_from(config::get().cf_bucket_size_max()).unwrap_or(255);
        let cf = CuckooFilter::from_header(data, max_bucket_size).map_err(|e| {
            ReplyError::Text(match e {
                HeaderError::InvalidHeader => "Invalid header",
                HeaderError::CannotCreate => "Couldn't create filter!",
            })
        })?;
        // The header's storage is lazily zeroed: refused, it is released
        // before a page of it is touched.
        config::check_key_size(ctx, cf.size_bytes())?;
        key.set(Box::new(cf));
    } else {
        key.get::<CuckooFilter>()
            .or_missing(NOT_FOUND)?
            .load_chunk(pos, data)
            .map_err(|_| ReplyError::Text("Couldn't load chunk!"))?;
    }
    ctx.propagate();
    ctx.reply_ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [InsertKind; 4] = [
        InsertKind::Add,
        InsertKind::AddNx,
        InsertKind::Insert,
        InsertKind::InsertNx,
    ];
    const OUTCOMES: [InsertOutcome; 5] = [
        InsertOutcome::Inserted,
        InsertOutcome::Exists,
        InsertOutcome::NoSpace,
        InsertOutcome::AllocFailed,
        InsertOutcome::OverLimit,
    ];

    /// An error ending the command would leave a multi-item reply array short.
    #[test]
    fn multi_commands_never_end_in_an_error() {
        for kind in KINDS.into_iter().filter(|k| k.multi()) {
            for outcome in OUTCOMES {
                let r = item_reply(kind, outcome);
                assert!(!matches!(r, ItemReply::Error(_)), "{outcome:?}: {r:?}");
            }
        }
    }

    #[test]
    fn reply_table_of_5_11() {
        use InsertKind::*;
        use InsertOutcome::*;
        let table = [
            (Add, Inserted, ItemReply::Bool(true)),
            (AddNx, Inserted, ItemReply::Bool(true)),
            (Insert, Inserted, ItemReply::Bool(true)),
            (InsertNx, Inserted, ItemReply::Int(1)),
            (AddNx, Exists, ItemReply::Bool(false)),
            (InsertNx, Exists, ItemReply::Int(0)),
            (Add, NoSpace, ItemReply::Error("Filter is full")),
            (AddNx, NoSpace, ItemReply::Error("Filter is full")),
            (Insert, NoSpace, ItemReply::Failed),
            (InsertNx, NoSpace, ItemReply::Int(-1)),
            (
                Add,
                AllocFailed,
                ItemReply::Error("ERR Insufficient memory"),
            ),
            (
                AddNx,
                AllocFailed,
                ItemReply::Error("ERR Insufficient memory"),
            ),
            (Insert, AllocFailed, ItemReply::Failed),
            (InsertNx, AllocFailed, ItemReply::Int(-1)),
            (Add, OverLimit, ItemReply::Error(OVER_LIMIT)),
            (Insert, OverLimit, ItemReply::Refused(OVER_LIMIT)),
            (InsertNx, OverLimit, ItemReply::Refused(OVER_LIMIT)),
        ];
        for (kind, outcome, expected) in table {
            assert_eq!(item_reply(kind, outcome), expected, "{outcome:?}");
        }
    }
}
