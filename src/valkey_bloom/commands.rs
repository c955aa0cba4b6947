//! BF.* on valkey-bloom filters (COMPAT-VALKEY-BLOOM §2, docs/valkey-bloom.md):
//! the handlers the Bloom family's commands hand a key of type `bloomfltr`
//! to — or a missing key, or one of another type, under
//! `bf.bloom-flavor valkey-bloom` — and BF.LOAD.

use std::ffi::CStr;

use rsbloom_core::bloom::Chain;
use rsbloom_core::valkey_bloom::args::{
    parse_info_field, parse_insert, parse_reserve, Defaults, InfoField, Insert,
};
use rsbloom_core::valkey_bloom::{validate_scale_to, Create, Object, VbError, FIXED_SEED};

use super::datatype::memory_limit;
use crate::config;
use crate::ffi::{CmdResult, Ctx, Key, KeyKind, Lookup, RStr, ReplyError};

const NOT_FOUND: &str = "ERR not found";
const ITEM_EXISTS: &str = "ERR item exists";
const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
const ADD_EVENT: &CStr = c"bloom.add";
const RESERVE_EVENT: &CStr = c"bloom.reserve";

fn defaults() -> Defaults {
    let c = &config::get().valkey_bloom;
    Defaults {
        capacity: c.capacity,
        fp_rate: c.fp_rate,
        tightening: c.tightening,
        expansion: u32::try_from(c.expansion).unwrap_or(0),
    }
}

/// The memory limit the command is checked against: the tighter of
/// `bf.bloom-memory-usage-limit` and `bf.max-key-memory`, the same mechanism
/// as every family's (none for what the master or the AOF replays).
fn limit(ctx: &Ctx) -> Option<u64> {
    let own = rsbloom_core::limit::tighter(Some(memory_limit()), config::key_limit(ctx));
    config::checked(ctx, own)
}

/// The seed of a new object: the one given, else a random one or the fixed
/// one as `bf.bloom-use-random-seed` says; and whether it counts as random.
fn seed(given: Option<[u8; 32]>) -> ([u8; 32], bool) {
    if let Some(s) = given {
        return (s, s != FIXED_SEED);
    }
    if !config::get().valkey_bloom.random_seed {
        return (FIXED_SEED, false);
    }
    let mut s = [0u8; 32];
    // SAFETY: getrandom writes at most `s.len()` bytes into `s`.
    let n = unsafe { libc::getrandom(s.as_mut_ptr().cast(), s.len(), 0) };
    if usize::try_from(n).ok() != Some(s.len()) {
        // No OS randomness: never a fixed-looking seed flagged as random.
        s = FIXED_SEED.map(|b| b ^ 0x5a);
    }
    (s, true)
}

fn create(
    capacity: i64,
    fp_rate: f64,
    tightening: f64,
    expansion: u32,
    given: Option<[u8; 32]>,
) -> Create {
    let (seed, seed_random) = seed(given);
    Create {
        capacity,
        fp_rate,
        tightening,
        expansion,
        seed,
        seed_random,
    }
}

/// Whether the key holds a Bloom filter of either flavour.
pub fn is_bloom(kind: KeyKind) -> bool {
    kind.is::<Object>() || kind.is::<Chain>()
}

/// A key that holds neither kind of Bloom filter nor nothing.
fn wrong_type(kind: KeyKind) -> bool {
    match kind {
        KeyKind::Empty => false,
        KeyKind::Other => true,
        KeyKind::Module(_) => !kind.is::<Object>(),
    }
}

fn new_object(ctx: &Ctx, c: &Create) -> Result<Box<Object>, ReplyError> {
    Object::new(c, limit(ctx))
        .map(Box::new)
        .map_err(|e| ReplyError::Text(e.message()))
}

