//! Windowed Count-Min Sketch (type `CMSw-rsbl`, docs/cms-window.md): the
//! counts of the last `span` milliseconds.
//!
//! A ring of `B` buckets, each a sketch of the key's width, depth and cell
//! size, plus the sum of the closed buckets (all but the youngest), which
//! changes only at a shift: derived, never saved. An increment writes the
//! youngest bucket alone (as fast as a plain sketch's), its range and
//! reply those of the window's sum `closed + youngest`; a query reads
//! that sum, minus the buckets a read sees as expired (shifts due by the
//! reader's clock are applied virtually, nothing is written); a shift
//! adds the youngest to the closed sum, takes the oldest out of it and
//! zeroes it, and it becomes the youngest.

use super::batch;
use super::{
    byte_len, check_dims, CellSize, CountMinSketch, CreateError, Incremented, MAX_TOTAL,
    RECORD_BYTES,
};
use crate::alloc::{AllocError, Block};
use crate::rdb::{LoadError, RdbSink, RdbSource};
use crate::window::{Ring, WindowSpec, Windowed};
/// Most counter bytes of a windowed sketch (buckets and their sum): its
/// DUMP payload, which the AOF rewrite sends as one RESTORE argument, then
/// stays well below the 512 MB bulk limit.
pub const MAX_COUNTER_BYTES: u64 = 256 << 20;
/// The encoding written: the buckets alone. Encoding 0, which also saved
/// their sum, is still read.
pub const WINDOW_ENCODING_VERSION: i32 = 1;

/// The data type (`TYPE` reply, RDB module id). rsbloom's own: RedisBloom
/// cannot load it, and does not know `CMS.TICK` (the probe).
pub const WINDOW_TYPE: crate::ModuleType = crate::ModuleType {
    name: c"CMSw-rsbl",
    encoding_version: WINDOW_ENCODING_VERSION,
    commands: "CMS.",
    family: "cmsw",
    probe: "CMS.TICK",
    chunked: None,
    volatile: None,
    added: None,
    flavour: None,
    config: &[],
    // The tick starts the clock at a fixed time, so that the tour makes
    // the same value on every server whenever it runs: with buckets of
    // 5 years, two runs differ only if they straddle 2028-11-12 22:13 UTC
    // (or a later multiple of 5 years from the tick).
    tour: &[
        &[
            "CMS.INITBYDIM",
            "K",
            "100",
            "5",
            "WINDOW",
            "315360000000",
            "BUCKETS",
            "2",
        ],
        &["CMS.TICK", "K", "1700000000000"],
        &["CMS.INCRBY", "K", "a", "3", "b", "1"],
        &["CMS.QUERY", "K", "a", "z"],
        &["CMS.INFO", "K"],
    ],
};

/// Why a windowed sketch was not created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowError {
    /// The sketch's own checks (`CMS: invalid init arguments`, memory).
    Sketch(CreateError),
    /// Window or bucket count out of range (the parser checks them).
    Window,
    /// More than [`MAX_COUNTER_BYTES`] of counters.
    TooLarge,
}

#[derive(PartialEq, Eq)]
pub struct WindowedCms {
    /// The sum of the closed buckets (all but the youngest).
    closed: CountMinSketch,
    ring: Ring<CountMinSketch>,
}

impl WindowedCms {
    /// An empty windowed sketch; its clock starts with the first write.
    pub fn new(
        width: u64,
        depth: u64,
        cell_size: CellSize,
        w: WindowSpec,
    ) -> Result<Self, WindowError> {
        Self::new_size(width, depth, cell_size, w)?;
        let sketch = || CountMinSketch::new(width, depth, cell_size).map_err(WindowError::Sketch);
        Ok(WindowedCms {
            closed: sketch()?,
            ring: Ring::new(w, sketch, WindowError::Sketch(CreateError::OutOfMemory))?,
        })
    }

