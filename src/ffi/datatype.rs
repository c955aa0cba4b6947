//! Module data types: one generic set of `extern "C"` callbacks, instantiated
//! for each filter type through the [`DataType`] trait.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::raw::{
    self, RedisModuleCtx, RedisModuleDefragCtx, RedisModuleDigest, RedisModuleIO,
    RedisModuleString, RedisModuleType,
};
use rsbloom_core::alloc::Block;
use rsbloom_core::rdb::RdbSink;

use super::barrier::guarded;
use super::context::ModuleValue;
use super::io::{log_io_warning, AofWriter, IoSink, IoSource};
use super::stats::{Footprint, TypeStats};

/// What a filter type provides to be stored in the keyspace: a `Box<Self>`,
/// whose address is the value the server holds.
pub trait DataType: Send + 'static {
    /// Registered type name (9 characters; fixes the RDB module id).
    const NAME: &'static CStr;
    const ENCODING_VERSION: c_int;
    /// The encoding version registered (and so written): the constant,
    /// unless a load-time config chooses an older one.
    fn registered_encoding_version() -> c_int {
        Self::ENCODING_VERSION
    }

    fn cell() -> &'static TypeCell;
    /// The value at `value`, the address of a `Box<Self>` (with its size,
    /// when the type is unsized).
    ///
    /// # Safety
    /// `value` must come from `Box::into_raw` of a live `Box<Self>`.
    unsafe fn at(value: *mut c_void) -> *mut Self;
    /// Decodes an RDB value; `Err` carries the reason for the server log.
    fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Box<Self>, String>;
    /// Saves the value to an RDB file or DUMP payload. Mutable because a
    /// type may bring its value into the saved form first (a T-Digest
    /// compresses); the default saves as the digest sees it.
    fn rdb_save(&mut self, sink: &mut IoSink) {
        self.rdb_save_to(sink)
    }
    /// The RDB encoding into any sink (the server's I/O, or the digest).
    fn rdb_save_to<S: RdbSink>(&self, sink: &mut S);
    /// What DEBUG DIGEST-VALUE digests: by default the persisted form; a
    /// type whose live state holds more than it saves digests all of it,
    /// without changing it.
    fn digest_to<S: RdbSink>(&self, sink: &mut S) {
        self.rdb_save_to(sink)
    }
    /// The commands an AOF rewrite (without RDB preamble) emits to rebuild
    /// the value under its key.
    fn aof_rewrite(&self, aof: &mut AofWriter);
    /// Bytes reported by MEMORY USAGE (the INFO "Size").
    fn mem_usage(&self) -> usize;
    /// Whether a value's footprint is set when it is created and never
    /// changes: writes then skip measuring it before and after.
    const FIXED_FOOTPRINT: bool = false;
    /// What the value counts for in the type's INFO totals: by default its
    /// bytes only.
    fn footprint(&self) -> Footprint {
        Footprint::bytes(u64::try_from(self.mem_usage()).unwrap_or(u64::MAX))
    }
    /// A stamp of what the footprint follows, cheaper to read than it
    /// (the number of links or sub-filters): a write that leaves the stamp
    /// as it was left the footprint as it was, and is accounted without
    /// measuring it. `None`: measured before and after every write.
    fn shape(&self) -> Option<u64> {
        None
    }
    /// The footprint the value had when its [`DataType::shape`] was `shape`
    /// (earlier in the same write).
    fn footprint_at(&self, _shape: u64) -> Footprint {
        self.footprint()
    }
    /// Whether active defragmentation may move values of the type now.
    fn defrag_enabled() -> bool {
        true
    }
    /// Deep copy for `COPY`; `None` when memory is short.
    fn try_clone(&self) -> Option<Box<Self>>;
    /// The large storage blocks, which active defragmentation may move.
    fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block));
    /// Blocks holding pointers to other blocks: moved by active
    /// defragmentation like the others, but never discarded before the drop.
    fn for_each_linked_block_mut(&mut self, _f: &mut dyn FnMut(&mut dyn Block)) {}
    /// Re-derives what points into the value itself after active
    /// defragmentation moved it.
    fn moved(&mut self) {}
}