/// `BF.INSERT key CAPACITY c ERROR e TIGHTENING t SEED s EXPANSION x|NONSCALING
/// [ITEMS item...]`: how valkey-bloom replicates a creation, so that the
/// replica makes the same object with the same seed (§2.8).
fn replicate_creation(ctx: &Ctx, name: &RStr, obj: &Object, items: &[RStr]) {
    let (capacity, error, tightening, expansion) = (
        obj.first_capacity().to_string(),
        obj.fp_rate().to_string(),
        obj.tightening().to_string(),
        obj.expansion().to_string(),
    );
    let mut args: Vec<&[u8]> = vec![
        b"BF.INSERT",
        name.as_ref(),
        b"CAPACITY",
        capacity.as_bytes(),
        b"ERROR",
        error.as_bytes(),
        b"TIGHTENING",
        tightening.as_bytes(),
        b"SEED",
        obj.seed(),
    ];
    if obj.expansion() == 0 {
        args.push(b"NONSCALING");
    } else {
        args.extend([b"EXPANSION".as_slice(), expansion.as_bytes()]);
    }
    if !items.is_empty() {
        args.push(b"ITEMS");
        args.extend(items.iter().map(AsRef::as_ref));
    }
    ctx.replicate_bytes(&args);
}

/// Whether `args` is the creation [`replicate_creation`] writes: from the
/// master or the AOF it makes a valkey-bloom filter whatever the flavour
/// here, so a replica or a replay after `CONFIG SET bf.bloom-flavor` builds
/// the same key.
pub fn is_replicated_creation(args: &[RStr]) -> bool {
    let word = |i: usize, w: &str| args.get(i).is_some_and(|a| a.as_ref() == w.as_bytes());
    word(2, "CAPACITY") && word(4, "ERROR") && word(6, "TIGHTENING") && word(8, "SEED")
}

// ---- BF.RESERVE ----

/// BF.RESERVE key error_rate capacity [NONSCALING | EXPANSION expansion] (§2.4).
pub fn reserve(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let r = parse_reserve(args, &defaults())?;
    let name = args.get(1).ok_or(ReplyError::WrongArity)?;
    let mut key = ctx.open_key(name, true);
    match key.kind() {
        KeyKind::Empty => {}
        kind if is_bloom(kind) => return Err(ReplyError::Text(ITEM_EXISTS)),
        _ => return Err(ReplyError::WrongType),
    }
    let tightening = config::get().valkey_bloom.tightening;
    let obj = key.set(new_object(
        ctx,
        &create(r.capacity, r.fp_rate, tightening, r.expansion, None),
    )?);
    ctx.reply_ok();
    replicate_creation(ctx, name, obj, &[]);
    ctx.notify_generic(RESERVE_EVENT);
    Ok(())
}

// ---- BF.ADD / BF.MADD / BF.INSERT ----

/// BF.ADD (`single`) and BF.MADD on a valkey-bloom key or a missing one.
pub fn add(ctx: &Ctx, args: &[RStr], key: &mut Key<'_>, single: bool) -> CmdResult {
    let auto = || {
        let d = defaults();
        create(d.capacity, d.fp_rate, d.tightening, d.expansion, None)
    };
    write(ctx, args, key, 2, single, Some(auto))
}

/// BF.INSERT parsed by valkey-bloom's grammar (§2.5), VALIDATESCALETO
/// checked when the command is validated.
pub fn parse_insert_checked(ctx: &Ctx, args: &[RStr]) -> Result<Insert, ReplyError> {
    let opts = parse_insert(args, &defaults())?;
    if let (Some(target), Some(limit)) = (opts.validate_scale_to, limit(ctx)) {
        validate_scale_to(
            opts.capacity,
            opts.fp_rate,
            opts.tightening,
            opts.expansion,
            target,
            limit,
        )
        .map_err(ReplyError::Text)?;
    }
    Ok(opts)
}

/// BF.INSERT on a valkey-bloom key or a missing one.
pub fn insert(ctx: &Ctx, args: &[RStr], opts: &Insert, key: &mut Key<'_>) -> CmdResult {
    let c = (!opts.nocreate).then_some(|| {
        create(
            opts.capacity,
            opts.fp_rate,
            opts.tightening,
            opts.expansion,
            opts.seed,
        )
    });
    write(ctx, args, key, opts.items_at, false, c)
}

