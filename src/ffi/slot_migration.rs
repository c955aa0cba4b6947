//! Atomic slot migration: declared where the server asks for it, for every
//! data type at once (it is a module option, not a per-type one).
//!
//! Valkey ≥ 9 (`CLUSTER MIGRATESLOTS`, `cluster_migrateslots.c`) moves the
//! keys of a slot range without MIGRATE: the source forks and sends the
//! target the AOF-rewrite form of each key (`datatype::aof_rewrite`:
//! LOADCHUNK commands, or RESTORE of the DUMP for types without LOADCHUNK;
//! same server version on both ends), then forwards the writes it keeps
//! executing on those slots (what `ReplicateVerbatim` propagates), pauses
//! writes and hands the slots over. The target executes all of it on a
//! replicated client; the imported keys stay invisible to other clients
//! until the hand-over. On abort the server itself deletes the target's
//! keys in the slots (lazily, through the types' free callbacks) and the
//! source keeps its own. The server asks modules to declare it
//! (`CLUSTER MIGRATESLOTS` fails otherwise) because modules that index keys
//! elsewhere must not index importing keys.
//!
//! Redis ≥ 8.4 (`CLUSTER MIGRATION IMPORT`, `cluster_asm.c`) works the same
//! way from the target's side, with three differences: every module value
//! travels as `RESTORE` of its DUMP payload; nothing is declared (no option);
//! and the source deletes the moved keys after the hand-over ("trimming"),
//! by default on a background thread (free callbacks there, as for lazy
//! free). The events differ too (migration 18, trim 19).
//!
//! So a module whose keys live only in the keyspace, rebuilt from their
//! AOF or RDB form and changed only by replicated commands, is correct as it
//! is, with one exception: a master changing keys by itself. The T-Digest
//! fork handler compresses and replicates digests when the server forks
//! (`tdigest/forks.rs`); a target that forks during an import must leave the
//! importing digests alone (their source does that, and its stream carries
//! it), or they would differ from the source's. [`owns_key`] tells them apart:
//! Redis says which slots a node may serve (`ClusterCanAccessKeysInSlot`);
//! on Valkey the import events' slot ranges are tracked.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleEvent, RedisModuleString};

use super::barrier::guarded;
use super::context::log;