/// Implements [`DataType`] for a core value type: `Type = family::TYPE,
/// bytes method;` (the core's type table: name, encoding version) then, where a type differs from the
/// common shape (a sized type, `Type::rdb_load(src, encver)`,
/// `Type::rdb_save(v, sink)`, `v.blocks_mut()`), `at(value) => …;`,
/// `load(src, encver) => …;`, `save(v, sink) => …;`, `blocks(v, f) => …;`;
/// then, in braces, any other `DataType` method. Loads and copies may
/// yield the value or its box.
macro_rules! data_type {
    (
        $t:ty = $kind:path, bytes $bytes:ident;
        $(at($av:ident) => $at:expr;)?
        $(load($src:ident, $encver:ident) => $load:expr;)?
        $(save($sv:ident, $sink:ident) => $save:expr;)?
        $(blocks($bv:ident, $f:ident) => $blocks:expr;)?
        { $($rest:tt)* }
    ) => {
        const _: () = {
            use ::std::ffi::{c_int, c_void, CStr};
            use $crate::ffi::datatype::{DataType, TypeCell};
            use $crate::ffi::io::IoSource;
            use ::rsbloom_core::alloc::Block;
            use ::rsbloom_core::rdb::RdbSink;

            static CELL: TypeCell = TypeCell::new();

            impl DataType for $t {
                const NAME: &'static CStr = $kind.name;
                const ENCODING_VERSION: c_int = $kind.encoding_version;

                fn cell() -> &'static TypeCell {
                    &CELL
                }

                unsafe fn at(value: *mut c_void) -> *mut Self {
                    data_type!(@pick [$({ let $av = value; $at })?] [value.cast()])
                }

                fn rdb_load(src: &mut IoSource, encver: c_int) -> Result<Box<Self>, String> {
                    data_type!(@pick [$({ let ($src, $encver) = (src, encver); $load })?]
                        [<$t>::rdb_load(src, encver).map_err(|e| format!("{e:?}"))])
                    .map(Into::into)
                }

                fn rdb_save_to<S: RdbSink>(&self, sink: &mut S) {
                    data_type!(@pick [$({ let ($sv, $sink) = (self, sink); $save })?]
                        [<$t>::rdb_save(self, sink)])
                }

                fn mem_usage(&self) -> usize {
                    usize::try_from(self.$bytes()).unwrap_or(usize::MAX)
                }

                fn try_clone(&self) -> Option<Box<Self>> {
                    <$t>::try_clone(self).ok().map(Into::into)
                }

                fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
                    data_type!(@pick [$({ let ($bv, $f) = (self, f); $blocks })?]
                        [self.blocks_mut().for_each(f)])
                }

                $($rest)*
            }
        };
    };
    (@pick [] [$($default:tt)*]) => { $($default)* };
    (@pick [$($given:tt)+] [$($default:tt)*]) => { $($given)+ };
}

/// Per-type server state: the registered type and its statistics.
pub struct TypeCell {
    handle: AtomicPtr<RedisModuleType>,
    stats: TypeStats,
}

impl TypeCell {
    pub const fn new() -> Self {
        TypeCell {
            handle: AtomicPtr::new(std::ptr::null_mut()),
            stats: TypeStats::new(),
        }
    }
}

impl<T: DataType + ?Sized> ModuleValue for T {
    unsafe fn at(value: *mut c_void) -> *mut Self {
        // SAFETY: the same contract.
        unsafe { <T as DataType>::at(value) }
    }
    fn handle() -> *mut RedisModuleType {
        T::cell().handle.load(Ordering::Relaxed)
    }
    fn stats() -> &'static TypeStats {
        &T::cell().stats
    }
    const FIXED_FOOTPRINT: bool = <T as DataType>::FIXED_FOOTPRINT;
    fn footprint(&self) -> Footprint {
        DataType::footprint(self)
    }
    fn shape(&self) -> Option<u64> {
        DataType::shape(self)
    }
    fn footprint_at(&self, shape: u64) -> Footprint {
        DataType::footprint_at(self, shape)
    }
}

/// Hands a new value to the server, counting it.
fn into_server<T: DataType + ?Sized>(v: Box<T>) -> *mut c_void {
    T::stats().created(DataType::footprint(&*v));
    Box::into_raw(v).cast()
}

/// The value the server passes (null for none).
///
/// # Safety
/// `value` must be null or a value of type `T` the module handed over.
unsafe fn value_at<'a, T: DataType + ?Sized>(value: *const c_void) -> Option<&'a mut T> {
    // SAFETY: per the contract; the server does not touch the value while
    // the callback runs.
    (!value.is_null()).then(|| unsafe { &mut *T::at(value.cast_mut()) })
}

