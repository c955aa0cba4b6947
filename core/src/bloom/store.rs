//! Where a chain keeps its fields, link records and bit arrays (issue 40).
//!
//! A chain is one block, `[Head | bits of link 0]`, and the keyspace holds
//! a pointer to that block itself (no box around it). The first bit array
//! is in the block when it is at most [`INLINE_MAX`] bytes; above, it
//! saves nothing there and stays an allocation of its own.
//!
//! - **Compact**: a one-link chain whose fields fit the 16-byte head — the
//!   link's error rate, and a word packing its capacity, count, length,
//!   the growth factor and NONSCALING; every other field follows from those
//!   ([`Fields::derived`]). A 100-item filter is then one 160-byte
//!   allocation, where RedisBloom's takes three (chain, link array, bits).
//! - **General**: the head points to the records (16 bytes of chain fields
//!   and 56-byte link records), allocated apart; later links' bit arrays are their own
//!   allocations. A compact chain becomes general when it grows a second
//!   link.
//!
//! The block never moves while the chain lives (growing reallocates the
//! records, not the block), except when active defragmentation moves the
//! whole value ([`Store::moved`]).

use super::link::{total_bytes, Fields, Link, LooseLink};
use super::{FORCE64, NOROUND, NO_SCALING};
use crate::alloc::{size_class, AllocError, Block};
use std::alloc::{alloc, dealloc, realloc, Layout};
use std::mem::{align_of, size_of};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The first 16 bytes of a chain's block.
#[repr(C)]
struct Head {
    first: First,
    /// Compact: the packed fields, bit 0 set ([`COMPACT`]). General: the
    /// inline bit array's length times 2 (0 when it is not inline).
    word: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
union First {
    /// Compact: the link's error rate.
    error: f64,
    /// General: the records.
    records: NonNull<Records>,
}

/// The chain fields of a general chain; `links` link records follow.
#[repr(C)]
struct Records {
    options: u32,
    growth: u32,
    /// At most `dump::MAX_LINKS`.
    links: u32,
    _reserved: u32,
}

const HEAD: usize = size_of::<Head>();
/// Largest first bit array kept in the block.
const INLINE_MAX: usize = 64 * 1024;

/// Bit 0 of the word: the head is compact.
const COMPACT: u64 = 1;

/// A field of the compact word: `width` bits from bit `at`.
#[derive(Clone, Copy)]
struct Packed {
    at: u32,
    width: u32,
}

const SCALING: Packed = Packed { at: 1, width: 1 };
const GROWTH: Packed = Packed { at: 2, width: 8 };
/// The bit array's length in 8-byte words, minus one (1..=8192 words).
const WORDS: Packed = Packed { at: 10, width: 13 };
const ENTRIES: Packed = Packed { at: 23, width: 20 };
const SIZE: Packed = Packed { at: 43, width: 20 };

impl Packed {
    fn get(self, word: u64) -> u64 {
        (word >> self.at) & ((1 << self.width) - 1)
    }

