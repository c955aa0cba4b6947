//! Safe wrapper over the command context: arguments, replies, keys,
//! replication, logging.

use std::ffi::{c_int, c_long, c_void, CStr, CString};
use std::marker::PhantomData;

use redis_module::raw::{self, RedisModuleCtx, RedisModuleKey, RedisModuleType};
use rsbloom_core::reshape::{reshaped, reshapes};

use super::barrier::guarded;
use super::log::c_text;
pub use super::log::log;
use super::stats::{Footprint, TypeStats};

/// What a command handler returns: `Ok` once it has replied, or the
/// error the trampoline replies with.
pub type CmdResult = Result<(), ReplyError>;

/// `argv[i]`, or a wrong-arity error (arity is checked before any use, so
/// this only guards against a mistake in that check).
pub fn arg(args: &[RStr], i: usize) -> Result<&RStr, ReplyError> {
    args.get(i).ok_or(ReplyError::WrongArity)
}

/// Every LOADCHUNK's prologue (`CMD key iterator data`): arity, then the
/// iterator (`parse`), then the key, opened for writing.
pub fn loadchunk_args<'c, 'a, I, E>(
    ctx: &'c Ctx,
    args: &'a [RStr],
    parse: impl FnOnce(&[u8]) -> Result<I, E>,
) -> Result<(Key<'c>, I, &'a [u8]), ReplyError>
where
    ReplyError: From<E>,
{
    let [_, name, iter, data] = args else {
        return Err(ReplyError::WrongArity);
    };
    let iter = parse(iter.as_ref())?;
    Ok((ctx.open_key(name, true), iter, data.as_ref()))
}

/// Why a command failed; the trampoline turns it into the error reply.
#[derive(Debug)]
pub enum ReplyError {
    /// `ERR wrong number of arguments for '<name>' command`.
    WrongArity,
    /// `WRONGTYPE Operation against a key holding the wrong kind of value`.
    WrongType,
    /// An exact error text (with or without the `ERR` prefix, as the spec says).
    Text(&'static str),
    /// An error text made for this reply (BF.MERGE names what differs).
    Owned(String),
}

impl From<rsbloom_core::args::ArgError> for ReplyError {
    fn from(e: rsbloom_core::args::ArgError) -> Self {
        match e {
            rsbloom_core::args::ArgError::WrongArity => ReplyError::WrongArity,
            rsbloom_core::args::ArgError::Reply(text) => ReplyError::Text(text),
        }
    }
}

impl From<rsbloom_core::bitunion::MergeError> for ReplyError {
    fn from(e: rsbloom_core::bitunion::MergeError) -> Self {
        ReplyError::Owned(e.message().into_owned())
    }
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// A command argument: a borrowed server string, read without copying.
#[repr(transparent)]
pub struct RStr(*mut raw::RedisModuleString);

impl RStr {
    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.0
    }

    /// Wraps a server string owned by the caller for the duration of a callback.
    pub fn from_ptr(ptr: *mut raw::RedisModuleString) -> Self {
        RStr(ptr)
    }
}

impl AsRef<[u8]> for RStr {
    fn as_ref(&self) -> &[u8] {
        let mut len = 0usize;
        let ptr = rm!(RedisModule_StringPtrLen(self.0, &mut len));
        if ptr.is_null() {
            return &[];
        }
        // SAFETY: the server guarantees `len` readable bytes at `ptr` for as
        // long as the argument lives, which outlives the handler call.
        unsafe { std::slice::from_raw_parts(ptr.cast(), len) }
    }
}

pub struct Ctx {
    ptr: *mut RedisModuleCtx,
    /// Lower-case command name: the keyspace event name of its writes.
    command: &'static CStr,
    key: *mut raw::RedisModuleString,
}

impl Ctx {
    pub fn for_command(
        ptr: *mut RedisModuleCtx,
        command: &'static CStr,
        key: Option<&RStr>,
    ) -> Self {
        Ctx {
            ptr,
            command,
            key: key.map_or(std::ptr::null_mut(), RStr::as_ptr),
        }
    }

