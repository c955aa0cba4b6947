//! Atomic slot migration: declared where the server offers it, for every
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
//! source keeps its own. So a module whose keys live only in the keyspace,
//! rebuilt from their AOF form and changed only by replicated commands, is
//! correct as it is: nothing to undo on abort. That holds for every type
//! created through `datatype::create`. The server asks modules to declare
//! it (`CLUSTER MIGRATESLOTS` fails otherwise) because modules that index
//! keys elsewhere must not index importing keys.
//!
//! The option and event numbers are server-specific (Redis ≥ 8.4 has its own
//! atomic slot migration with other numbers): [`detect`] picks the variant
//! from the server's API table, so adding Redis's is one more arm.

use std::ffi::{c_char, c_int, c_void};

use redis_module::raw::{self, RedisModuleCtx, RedisModuleEvent};

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
/// `VALKEYMODULE_NODE_ID_LEN`: the job name's length.
const NODE_ID_LEN: usize = 40;

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

/// Which server's atomic slot migration interface is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// Valkey ≥ 9: `CLUSTER MIGRATESLOTS`.
    Valkey,
}

/// The interface the running server offers, if any. Valkey registers every
/// API under a `ValkeyModule_` name too (Redis never does), and reports the
/// option bits it knows through `GetModuleOptionsAll` (Redis ≥ 7.2, Valkey).
pub fn detect() -> Option<Interface> {
    let mut f: *mut c_void = std::ptr::null_mut();
    let probe = c"ValkeyModule_GetModuleOptionsAll";
    let is_valkey = optional!(RedisModule_GetApi(
        probe.as_ptr(),
        (&mut f as *mut *mut c_void).cast()
    )) == Some(raw::REDISMODULE_OK as c_int);
    let known = optional!(RedisModule_GetModuleOptionsAll()).unwrap_or(0);
    (is_valkey && known & VALKEY_OPTION_HANDLE_ASM != 0).then_some(Interface::Valkey)
}

impl Interface {
    /// The module option bit that declares support.
    pub fn option(self) -> c_int {
        match self {
            Interface::Valkey => VALKEY_OPTION_HANDLE_ASM,
        }
    }

    /// Subscribes to the migration event: each start and end is logged, so
    /// the server log shows what the module saw. Nothing else is needed (see
    /// the module doc), so a failure only costs the log lines.
    pub fn subscribe(self, ctx: *mut RedisModuleCtx) -> bool {
        let event = match self {
            Interface::Valkey => VALKEY_EVENT_ASM,
        };
        optional!(RedisModule_SubscribeToServerEvent(
            ctx,
            event,
            Some(on_valkey_event)
        )) == Some(raw::REDISMODULE_OK as c_int)
    }
}

unsafe extern "C" fn on_valkey_event(
    ctx: *mut RedisModuleCtx,
    _event: RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    guarded("slot migration event", (), || {
        let what = usize::try_from(subevent)
            .ok()
            .and_then(|i| VALKEY_SUBEVENTS.get(i))
            .copied()
            .unwrap_or("event");
        // SAFETY: the server passes a MigrationInfo for this event (checked
        // by its version); its slot array holds num_slot_ranges entries.
        let (job, slots) = unsafe { describe(data.cast::<MigrationInfo>().as_ref()) };
        log(
            ctx,
            "notice",
            &format!("rsbloom: atomic slot migration {job} {what}, slots {slots}"),
        );
    });
}

/// Job name and slot ranges (`0-99,200-200`) of the event's data.
///
/// # Safety
/// `info`, when given, must be the server's event data.
unsafe fn describe(info: Option<&MigrationInfo>) -> (String, String) {
    let Some(info) = info.filter(|i| i.version >= 1) else {
        return ("?".into(), "?".into());
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
    let slots: Vec<String> = ranges
        .iter()
        .map(|r| format!("{}-{}", r.start, r.end))
        .collect();
    (String::from_utf8_lossy(&name).into_owned(), slots.join(","))
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
    fn describes_job_and_ranges() {
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
        let got = unsafe { describe(Some(&info)) };
        assert_eq!(got, ("abc".to_string(), "0-99,7-7".to_string()));
        assert_eq!(unsafe { describe(None) }.0, "?");
    }
}
