//! BF.* command handlers (docs/bloom.md §8): arity and parsing (in the core),
//! key lookup, the core operation, the reply, replication (docs/module.md §2.1).

use rsbloom_core::bloom::args::{
    bf_autocreate, parse_bf_insert, parse_bf_reserve, parse_info_field, parse_loadchunk_iter,
    parse_scandump_iter, BfReserve, InfoField,
};
use rsbloom_core::bloom::{AddOutcome, Chain, CreateError};
use rsbloom_core::config::BloomFlavor;
use rsbloom_core::limit::{self, OVER_LIMIT};
use rsbloom_core::valkey_bloom::Object;

use crate::config;
use crate::ffi::context::ModuleValue;
use crate::ffi::{
    arg, loadchunk_args, CmdResult, Ctx, Key, KeyKind, Lookup, RStr, ReplyError, Value,
};
use crate::valkey_bloom;

const NOT_FOUND: &str = "ERR not found";
const ITEM_EXISTS: &str = "ERR item exists";
const COULD_NOT_CREATE: &str = "ERR could not create filter";
const NO_MEMORY: &str = "ERR Insufficient memory to create filter";
const FULL: &str = "ERR non scaling filter is full";
const INSERT_FAILED: &str = "ERR problem inserting into filter";
const BAD_DATA: &str = "ERR received bad data";
const MIXED: &str = "ERR BF.MERGE: sources mix RedisBloom and valkey-bloom filters";

/// A new chain as BF.RESERVE step 6 describes it, unless it would be
/// above `limit` (checked before allocating).
fn create_chain(p: &BfReserve, limit: Option<u64>) -> Result<Box<Chain>, ReplyError> {
    if let Ok(size) = Chain::new_size(p.capacity, p.error_rate, p.nonscaling) {
        limit::check(limit, size).map_err(ReplyError::Text)?;
    }
    Chain::new(p.capacity, p.error_rate, p.expansion, p.nonscaling).map_err(|e| match e {
        CreateError::Invalid => ReplyError::Text(COULD_NOT_CREATE),
        CreateError::OutOfMemory => ReplyError::Text(NO_MEMORY),
    })
}

/// The chain of a key opened for writing; a missing key is created from the
/// parameters `create` yields (called only then, so the configuration is
/// read only when a filter is made), or `ERR not found` when it is `None`.
fn chain_for_write<'k>(
    key: &'k mut Key<'_>,
    create: Option<impl FnOnce() -> BfReserve>,
    limit: Option<u64>,
) -> Result<&'k mut Chain, ReplyError> {
    let value = key.get_or_create(|| {
        let params = create.ok_or(ReplyError::Text(NOT_FOUND))?();
        create_chain(&params, limit)
    })?;
    match value {
        Value::Found(chain) => Ok(chain),
        Value::WrongType => Err(ReplyError::WrongType),
    }
}

/// Which flavour answers on a key: that of the filter it holds; for a
/// missing key or one of another type, `bf.bloom-flavor`'s.
fn flavor_of(kind: KeyKind) -> BloomFlavor {
    if kind.is::<Chain>() {
        BloomFlavor::RedisBloom
    } else if kind.is::<Object>() {
        BloomFlavor::ValkeyBloom
    } else {
        config::flavor()
    }
}

// ---- BF.RESERVE ----