    /// A context the server handed to an event callback (no command).
    pub fn for_event(ptr: *mut RedisModuleCtx) -> Self {
        Ctx {
            ptr,
            command: c"",
            key: std::ptr::null_mut(),
        }
    }

    // ---- replies ----

    pub fn reply_failure(&self, e: &ReplyError, command: &str) {
        match e {
            ReplyError::WrongArity => self.reply_error(&format!(
                "ERR wrong number of arguments for '{command}' command"
            )),
            ReplyError::WrongType => self.reply_error(WRONGTYPE),
            ReplyError::Text(t) => self.reply_error(t),
            ReplyError::Owned(t) => self.reply_error(t),
        }
    }

    /// Out of line and cold: a command's hot path replies no error, and
    /// the text's copy (a `CString`) would otherwise be inlined into it.
    #[cold]
    #[inline(never)]
    pub fn reply_error(&self, text: &str) {
        let c = c_text(text);
        rm!(RedisModule_ReplyWithError(self.ptr, c.as_ptr()));
    }

    pub fn reply_simple(&self, text: &str) {
        let c = c_text(text);
        rm!(RedisModule_ReplyWithSimpleString(self.ptr, c.as_ptr()));
    }

    pub fn reply_ok(&self) {
        rm!(RedisModule_ReplyWithSimpleString(self.ptr, c"OK".as_ptr()));
    }

    pub fn reply_int(&self, v: i64) {
        rm!(RedisModule_ReplyWithLongLong(self.ptr, v));
    }

    /// An unsigned counter as RedisBloom sends it: cast to `long long`, so
    /// values above `i64::MAX` (e.g. a count decremented past 0) wrap.
    pub fn reply_u64(&self, v: u64) {
        self.reply_int(v as i64);
    }

    /// RESP3 boolean; the server sends integer 1/0 to RESP2 clients.
    pub fn reply_bool(&self, v: bool) {
        rm!(RedisModule_ReplyWithBool(self.ptr, c_int::from(v)));
    }

    /// RESP2 null bulk / RESP3 null.
    pub fn reply_null(&self) {
        rm!(RedisModule_ReplyWithNull(self.ptr));
    }

    pub fn reply_bulk(&self, data: &[u8]) {
        rm!(RedisModule_ReplyWithStringBuffer(
            self.ptr,
            data.as_ptr().cast(),
            data.len()
        ));
    }

    /// The server's double reply: RESP3 double, RESP2 bulk string in the
    /// server's own formatting (which differs between versions).
    pub fn reply_double(&self, v: f64) {
        rm!(RedisModule_ReplyWithDouble(self.ptr, v));
    }

    pub fn reply_array(&self, len: usize) {
        rm!(RedisModule_ReplyWithArray(self.ptr, len as c_long));
    }

    /// Opens an array whose length is set later with [`Ctx::set_array_len`]
    /// (for replies that stop early, like BF.MADD on a full filter).
    pub fn reply_array_postponed(&self) {
        rm!(RedisModule_ReplyWithArray(
            self.ptr,
            raw::REDISMODULE_POSTPONED_LEN as c_long
        ));
    }

    pub fn set_array_len(&self, len: usize) {
        rm!(RedisModule_ReplySetArrayLength(self.ptr, len as c_long));
    }

    /// RESP3 map of `pairs` pairs; a flat array of twice that length in RESP2.
    pub fn reply_map(&self, pairs: usize) {
        rm!(RedisModule_ReplyWithMap(self.ptr, pairs as c_long));
    }

    /// Whether the client speaks RESP3, for replies whose shape or type
    /// differs by protocol beyond what the server maps itself (BF.INFO's
    /// single field, CF.INSERT's -1/false).
    pub fn is_resp3(&self) -> bool {
        let flags = rm!(RedisModule_GetContextFlags(self.ptr));
        flags & raw::REDISMODULE_CTX_FLAGS_RESP3 as c_int != 0
    }

    // ---- replication, logging ----

    /// Records that the command wrote its key: replicates it verbatim (and
    /// so to the AOF) and fires the keyspace event named after the command
    /// (class `d`, module events; off unless notify-keyspace-events has it).
    pub fn propagate(&self) {
        rm!(RedisModule_ReplicateVerbatim(self.ptr));
        self.notify();
    }