    /// `word` with the field set to `v`, if `v` fits.
    fn put(self, word: u64, v: u64) -> Option<u64> {
        let mask = (1u64 << self.width) - 1;
        (v <= mask).then(|| (word & !(mask << self.at)) | (v << self.at))
    }
}

/// The compact word of a chain of `links`, when it can be compact.
fn compact_word(options: u32, growth: u32, links: &[LooseLink]) -> Option<u64> {
    let [link] = links else { return None };
    let scaling = match options {
        o if o == FORCE64 | NOROUND => 0,
        o if o == FORCE64 | NOROUND | NO_SCALING => 1,
        _ => return None,
    };
    let len = link.data.len();
    if len > INLINE_MAX || len % 8 != 0 || !link.f.is_derived(len) {
        return None;
    }
    let words = (len / 8).checked_sub(1)?;
    let word = SCALING.put(COMPACT, scaling)?;
    let word = GROWTH.put(word, u64::from(growth))?;
    let word = WORDS.put(word, words as u64)?;
    let word = ENTRIES.put(word, link.f.entries())?;
    SIZE.put(word, link.f.size())
}

/// The inline bit array's length a head's word records.
fn inline_len(word: u64) -> usize {
    if word & COMPACT != 0 {
        (WORDS.get(word) as usize + 1) * 8
    } else {
        (word >> 1) as usize
    }
}

fn records_layout(n: usize) -> Option<Layout> {
    let size = size_of::<Link>()
        .checked_mul(n)?
        .checked_add(size_of::<Records>())?;
    Layout::from_size_align(size, align_of::<Link>()).ok()
}

/// Record `i` of the records at `r`.
///
/// # Safety
/// `r` must be records allocated for more than `i` links.
unsafe fn record(r: NonNull<Records>, i: usize) -> *mut Link {
    // SAFETY: per the contract, the records follow the fields in the block.
    unsafe { r.add(1).cast::<Link>().as_ptr().add(i) }
}

/// A chain's storage, the block the keyspace points to. Invariants: the
/// head is compact, or its records are live, laid out by [`records_layout`]
/// for their `links ≥ 1` initialised records, record 0's bit array being
/// `inline` when it is not empty and every other a `Box<[u8]>` of its
/// length the store owns.
#[repr(C)]
pub(super) struct Store {
    head: Head,
    inline: [u8],
}

// SAFETY: the store owns its records and bit arrays exclusively, as a Box does.
unsafe impl Send for Store {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for Store {}

impl Store {
    /// A chain of `links` (at least one), which it takes over.
    pub(super) fn new(
        options: u32,
        growth: u32,
        links: Vec<LooseLink>,
    ) -> Result<Box<Store>, AllocError> {
        let first = links.first().ok_or(AllocError)?;
        if let Some(word) = compact_word(options, growth, &links) {
            let head = Head {
                first: First {
                    error: first.f.error(),
                },
                word,
            };
            return Store::block(head, &first.data);
        }
        let n = links.len();
        let inline: &[u8] = if first.data.len() <= INLINE_MAX {
            &first.data
        } else {
            &[]
        };
        let layout = records_layout(n).ok_or(AllocError)?;
        let count = u32::try_from(n).map_err(|_| AllocError)?;
        // SAFETY: the layout is at least the fields' size.
        let records = NonNull::new(unsafe { alloc(layout) })
            .ok_or(AllocError)?
            .cast::<Records>();
        let head = Head {
            first: First { records },
            word: (inline.len() as u64) << 1,
        };
        let mut block = match Store::block(head, inline) {
            Ok(block) => block,
            Err(e) => {
                // SAFETY: allocated above with this layout, never used.
                unsafe { dealloc(records.as_ptr().cast(), layout) };
                return Err(e);
            }
        };
        let tail = NonNull::from(&mut block.inline).cast::<u8>();
        let inline = block.inline.len();
        // SAFETY: the records hold `n` slots; record 0's bits were copied
        // into the block when inline, the others' boxes are leaked into
        // their records, which own them from then on.
        unsafe {
            records.write(Records {
                options,
                growth,
                links: count,
                _reserved: 0,
            });
            for (i, l) in links.into_iter().enumerate() {
                let len = l.data.len();
                let data = if i == 0 && inline != 0 {
                    tail
                } else {
                    NonNull::new_unchecked(Box::into_raw(l.data).cast::<u8>())
                };
                record(records, i).write(Link::placed(l.f, data, len));
            }
        }
        Ok(block)
    }

    /// A block holding `head` and a copy of `bits`.
    fn block(head: Head, bits: &[u8]) -> Result<Box<Store>, AllocError> {
        let layout = Layout::from_size_align(HEAD + bits.len(), align_of::<Head>())
            .map_err(|_| AllocError)?
            .pad_to_align();
        // SAFETY: the layout is at least HEAD bytes long.
        let start = NonNull::new(unsafe { alloc(layout) }).ok_or(AllocError)?;
        // SAFETY: the block holds the head, then `bits.len()` bytes (repr(C):
        // the tail is at HEAD), and is laid out as `Layout::for_value` of a
        // Store with that tail, which the box frees it with.
        unsafe {
            start.cast::<Head>().write(head);
            let tail = start.add(HEAD);
            std::ptr::copy_nonoverlapping(bits.as_ptr(), tail.as_ptr(), bits.len());
            let store = std::ptr::slice_from_raw_parts_mut(start.as_ptr(), bits.len());
            Ok(Box::from_raw(store as *mut Store))
        }
    }