/// BF.INSERT parsed by RedisBloom's grammar on a valkey-bloom key: the
/// items go in, the creation options are ignored (as for any existing key).
pub fn insert_existing(ctx: &Ctx, args: &[RStr], items_at: usize, key: &mut Key<'_>) -> CmdResult {
    write(ctx, args, key, items_at, false, None::<fn() -> Create>)
}

/// The shared write path (§2.1, §2.5 steps 5–7, §2.8): open or create,
/// add `args[items_at..]` in order, reply, replicate, notify. `create` runs
/// only for a missing key (a random seed costs a system call).
fn write(
    ctx: &Ctx,
    args: &[RStr],
    key: &mut Key<'_>,
    items_at: usize,
    single: bool,
    create: Option<impl FnOnce() -> Create>,
) -> CmdResult {
    let (Some(name), Some(items)) = (args.get(1), args.get(items_at..)) else {
        return Err(ReplyError::WrongArity);
    };
    let kind = key.kind();
    if wrong_type(kind) {
        return Err(ReplyError::WrongType);
    }
    let created = kind == KeyKind::Empty;
    if created {
        let c = create.ok_or(ReplyError::Text(NOT_FOUND))?();
        key.set(new_object(ctx, &c)?);
    }
    let Lookup::Found(obj) = key.get::<Object>() else {
        return Err(ReplyError::WrongType);
    };
    let (done, added, failure) = add_items(ctx, obj, items, single, limit(ctx));
    let kept = items.get(..done).unwrap_or_default();
    if created {
        replicate_creation(ctx, name, obj, kept);
    } else if added > 0 {
        if failure.is_none() && items_at == 2 {
            ctx.replicate_verbatim();
        } else {
            // As `BF.MADD key <the items that did not fail>`: a replica skips
            // the limits, so it must not add what failed here (valkey-bloom
            // replicates the whole command, §8); and BF.INSERT's options,
            // ignored on an existing key, are read by the replica's own
            // flavour, whose grammar may refuse them.
            let mut madd: Vec<&[u8]> = vec![b"BF.MADD", name.as_ref()];
            madd.extend(kept.iter().map(AsRef::as_ref));
            ctx.replicate_bytes(&madd);
        }
    }
    if added > 0 {
        ctx.notify_generic(ADD_EVENT);
    }
    if created {
        ctx.notify_generic(RESERVE_EVENT);
    }
    match failure {
        Some(text) if single => Err(ReplyError::Text(text)),
        _ => Ok(()),
    }
}

/// Adds items in order, replying 1/0 each (an array unless `single`); the
/// first error ends the command, last in the array. Returns the items
/// processed without error, how many were new, and the error.
fn add_items(
    ctx: &Ctx,
    obj: &mut Object,
    items: &[RStr],
    single: bool,
    limit: Option<u64>,
) -> (usize, usize, Option<&'static str>) {
    let (mut done, mut added, mut failure) = (0, 0, None);
    if !single {
        ctx.reply_array_postponed();
    }
    obj.add_batch(items, limit, |outcome| match outcome {
        Ok(new) => {
            done += 1;
            added += usize::from(new);
            ctx.reply_int(i64::from(new));
            true
        }
        Err(e) => {
            failure = Some(e.message());
            if !single {
                ctx.reply_error(e.message());
            }
            false
        }
    });
    if !single {
        ctx.set_array_len(done + usize::from(failure.is_some()));
    }
    (done, added, failure)
}

// ---- BF.EXISTS / BF.MEXISTS / BF.CARD ----

/// Replies 1/0 per item (an array unless `single`); a missing key holds
/// nothing, a key of another type is WRONGTYPE (§2.2).
pub fn exists(ctx: &Ctx, key: &mut Key<'_>, items: &[RStr], single: bool) -> CmdResult {
    let obj = key.get_shared::<Object>().optional()?;
    if !single {
        ctx.reply_array(items.len());
    }
    match obj {
        Some(obj) => obj.contains_batch(items, |found| ctx.reply_int(i64::from(found))),
        None => items.iter().for_each(|_| ctx.reply_int(0)),
    }
    Ok(())
}

/// BF.CARD (§2.3).
pub fn card(ctx: &Ctx, key: &mut Key<'_>) -> CmdResult {
    let card = key.get_shared::<Object>().optional()?;
    ctx.reply_int(card.map_or(0, Object::card));
    Ok(())
}