    /// Like [`propagate`](Self::propagate), but replicates `args` (command
    /// name first) instead of the command as received.
    pub fn propagate_as(&self, args: &[&RStr]) {
        self.replicate_as(args);
        self.notify();
    }

    /// Replicates `args` (command name first) instead of the command as
    /// received; no keyspace event.
    pub fn replicate_as(&self, args: &[&RStr]) {
        let Some((name, rest)) = args.split_first() else {
            return;
        };
        let argv: Vec<*mut raw::RedisModuleString> = rest.iter().map(|a| a.as_ptr()).collect();
        self.replicate_command(name.as_ref(), &argv);
    }

    /// Replicates the command as received; no keyspace event.
    pub fn replicate_verbatim(&self) {
        rm!(RedisModule_ReplicateVerbatim(self.ptr));
    }

    /// Replicates a command made of byte strings (name first); no keyspace event.
    pub fn replicate_bytes(&self, args: &[&[u8]]) {
        let Some((name, rest)) = args.split_first() else {
            return;
        };
        let owned: Vec<OwnedString> = rest.iter().map(|a| self.string(a)).collect();
        let argv: Vec<*mut raw::RedisModuleString> =
            owned.iter().map(OwnedString::as_ptr).collect();
        self.replicate_command(name, &argv);
    }

    fn replicate_command(&self, name: &[u8], argv: &[*mut raw::RedisModuleString]) {
        // A command name the server looked up: no NUL inside.
        let name = CString::new(name).unwrap_or_default();
        rm!(RedisModule_Replicate(
            self.ptr,
            name.as_ptr(),
            c"v".as_ptr(),
            argv.as_ptr(),
            argv.len()
        ));
    }

    /// Fires keyspace event `event` of class generic (`g`) on the command's key.
    pub fn notify_generic(&self, event: &CStr) {
        if !self.key.is_null() {
            rm!(RedisModule_NotifyKeyspaceEvent(
                self.ptr,
                raw::REDISMODULE_NOTIFY_GENERIC,
                event.as_ptr(),
                self.key
            ));
        }
    }

    /// Whether the command must be obeyed whatever it asks: it comes from
    /// the master or from the AOF being loaded (limits are not checked then).
    pub fn must_obey(&self) -> bool {
        let flags = rm!(RedisModule_GetContextFlags(self.ptr)) as u32;
        flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) != 0
    }

    fn notify(&self) {
        if !self.key.is_null() {
            rm!(RedisModule_NotifyKeyspaceEvent(
                self.ptr,
                raw::REDISMODULE_NOTIFY_MODULE,
                self.command.as_ptr(),
                self.key
            ));
        }
    }

    /// Replicates `cmd key args...` (replicas and AOF) after this command,
    /// for effects that are not the command itself; no keyspace event.
    pub fn replicate(&self, cmd: &CStr, key: &RStr, args: &[*mut raw::RedisModuleString]) {
        replicate(self.ptr, cmd, key.as_ptr(), args);
    }