/// BF.RESERVE key error_rate capacity [EXPANSION expansion] [NONSCALING]
pub fn reserve(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    if config::flavor() == BloomFlavor::ValkeyBloom {
        return valkey_bloom::reserve(ctx, args);
    }
    let params = parse_bf_reserve(args, &config::get())?;
    let [_, name, ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut key = ctx.open_key(name, true);
    if valkey_bloom::is_bloom(key.kind()) {
        return Err(ReplyError::Text(ITEM_EXISTS));
    }
    if let Lookup::WrongType(_) = key.get::<Chain>() {
        return Err(ReplyError::WrongType);
    }
    key.set(create_chain(&params, config::key_limit(ctx))?);
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

// ---- BF.ADD / BF.MADD / BF.INSERT ----

/// Adds `items` in order under `limit`, replying one element per processed
/// item; stops after a "full" element (docs/bloom.md §8.2). Returns the
/// number of elements replied and the indices of those that were errors.
fn add_items(
    ctx: &Ctx,
    chain: &mut Chain,
    items: &[RStr],
    limit: Option<u64>,
) -> (usize, Vec<usize>) {
    let mut replied = 0;
    let mut failed = Vec::new();
    chain.add_batch(items, limit, |outcome| {
        replied += 1;
        if !reply_added(ctx, outcome) {
            failed.push(replied - 1);
        }
        outcome != AddOutcome::Full
    });
    (replied, failed)
}

/// Replies the outcome of adding one item; false for an error element.
fn reply_added(ctx: &Ctx, outcome: AddOutcome) -> bool {
    match outcome {
        AddOutcome::Added => ctx.reply_bool(true),
        AddOutcome::Present => ctx.reply_bool(false),
        AddOutcome::Error => ctx.reply_error(INSERT_FAILED),
        AddOutcome::OverLimit => ctx.reply_error(OVER_LIMIT),
        AddOutcome::Full => ctx.reply_error(FULL),
    }
    matches!(outcome, AddOutcome::Added | AddOutcome::Present)
}

/// The shared write path of BF.ADD, BF.MADD and BF.INSERT (`args[items_at..]`
/// are the items): open or create the filter, then [`add_and_reply`].
fn insert(
    ctx: &Ctx,
    key: &mut Key<'_>,
    args: &[RStr],
    items_at: usize,
    single: bool,
    create: Option<impl FnOnce() -> BfReserve>,
) -> CmdResult {
    if items_at > args.len() {
        return Err(ReplyError::WrongArity);
    }
    // Told by the creation itself, so that the key is looked up once.
    let mut created = false;
    let create = create.map(|make| {
        let created = &mut created;
        move || {
            *created = true;
            make()
        }
    });
    let limit = config::key_limit(ctx);
    let chain = chain_for_write(key, create, limit)?;
    add_and_reply(ctx, chain, args, items_at, single, created, limit)
}

/// Adds `args[items_at..]` to `chain` (`created` by this command or not)
/// under `limit`, replies (an array unless `single`) and replicates.
fn add_and_reply(
    ctx: &Ctx,
    chain: &mut Chain,
    args: &[RStr],
    items_at: usize,
    single: bool,
    created: bool,
    limit: Option<u64>,
) -> CmdResult {
    let Some((head, items)) = args.split_at_checked(items_at) else {
        return Err(ReplyError::WrongArity);
    };
    let (replied, failed) = if single {
        add_items(ctx, chain, items, limit)
    } else {
        ctx.reply_array_postponed();
        let done = add_items(ctx, chain, items, limit);
        ctx.set_array_len(done.0);
        done
    };
    if failed.is_empty() {
        ctx.propagate();
    } else {
        propagate_kept(ctx, head, items, replied, &failed, created);
    }
    Ok(())
}

/// Replicates what [`add_and_reply`] added when some of `items` (the
/// first `replied` of which were answered) `failed`. Out of line and cold:
/// an add that fails is rare, and its code would spread the common path
/// over more cache lines.
#[cold]
#[inline(never)]
fn propagate_kept(
    ctx: &Ctx,
    head: &[RStr],
    items: &[RStr],
    replied: usize,
    failed: &[usize],
    created: bool,
) {
    // A replica, the AOF, or the target of an atomic slot migration re-runs
    // what is replicated, and an error reply there is an incident (Valkey 9
    // fails the migration on one): replicate the items that were added or
    // found, which rebuild the same filter, and nothing if none was.
    // (RedisBloom replicates verbatim.) A filter just created never fails on
    // its first item, so `created` keeps the creation replicated regardless.
    let kept: Vec<&RStr> = (0..replied)
        .filter(|i| !failed.contains(i))
        .filter_map(|i| items.get(i))
        .collect();
    if !kept.is_empty() {
        ctx.propagate_as(&head.iter().chain(kept).collect::<Vec<_>>());
    } else if created {
        ctx.propagate();
    }
}

fn autocreate() -> BfReserve {
    bf_autocreate(&config::get())
}

/// BF.ADD and BF.MADD: the item count is the only argument check, the
/// key's flavour decides the rest.
fn add_to_key(ctx: &Ctx, args: &[RStr], single: bool) -> CmdResult {
    let name = arg(args, 1)?;
    let mut key = ctx.open_key(name, true);
    // A key holding a chain, the common case, is answered after this one
    // lookup: its flavour is known, and nothing is created.
    let kind = match key.get::<Chain>() {
        Lookup::Found(chain) => {
            return add_and_reply(ctx, chain, args, 2, single, false, config::key_limit(ctx))
        }
        Lookup::Missing => KeyKind::Empty,
        Lookup::WrongType(kind) => kind,
    };
    add_to_other(ctx, args, &mut key, kind, single)
}

/// [`add_to_key`] on a key holding no chain (`kind`): out of line, so that
/// the path of a chain stays in few cache lines.
#[inline(never)]
fn add_to_other(
    ctx: &Ctx,
    args: &[RStr],
    key: &mut Key<'_>,
    kind: KeyKind,
    single: bool,
) -> CmdResult {
    match flavor_of(kind) {
        BloomFlavor::ValkeyBloom => valkey_bloom::add(ctx, args, key, single),
        BloomFlavor::RedisBloom => insert(ctx, key, args, 2, single, Some(autocreate)),
    }
}

/// BF.ADD key item
pub fn add(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    if args.len() != 3 {
        return Err(ReplyError::WrongArity);
    }
    add_to_key(ctx, args, true)
}

/// BF.MADD key item [item ...]
pub fn madd(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    if args.len() < 3 {
        return Err(ReplyError::WrongArity);
    }
    add_to_key(ctx, args, false)
}

/// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item...
/// (valkey-bloom's grammar under its flavour); the items go into an
/// existing filter of either flavour, which answers them.
pub fn insert_cmd(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let replayed_creation = ctx.must_obey() && valkey_bloom::is_replicated_creation(args);
    if replayed_creation || config::flavor() == BloomFlavor::ValkeyBloom {
        let opts = valkey_bloom::parse_insert_checked(ctx, args)?;
        let name = arg(args, 1)?;
        let mut key = ctx.open_key(name, true);
        if key.kind().is::<Chain>() {
            return insert(
                ctx,
                &mut key,
                args,
                opts.items_at,
                false,
                None::<fn() -> BfReserve>,
            );
        }
        return valkey_bloom::insert(ctx, args, &opts, &mut key);
    }
    let opts = parse_bf_insert(args, &config::get())?;
    let items_at = opts.items_at;
    let name = arg(args, 1)?;
    let mut key = ctx.open_key(name, true);
    if key.kind().is::<Object>() {
        return valkey_bloom::insert_existing(ctx, args, items_at, &mut key);
    }
    let create = (!opts.nocreate).then_some(move || opts.reserve());
    insert(ctx, &mut key, args, items_at, false, create)
}

// ---- BF.EXISTS / BF.MEXISTS ----

/// Replies one answer per item (an array unless `single`). RedisBloom's
/// flavour: a missing key or a key of another type holds nothing
/// (docs/module.md §4: 0, not WRONGTYPE).
fn check_items(ctx: &Ctx, name: &RStr, items: &[RStr], single: bool) -> CmdResult {
    let mut key = ctx.open_key(name, false);
    // A key holding a chain, the common case, is answered after this one
    // lookup: its flavour is known.
    let kind = match key.get::<Chain>() {
        Lookup::Found(chain) => {
            if !single {
                ctx.reply_array(items.len());
            }
            chain.contains_batch(items, |found| ctx.reply_bool(found));
            return Ok(());
        }
        Lookup::Missing => KeyKind::Empty,
        Lookup::WrongType(kind) => kind,
    };
    check_other(ctx, &mut key, kind, items, single)
}

/// [`check_items`] on a key holding no chain (`kind`): out of line, as
/// [`add_to_other`].
#[inline(never)]
fn check_other(
    ctx: &Ctx,
    key: &mut Key<'_>,
    kind: KeyKind,
    items: &[RStr],
    single: bool,
) -> CmdResult {
    if flavor_of(kind) == BloomFlavor::ValkeyBloom {
        return valkey_bloom::exists(ctx, key, items, single);
    }
    if !single {
        ctx.reply_array(items.len());
    }
    items.iter().for_each(|_| ctx.reply_bool(false));
    Ok(())
}

/// BF.EXISTS key item
pub fn exists(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name, item] = args else {
        return Err(ReplyError::WrongArity);
    };
    check_items(ctx, name, std::slice::from_ref(item), true)
}

/// BF.MEXISTS key item [item ...]
pub fn mexists(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name, items @ ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    if items.is_empty() {
        return Err(ReplyError::WrongArity);
    }
    check_items(ctx, name, items, false)
}

// ---- BF.INFO / BF.CARD / BF.DEBUG ----

/// The label of a BF.INFO field.
fn info_label(field: InfoField) -> &'static str {
    match field {
        InfoField::Capacity => "Capacity",
        InfoField::Size => "Size",
        InfoField::Filters => "Number of filters",
        InfoField::Items => "Number of items inserted",
        InfoField::Expansion => "Expansion rate",
    }
}