    /// The store whose block starts at `start`.
    ///
    /// # Safety
    /// `start` must be the block of a live store (from `Box::into_raw`).
    pub(super) unsafe fn at(start: NonNull<u8>) -> NonNull<Store> {
        // SAFETY: per the contract, a head starts the block.
        let word = unsafe { start.cast::<Head>().as_ref().word };
        let store = std::ptr::slice_from_raw_parts_mut(start.as_ptr(), inline_len(word));
        // SAFETY: derived from a non-null pointer.
        unsafe { NonNull::new_unchecked(store as *mut Store) }
    }

    /// The records of a general chain; `None` when compact.
    fn records(&self) -> Option<NonNull<Records>> {
        if self.head.word & COMPACT != 0 {
            return None;
        }
        // SAFETY: the word says the records are the live field.
        Some(unsafe { self.head.first.records })
    }

    fn general_links(&self) -> &[Link] {
        match self.records() {
            // SAFETY: live records hold `links` initialised records, which
            // the store owns for as long as it is borrowed.
            Some(r) => unsafe {
                let n = r.as_ref().links as usize;
                std::slice::from_raw_parts(record(r, 0), n)
            },
            None => &[],
        }
    }

    /// The records of a general chain, to change; record 0's inline bits
    /// are reached through this borrow of the block, so that every write
    /// to them goes through it.
    fn general_links_mut(&mut self) -> &mut [Link] {
        let tail = NonNull::from(&mut self.inline).cast::<u8>();
        let inline = !self.inline.is_empty();
        let links = match self.records() {
            // SAFETY: as in `general_links`, borrowed mutably.
            Some(r) => unsafe {
                let n = r.as_ref().links as usize;
                std::slice::from_raw_parts_mut(record(r, 0), n)
            },
            None => return &mut [],
        };
        if let (true, Some(first)) = (inline, links.first_mut()) {
            // SAFETY: the inline array is record 0's, of its length.
            unsafe { first.set_data_ptr(tail) };
        }
        links
    }

    /// The record of a compact chain's link over `data`.
    fn compact_link(&self, data: NonNull<u8>) -> Option<Link> {
        let word = self.head.word;
        if word & COMPACT == 0 {
            return None;
        }
        // SAFETY: the word says the error is live.
        let error = unsafe { self.head.first.error };
        let len = self.inline.len();
        let f = Fields::derived(ENTRIES.get(word), error, SIZE.get(word), len);
        // SAFETY: `data` is the inline bit array of `len` bytes, which lives
        // as long as the store.
        Some(unsafe { Link::placed(f, data, len) })
    }

    pub(super) fn options(&self) -> u32 {
        match self.records() {
            // SAFETY: live records (type invariant).
            Some(r) => unsafe { r.as_ref().options },
            None if SCALING.get(self.head.word) != 0 => FORCE64 | NOROUND | NO_SCALING,
            None => FORCE64 | NOROUND,
        }
    }

    pub(super) fn growth(&self) -> u32 {
        match self.records() {
            // SAFETY: live records (type invariant).
            Some(r) => unsafe { r.as_ref().growth },
            None => GROWTH.get(self.head.word) as u32,
        }
    }

    pub(super) fn num_links(&self) -> usize {
        match self.records() {
            // SAFETY: live records (type invariant).
            Some(r) => unsafe { r.as_ref().links as usize },
            None => 1,
        }
    }

    pub(super) fn links(&self) -> Links<'_> {
        let data = NonNull::from(&self.inline).cast::<u8>();
        Links {
            one: self.compact_link(data),
            many: self.general_links(),
        }
    }

    /// The records, to change bits and counts (never to swap records: each
    /// belongs where it is), or to add one.
    pub(super) fn links_mut(&mut self) -> LinksMut<'_> {
        let data = NonNull::from(&mut self.inline).cast::<u8>();
        let one = self.compact_link(data);
        LinksMut { store: self, one }
    }