    /// MEMORY USAGE of the sketch [`WindowedCms::new`] would create, or
    /// why it would refuse it; nothing is allocated.
    pub fn new_size(
        width: u64,
        depth: u64,
        cell_size: CellSize,
        w: WindowSpec,
    ) -> Result<u64, WindowError> {
        check_dims(width, depth).map_err(WindowError::Sketch)?;
        if !w.is_valid() {
            return Err(WindowError::Window);
        }
        let sketches = w.buckets + 1;
        let counters = byte_len(width, depth, cell_size)
            .and_then(|b| b.checked_mul(sketches))
            .filter(|&b| b <= MAX_COUNTER_BYTES)
            .ok_or(WindowError::TooLarge)?;
        Ok(WINDOW_RECORD_BYTES + sketches * RECORD_BYTES + counters)
    }

    pub fn width(&self) -> u64 {
        self.closed.width()
    }

    pub fn depth(&self) -> u64 {
        self.closed.depth()
    }

    pub fn cell_size(&self) -> CellSize {
        self.closed.cell_size()
    }

    /// The total of increments within the window as of `now_ms`.
    pub fn count(&self, now_ms: u64) -> i64 {
        let gone = (self.ring.expired(now_ms)).fold(0u64, |s, b| s.saturating_add(b.counter));
        let all = self
            .closed
            .counter
            .saturating_add(self.ring.youngest().counter);
        i64::try_from(all.saturating_sub(gone)).unwrap_or(i64::MAX)
    }

    /// MEMORY USAGE: the record, the closed sum and the buckets, all of
    /// one shape (O(1): INFO's accounting asks after every write).
    pub fn size_bytes(&self) -> u64 {
        let sketches = self.ring.buckets().saturating_add(1);
        (self.closed.size_bytes().saturating_mul(sketches)).saturating_add(WINDOW_RECORD_BYTES)
    }

    /// CMS.INCRBY on a window (docs/cms-window.md §1): each increment to the
    /// youngest bucket, in order, within the window's ranges; the estimate
    /// over the window after it, or why nothing changed. Call
    /// [`Windowed::advance`] first.
    pub fn increment_batch<T>(
        &mut self,
        items: &[T],
        item: impl Fn(&T) -> &[u8],
        inc: impl Fn(&T) -> i64,
        mut each: impl FnMut(Incremented),
    ) {
        let g = self.closed.geometry();
        let Some(blocks) = g.blocks(items.len()) else {
            for t in items {
                let (closed, bucket) = (&self.closed, self.ring.youngest_mut());
                each(bucket.increment_over(closed, g.cells(item(t)), inc(t)));
            }
            return;
        };
        batch::pipelined(
            blocks,
            self,
            items,
            item,
            |s, c| {
                s.closed.prefetch(c);
                s.ring.youngest().prefetch(c);
            },
            |s, t, cols| {
                let (closed, bucket) = (&s.closed, s.ring.youngest_mut());
                each(bucket.increment_over(closed, g.cells_at(cols), inc(t)))
            },
        );
    }