fn reply_info_value(ctx: &Ctx, chain: &Chain, field: InfoField) {
    match field {
        InfoField::Capacity => ctx.reply_u64(chain.capacity()),
        InfoField::Size => ctx.reply_u64(chain.size_bytes()),
        InfoField::Filters => ctx.reply_u64(chain.num_links() as u64),
        InfoField::Items => ctx.reply_u64(chain.items()),
        InfoField::Expansion => match chain.expansion() {
            Some(growth) => ctx.reply_int(i64::from(growth)),
            None => ctx.reply_null(),
        },
    }
}

/// BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]
pub fn info(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let (name, field) = match args {
        [_, name] => (name, None),
        [_, name, field] => (name, Some(field)),
        _ => return Err(ReplyError::WrongArity),
    };
    let mut key = ctx.open_key(name, false);
    if let Lookup::Found(obj) = key.get_shared::<Object>() {
        return valkey_bloom::info_reply(ctx, obj, field);
    }
    let chain = key.get::<Chain>().or_missing(ReplyError::Text(NOT_FOUND))?;
    let Some(field) = field else {
        const ALL: [InfoField; 5] = [
            InfoField::Capacity,
            InfoField::Size,
            InfoField::Filters,
            InfoField::Items,
            InfoField::Expansion,
        ];
        ctx.reply_map(ALL.len());
        for f in ALL {
            ctx.reply_simple(info_label(f));
            reply_info_value(ctx, chain, f);
        }
        return Ok(());
    };
    let field = parse_info_field(field.as_ref())?;
    // RESP3: a map of one pair; RESP2: an array of just the value.
    if ctx.is_resp3() {
        ctx.reply_map(1);
        ctx.reply_simple(info_label(field));
    } else {
        ctx.reply_array(1);
    }
    reply_info_value(ctx, chain, field);
    Ok(())
}