    /// A replica answering one of its own clients — not its master's
    /// stream, not an AOF being loaded: what it holds must not change.
    pub fn is_replica_serving_client(&self) -> bool {
        let flags = rm!(RedisModule_GetContextFlags(self.ptr)) as u32;
        flags & raw::REDISMODULE_CTX_FLAGS_SLAVE != 0
            && flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING)
                == 0
    }

    /// Whether this command decides time itself: on a master, from a
    /// client (not replicated from a master, not an AOF or RDB being
    /// loaded). Time windows shift by the clock only then.
    pub fn owns_clock(&self) -> bool {
        let flags = rm!(RedisModule_GetContextFlags(self.ptr)) as u32;
        flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0
            && flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING)
                == 0
    }

    /// The server's wall clock, Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(rm!(RedisModule_Milliseconds())).unwrap_or(0)
    }

    /// Whether the server is a master (not a replica).
    pub fn is_master(&self) -> bool {
        let flags = rm!(RedisModule_GetContextFlags(self.ptr)) as u32;
        flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0
    }

    /// The database keys are opened in.
    pub fn selected_db(&self) -> c_int {
        rm!(RedisModule_GetSelectedDb(self.ptr))
    }

    /// Selects database `db`; false when there is no such database.
    pub fn select_db(&self, db: c_int) -> bool {
        rm!(RedisModule_SelectDb(self.ptr, db)) == raw::REDISMODULE_OK as c_int
    }

    /// Calls `f` with every value of type `T` in the selected database
    /// (values may be changed in place; no key may be added or removed).
    pub fn for_each_value<T: ModuleValue + ?Sized>(&self, mut f: impl FnMut(&RStr, &mut T)) {
        let cursor = rm!(RedisModule_ScanCursorCreate());
        if cursor.is_null() {
            return;
        }
        let mut visit: &mut dyn FnMut(&RStr, &mut T) = &mut f;
        let data: *mut c_void = std::ptr::from_mut(&mut visit).cast();
        while rm!(RedisModule_Scan(self.ptr, cursor, Some(scanned::<T>), data)) != 0 {}
        rm!(RedisModule_ScanCursorDestroy(cursor));
    }

    /// A server string owned by the caller (freed on drop).
    pub fn string(&self, bytes: &[u8]) -> OwnedString {
        OwnedString::new(self.ptr, bytes)
    }

    /// Whether the server pauses replication traffic (CLIENT PAUSE WRITE, a
    /// failover, the hand-over of an atomic slot migration) for a command
    /// that did not come from the master: propagating a write then aborts
    /// the server (an assertion in its propagation). Only commands flagged
    /// readonly run then, and CF.COMPACT is one that writes.
    pub fn replication_paused(&self) -> bool {
        let flags = rm!(RedisModule_GetContextFlags(self.ptr));
        let replicated = flags & raw::REDISMODULE_CTX_FLAGS_REPLICATED as c_int != 0;
        !replicated && rm!(RedisModule_AvoidReplicaTraffic()) != 0
    }

    pub fn log_warning(&self, msg: &str) {
        log(self.ptr, "warning", msg);
    }

    // ---- keys ----

    pub fn open_key(&self, name: &RStr, write: bool) -> Key<'_> {
        let mode = if write {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        let ptr = rm!(RedisModule_OpenKey(self.ptr, name.as_ptr(), mode as c_int));
        Key {
            ptr: ptr.cast(),
            write,
            tracked: None,
            _ctx: PhantomData,
        }
    }
}

/// `RM_Replicate(ctx, cmd, "sv", key, args)`: one command after the
/// running one (wrapped in MULTI/EXEC by the server when there are several).
pub fn replicate(
    ctx: *mut RedisModuleCtx,
    cmd: &CStr,
    key: *mut raw::RedisModuleString,
    args: &[*mut raw::RedisModuleString],
) {
    rm!(RedisModule_Replicate(
        ctx,
        cmd.as_ptr(),
        c"sv".as_ptr(),
        key,
        args.as_ptr(),
        args.len()
    ));
}

/// `RedisModule_Scan` callback: hands values of type `T` to the visitor.
unsafe extern "C" fn scanned<T: ModuleValue + ?Sized>(
    _ctx: *mut RedisModuleCtx,
    keyname: *mut raw::RedisModuleString,
    key: *mut RedisModuleKey,
    data: *mut c_void,
) {
    guarded("scan", (), || {
        if key.is_null()
            || rm!(RedisModule_KeyType(key)) != raw::REDISMODULE_KEYTYPE_MODULE as c_int
            || rm!(RedisModule_ModuleTypeGetType(key)) != T::handle()
        {
            return;
        }
        let value = rm!(RedisModule_ModuleTypeGetValue(key));
        // SAFETY: a value of T::handle() is a Box<T> of ours; `data` is the
        // visitor `for_each_value` passed, alive for the whole scan.
        let (value, visit) = unsafe {
            (
                (!value.is_null()).then(|| &mut *T::at(value)),
                &mut *data.cast::<&mut dyn FnMut(&RStr, &mut T)>(),
            )
        };
        if let Some(v) = value {
            visit(&RStr::from_ptr(keyname), v);
        }
    })
}

