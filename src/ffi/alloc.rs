//! Global allocator: the server's allocator, so module memory shows in
//! `used_memory` and counts against `maxmemory`.
//!
//! Uses the server's *try* allocation functions where they exist so that a
//! failed allocation reaches Rust as a null pointer: `core::alloc::try_zeroed`
//! then answers "Insufficient memory" instead of the server aborting. Redis 7.0
//! has `TryAlloc` but not `TryCalloc`/`TryRealloc`; zeroed memory then comes
//! from `TryAlloc` plus an explicit clear.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use redis_module::raw;

pub struct ServerAllocator;

/// Largest single allocation ever attempted: physical memory plus swap.
///
/// jemalloc maps with MAP_NORESERVE when the kernel overcommits, so a
/// try-allocation of 64 GiB on a 24 GiB machine "succeeds" and the server is
/// OOM-killed as soon as the pages are touched (on Redis 7.0 at once, by the
/// explicit clear below). Sizes no machine state could back fail here
/// instead, which the callers turn into "Insufficient memory" replies.
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
    };
    LIMIT.store(limit.max(1), Ordering::Relaxed);
    limit.max(1)
}

/// Bytes this module holds (approximately: buffers adopted from the server's
/// RDB loader are freed here without having been counted, hence signed).
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Whether `size` more bytes keep the module within physical memory + swap.
fn admissible(size: usize, freed: usize) -> bool {
    let live = usize::try_from(LIVE.load(Ordering::Relaxed)).unwrap_or(0);
    size <= physical_limit().saturating_sub(live.saturating_sub(freed))
}

fn account(ptr: *mut u8, added: usize, removed: usize) -> *mut u8 {
    if !ptr.is_null() {
        let delta = added as isize - removed as isize;
        LIVE.fetch_add(delta, Ordering::Relaxed);
    }
    ptr
}

/// Zeroes `len` bytes at `ptr` without touching whole pages: they are
/// handed back to the kernel (MADV_DONTNEED), and an anonymous private
/// mapping (all jemalloc memory) reads them back as zero on demand. So a
/// large filter costs resident memory only as it is written, as with calloc.
unsafe fn clear(ptr: *mut u8, len: usize) {
    const PAGE: usize = 4096;
    const MIN_MADVISE: usize = 1 << 20;
    if len < MIN_MADVISE {
        std::ptr::write_bytes(ptr, 0, len);
        return;
    }
    let start = ptr as usize;
    let first = (start + PAGE - 1) & !(PAGE - 1);
    let last = (start + len) & !(PAGE - 1);
    std::ptr::write_bytes(ptr, 0, first - start);
    let pages = last - first;
    if libc::madvise(first as *mut libc::c_void, pages, libc::MADV_DONTNEED) != 0 {
        std::ptr::write_bytes(first as *mut u8, 0, pages);
    }
    std::ptr::write_bytes(last as *mut u8, 0, start + len - last);
}

/// jemalloc aligns every size class to its own power-of-two granularity, so
/// asking for a multiple of the alignment yields an aligned block.
fn padded(layout: Layout) -> usize {
    let align = layout.align();
    (layout.size() + align - 1) & !(align - 1)
}

// SAFETY: every block is obtained from and returned to the server allocator;
// sizes are padded so the returned blocks satisfy the layout's alignment.
unsafe impl GlobalAlloc for ServerAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = padded(layout);
        if !admissible(size, 0) {
            return std::ptr::null_mut();
        }
        let ptr = match (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) {
            (Some(f), _) | (None, Some(f)) => f(size).cast(),
            (None, None) => std::ptr::null_mut(),
        };
        account(ptr, size, 0)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let size = padded(layout);
        if let Some(f) = raw::RedisModule_TryCalloc {
            if !admissible(size, 0) {
                return std::ptr::null_mut();
            }
            return account(f(1, size).cast(), size, 0);
        }
        let ptr = self.alloc(layout);
        if !ptr.is_null() {
            clear(ptr, size);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(f) = raw::RedisModule_Free {
            f(ptr.cast());
            account(ptr, 0, padded(layout));
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let size = padded(new_layout);
        let old = padded(layout);
        if !admissible(size, old) {
            return std::ptr::null_mut();
        }
        let new = match (raw::RedisModule_TryRealloc, raw::RedisModule_Realloc) {
            (Some(f), _) | (None, Some(f)) => f(ptr.cast(), size).cast(),
            (None, None) => std::ptr::null_mut(),
        };
        account(new, size, old)
    }
}