    /// How many links the chain has and their bit arrays' total length
    /// (wrapping), read without deriving a compact chain's link record:
    /// every write takes the chain's size twice (INFO bf's totals).
    pub(super) fn arrays(&self) -> (usize, u64) {
        if self.records().is_none() {
            return (1, self.inline.len() as u64);
        }
        let links = self.general_links();
        (links.len(), total_bytes(links))
    }

    /// [`Store::arrays`] of the first `n` links (of every link when it has
    /// fewer).
    pub(super) fn first_arrays(&self, n: usize) -> (usize, u64) {
        if self.records().is_none() {
            return self.arrays();
        }
        let links = self.general_links();
        let first = links.get(..n).unwrap_or(links);
        (first.len(), total_bytes(first))
    }

    /// Link `i`'s bit array, borrowed from the chain.
    pub(super) fn link_data(&self, i: usize) -> Option<&[u8]> {
        if self.records().is_none() {
            return (i == 0).then_some(&self.inline);
        }
        self.general_links().get(i).map(Link::data)
    }

    /// Appends `link` to a general chain; on failure it is unchanged.
    fn push(&mut self, link: LooseLink) -> Result<(), AllocError> {
        let r = self.records().ok_or(AllocError)?;
        let n = self.num_links();
        let count = u32::try_from(n + 1).map_err(|_| AllocError)?;
        let old = records_layout(n).ok_or(AllocError)?;
        let new = records_layout(n + 1).ok_or(AllocError)?;
        // SAFETY: the records were allocated with `old`; the new size is not 0.
        let r = NonNull::new(unsafe { realloc(r.as_ptr().cast(), old, new.size()) })
            .ok_or(AllocError)?
            .cast::<Records>();
        // SAFETY: the records moved to `r` with their content; the new slot
        // is written after the others, its box leaked into it.
        unsafe {
            self.head.first = First { records: r };
            (*r.as_ptr()).links = count;
            let len = link.data.len();
            let data = NonNull::new_unchecked(Box::into_raw(link.data).cast::<u8>());
            record(r, n).write(Link::placed(link.f, data, len));
        }
        Ok(())
    }

    /// Makes a compact chain general with `first` (its link, as recorded
    /// last) and `link`; on failure it is unchanged.
    fn spread(&mut self, first: &Link, link: LooseLink) -> Result<(), AllocError> {
        let layout = records_layout(2).ok_or(AllocError)?;
        // SAFETY: the layout is at least the fields' size.
        let r = NonNull::new(unsafe { alloc(layout) })
            .ok_or(AllocError)?
            .cast::<Records>();
        let (options, growth) = (self.options(), self.growth());
        let tail = NonNull::from(&mut self.inline).cast::<u8>();
        let len = self.inline.len();
        // SAFETY: the records hold two slots: the inline array's, and the new
        // link's, its box leaked into it.
        unsafe {
            r.write(Records {
                options,
                growth,
                links: 2,
                _reserved: 0,
            });
            record(r, 0).write(Link::placed(first.fields(), tail, len));
            let new_len = link.data.len();
            let data = NonNull::new_unchecked(Box::into_raw(link.data).cast::<u8>());
            record(r, 1).write(Link::placed(link.f, data, new_len));
        }
        self.head = Head {
            first: First { records: r },
            word: (len as u64) << 1,
        };
        Ok(())
    }

    /// A deep copy, allocated fallibly.
    pub(super) fn try_clone(&self) -> Result<Box<Store>, AllocError> {
        let links = self.links();
        let mut copies = Vec::new();
        copies
            .try_reserve_exact(links.len())
            .map_err(|_| AllocError)?;
        for l in links.iter() {
            copies.push(LooseLink::copy_of(l)?);
        }
        Store::new(self.options(), self.growth(), copies)
    }

    /// Whether record `i`'s bit array is a box of its own.
    fn owns(&self, i: usize) -> bool {
        i > 0 || self.inline.is_empty()
    }

    /// Bytes allocated, each allocation rounded to its size class.
    pub(super) fn allocated(&self) -> u64 {
        let block = size_class(std::mem::size_of_val(self) as u64);
        let links = self.general_links();
        let records = records_layout(links.len()).map_or(0, |l| l.size() as u64);
        let records = if links.is_empty() {
            0
        } else {
            size_class(records)
        };
        let own = |(i, l): (usize, &Link)| {
            if self.owns(i) {
                size_class(l.bytes())
            } else {
                0
            }
        };
        let arrays = links.iter().enumerate().map(own);
        arrays.fold(block.saturating_add(records), u64::saturating_add)
    }