unsafe extern "C" fn rdb_load<T: DataType + ?Sized>(
    io: *mut RedisModuleIO,
    encver: c_int,
) -> *mut c_void {
    guarded("rdb_load", std::ptr::null_mut(), || {
        match T::rdb_load(&mut IoSource::new(io), encver) {
            Ok(v) => into_server(v),
            Err(why) => {
                log_io_warning(io, &format!("rsbloom: rejected {:?} value: {why}", T::NAME));
                std::ptr::null_mut()
            }
        }
    })
}

unsafe extern "C" fn rdb_save<T: DataType + ?Sized>(io: *mut RedisModuleIO, value: *mut c_void) {
    // SAFETY: the server passes a value of this type.
    if let Some(v) = value_at::<T>(value) {
        guarded("rdb_save", (), || v.rdb_save(&mut IoSink::new(io)));
    }
}

unsafe extern "C" fn aof_rewrite<T: DataType + ?Sized>(
    aof: *mut RedisModuleIO,
    key: *mut RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: as above.
    if let Some(v) = value_at::<T>(value) {
        guarded("aof_rewrite", (), || {
            v.aof_rewrite(&mut AofWriter::new(aof, key))
        });
    }
}

unsafe extern "C" fn mem_usage<T: DataType + ?Sized>(value: *const c_void) -> usize {
    // SAFETY: as above.
    value_at::<T>(value).map_or(0, |v| guarded("mem_usage", 0, || v.mem_usage()))
}

/// Values above this many bytes release their memory on the module's own
/// thread: the server's lazy free (LAZYFREE_THRESHOLD 64, in its units of
/// about 64 KiB) would free them after INFO had been read (issue 39).
const RELEASE_LATER_ABOVE: usize = 64 << 16;

/// The server frees every value on its main thread as it leaves the
/// keyspace (no `free_effort`: INFO counts at once); the memory of a large
/// one is released on the module's thread, so `UNLINK` still returns at once.
unsafe extern "C" fn free<T: DataType + ?Sized>(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: values are only ever created as Box<T> by this module.
        guarded("free", (), || {
            let mut v = Box::from_raw(T::at(value));
            T::stats().freed(DataType::footprint(&*v));
            if v.mem_usage() > RELEASE_LATER_ABOVE {
                super::release::later(Box::new(move || release(&mut *v)));
            } else {
                release(&mut *v);
            }
        });
    }
}

/// Releases the pages of a value about to be freed (its box is dropped next).
fn release<T: DataType + ?Sized>(v: &mut T) {
    // SAFETY: the storage is about to be freed; its content is dead.
    v.for_each_block_mut(&mut |block| {
        let bytes = block.bytes_mut();
        unsafe { super::alloc::discard(bytes.as_mut_ptr(), bytes.len()) };
    });
}

unsafe extern "C" fn copy<T: DataType + ?Sized>(
    _from: *mut RedisModuleString,
    _to: *mut RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: the server passes a value of this type.
    let Some(v) = value_at::<T>(value) else {
        return std::ptr::null_mut();
    };
    guarded("copy", None, || v.try_clone()).map_or(std::ptr::null_mut(), into_server)
}

/// Feeds [`DataType::digest_to`] into DEBUG DIGEST: by default two values
/// digest equal exactly when they would save the same RDB value.
struct DigestSink(*mut RedisModuleDigest);

impl RdbSink for DigestSink {
    fn write_unsigned(&mut self, v: u64) {
        rm!(RedisModule_DigestAddLongLong(self.0, v as i64));
    }
    fn write_double(&mut self, v: f64) {
        self.write_buffer(&v.to_le_bytes());
    }
    fn write_buffer(&mut self, b: &[u8]) {
        rm!(RedisModule_DigestAddStringBuffer(
            self.0,
            b.as_ptr().cast(),
            b.len()
        ));
    }
}

unsafe extern "C" fn digest<T: DataType + ?Sized>(md: *mut RedisModuleDigest, value: *mut c_void) {
    // SAFETY: as above.
    if let Some(v) = value_at::<T>(value) {
        guarded("digest", (), || {
            let mut sink = DigestSink(md);
            v.digest_to(&mut sink);
            rm!(RedisModule_DigestEndSequence(md));
        });
    }
}

