//! Global allocator: the server's allocator, so module memory shows in
//! `used_memory` and counts against `maxmemory`.
//!
//! Uses the server's *try* allocation functions where they exist so that a
//! failed allocation reaches Rust as a null pointer: `core::alloc::try_zeroed`
//! then answers "Insufficient memory" instead of the server aborting. Redis 7.0
//! has `TryAlloc` but not `TryCalloc`/`TryRealloc`; zeroed memory then comes
//! from `TryAlloc` plus [`zero`], which keeps large blocks lazily committed.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};

use redis_module::raw;

#[cfg_attr(test, allow(dead_code))] // unit tests run on the system allocator
pub struct ServerAllocator;

/// Largest amount the module may hold: physical memory plus swap.
///
/// jemalloc maps with MAP_NORESERVE when the kernel overcommits, so a
/// try-allocation of 64 GiB on a 24 GiB machine "succeeds" and the server is
/// OOM-killed once the pages are touched (BF.LOADCHUNK with a 2^36-byte link,
/// or BF.RESERVE k 1e-300 1073741824, killed redis-server 7.0.15 this way).
/// Requests no machine state could back fail here instead, which callers
/// answer with "Insufficient memory" / "received bad data".
#[cfg_attr(test, allow(dead_code))]
fn physical_limit() -> usize {
    static LIMIT: AtomicUsize = AtomicUsize::new(0);
    let cached = LIMIT.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: sysinfo only writes the struct it is given.
    let limit = unsafe {
        let mut info: libc::sysinfo = std::mem::zeroed();
        if libc::sysinfo(&mut info) == 0 {
            let unit = u128::from(info.mem_unit.max(1));
            let total = (u128::from(info.totalram) + u128::from(info.totalswap)) * unit;
            usize::try_from(total).unwrap_or(usize::MAX)
        } else {
            usize::MAX
        }
    }
    .max(1);
    LIMIT.store(limit, Ordering::Relaxed);
    limit
}

/// Bytes this module holds (approximately: buffers adopted from the server's
/// RDB loader are freed here without having been counted, hence signed).
#[cfg_attr(test, allow(dead_code))]
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Whether `size` more bytes (replacing `freed`) keep the module within
/// physical memory + swap.
#[cfg_attr(test, allow(dead_code))]
fn admissible(size: usize, freed: usize) -> bool {
    let live = usize::try_from(LIVE.load(Ordering::Relaxed)).unwrap_or(0);
    size <= physical_limit().saturating_sub(live.saturating_sub(freed))
}

/// Below this size a block can be neither beyond physical memory nor
/// huge-paged: its allocation skips both checks, and stays a few
/// instructions on the path of a command that allocates (a Top-K heap item).
#[cfg_attr(test, allow(dead_code))]
const SMALL: usize = 64 << 10;

#[cfg_attr(test, allow(dead_code))]
unsafe fn try_alloc(size: usize) -> *mut u8 {
    match (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) {
        (Some(f), _) | (None, Some(f)) => f(size).cast(),
        (None, None) => std::ptr::null_mut(),
    }
}

/// [`unadvise_huge`] before a large block is freed; out of line, as
/// [`alloc_large`], so that every inlined `dealloc` stays small.
#[cold]
#[inline(never)]
#[cfg_attr(test, allow(dead_code))]
unsafe fn unadvise_large(ptr: *mut u8, size: usize) {
    unadvise_huge(ptr, size);
}

/// [`GlobalAlloc::alloc`] of a block of at least [`SMALL`] bytes: filter
/// storage. Out of line, off the path of small ones.
#[cold]
#[inline(never)]
#[cfg_attr(test, allow(dead_code))]
unsafe fn alloc_large(size: usize) -> *mut u8 {
    if !admissible(size, 0) {
        return std::ptr::null_mut();
    }
    let ptr = try_alloc(size);
    advise_huge(ptr, size);
    account(ptr, size, 0)
}

#[cfg_attr(test, allow(dead_code))]
fn account(ptr: *mut u8, added: usize, removed: usize) -> *mut u8 {
    if !ptr.is_null() {
        LIVE.fetch_add(added as isize - removed as isize, Ordering::Relaxed);
    }
    ptr
}

/// jemalloc aligns every size class to its own power-of-two granularity, so
/// asking for a multiple of the alignment yields an aligned block.
#[cfg_attr(test, allow(dead_code))]
fn padded(layout: Layout) -> usize {
    let align = layout.align();
    (layout.size() + align - 1) & !(align - 1)
}

// SAFETY: every block is obtained from and returned to the server allocator;
// sizes are padded so the returned blocks satisfy the layout's alignment.
unsafe impl GlobalAlloc for ServerAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = padded(layout);
        if size < SMALL {
            return account(try_alloc(size), size, 0);
        }
        alloc_large(size)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let size = padded(layout);
        if let Some(f) = raw::RedisModule_TryCalloc {
            if !admissible(size, 0) {
                return std::ptr::null_mut();
            }
            let ptr = f(1, size).cast();
            advise_huge(ptr, size);
            return account(ptr, size, 0);
        }
        let ptr = self.alloc(layout);
        if !ptr.is_null() {
            zero(ptr, size);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let size = padded(layout);
        if size >= SMALL {
            unadvise_large(ptr, size);
        }
        if let Some(f) = raw::RedisModule_Free {
            f(ptr.cast());
            account(ptr, 0, size);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let size = padded(new_layout);
        let old = padded(layout);
        if !admissible(size, old) {
            return std::ptr::null_mut();
        }
        // Storage is never resized; dropping the advice keeps a moved-out
        // old block from passing it on to whatever reuses its pages.
        unadvise_huge(ptr, old);
        let new = match (raw::RedisModule_TryRealloc, raw::RedisModule_Realloc) {
            (Some(f), _) | (None, Some(f)) => f(ptr.cast(), size).cast(),
            (None, None) => std::ptr::null_mut(),
        };
        account(new, size, old)
    }
}

