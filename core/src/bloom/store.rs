//! Where a chain keeps its fields, link records and bit arrays (issue 40).
//!
//! One block holds the first link's bit array, the chain fields and the
//! link records: `[bits of link 0 | Head | Link × n]`. A one-link filter,
//! the common case, is that single allocation (RedisBloom's takes three:
//! chain, link array, bit array); later links' bit arrays are their own
//! allocations. A first bit array above [`INLINE_MAX`] stays its own
//! allocation too (`[Head | Link × n]`): inlining saves nothing there,
//! and a scale-out would copy it with the block.
//!
//! The bit array comes first so the block's start is a byte array that
//! active defragmentation and lazy freeing can be handed
//! ([`crate::alloc::Block`]).

use super::link::{Link, LooseLink};
use crate::alloc::{AllocError, Block};
use std::alloc::{alloc, dealloc, realloc, Layout};
use std::mem::{align_of, size_of};
use std::ptr::NonNull;

/// The chain fields. Four `u32`s, no padding: the block of a chain whose
/// first bit array is not inline starts with it, as bytes (see [`Whole`]).
#[repr(C)]
struct Head {
    options: u32,
    growth: u32,
    /// Number of link records (at most `dump::MAX_LINKS`).
    links: u32,
    /// Offset of the head in the block: the inline bit array's length
    /// rounded up to the records' alignment, 0 when it is not inline.
    at: u32,
}

const HEAD: usize = size_of::<Head>();
const ALIGN: usize = align_of::<Link>();
/// Largest first bit array kept in the block.
const INLINE_MAX: usize = 64 * 1024;

/// The block of a chain of `n` links whose head is at `at`.
fn block_layout(at: usize, n: usize) -> Option<Layout> {
    let size = size_of::<Link>().checked_mul(n)?.checked_add(at + HEAD)?;
    Layout::from_size_align(size, ALIGN).ok()
}

/// A chain's storage. Invariants: `head` points into a live block laid out
/// by [`block_layout`] for its `at` and `links` fields, holding `links ≥ 1`
/// initialised records; each record's bit array is the block's start when
/// `at ≠ 0` and it is record 0, otherwise a `Box<[u8]>` of its length that
/// the store owns.
pub(super) struct Store {
    head: NonNull<Head>,
}

// SAFETY: the store owns its block and bit arrays exclusively, as a Box does.
unsafe impl Send for Store {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Store {}

impl Store {
    /// A block for `links` (at least one), which it takes over.
    pub(super) fn new(
        options: u32,
        growth: u32,
        links: Vec<LooseLink>,
    ) -> Result<Store, AllocError> {
        let len0 = links.first().ok_or(AllocError)?.data.len();
        let at = if len0 <= INLINE_MAX {
            len0.next_multiple_of(ALIGN)
        } else {
            0
        };
        let head = Head {
            options,
            growth,
            links: u32::try_from(links.len()).map_err(|_| AllocError)?,
            at: u32::try_from(at).map_err(|_| AllocError)?,
        };
        let layout = block_layout(at, links.len()).ok_or(AllocError)?;
        // SAFETY: the layout is at least HEAD bytes long.
        let start = NonNull::new(unsafe { alloc(layout) }).ok_or(AllocError)?;
        // SAFETY: the block holds the head at `at` (aligned: `at` is a
        // multiple of ALIGN) and `n` records after it; record 0's bits are
        // copied to the block's start when inline, the others' boxes are
        // leaked into their records, which own them from then on.
        unsafe {
            let head_ptr = start.add(at).cast::<Head>();
            head_ptr.write(head);
            let records = head_ptr.cast::<u8>().add(HEAD).cast::<Link>();
            for (i, l) in links.into_iter().enumerate() {
                let len = l.data.len();
                let data = if i == 0 && at != 0 {
                    std::ptr::copy_nonoverlapping(l.data.as_ptr(), start.as_ptr(), len);
                    start
                } else {
                    NonNull::new_unchecked(Box::into_raw(l.data).cast::<u8>())
                };
                records.add(i).write(Link::placed(l.f, data, len));
            }
            Ok(Store { head: head_ptr })
        }
    }

    fn head(&self) -> &Head {
        // SAFETY: the head is live and initialised (type invariant).
        unsafe { self.head.as_ref() }
    }

    pub(super) fn options(&self) -> u32 {
        self.head().options
    }

    pub(super) fn growth(&self) -> u32 {
        self.head().growth
    }

    fn at(&self) -> usize {
        self.head().at as usize
    }

    /// Whether record `i`'s bit array is a box of its own.
    fn owns(&self, i: usize) -> bool {
        i > 0 || self.at() == 0
    }

    fn records(&self) -> *mut Link {
        // SAFETY: the records follow the head in the block.
        unsafe { self.head.as_ptr().cast::<u8>().add(HEAD).cast::<Link>() }
    }

    fn start(&self) -> *mut u8 {
        // SAFETY: the head is `at` bytes into the block.
        unsafe { self.head.as_ptr().cast::<u8>().sub(self.at()) }
    }