    /// Every bit array of its own, for the server to move (active
    /// defragmentation) or release (lazy free).
    pub(super) fn for_each_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        let skip = usize::from(!self.owns(0));
        for link in self.general_links_mut().iter_mut().skip(skip) {
            f(&mut Bits(link));
        }
    }

    /// The records, which hold pointers: moved by active defragmentation,
    /// never released before the drop.
    pub(super) fn for_each_linked_block_mut(&mut self, f: &mut dyn FnMut(&mut dyn Block)) {
        if self.records().is_some() {
            f(&mut RecordsBlock(self));
        }
    }

    /// Points record 0 at the inline bits again after the block moved.
    pub(super) fn moved(&mut self) {
        self.general_links_mut();
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let Some(r) = self.records() else { return };
        for (i, l) in self.general_links().iter().enumerate() {
            if self.owns(i) {
                let array =
                    std::ptr::slice_from_raw_parts_mut(l.data_ptr().as_ptr(), l.data().len());
                // SAFETY: an owned bit array is a Box<[u8]> of this length.
                drop(unsafe { Box::from_raw(array) });
            }
        }
        if let Some(layout) = records_layout(self.num_links()) {
            // SAFETY: the records were allocated with this layout.
            unsafe { dealloc(r.as_ptr().cast(), layout) };
        }
    }
}

/// A chain's link records as a slice: a general chain's own, or the one a
/// compact chain's fields make.
pub struct Links<'a> {
    one: Option<Link>,
    many: &'a [Link],
}

impl Deref for Links<'_> {
    type Target = [Link];

    fn deref(&self) -> &[Link] {
        match &self.one {
            Some(link) => std::slice::from_ref(link),
            None => self.many,
        }
    }
}

/// [`Links`] to change bits and counts, or to add a link; a compact
/// chain's count is written back when it is dropped.
pub struct LinksMut<'a> {
    store: &'a mut Store,
    one: Option<Link>,
}

impl LinksMut<'_> {
    pub(super) fn options(&self) -> u32 {
        self.store.options()
    }

    pub(super) fn growth(&self) -> u32 {
        self.store.growth()
    }

    /// Appends `link`; on failure the chain is unchanged.
    pub(super) fn push(&mut self, link: LooseLink) -> Result<(), AllocError> {
        match self.one.take() {
            Some(first) => self.store.spread(&first, link).inspect_err(|_| {
                self.one = Some(first);
            }),
            None => self.store.push(link),
        }?;
        crate::reshape::reshaped();
        Ok(())
    }
}

impl Deref for LinksMut<'_> {
    type Target = [Link];

    fn deref(&self) -> &[Link] {
        match &self.one {
            Some(link) => std::slice::from_ref(link),
            None => self.store.general_links(),
        }
    }
}

impl DerefMut for LinksMut<'_> {
    fn deref_mut(&mut self) -> &mut [Link] {
        match &mut self.one {
            Some(link) => std::slice::from_mut(link),
            None => self.store.general_links_mut(),
        }
    }
}

impl Drop for LinksMut<'_> {
    fn drop(&mut self) {
        if let Some(link) = &self.one {
            // A count stays within the capacity, which fits the field.
            if let Some(word) = SIZE.put(self.store.head.word, link.size()) {
                self.store.head.word = word;
            }
        }
    }
}

/// The records as a [`Block`]: their fields stand for them (defragmentation
/// needs the address; records are never released before the drop).
struct RecordsBlock<'a>(&'a mut Store);

impl Block for RecordsBlock<'_> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self.0.records() {
            // SAFETY: the fields are four initialised u32s without padding,
            // owned by the store, borrowed mutably.
            Some(r) => unsafe {
                std::slice::from_raw_parts_mut(r.as_ptr().cast(), size_of::<Records>())
            },
            None => &mut [],
        }
    }

    unsafe fn adopt(&mut self, moved: NonNull<u8>) {
        self.0.head.first = First {
            records: moved.cast(),
        };
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