/// BF.CARD key
pub fn card(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut key = ctx.open_key(name, false);
    if flavor_of(key.kind()) == BloomFlavor::ValkeyBloom {
        return valkey_bloom::card(ctx, &mut key);
    }
    let items = key
        .get::<Chain>()
        .optional()?
        .map_or(0, |chain| chain.items());
    ctx.reply_u64(items);
    Ok(())
}

/// BF.DEBUG key
pub fn debug(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut key = ctx.open_key(name, false);
    let lines = key
        .get::<Chain>()
        .or_missing(ReplyError::Text(NOT_FOUND))?
        .debug_lines();
    ctx.reply_array(lines.len());
    for line in &lines {
        ctx.reply_bulk(line.as_bytes());
    }
    Ok(())
}

// ---- BF.SCANDUMP / BF.LOADCHUNK ----

/// BF.SCANDUMP key iterator (docs/bloom.md §10): arity → key → iterator.
pub fn scandump(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name, iter] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut key = ctx.open_key(name, false);
    let chain = key.get::<Chain>().or_missing(ReplyError::Text(NOT_FOUND))?;
    let iter = parse_scandump_iter(iter.as_ref())?;
    ctx.reply_array(2);
    if iter == 0 {
        ctx.reply_int(1);
        ctx.reply_bulk(&chain.encode_header());
    } else {
        let (next, chunk) = chain.scandump_chunk(iter).unwrap_or((0, &[]));
        ctx.reply_int(next);
        ctx.reply_bulk(chunk);
    }
    Ok(())
}