/// A string created for the server's API, freed when dropped.
pub struct OwnedString {
    ctx: *mut RedisModuleCtx,
    ptr: *mut raw::RedisModuleString,
}

impl OwnedString {
    pub fn new(ctx: *mut RedisModuleCtx, bytes: &[u8]) -> Self {
        let ptr = rm!(RedisModule_CreateString(
            ctx,
            bytes.as_ptr().cast(),
            bytes.len()
        ));
        OwnedString { ctx, ptr }
    }

    pub fn as_ptr(&self) -> *mut raw::RedisModuleString {
        self.ptr
    }
}

impl Drop for OwnedString {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            rm!(RedisModule_FreeString(self.ctx, self.ptr));
        }
    }
}

/// A value type the module registers; `handle()` is the registered type.
pub trait ModuleValue {
    /// The value at `value` (see `DataType::at`).
    ///
    /// # Safety
    /// `value` must come from `Box::into_raw` of a live `Box<Self>`.
    unsafe fn at(value: *mut c_void) -> *mut Self;
    fn handle() -> *mut RedisModuleType;
    fn stats() -> &'static TypeStats;
    /// What the value counts for in its type's INFO totals.
    fn footprint(&self) -> Footprint;
    /// The footprint never changes after creation (see `DataType`).
    const FIXED_FOOTPRINT: bool;
    /// A cheap stamp the footprint follows (see `DataType`).
    fn shape(&self) -> Option<u64>;
    /// The footprint the value had at `shape` (see `DataType`).
    fn footprint_at(&self, shape: u64) -> Footprint;
}

/// Size of a value found in a key opened for writing, to account its growth
/// when the key closes.
struct Tracked {
    value: *mut c_void,
    before: Measure,
    /// `reshapes()` when the value was found.
    reshapes: u64,
    /// [`settle`] for the value's type.
    settle: fn(&Tracked, *mut RedisModuleKey),
}

/// What a write's accounting starts from: the value's shape when its type
/// has one (nothing else is read unless some value changed shape since),
/// else its footprint.
#[derive(Clone, Copy)]
enum Measure {
    Shape(u64),
    Footprint(Footprint),
}

impl Tracked {
    /// # Safety
    /// `value` must be the live value of an open key, of type `T::handle()`.
    unsafe fn new<T: ModuleValue + ?Sized>(value: *mut T) -> Self {
        // SAFETY: per the contract.
        let v = unsafe { &*value };
        Tracked {
            value: value.cast(),
            before: match v.shape() {
                Some(shape) => Measure::Shape(shape),
                None => Measure::Footprint(v.footprint()),
            },
            reshapes: reshapes(),
            settle: settle::<T>,
        }
    }

    /// Whether the value's size may have changed: its type has no shape,
    /// or some value changed shape (or was replaced) since it was found.
    fn moved(&self) -> bool {
        matches!(self.before, Measure::Footprint(_)) || reshapes() != self.reshapes
    }
}

/// Accounts the change in size of the value `t` tracks, written through
/// `key`, if the key still holds it (GetValue is null for an emptied key).
fn settle<T: ModuleValue + ?Sized>(t: &Tracked, key: *mut RedisModuleKey) {
    if rm!(RedisModule_ModuleTypeGetValue(key)) != t.value {
        return;
    }
    // SAFETY: the key still holds the value, of type T::handle().
    let v = unsafe { &*T::at(t.value) };
    let before = match t.before {
        Measure::Shape(shape) if v.shape() == Some(shape) => return,
        Measure::Shape(shape) => v.footprint_at(shape),
        Measure::Footprint(f) => f,
    };
    T::stats().resized(before, v.footprint());
}

/// Result of looking a key up as a given module type: `R` is `&mut T`
/// ([`Key::get`]) or `&T` ([`Key::get_shared`]). A key of another type
/// says which, from the same type query: a family with a second type (a
/// window, another flavour) tries its usual type first and the other
/// only then, without asking the server again.
pub enum Lookup<R> {
    Missing,
    WrongType(KeyKind),
    Found(R),
}