/// Blocks from this size get the huge-page advice when `bf.huge-pages` is
/// on: whatever their alignment, a whole 2 MiB page fits inside. Only filter
/// storage (and short-lived dump buffers) is this large.
const HUGE_MIN: usize = 4 << 20;

/// The `bf.huge-pages` setting.
static HUGE_PAGES: AtomicBool = AtomicBool::new(false);
/// Set once the setting was ever on: from then on large blocks may carry
/// the advice, and drop it when freed.
static HUGE_ADVISED: AtomicBool = AtomicBool::new(false);

/// Turns the huge-page advice of new large blocks on or off.
pub fn set_huge_pages(on: bool) {
    if on {
        HUGE_ADVISED.store(true, Ordering::Relaxed);
    }
    HUGE_PAGES.store(on, Ordering::Relaxed);
}

pub fn huge_pages() -> bool {
    HUGE_PAGES.load(Ordering::Relaxed)
}

/// Asks the kernel to back the block with transparent huge pages when the
/// setting is on. Every probe of a large filter lands on a random page; with
/// 4 KiB pages nearly each one is a TLB miss and a page walk. Only a hint:
/// with THP `never`, or disabled for the process (Redis does that when THP
/// is `always`), nothing changes.
///
/// # Safety
/// `ptr..ptr+len` must be a live block owned by this module (or null).
pub unsafe fn advise_huge(ptr: *mut u8, len: usize) {
    if len >= HUGE_MIN && !ptr.is_null() && HUGE_PAGES.load(Ordering::Relaxed) {
        advise_pages(ptr, len, libc::MADV_HUGEPAGE);
    }
}

/// Drops the advice before a block is freed: the allocator reuses its pages
/// for other data, which must not be huge-paged behind the operator's back.
#[cfg_attr(test, allow(dead_code))]
unsafe fn unadvise_huge(ptr: *mut u8, len: usize) {
    if len >= HUGE_MIN && !ptr.is_null() && HUGE_ADVISED.load(Ordering::Relaxed) {
        advise_pages(ptr, len, libc::MADV_NOHUGEPAGE);
    }
}

/// `madvise` over the pages entirely inside `ptr..ptr+len` (neighbouring
/// blocks share the edge pages); failure is ignored, as for any hint.
unsafe fn advise_pages(ptr: *mut u8, len: usize, advice: libc::c_int) {
    if let Some((start, end)) = whole_pages(ptr, len) {
        libc::madvise(start as *mut libc::c_void, end - start, advice);
    }
}

/// Start and end addresses of the pages entirely inside `ptr..ptr+len`,
/// if there is any.
fn whole_pages(ptr: *mut u8, len: usize) -> Option<(usize, usize)> {
    let page = page_size();
    let start = (ptr as usize).next_multiple_of(page);
    let end = (ptr as usize + len) / page * page;
    (end > start).then_some((start, end))
}

/// Below this, plain memset beats a system call.
const DISCARD_MIN: usize = 1 << 20;
/// Step of [`discard`]: bounds how long one call holds the address-space lock.
const DISCARD_STEP: usize = 16 << 20;

/// Zeroes `len` bytes at `ptr`. Large blocks get their whole pages replaced
/// by the kernel's zero page (`MADV_DONTNEED`) instead of being written: a
/// fresh 1 GiB filter then costs no time and no resident memory until used,
/// as with calloc.
///
/// # Safety
/// `ptr..ptr+len` must be memory this process owns and may overwrite.
#[cfg_attr(test, allow(dead_code))]
pub unsafe fn zero(ptr: *mut u8, len: usize) {
    let (head, body) = discard(ptr, len);
    std::ptr::write_bytes(ptr, 0, head);
    let tail = head + body;
    std::ptr::write_bytes(ptr.add(tail), 0, len - tail);
}

/// Drops the physical pages entirely inside `ptr..ptr+len` (their content
/// reads back as zero), in steps of [`DISCARD_STEP`]; returns the offset and
/// length of the discarded span ((0, 0) when nothing was discarded).
///
/// Freeing storage through this before `free` keeps a lazy free of a huge
/// filter from holding the address-space lock for one long `munmap` while
/// the main thread needs it for page faults.
///
/// # Safety
/// As for [`zero`]; the content is lost.
pub unsafe fn discard(ptr: *mut u8, len: usize) -> (usize, usize) {
    if len < DISCARD_MIN {
        return (0, 0);
    }
    let Some((start, end)) = whole_pages(ptr, len) else {
        return (0, 0);
    };
    let mut at = start;
    while at < end {
        let step = DISCARD_STEP.min(end - at);
        if libc::madvise(at as *mut libc::c_void, step, libc::MADV_DONTNEED) != 0 {
            // Not discardable (unusual mapping): report only what was done.
            return (start - ptr as usize, at - start);
        }
        at += step;
    }
    (start - ptr as usize, end - start)
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    }
}