    fn layout(&self) -> Option<Layout> {
        block_layout(self.at(), self.links().len())
    }

    pub(super) fn links(&self) -> &[Link] {
        // SAFETY: `links` initialised records follow the head.
        unsafe { std::slice::from_raw_parts(self.records(), self.head().links as usize) }
    }

    /// The records, to change bits and counts (never to swap records: each
    /// belongs where it is).
    pub(super) fn links_mut(&mut self) -> &mut [Link] {
        let n = self.head().links as usize;
        // SAFETY: as in `links`, with the store borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.records(), n) }
    }

    /// Appends `link`; on failure the store is unchanged.
    pub(super) fn push(&mut self, link: LooseLink) -> Result<(), AllocError> {
        let (at, n) = (self.at(), self.links().len());
        let count = u32::try_from(n + 1).map_err(|_| AllocError)?;
        let old = self.layout().ok_or(AllocError)?;
        let new = block_layout(at, n + 1).ok_or(AllocError)?;
        // SAFETY: the block was allocated with `old`; the new size is not 0.
        let start =
            NonNull::new(unsafe { realloc(self.start(), old, new.size()) }).ok_or(AllocError)?;
        // SAFETY: the block moved to `start` with its content (the old
        // pointers are dead): re-derive the head and the inline bits'
        // pointer, then write the new record after the others.
        unsafe {
            self.head = start.add(at).cast::<Head>();
            self.head.as_mut().links = count;
            if at != 0 {
                (*self.records()).set_data_ptr(start);
            }
            let len = link.data.len();
            let data = NonNull::new_unchecked(Box::into_raw(link.data).cast::<u8>());
            self.records().add(n).write(Link::placed(link.f, data, len));
        }
        Ok(())
    }

    /// A deep copy, allocated fallibly.
    pub(super) fn try_clone(&self) -> Result<Store, AllocError> {
        let mut links = Vec::new();
        links
            .try_reserve_exact(self.links().len())
            .map_err(|_| AllocError)?;
        for l in self.links() {
            links.push(LooseLink::copy_of(l)?);
        }
        Store::new(self.options(), self.growth(), links)
    }

    /// Bytes allocated, each allocation rounded to its size class.
    pub(super) fn allocated(&self) -> u64 {
        let block = self.layout().map_or(0, |l| l.size() as u64);
        let own = |(i, l): (usize, &Link)| {
            if self.owns(i) {
                crate::alloc::size_class(l.bytes())
            } else {
                0
            }
        };
        let arrays = self.links().iter().enumerate().map(own);
        arrays.fold(crate::alloc::size_class(block), u64::saturating_add)
    }

    /// The block, then every bit array of its own, for the server to move
    /// (active defragmentation) or release (lazy free).
    pub(super) fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        let at = self.at();
        f(&mut Whole { store: self, at });
        let skip = usize::from(!self.owns(0));
        for link in self.links_mut().iter_mut().skip(skip) {
            f(&mut Bits(link));
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let layout = self.layout();
        for (i, l) in self.links().iter().enumerate() {
            if self.owns(i) {
                let array =
                    std::ptr::slice_from_raw_parts_mut(l.data_ptr().as_ptr(), l.data().len());
                // SAFETY: an owned bit array is a Box<[u8]> of this length.
                drop(unsafe { Box::from_raw(array) });
            }
        }
        if let Some(layout) = layout {
            // SAFETY: the block was allocated with this layout.
            unsafe { dealloc(self.start(), layout) };
        }
    }
}

/// The block as a [`Block`]: its start is the inline bit array, or else
/// the head's 16 bytes.
struct Whole<'a> {
    store: &'a mut Store,
    /// Read before the block moves: the head is unreadable until adopted.
    at: usize,
}

impl Block for Whole<'_> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        let head = self.store.head.as_ptr().cast::<u8>();
        match self.store.links_mut().first_mut() {
            Some(first) if self.at != 0 => first.data_mut(),
            // SAFETY: the head is four initialised u32s without padding, and
            // the store is borrowed mutably.
            _ => unsafe { std::slice::from_raw_parts_mut(head, HEAD) },
        }
    }

    unsafe fn adopt(&mut self, moved: NonNull<u8>) {
        // SAFETY: `moved` is a copy of the whole block (the server copies
        // the allocation), so the head is `at` bytes in; the inline bits,
        // if any, are at its start.
        unsafe {
            self.store.head = moved.add(self.at).cast::<Head>();
            if self.at != 0 {
                (*self.store.records()).set_data_ptr(moved);
            }
        }
    }
}

/// A link's own bit array as a [`Block`].
struct Bits<'a>(&'a mut Link);

impl Block for Bits<'_> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.0.data_mut()
    }

    unsafe fn adopt(&mut self, moved: NonNull<u8>) {
        // SAFETY: `moved` holds the array, now owned through this record.
        unsafe { self.0.set_data_ptr(moved) };
    }
}