// From valkeymodule.h (Valkey 9.0+):
/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION`.
const VALKEY_OPTION_HANDLE_ASM: c_int = 1 << 5;
/// `VALKEYMODULE_EVENT_ATOMIC_SLOT_MIGRATION`, data version 1.
const VALKEY_EVENT_ASM: RedisModuleEvent = RedisModuleEvent { id: 19, dataver: 1 };
/// Sub-events `VALKEYMODULE_SUBEVENT_ATOMIC_SLOT_MIGRATION_*`, in order 0..=5.
const VALKEY_SUBEVENTS: [&str; 6] = [
    "import started",
    "export started",
    "import aborted",
    "export aborted",
    "import completed",
    "export completed",
];
/// `VALKEYMODULE_NODE_ID_LEN` / `REDISMODULE_NODE_ID_LEN`.
const NODE_ID_LEN: usize = 40;

// From redismodule.h (Redis 8.4+):
/// `REDISMODULE_EVENT_CLUSTER_SLOT_MIGRATION`, data version 1.
const REDIS_EVENT_ASM: RedisModuleEvent = RedisModuleEvent { id: 18, dataver: 1 };
/// `REDISMODULE_EVENT_CLUSTER_SLOT_MIGRATION_TRIM`, data version 1.
const REDIS_EVENT_TRIM: RedisModuleEvent = RedisModuleEvent { id: 19, dataver: 1 };
/// Sub-events `REDISMODULE_SUBEVENT_CLUSTER_SLOT_MIGRATION_*` 0..=5, in
/// Valkey's words (Redis's MIGRATE is the export; FAILED covers a cancel).
/// 6, MIGRATE_MODULE_PROPAGATE, fires in the fork child: not logged.
const REDIS_SUBEVENTS: [&str; 6] = [
    "import started",
    "import aborted",
    "import completed",
    "export started",
    "export aborted",
    "export completed",
];
/// Sub-events `REDISMODULE_SUBEVENT_CLUSTER_SLOT_MIGRATION_TRIM_*`.
const REDIS_TRIM_SUBEVENTS: [&str; 3] = ["trim started", "trim completed", "trim background"];

/// `ValkeyModuleSlotRange`.
#[repr(C)]
struct SlotRange {
    start: c_int,
    end: c_int,
}

/// `ValkeyModuleAtomicSlotMigrationInfoV1`, the event's data.
#[repr(C)]
struct MigrationInfo {
    version: u64,
    job_name: [c_char; NODE_ID_LEN + 1],
    slot_ranges: *const SlotRange,
    num_slot_ranges: u32,
}

/// `RedisModuleSlotRangeArray`: a count, then that many ranges.
#[repr(C)]
struct RedisSlotRanges {
    num_ranges: i32,
    ranges: [RedisSlotRange; 0],
}

/// `RedisModuleSlotRange`.
#[repr(C)]
struct RedisSlotRange {
    start: u16,
    end: u16,
}

/// `RedisModuleClusterSlotMigrationInfoV1`.
#[repr(C)]
struct RedisMigrationInfo {
    version: u64,
    source_node_id: [c_char; NODE_ID_LEN + 1],
    destination_node_id: [c_char; NODE_ID_LEN + 1],
    task_id: *const c_char,
    slots: *const RedisSlotRanges,
}

/// `RedisModuleClusterSlotMigrationTrimInfoV1`.
#[repr(C)]
struct RedisTrimInfo {
    version: u64,
    slots: *const RedisSlotRanges,
}

/// Which server's atomic slot migration interface is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// Valkey ≥ 9: `CLUSTER MIGRATESLOTS`.
    Valkey,
    /// Redis ≥ 8.4: `CLUSTER MIGRATION`.
    Redis,
}

/// `RedisModule_ClusterCanAccessKeysInSlot` (Redis ≥ 8.4; the bindings
/// predate it).
type CanAccessKeysInSlot = unsafe extern "C" fn(c_int) -> c_int;
static CAN_ACCESS: OnceLock<CanAccessKeysInSlot> = OnceLock::new();

type EventCallback = unsafe extern "C" fn(*mut RedisModuleCtx, RedisModuleEvent, u64, *mut c_void);

/// Slot ranges a Valkey node imports now (from the migration events).
static IMPORTING: Mutex<Vec<(u16, u16)>> = Mutex::new(Vec::new());

/// The server API function `name`, if the server has it.
fn api(name: &CStr) -> Option<*mut c_void> {
    let mut f: *mut c_void = std::ptr::null_mut();
    let found = optional!(RedisModule_GetApi(
        name.as_ptr(),
        (&mut f as *mut *mut c_void).cast()
    )) == Some(raw::REDISMODULE_OK as c_int);
    (found && !f.is_null()).then_some(f)
}

/// The interface the running server offers, if any. Valkey registers every
/// API under a `ValkeyModule_` name too (Redis never does), and reports the
/// option bits it knows through `GetModuleOptionsAll` (Redis ≥ 7.2, Valkey);
/// Redis ≥ 8.4 has `ClusterCanAccessKeysInSlot`, added with its migration.
pub fn detect() -> Option<Interface> {
    if api(c"ValkeyModule_GetModuleOptionsAll").is_some() {
        let known = optional!(RedisModule_GetModuleOptionsAll()).unwrap_or(0);
        return (known & VALKEY_OPTION_HANDLE_ASM != 0).then_some(Interface::Valkey);
    }
    let f = api(c"RedisModule_ClusterCanAccessKeysInSlot")?;
    // SAFETY: the server registers this name with this signature (redismodule.h).
    let f: CanAccessKeysInSlot = unsafe { std::mem::transmute(f) };
    let _ = CAN_ACCESS.set(f);
    Some(Interface::Redis)
}

/// Whether this node serves the slot of `key` now, i.e. it is not being
/// imported (nor, on Redis, trimmed after an export). True outside a
/// cluster and on servers without atomic slot migration.
pub fn owns_key(key: *mut RedisModuleString) -> bool {
    let Some(slot) = optional!(RedisModule_ClusterKeySlot(key)) else {
        return true;
    };
    if let Some(can_access) = CAN_ACCESS.get() {
        // SAFETY: a plain query of the server's slot table.
        return unsafe { can_access(slot as c_int) } != 0;
    }
    let importing = IMPORTING.lock().map(|r| r.clone()).unwrap_or_default();
    !importing
        .iter()
        .any(|&(s, e)| (u32::from(s)..=u32::from(e)).contains(&slot))
}

impl Interface {
    /// The module option bit that declares support (Redis has none).
    pub fn option(self) -> c_int {
        match self {
            Interface::Valkey => VALKEY_OPTION_HANDLE_ASM,
            Interface::Redis => 0,
        }
    }

    /// Subscribes to the migration events: each start and end is logged, so
    /// the server log shows what the module saw, and on Valkey the importing
    /// slots are tracked for [`owns_key`].
    pub fn subscribe(self, ctx: *mut RedisModuleCtx) -> bool {
        let subscribe = |event: RedisModuleEvent, callback: EventCallback| {
            optional!(RedisModule_SubscribeToServerEvent(
                ctx,
                event,
                Some(callback)
            )) == Some(raw::REDISMODULE_OK as c_int)
        };
        match self {
            Interface::Valkey => subscribe(VALKEY_EVENT_ASM, on_valkey_event),
            Interface::Redis => {
                subscribe(REDIS_EVENT_ASM, on_redis_event)
                    & subscribe(REDIS_EVENT_TRIM, on_redis_trim)
                    & trim_key_by_key(ctx)
            }
        }
    }
}

/// `REDISMODULE_NOTIFY_KEY_TRIMMED` (Redis 8.6).
const NOTIFY_KEY_TRIMMED: c_int = 1 << 17;

/// A subscriber to trimmed keys makes Redis trim migrated slots key by key
/// on its main thread instead of freeing them on its lazy-free thread, so
/// INFO bf stops counting each key as it goes (issue 39).
fn trim_key_by_key(ctx: *mut RedisModuleCtx) -> bool {
    unsafe extern "C" fn trimmed(
        _ctx: *mut RedisModuleCtx,
        _type: c_int,
        _event: *const c_char,
        _key: *mut RedisModuleString,
    ) -> c_int {
        0
    }
    optional!(RedisModule_SubscribeToKeyspaceEvents(
        ctx,
        NOTIFY_KEY_TRIMMED,
        Some(trimmed)
    )) == Some(raw::REDISMODULE_OK as c_int)
}

unsafe extern "C" fn on_valkey_event(
    ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    guarded("slot migration event", (), || {
        let what = name(&VALKEY_SUBEVENTS, subevent);
        // SAFETY: the server passes a MigrationInfo for this event (checked
        // by its version); its slot array holds num_slot_ranges entries.
        let (job, ranges) = unsafe { valkey_info(data.cast::<MigrationInfo>().as_ref()) };
        track_imports(what, &ranges);
        log_event(ctx, &job, what, &ranges);
    });
}

unsafe extern "C" fn on_redis_event(
    ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if usize::try_from(subevent).map_or(true, |i| i >= REDIS_SUBEVENTS.len()) {
        return; // MODULE_PROPAGATE, in the fork child: nothing to add
    }
    guarded("slot migration event", (), || {
        let what = name(&REDIS_SUBEVENTS, subevent);
        // SAFETY: the server passes a RedisMigrationInfo for this event.
        let info = unsafe { data.cast::<RedisMigrationInfo>().as_ref() };
        let job = info
            .filter(|i| !i.task_id.is_null())
            // SAFETY: the task id is a NUL-terminated string of the server.
            .map(|i| {
                unsafe { CStr::from_ptr(i.task_id) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_else(|| "?".into());
        // SAFETY: its slot array is the server's, count included.
        let ranges = unsafe { redis_ranges(info.map_or(std::ptr::null(), |i| i.slots)) };
        log_event(ctx, &job, what, &ranges);
    });
}

unsafe extern "C" fn on_redis_trim(
    ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    guarded("slot trim event", (), || {
        let what = name(&REDIS_TRIM_SUBEVENTS, subevent);
        // SAFETY: the server passes a RedisTrimInfo for this event.
        let slots =
            unsafe { data.cast::<RedisTrimInfo>().as_ref() }.map_or(std::ptr::null(), |i| i.slots);
        // SAFETY: as above.
        let ranges = unsafe { redis_ranges(slots) };
        log_event(ctx, "-", what, &ranges);
    });
}

fn name(names: &[&'static str], subevent: u64) -> &'static str {
    usize::try_from(subevent)
        .ok()
        .and_then(|i| names.get(i))
        .copied()
        .unwrap_or("event")
}

fn log_event(ctx: *mut RedisModuleCtx, job: &str, what: &str, ranges: &[(u16, u16)]) {
    let slots: Vec<String> = ranges.iter().map(|(s, e)| format!("{s}-{e}")).collect();
    let msg = format!(
        "rsbloom: atomic slot migration {job} {what}, slots {}",
        slots.join(",")
    );
    log(ctx, "notice", &msg);
}

/// Keeps [`IMPORTING`] in step with Valkey's import events.
fn track_imports(what: &str, ranges: &[(u16, u16)]) {
    let Ok(mut importing) = IMPORTING.lock() else {
        return;
    };
    match what {
        "import started" => importing.extend_from_slice(ranges),
        "import aborted" | "import completed" => importing.retain(|r| !ranges.contains(r)),
        _ => {}
    }
}

/// Clamps a slot number of the server to 0..=16383.
fn slot(n: i64) -> u16 {
    n.clamp(0, 16383) as u16
}

/// Job name and slot ranges of Valkey's event data.
///
/// # Safety
/// `info`, when given, must be the server's event data.
unsafe fn valkey_info(info: Option<&MigrationInfo>) -> (String, Vec<(u16, u16)>) {
    let Some(info) = info.filter(|i| i.version >= 1) else {
        return ("?".into(), Vec::new());
    };
    let name: Vec<u8> = info
        .job_name
        .iter()
        .take(NODE_ID_LEN)
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    // At most one range per slot.
    let n = (info.num_slot_ranges as usize).min(16384);
    let ranges: &[SlotRange] = if info.slot_ranges.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(info.slot_ranges, n)
    };
    let ranges = ranges
        .iter()
        .map(|r| (slot(r.start.into()), slot(r.end.into())))
        .collect();
    (String::from_utf8_lossy(&name).into_owned(), ranges)
}

/// The ranges of Redis's slot range array.
///
/// # Safety
/// `slots`, when not null, must be the server's array.
unsafe fn redis_ranges(slots: *const RedisSlotRanges) -> Vec<(u16, u16)> {
    let Some(array) = slots.as_ref() else {
        return Vec::new();
    };
    let n = usize::try_from(array.num_ranges).unwrap_or(0).min(16384);
    std::slice::from_raw_parts(array.ranges.as_ptr(), n)
        .iter()
        .map(|r| (slot(r.start.into()), slot(r.end.into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_layout_matches_valkeymodule_h() {
        // uint64_t version; char job_name[41]; <pad>; pointer; uint32_t.
        assert_eq!(std::mem::offset_of!(MigrationInfo, job_name), 8);
        assert_eq!(std::mem::offset_of!(MigrationInfo, slot_ranges), 56);
        assert_eq!(std::mem::offset_of!(MigrationInfo, num_slot_ranges), 64);
    }

    #[test]
    fn info_layout_matches_redismodule_h() {
        // uint64_t version; char source[41]; char dest[41]; <pad>; two pointers.
        assert_eq!(
            std::mem::offset_of!(RedisMigrationInfo, destination_node_id),
            49
        );
        assert_eq!(std::mem::offset_of!(RedisMigrationInfo, task_id), 96);
        assert_eq!(std::mem::offset_of!(RedisMigrationInfo, slots), 104);
        assert_eq!(std::mem::offset_of!(RedisTrimInfo, slots), 8);
        // int32_t num_ranges; then uint16_t pairs.
        assert_eq!(std::mem::offset_of!(RedisSlotRanges, ranges), 4);
    }

    #[test]
    fn reads_valkey_job_and_ranges() {
        let ranges = [
            SlotRange { start: 0, end: 99 },
            SlotRange { start: 7, end: 7 },
        ];
        let mut job_name = [0 as c_char; NODE_ID_LEN + 1];
        for (d, s) in job_name.iter_mut().zip(b"abc") {
            *d = *s as c_char;
        }
        let info = MigrationInfo {
            version: 1,
            job_name,
            slot_ranges: ranges.as_ptr(),
            num_slot_ranges: 2,
        };
        let got = unsafe { valkey_info(Some(&info)) };
        assert_eq!(got, ("abc".to_string(), vec![(0, 99), (7, 7)]));
        assert_eq!(unsafe { valkey_info(None) }.0, "?");
    }

    #[test]
    fn reads_redis_ranges() {
        #[repr(C)]
        struct Two {
            num_ranges: i32,
            ranges: [RedisSlotRange; 2],
        }
        let two = Two {
            num_ranges: 2,
            ranges: [
                RedisSlotRange { start: 0, end: 99 },
                RedisSlotRange {
                    start: 200,
                    end: 16383,
                },
            ],
        };
        let got = unsafe { redis_ranges(std::ptr::from_ref(&two).cast()) };
        assert_eq!(got, vec![(0, 99), (200, 16383)]);
        assert!(unsafe { redis_ranges(std::ptr::null()) }.is_empty());
    }

    #[test]
    fn tracks_valkey_imports() {
        track_imports("import started", &[(10, 20)]);
        track_imports("export started", &[(30, 40)]);
        assert_eq!(*IMPORTING.lock().unwrap(), vec![(10, 20)]);
        track_imports("import aborted", &[(10, 20)]);
        assert!(IMPORTING.lock().unwrap().is_empty());
    }
}
