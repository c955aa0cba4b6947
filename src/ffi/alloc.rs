//! Global allocator: the server's allocator, so module memory shows in
//! `used_memory` and counts against `maxmemory`.
//!
//! Uses the server's *try* allocation functions where they exist so that a
//! failed allocation reaches Rust as a null pointer: `core::alloc::try_zeroed`
//! then answers "Insufficient memory" instead of the server aborting. Redis 7.0
//! has `TryAlloc` but not `TryCalloc`/`TryRealloc`; zeroed memory then comes
//! from `TryAlloc` plus an explicit clear.

use std::alloc::{GlobalAlloc, Layout};

use redis_module::raw;

pub struct ServerAllocator;

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
        match (raw::RedisModule_TryAlloc, raw::RedisModule_Alloc) {
            (Some(f), _) | (None, Some(f)) => f(size).cast(),
            (None, None) => std::ptr::null_mut(),
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let size = padded(layout);
        if let Some(f) = raw::RedisModule_TryCalloc {
            return f(1, size).cast();
        }
        let ptr = self.alloc(layout);
        if !ptr.is_null() {
            std::ptr::write_bytes(ptr, 0, size);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        if let Some(f) = raw::RedisModule_Free {
            f(ptr.cast());
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        let size = padded(new_layout);
        match (raw::RedisModule_TryRealloc, raw::RedisModule_Realloc) {
            (Some(f), _) | (None, Some(f)) => f(ptr.cast(), size).cast(),
            (None, None) => std::ptr::null_mut(),
        }
    }
}