impl<R> Lookup<R> {
    /// The value, or the error to reply: `missing` for an empty key, the
    /// WRONGTYPE error for another type.
    pub fn or_missing(self, missing: ReplyError) -> Result<R, ReplyError> {
        match self {
            Lookup::Found(v) => Ok(v),
            Lookup::Missing => Err(missing),
            Lookup::WrongType(_) => Err(ReplyError::WrongType),
        }
    }

    /// The value, if the key holds one of this type (for readers that
    /// treat an empty key and another type alike).
    pub fn found(self) -> Option<R> {
        match self {
            Lookup::Found(v) => Some(v),
            Lookup::Missing | Lookup::WrongType(_) => None,
        }
    }

    /// The value if any; WRONGTYPE for another type.
    pub fn optional(self) -> Result<Option<R>, ReplyError> {
        match self {
            Lookup::Found(v) => Ok(Some(v)),
            Lookup::Missing => Ok(None),
            Lookup::WrongType(_) => Err(ReplyError::WrongType),
        }
    }

    pub fn is_missing(&self) -> bool {
        matches!(self, Lookup::Missing)
    }

    /// Ok for an empty key (a creation may go ahead), `exists` when it
    /// holds a value of this type, WRONGTYPE for another type.
    pub fn vacant(self, exists: ReplyError) -> Result<(), ReplyError> {
        match self {
            Lookup::Missing => Ok(()),
            Lookup::Found(_) => Err(exists),
            Lookup::WrongType(_) => Err(ReplyError::WrongType),
        }
    }
}

/// What a key holds: nothing, a module value of a registered type, or a
/// value of any other type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Empty,
    Module(*mut RedisModuleType),
    Other,
}

impl KeyKind {
    /// Whether the key holds a value of type `T`.
    pub fn is<T: ModuleValue + ?Sized>(self) -> bool {
        self == KeyKind::Module(T::handle())
    }
}

/// An open key; closed on drop.
pub struct Key<'c> {
    ptr: *mut RedisModuleKey,
    write: bool,
    tracked: Option<Tracked>,
    _ctx: PhantomData<&'c Ctx>,
}

enum RawLookup<T: ?Sized> {
    Missing,
    WrongType(KeyKind),
    Found(*mut T),
}

/// The value of a key for [`Key::get_or_create`].
pub enum Value<'k, T: ?Sized> {
    WrongType,
    Found(&'k mut T),
}