// ---- BF.INFO ----

/// BF.INFO on a valkey-bloom filter (§2.6): a flat array in both protocols,
/// or the bare value of one field.
pub fn info(ctx: &Ctx, obj: &Object, field: Option<&RStr>) -> CmdResult {
    let scaling = obj.expansion() != 0;
    let Some(field) = field else {
        let max = if scaling {
            Some(max_scaled(obj)?)
        } else {
            None
        };
        ctx.reply_array(if scaling { 16 } else { 12 });
        for (label, f) in [
            ("Capacity", InfoField::Capacity),
            ("Size", InfoField::Size),
            ("Number of filters", InfoField::Filters),
            ("Number of items inserted", InfoField::Items),
            ("Error rate", InfoField::Error),
            ("Expansion rate", InfoField::Expansion),
        ] {
            ctx.reply_simple(label);
            reply_field(ctx, obj, f)?;
        }
        if let Some(max) = max {
            ctx.reply_simple("Tightening ratio");
            ctx.reply_double(obj.tightening());
            ctx.reply_simple("Max scaled capacity");
            ctx.reply_int(max);
        }
        return Ok(());
    };
    let field = parse_info_field(field.as_ref())?;
    if !scaling && matches!(field, InfoField::Tightening | InfoField::MaxScaledCapacity) {
        return Err(ReplyError::Text("ERR invalid information value"));
    }
    reply_field(ctx, obj, field)
}

fn max_scaled(obj: &Object) -> Result<i64, ReplyError> {
    obj.max_scaled_capacity(memory_limit())
        .map_err(|e| ReplyError::Text(e.message()))
}

fn reply_field(ctx: &Ctx, obj: &Object, field: InfoField) -> CmdResult {
    match field {
        InfoField::Capacity => ctx.reply_int(obj.capacity()),
        InfoField::Size => ctx.reply_int(i64::try_from(obj.size()).unwrap_or(i64::MAX)),
        InfoField::Filters => ctx.reply_int(i64::try_from(obj.num_filters()).unwrap_or(i64::MAX)),
        InfoField::Items => ctx.reply_int(obj.card()),
        InfoField::Error => ctx.reply_double(obj.fp_rate()),
        InfoField::Expansion if obj.expansion() == 0 => ctx.reply_null(),
        InfoField::Expansion => ctx.reply_int(i64::from(obj.expansion())),
        InfoField::Tightening => ctx.reply_double(obj.tightening()),
        InfoField::MaxScaledCapacity => ctx.reply_int(max_scaled(obj)?),
    }
    Ok(())
}

// ---- BF.LOAD ----

/// BF.LOAD key blob (§2.7): what an AOF rewrite writes. Replicated as
/// received, so replicas and the AOF get this very object (valkey-bloom
/// replicates a BF.INSERT that makes another one; §8).
pub fn load(ctx: &Ctx, args: &[RStr]) -> CmdResult {
    let [_, name, blob] = args else {
        return Err(ReplyError::WrongArity);
    };
    let mut key = ctx.open_key(name, true);
    match key.kind() {
        KeyKind::Empty => {}
        kind if is_bloom(kind) => return Err(ReplyError::Text(BUSYKEY)),
        _ => return Err(ReplyError::WrongType),
    }
    let obj = Object::from_load_blob(blob.as_ref(), limit(ctx)).map_err(ReplyError::Text)?;
    key.set(Box::new(obj));
    ctx.reply_ok();
    ctx.replicate_verbatim();
    ctx.notify_generic(RESERVE_EVENT);
    Ok(())
}

/// BF.MERGE's union of valkey-bloom objects, refused (before allocating)
/// when the sources' size is above the memory limit.
pub fn merge(ctx: &Ctx, first: &Object, others: &[&Object]) -> Result<Object, ReplyError> {
    if rsbloom_core::limit::exceeds(limit(ctx), first.size()) {
        return Err(ReplyError::Text(VbError::MemoryLimit.message()));
    }
    Object::merge(first, others).map_err(ReplyError::from)
}