/// BF.LOADCHUNK key iterator data (docs/bloom.md §10): arity → iterator → key.
pub fn loadchunk(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let (mut key, iter, data) = loadchunk_args(ctx, args, parse_loadchunk_iter)?;
    match key.get::<Chain>() {
        Lookup::Missing if iter == 1 => {
            let chain = Chain::from_header(data).map_err(|_| ReplyError::Text(BAD_DATA))?;
            // The header's storage is lazily zeroed: refused, it is
            // released before a page of it is touched.
            config::check_key_size(ctx, chain.size_bytes())?;
            key.set(chain);
        }
        Lookup::Missing => return Err(ReplyError::Text(NOT_FOUND)),
        Lookup::WrongType(_) => return Err(ReplyError::WrongType),
        Lookup::Found(chain) => chain
            .load_chunk(iter, data)
            .map_err(|e| ReplyError::Text(e.message()))?,
    }
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}

// ---- BF.MERGE ----

/// BF.MERGE destkey srckey [srckey ...] (docs/bloom.md §12): the union of
/// filters of one shape, in the first source's flavour, stored at destkey.
pub fn merge(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, dest, sources @ ..] = args else {
        return Err(ReplyError::WrongArity);
    };
    let Some(first) = sources.first() else {
        return Err(ReplyError::WrongArity);
    };
    if ctx.open_key(first, false).kind().is::<Object>() {
        merge_into(ctx, dest, sources, |ctx, first, others| {
            valkey_bloom::merge(ctx, first, others).map(Box::new)
        })
    } else {
        merge_into(ctx, dest, sources, |ctx, first: &Chain, others| {
            // The union has the sources' shape, so the first one's size.
            config::check_key_size(ctx, first.size_bytes())?;
            Chain::merge(first, others).map_err(ReplyError::from)
        })
    }
}

/// BF.MERGE over sources of type `T`: each must exist (`ERR not found`) and
/// be a `T` (WRONGTYPE, or [`MIXED`] for the other flavour); destkey must
/// be empty or hold a Bloom filter of either flavour, which the union —
/// `union(ctx, first, others)`, checked against the limits — replaces.
fn merge_into<T: ModuleValue + ?Sized>(
    ctx: &Ctx,
    dest: &RStr,
    sources: &[RStr],
    union: impl FnOnce(&Ctx, &T, &[&T]) -> Result<Box<T>, ReplyError>,
) -> CmdResult {
    let keys: Vec<Key<'_>> = sources.iter().map(|s| ctx.open_key(s, false)).collect();
    let mut values = Vec::with_capacity(keys.len());
    for key in &keys {
        match key.get_shared::<T>() {
            Lookup::Found(v) => values.push(v),
            Lookup::Missing => return Err(ReplyError::Text(NOT_FOUND)),
            Lookup::WrongType(kind) if valkey_bloom::is_bloom(kind) => {
                return Err(ReplyError::Text(MIXED))
            }
            Lookup::WrongType(_) => return Err(ReplyError::WrongType),
        }
    }
    let mut dest_key = ctx.open_key(dest, true);
    let kind = dest_key.kind();
    if kind != KeyKind::Empty && !valkey_bloom::is_bloom(kind) {
        return Err(ReplyError::WrongType);
    }
    let Some((first, others)) = values.split_first() else {
        return Err(ReplyError::WrongArity);
    };
    let merged = union(ctx, first, others)?;
    // The sources may include destkey, whose value `set` frees.
    drop(values);
    drop(keys);
    dest_key.set(merged);
    ctx.reply_ok();
    ctx.propagate();
    Ok(())
}