impl Key<'_> {
    /// The value of type `T` (created by `create` when the key is empty) in
    /// one lookup; `Err` is `create`'s.
    pub fn get_or_create<T: ModuleValue + ?Sized, E>(
        &mut self,
        create: impl FnOnce() -> Result<Box<T>, E>,
    ) -> Result<Value<'_, T>, E> {
        match self.lookup::<T>() {
            RawLookup::Found(v) => {
                // SAFETY: as in `get`; the key borrow bounds the reference.
                Ok(Value::Found(unsafe { &mut *v }))
            }
            RawLookup::WrongType(_) => Ok(Value::WrongType),
            RawLookup::Missing => self.create(create).map(Value::Found),
        }
    }

    /// [`Key::get_or_create`] on an empty key. Out of line and cold: the
    /// creation (sizing, allocation) stays off the cache lines of every
    /// command that finds its value.
    #[cold]
    #[inline(never)]
    fn create<T: ModuleValue + ?Sized, E>(
        &mut self,
        create: impl FnOnce() -> Result<Box<T>, E>,
    ) -> Result<&mut T, E> {
        Ok(self.set(create()?))
    }

    pub fn get<T: ModuleValue + ?Sized>(&mut self) -> Lookup<&mut T> {
        match self.lookup::<T>() {
            // SAFETY: `lookup` returns the live value of the open key; the
            // key borrow bounds the reference.
            RawLookup::Found(v) => Lookup::Found(unsafe { &mut *v }),
            RawLookup::Missing => Lookup::Missing,
            RawLookup::WrongType(kind) => Lookup::WrongType(kind),
        }
    }

    /// Shared access to the value, for commands that only read it: unlike
    /// [`Key::get`], several open keys naming the same key may be read at
    /// once (CMS.MERGE sources). Not tracked: the size does not change.
    pub fn get_shared<T: ModuleValue + ?Sized>(&self) -> Lookup<&T> {
        match self.value::<T>() {
            // SAFETY: as in `get`; only shared references are made here.
            RawLookup::Found(v) => Lookup::Found(unsafe { &*v }),
            RawLookup::Missing => Lookup::Missing,
            RawLookup::WrongType(kind) => Lookup::WrongType(kind),
        }
    }

    /// Whether both keys hold the very same value (one key opened twice).
    pub fn same_value(&self, other: &Key<'_>) -> bool {
        let value = rm!(RedisModule_ModuleTypeGetValue(self.ptr));
        !value.is_null() && value == rm!(RedisModule_ModuleTypeGetValue(other.ptr))
    }

    /// What the key holds, without taking its value.
    pub fn kind(&self) -> KeyKind {
        let kind = rm!(RedisModule_KeyType(self.ptr));
        if kind == raw::REDISMODULE_KEYTYPE_EMPTY as c_int {
            KeyKind::Empty
        } else if kind == raw::REDISMODULE_KEYTYPE_MODULE as c_int {
            KeyKind::Module(rm!(RedisModule_ModuleTypeGetType(self.ptr)))
        } else {
            KeyKind::Other
        }
    }

    /// The key's value as a raw pointer (tracked when opened for writing;
    /// a second lookup of the same value keeps the size the first saw).
    #[inline(always)]
    fn lookup<T: ModuleValue + ?Sized>(&mut self) -> RawLookup<T> {
        let found = self.value::<T>();
        if let (RawLookup::Found(v), true) = (&found, self.write && !T::FIXED_FOOTPRINT) {
            if self
                .tracked
                .as_ref()
                .is_some_and(|t| t.value == v.cast::<c_void>())
            {
                return found;
            }
            // SAFETY: `value` returns the live value of the open key.
            self.tracked = Some(unsafe { Tracked::new(*v) });
        }
        found
    }

    /// The key's value as a raw pointer, if it is of type `T`.
    #[inline(always)]
    fn value<T: ModuleValue + ?Sized>(&self) -> RawLookup<T> {
        // The module type alone tells a key of type T, the common case
        // (null for an empty key and any other type, as for no key).
        let t = rm!(RedisModule_ModuleTypeGetType(self.ptr));
        if t.is_null() {
            return match self.kind() {
                KeyKind::Empty => RawLookup::Missing,
                other => RawLookup::WrongType(other),
            };
        }
        if t != T::handle() {
            return RawLookup::WrongType(KeyKind::Module(t));
        }
        // A key of type T::handle() always holds a Box<T> set by `set` or
        // by the type's rdb_load.
        let value = rm!(RedisModule_ModuleTypeGetValue(self.ptr));
        if value.is_null() {
            RawLookup::Missing
        } else {
            // SAFETY: as said above.
            RawLookup::Found(unsafe { T::at(value) })
        }
    }

    /// Stores a new value under the key, replacing (and freeing) any value
    /// it held, its TTL included; ownership moves to the server.
    pub fn set<T: ModuleValue + ?Sized>(&mut self, value: Box<T>) -> &mut T {
        T::stats().created(value.footprint());
        let raw_value = Box::into_raw(value);
        rm!(RedisModule_ModuleTypeSetValue(
            self.ptr,
            T::handle(),
            raw_value.cast::<c_void>()
        ));
        // The value it replaces, if tracked by another open key, is gone:
        // that key's close must see it.
        reshaped();
        // SAFETY: the server now owns the box, the key's live value.
        self.tracked = (!T::FIXED_FOOTPRINT).then(|| unsafe { Tracked::new(raw_value) });
        // SAFETY: the server now owns the box and keeps it alive while the key is open.
        unsafe { &mut *raw_value }
    }
}

impl Drop for Key<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.tracked.as_ref().filter(|t| t.moved()) {
            (t.settle)(t, self.ptr);
        }
        if !self.ptr.is_null() {
            rm!(RedisModule_CloseKey(self.ptr));
        }
    }
}