    /// The smallest over the rows of the window's counter less the
    /// expired buckets' (`expired` are those, fewer than B).
    #[inline]
    fn query_cells<'a>(
        &self,
        cells: impl Iterator<Item = usize>,
        expired: impl Iterator<Item = &'a CountMinSketch> + Clone,
    ) -> u64 {
        let youngest = self.ring.youngest();
        cells.fold(u64::MAX, |min, c| {
            let gone = (expired.clone()).fold(0u64, |s, b| s.saturating_add(b.load(c)));
            let all = self.closed.load(c).saturating_add(youngest.load(c));
            min.min(all.saturating_sub(gone))
        })
    }

    /// CMS.QUERY on a window as of `now_ms`: shifts due then are applied
    /// virtually (the buckets they would expire are left out).
    pub fn query_batch<T: AsRef<[u8]>>(&self, items: &[T], now_ms: u64, mut each: impl FnMut(u64)) {
        if self.ring.live(now_ms).next().is_none() {
            items.iter().for_each(|_| each(0));
            return;
        }
        let expired = self.ring.expired(now_ms);
        let g = self.closed.geometry();
        let Some(blocks) = g.blocks(items.len()) else {
            for t in items {
                each(self.query_cells(g.cells(t.as_ref()), expired.clone()));
            }
            return;
        };
        batch::pipelined(
            blocks,
            self,
            items,
            T::as_ref,
            |s, c| {
                s.closed.prefetch(c);
                s.ring.youngest().prefetch(c);
            },
            |s, _, cols| each(s.query_cells(g.cells_at(cols), expired.clone())),
        );
    }

    /// A deep copy (COPY); fails cleanly when memory is short.
    pub fn try_clone(&self) -> Result<Self, AllocError> {
        Ok(WindowedCms {
            closed: self.closed.try_clone()?,
            ring: self.ring.try_clone_with(CountMinSketch::try_clone)?,
        })
    }

    /// The counter arrays, for active defragmentation and lazy free.
    pub fn blocks_mut(&mut self) -> impl Iterator<Item = &mut dyn Block> {
        std::iter::once(&mut self.closed)
            .chain(self.ring.slots_mut().iter_mut())
            .map(|s| s.block_mut())
    }

    /// The RDB value (docs/cms-window.md §6): width, depth, cell size,
    /// span, buckets, head, last shift, then every bucket by physical
    /// position, each as its total and its counter string.
    pub fn rdb_save<S: RdbSink>(&self, sink: &mut S) {
        for v in [self.width(), self.depth(), self.cell_size().bytes() as u64] {
            sink.write_unsigned(v);
        }
        self.ring.save_header(sink);
        for s in self.ring.slots() {
            sink.write_unsigned(s.counter);
            sink.write_buffer(&s.cells);
        }
    }

    /// Reads a value, refusing any the operations could not have made: a
    /// header out of range, a counter string of another size, a counter
    /// or total out of range, a window whose sum is out of range, or
    /// (encoding 0) a saved sum other than the buckets'.
    pub fn rdb_load<S: RdbSource>(src: &mut S, encver: i32) -> Result<Self, LoadError> {
        if !(0..=WINDOW_ENCODING_VERSION).contains(&encver) {
            return Err(LoadError::UnsupportedVersion);
        }
        let mut h = [0u64; 3];
        for v in &mut h {
            *v = src.read_unsigned()?;
        }
        let [width, depth, cell] = h;
        let cell_size = CellSize::from_bytes(cell).ok_or(LoadError::Invalid)?;
        let header = Ring::<CountMinSketch>::load_header(src)?;
        Self::new_size(width, depth, cell_size, header.spec).map_err(|_| LoadError::Invalid)?;
        let len = byte_len(width, depth, cell_size).ok_or(LoadError::Invalid)?;
        let read = |src: &mut S| -> Result<CountMinSketch, LoadError> {
            let counter = src.read_unsigned()?;
            let cells = src.read_buffer()?;
            let s = CountMinSketch {
                cells,
                width,
                counter,
                cell_size,
            };
            if s.cells.len() as u64 != len
                || counter > MAX_TOTAL
                || !s.cells_in_range()
                || !s.rows_sum_to_total()
            {
                return Err(LoadError::Invalid);
            }
            Ok(s)
        };
        let saved_sum = if encver == 0 { Some(read(src)?) } else { None };
        let mut ring = Vec::new();
        ring.try_reserve_exact(header.spec.buckets as usize)
            .map_err(|_| LoadError::Invalid)?;
        for _ in 0..header.spec.buckets {
            ring.push(read(src)?);
        }
        let ring = Ring::from_parts(header, ring)?;
        let closed = closed_sum(&ring, width, depth, cell_size)?;
        let v = WindowedCms { closed, ring };
        if let Some(sum) = saved_sum {
            let mut all = v.closed.try_clone().map_err(|_| LoadError::Invalid)?;
            all.add(v.ring.youngest());
            if all != sum {
                return Err(LoadError::Invalid);
            }
        }
        Ok(v)
    }
}