/// Lets active defragmentation move the value and its storage blocks; the
/// server returns null for blocks it leaves in place.
unsafe extern "C" fn defrag<T: DataType + ?Sized>(
    ctx: *mut RedisModuleDefragCtx,
    _key: *mut RedisModuleString,
    value: *mut *mut c_void,
) -> c_int {
    let Some(slot) = value.as_mut() else { return 0 };
    if !T::defrag_enabled() {
        return 0;
    }
    let stats = T::stats();
    let moved = rm!(RedisModule_DefragAlloc(ctx, *slot));
    stats.defragged(!moved.is_null());
    if !moved.is_null() {
        *slot = moved;
    }
    if let Some(v) = value_at::<T>(*slot) {
        guarded("defrag", (), || {
            if !moved.is_null() {
                v.moved();
            }
            v.for_each_block_mut(&mut |block| defrag_block(ctx, block, stats));
            v.for_each_linked_block_mut(&mut |block| defrag_block(ctx, block, stats));
        });
    }
    0
}

fn defrag_block(ctx: *mut RedisModuleDefragCtx, block: &mut dyn Block, stats: &TypeStats) {
    let bytes = block.bytes_mut();
    if bytes.is_empty() {
        return;
    }
    let moved = rm!(RedisModule_DefragAlloc(ctx, bytes.as_mut_ptr().cast())).cast::<u8>();
    stats.defragged(!moved.is_null());
    if let Some(moved) = std::ptr::NonNull::new(moved) {
        // SAFETY: the server copied the block to `moved` (same usable size)
        // and freed the old one.
        unsafe { block.adopt(moved) };
    }
}

/// Registers `T` with the server.
pub fn create<T: DataType + ?Sized>(ctx: *mut RedisModuleCtx) -> Result<(), String> {
    // SAFETY: an all-zero RedisModuleTypeMethods is valid (every callback None).
    let mut methods: raw::RedisModuleTypeMethods = unsafe { std::mem::zeroed() };
    methods.version = raw::REDISMODULE_TYPE_METHOD_VERSION as u64;
    methods.rdb_load = Some(rdb_load::<T>);
    methods.rdb_save = Some(rdb_save::<T>);
    methods.aof_rewrite = Some(aof_rewrite::<T>);
    methods.mem_usage = Some(mem_usage::<T>);
    methods.free = Some(free::<T>);
    methods.copy = Some(copy::<T>);
    methods.digest = Some(digest::<T>);
    methods.defrag = Some(defrag::<T>);
    let handle = rm!(RedisModule_CreateDataType(
        ctx,
        T::NAME.as_ptr(),
        T::registered_encoding_version(),
        &mut methods
    ));
    if handle.is_null() {
        return Err(format!("could not create data type {:?}", T::NAME));
    }
    T::cell().handle.store(handle, Ordering::Relaxed);
    registered().push(Registered {
        handle,
        stats: T::stats(),
        footprint: footprint_of::<T>,
    });
    Ok(())
}

/// A registered data type, for what walks the keyspace (the INFO counts of
/// an asynchronous flush, ffi/events.rs).
#[derive(Clone, Copy)]
pub struct Registered {
    pub handle: *mut RedisModuleType,
    pub stats: &'static TypeStats,
    /// The footprint of a value of this type.
    pub footprint: unsafe fn(*const c_void) -> Footprint,
}

// SAFETY: the handle is only compared, never dereferenced by the module.
unsafe impl Send for Registered {}

unsafe fn footprint_of<T: DataType + ?Sized>(value: *const c_void) -> Footprint {
    // SAFETY: the caller passes a value of type T.
    unsafe { value_at::<T>(value) }.map_or_else(Footprint::default, |v| DataType::footprint(v))
}

static REGISTERED: std::sync::Mutex<Vec<Registered>> = std::sync::Mutex::new(Vec::new());