/// The closed buckets' sum (all but the youngest), if the window's sum
/// (with the youngest) keeps every counter and the total in range.
fn closed_sum(
    ring: &Ring<CountMinSketch>,
    width: u64,
    depth: u64,
    cell_size: CellSize,
) -> Result<CountMinSketch, LoadError> {
    let mut closed =
        CountMinSketch::new(width, depth, cell_size).map_err(|_| LoadError::Invalid)?;
    let cells = closed.cells.len() / cell_size.bytes();
    let max = cell_size.max();
    // Each counter at most `max` ≤ 2^63: a sum of two cannot wrap.
    let within = |a: u64, b: u64, max: u64| a.checked_add(b).filter(|&v| v <= max);
    for b in (1..ring.buckets()).filter_map(|a| ring.at_age(a)) {
        closed.counter = within(closed.counter, b.counter, MAX_TOTAL).ok_or(LoadError::Invalid)?;
        for c in 0..cells {
            let v = within(closed.load(c), b.load(c), max).ok_or(LoadError::Invalid)?;
            closed.store(c, v);
        }
    }
    let y = ring.youngest();
    let fits = within(closed.counter, y.counter, MAX_TOTAL).is_some()
        && (0..cells).all(|c| within(closed.load(c), y.load(c), max).is_some());
    fits.then_some(closed).ok_or(LoadError::Invalid)
}

impl Windowed for WindowedCms {
    type Bucket = CountMinSketch;

    fn ring(&self) -> &Ring<CountMinSketch> {
        &self.ring
    }

    /// At the first shift the youngest joins the closed sum; each time the
    /// oldest bucket leaves it, is zeroed and becomes the youngest.
    fn advance(&mut self, now_ms: u64) -> u64 {
        if self.ring.due(now_ms) > 0 {
            self.closed.add(self.ring.youngest());
        }
        let closed = &mut self.closed;
        self.ring.advance(now_ms, |b| {
            closed.subtract(b);
            b.cells.fill(0);
            b.counter = 0;
        })
    }
}

/// The windowed record beside its sketches' (MEMORY USAGE).
const WINDOW_RECORD_BYTES: u64 = std::mem::size_of::<WindowedCms>() as u64;

impl CountMinSketch {
    /// Whether every row sums to the total, as in a bucket or a window's
    /// sum: each change moves one counter a row, all or none (a plain
    /// sketch may differ: RedisBloom's counters wrap, and MERGE weighs).
    fn rows_sum_to_total(&self) -> bool {
        let width = self.width as usize;
        (0..self.depth() as usize).all(|r| {
            let row = (r * width..(r + 1) * width).map(|c| u128::from(self.load(c)));
            row.sum::<u128>() == u128::from(self.counter)
        })
    }

    /// Adds `other` (of this shape; the window keeps the sums in range)
    /// counter by counter, and its total.
    fn add(&mut self, other: &CountMinSketch) {
        self.combine(other, u64::saturating_add);
    }

    /// Subtracts `other` (of this shape, every counter at most this one's)
    /// counter by counter, and its total.
    fn subtract(&mut self, other: &CountMinSketch) {
        self.combine(other, u64::saturating_sub);
    }

    fn combine(&mut self, other: &CountMinSketch, op: fn(u64, u64) -> u64) {
        let cells = self.cells.len() / self.cell_size.bytes();
        for c in 0..cells {
            let v = op(self.load(c), other.load(c));
            self.store(c, v);
        }
        self.counter = op(self.counter, other.counter);
    }
}

impl std::fmt::Debug for WindowedCms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowedCms")
            .field("closed", &self.closed)
            .field("ring", &self.ring)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