/// Every data type registered so far.
pub fn registered() -> std::sync::MutexGuard<'static, Vec<Registered>> {
    REGISTERED.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    //! The defrag callback, with the server's `RedisModule_DefragAlloc`
    //! replaced by a stand-in: the Debian builds of Redis 7.0 and Valkey 8
    //! the integration tests use cannot run active defrag at all, so this is
    //! where the callback itself is exercised.
    use super::*;
    use rsbloom_core::bloom::Chain;
    use rsbloom_core::cuckoo::{hash_item, CuckooFilter};
    use rsbloom_core::rdb::Primitive;
    use std::sync::atomic::AtomicUsize;

    static MOVES: AtomicUsize = AtomicUsize::new(0);

    /// Like the server: copies the block to a new allocation of the same
    /// usable size and frees the old one (poisoned first, so a value still
    /// reading it would show).
    unsafe extern "C" fn defrag_alloc(
        _ctx: *mut RedisModuleDefragCtx,
        ptr: *mut c_void,
    ) -> *mut c_void {
        let size = libc::malloc_usable_size(ptr);
        let new = libc::malloc(size);
        assert!(!new.is_null());
        std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), new.cast::<u8>(), size);
        std::ptr::write_bytes(ptr.cast::<u8>(), 0xa5, size);
        libc::free(ptr);
        MOVES.fetch_add(1, Ordering::SeqCst);
        new
    }

    fn saved<T: DataType + ?Sized>(v: &T) -> Vec<Primitive> {
        let mut out = Vec::new();
        v.rdb_save_to(&mut out);
        out
    }

    /// Moves the value and every storage block; the moved value dumps the
    /// same, keeps working, and frees cleanly (a double free would abort).
    fn moves_everything<T: DataType + ?Sized>(mut value: Box<T>, mut write: impl FnMut(&mut T)) {
        let mut blocks = 0;
        value.for_each_block_mut(&mut |_| blocks += 1);
        value.for_each_linked_block_mut(&mut |_| blocks += 1);
        let before = saved(&*value);
        // SAFETY: test-only; no server is running in this process.
        unsafe { raw::RedisModule_DefragAlloc = Some(defrag_alloc) };
        let mut slot: *mut c_void = Box::into_raw(value).cast();
        let old = slot;
        MOVES.store(0, Ordering::SeqCst);
        // SAFETY: `slot` holds a live Box<T>.
        let done = unsafe { defrag::<T>(std::ptr::null_mut(), std::ptr::null_mut(), &mut slot) };
        assert_eq!(done, 0);
        assert_ne!(slot, old, "the value itself moved");
        assert_eq!(MOVES.load(Ordering::SeqCst), 1 + blocks);
        // SAFETY: the callback left a valid Box<T> in `slot`.
        let mut moved = unsafe { Box::from_raw(T::at(slot)) };
        assert_eq!(saved(&*moved), before);
        write(&mut moved);
        assert_ne!(saved(&*moved), before);
        drop(moved);
    }

    #[test]
    fn defrag_moves_the_value_and_its_blocks() {
        let mut chain = Chain::new(50, 0.01, 2, false).unwrap();
        for i in 0..400 {
            chain.add(format!("item{i}").as_bytes());
        }
        moves_everything(chain, |c| {
            c.add(b"after defrag");
        });
        // One link, in one block.
        let mut compact = Chain::new(100, 0.01, 2, false).unwrap();
        compact.add(b"item");
        moves_everything(compact, |c| {
            c.add(b"after defrag");
        });
        // A first bit array above 64 KiB is not in the chain's block.
        let mut apart = Chain::new(70_000, 0.01, 2, false).unwrap();
        apart.add(b"item");
        moves_everything(apart, |c| {
            c.add(b"after defrag");
        });
        let mut cf = CuckooFilter::new(16, 2, 20, 2).unwrap();
        for i in 0..200 {
            cf.insert(hash_item(format!("item{i}").as_bytes()));
        }
        moves_everything(Box::new(cf), |c| {
            c.insert(hash_item(b"after defrag"));
        });
        let cell = rsbloom_core::cms::CellSize::Two;
        let mut cms = rsbloom_core::cms::CountMinSketch::new(300, 5, cell).unwrap();
        cms.increment(b"item", 3).unwrap();
        moves_everything(Box::new(cms), |c| {
            c.increment(b"after defrag", 1).unwrap();
        });
        let mut topk = rsbloom_core::topk::TopK::new(20, 64, 4, 0.9).unwrap();
        for i in 0..200 {
            topk.add(format!("item{}", i % 37).as_bytes(), 1).unwrap();
        }
        moves_everything(Box::new(topk), |t| {
            t.add(b"after defrag", 500).unwrap();
        });
        let mut td = rsbloom_core::tdigest::TDigest::new(50.0).unwrap();
        for i in 0..500 {
            td.add(f64::from(i % 37), 1).unwrap();
        }
        td.compress();
        moves_everything(Box::new(td), |t| {
            t.add(-1.0, 1).unwrap();
        });
    }
}
