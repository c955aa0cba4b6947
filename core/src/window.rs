//! The ring of time buckets every windowed type shares (windowed CMS,
//! Top-K, T-Digest): `B` buckets covering a window of `span` ms, the
//! youngest taking the writes, on the deterministic clock of
//! `crate::clock` (docs/cms-window.md §1–§2). A type keeps what its
//! buckets hold and how they combine; the ring keeps which bucket is
//! which age, when they shift, and the `WINDOW`/`BUCKETS` options.

use crate::alloc::AllocError;
use crate::args::{parse_i64, ArgError};
use crate::clock::{period_ms, Aging, Clock, MAX_MS, MAX_SPAN_MS};
use crate::rdb::{LoadError, RdbSink, RdbSource};

/// Most buckets of a window.
pub const MAX_BUCKETS: u64 = 1024;
/// Buckets when `BUCKETS` is not given: the window edge within 1/60 of it.
pub const DEFAULT_BUCKETS: u64 = 60;

/// A time window cut into buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSpec {
    pub span_ms: u64,
    pub buckets: u64,
}

impl WindowSpec {
    /// Span in 1 ms ..= ten years, 1..=1024 buckets of at least 1 ms.
    pub fn is_valid(self) -> bool {
        (1..=MAX_SPAN_MS).contains(&self.span_ms)
            && (1..=MAX_BUCKETS).contains(&self.buckets)
            && self.span_ms >= self.buckets
    }

    /// Milliseconds a bucket covers (the span over the buckets, rounded up).
    pub fn period_ms(self) -> u64 {
        period_ms(self.span_ms, self.buckets)
    }
}

/// A family's texts for the window options' errors (each names its limit).
#[derive(Debug, Clone, Copy)]
pub struct WindowErrors {
    /// WINDOW not an integer in [1, MAX_SPAN_MS].
    pub window: ArgError,
    /// BUCKETS not an integer in [1, MAX_BUCKETS].
    pub buckets: ArgError,
    /// A bucket shorter than 1 ms.
    pub below: ArgError,
}

/// Whether creation options ask for a window: `WINDOW` (any case) at a
/// token position (options are token/value pairs). Each family
/// recognises it only where RedisBloom answers an error, so no reply
/// RedisBloom gives changes.
pub fn asks_for_window<A: AsRef<[u8]>>(options: &[A]) -> bool {
    (options.iter().step_by(2)).any(|t| t.as_ref().eq_ignore_ascii_case(b"WINDOW"))
}

/// `WINDOW ms` and `BUCKETS n` among a creation's token/value pairs: the
/// family's parser offers it each pair it does not know itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct WindowOptions {
    span_ms: Option<u64>,
    buckets: Option<u64>,
}

/// What [`WindowOptions::take`] did with a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// A window option, its value checked.
    Yes,
    /// A window option given a second time.
    Again,
    /// Not a window option.
    No,
}

impl WindowOptions {
    /// Takes `token value` if it is a window option, checking the value.
    pub fn take(
        &mut self,
        token: &[u8],
        value: &[u8],
        e: &WindowErrors,
    ) -> Result<Taken, ArgError> {
        let (slot, v) = if token.eq_ignore_ascii_case(b"WINDOW") {
            (&mut self.span_ms, ranged(value, MAX_SPAN_MS, e.window)?)
        } else if token.eq_ignore_ascii_case(b"BUCKETS") {
            (&mut self.buckets, ranged(value, MAX_BUCKETS, e.buckets)?)
        } else {
            return Ok(Taken::No);
        };
        Ok(match slot.replace(v) {
            Some(_) => Taken::Again,
            None => Taken::Yes,
        })
    }

    /// The window asked for (None without WINDOW): BUCKETS defaults to 60,
    /// or to the window in ms if shorter; then the window against the
    /// buckets.
    pub fn finish(self, e: &WindowErrors) -> Result<Option<WindowSpec>, ArgError> {
        let Some(span_ms) = self.span_ms else {
            return Ok(None);
        };
        let w = WindowSpec {
            span_ms,
            buckets: self.buckets.unwrap_or(DEFAULT_BUCKETS.min(span_ms)),
        };
        if !w.is_valid() {
            return Err(e.below);
        }
        Ok(Some(w))
    }
}

/// An integer in 1..=max.
fn ranged(arg: &[u8], max: u64, err: ArgError) -> Result<u64, ArgError> {
    parse_i64(arg)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|v| (1..=max).contains(v))
        .ok_or(err)
}

/// A value on a ring of time buckets (windowed CMS, Top-K, T-Digest): its
/// ring, and what expiring a bucket means for it. It ages by its ring's
/// clock ([`Aging`]).
pub trait Windowed {
    type Bucket;

    /// The window: its span, buckets and clock.
    fn ring(&self) -> &Ring<Self::Bucket>;

    /// Starts the clock at `now_ms`, or applies the shifts due then
    /// ([`Ring::advance`] and what the type derives from its buckets).
    /// Deterministic in the value and `now_ms`. Answers the shifts due.
    fn advance(&mut self, now_ms: u64) -> u64;
}

impl<W: Windowed> Aging for W {
    fn needs_advance(&self, now_ms: u64) -> bool {
        self.ring().needs_advance(now_ms)
    }

    fn advance(&mut self, now_ms: u64) -> u64 {
        Windowed::advance(self, now_ms)
    }
}

/// The ring's part of an RDB value, read and checked before the buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingHeader {
    pub spec: WindowSpec,
    pub head: u64,
    pub last_shift_ms: u64,
}

/// `B` buckets by physical position: the youngest at `head`, age `a` at
/// `(head + a) mod B`. Never empty (`B ≥ 1`) and `head < B`: every
/// constructor checks it, so the index below cannot fail.
#[derive(Clone, PartialEq, Eq)]
pub struct Ring<T> {
    slots: Box<[T]>,
    span_ms: u64,
    head: u64,
    /// Master's clock at the last shift; 0 until the first write.
    last_shift_ms: u64,
}

impl<T> Ring<T> {
    /// `w.buckets` fresh buckets; `oom` when the slots cannot be reserved.
    pub fn new<E>(
        w: WindowSpec,
        mut make: impl FnMut() -> Result<T, E>,
        oom: E,
    ) -> Result<Self, E> {
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(w.buckets.max(1) as usize)
            .map_err(|_| oom)?;
        for _ in 0..w.buckets.max(1) {
            slots.push(make()?);
        }
        Ok(Ring {
            slots: slots.into_boxed_slice(),
            span_ms: w.span_ms,
            head: 0,
            last_shift_ms: 0,
        })
    }

    /// A ring from a checked header and its buckets in physical order.
    pub fn from_parts(h: RingHeader, slots: Vec<T>) -> Result<Self, LoadError> {
        if slots.len() as u64 != h.spec.buckets || !h.spec.is_valid() || h.head >= h.spec.buckets {
            return Err(LoadError::Invalid);
        }
        Ok(Ring {
            slots: slots.into_boxed_slice(),
            span_ms: h.spec.span_ms,
            head: h.head,
            last_shift_ms: h.last_shift_ms,
        })
    }

    pub fn spec(&self) -> WindowSpec {
        WindowSpec {
            span_ms: self.span_ms,
            buckets: self.buckets(),
        }
    }

    pub fn span_ms(&self) -> u64 {
        self.span_ms
    }

    pub fn buckets(&self) -> u64 {
        self.slots.len() as u64
    }

    pub fn period_ms(&self) -> u64 {
        self.spec().period_ms()
    }

    pub fn head(&self) -> u64 {
        self.head
    }

    pub fn last_shift_ms(&self) -> u64 {
        self.last_shift_ms
    }

    fn clock(&self) -> Clock {
        Clock {
            last_shift_ms: self.last_shift_ms,
            period_ms: self.period_ms(),
        }
    }

    /// Shifts due at `now_ms` (0 before the clock started, or when `now_ms`
    /// is earlier than the last shift).
    pub fn due(&self, now_ms: u64) -> u64 {
        self.clock().due(now_ms)
    }

    /// Whether `advance(now_ms)` changes the ring.
    pub fn needs_advance(&self, now_ms: u64) -> bool {
        self.clock().needs_advance(now_ms)
    }

    /// Starts the clock at `now_ms`, or applies the shifts due then (at
    /// most B): each time the oldest bucket goes to `expire` (which
    /// empties it) and becomes the youngest. Deterministic in the ring and
    /// `now_ms`, so replicas and AOF replays given the master's time shift
    /// as it did. Answers the shifts due.
    pub fn advance(&mut self, now_ms: u64, mut expire: impl FnMut(&mut T)) -> u64 {
        let a = self.clock().advance(now_ms);
        let n = self.buckets();
        for _ in 0..a.shifts.min(n) {
            self.head = (self.head + n - 1) % n;
            expire(self.youngest_mut());
        }
        self.last_shift_ms = a.last_shift_ms;
        a.shifts
    }

    pub fn youngest(&self) -> &T {
        &self.slots[self.head as usize]
    }

    pub fn youngest_mut(&mut self) -> &mut T {
        &mut self.slots[self.head as usize]
    }

    /// The bucket of age `age` (0 the youngest), if `age < B`.
    pub fn at_age(&self, age: u64) -> Option<&T> {
        let n = self.buckets();
        (age < n)
            .then(|| self.slots.get(((self.head + age) % n) as usize))
            .flatten()
    }

    /// Buckets of ages in `ages` (within 0..B), youngest first.
    fn ages(&self, ages: std::ops::Range<u64>) -> impl DoubleEndedIterator<Item = &T> + Clone + '_ {
        ages.filter_map(move |a| self.at_age(a))
    }

    /// The buckets a read at `now_ms` sees, youngest first: all but those
    /// the shifts due then would expire.
    pub fn live(&self, now_ms: u64) -> impl DoubleEndedIterator<Item = &T> + Clone + '_ {
        let n = self.buckets();
        self.ages(0..n.saturating_sub(self.due(now_ms)))
    }

    /// The buckets the shifts due at `now_ms` would expire, youngest first.
    pub fn expired(&self, now_ms: u64) -> impl DoubleEndedIterator<Item = &T> + Clone + '_ {
        let n = self.buckets();
        self.ages(n.saturating_sub(self.due(now_ms))..n)
    }

    /// The buckets by physical position (RDB order).
    pub fn slots(&self) -> &[T] {
        &self.slots
    }

    /// The buckets by physical position (defragmentation, lazy free).
    pub fn slots_mut(&mut self) -> &mut [T] {
        &mut self.slots
    }

    /// A deep copy, each bucket by `copy` (COPY); fails cleanly when memory
    /// is short.
    pub fn try_clone_with(
        &self,
        mut copy: impl FnMut(&T) -> Result<T, AllocError>,
    ) -> Result<Self, AllocError> {
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(self.slots.len())
            .map_err(|_| AllocError)?;
        for b in self.slots.iter() {
            slots.push(copy(b)?);
        }
        Ok(Ring {
            slots: slots.into_boxed_slice(),
            ..*self
        })
    }

    /// The ring's fields of the RDB value: span, buckets, head, last shift.
    pub fn save_header<S: RdbSink>(&self, sink: &mut S) {
        for v in [self.span_ms, self.buckets(), self.head, self.last_shift_ms] {
            sink.write_unsigned(v);
        }
    }

    /// Reads [`Ring::save_header`]'s fields, refusing a window out of range,
    /// a head past the buckets or a clock past [`MAX_MS`].
    pub fn load_header<S: RdbSource>(src: &mut S) -> Result<RingHeader, LoadError> {
        let mut h = [0u64; 4];
        for v in &mut h {
            *v = src.read_unsigned()?;
        }
        let [span_ms, buckets, head, last_shift_ms] = h;
        let spec = WindowSpec { span_ms, buckets };
        if !spec.is_valid() || head >= buckets || last_shift_ms > MAX_MS {
            return Err(LoadError::Invalid);
        }
        Ok(RingHeader {
            spec,
            head,
            last_shift_ms,
        })
    }
}

impl<T> std::fmt::Debug for Ring<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("buckets", &self.buckets())
            .field("span_ms", &self.span_ms)
            .field("head", &self.head)
            .field("last_shift_ms", &self.last_shift_ms)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::{Primitive, PrimitiveSource};

    const E: WindowErrors = WindowErrors {
        window: ArgError::Reply("window"),
        buckets: ArgError::Reply("buckets"),
        below: ArgError::Reply("below"),
    };

    fn options(pairs: &[(&str, &str)]) -> Result<Option<WindowSpec>, ArgError> {
        let mut o = WindowOptions::default();
        for (t, v) in pairs {
            assert_ne!(o.take(t.as_bytes(), v.as_bytes(), &E)?, Taken::No);
        }
        o.finish(&E)
    }

    #[test]
    fn options_check_each_value_then_the_pair() {
        let w = |span_ms, buckets| Ok(Some(WindowSpec { span_ms, buckets }));
        assert_eq!(options(&[]), Ok(None));
        assert_eq!(options(&[("window", "60000")]), w(60000, 60));
        assert_eq!(options(&[("WINDOW", "7")]), w(7, 7));
        assert_eq!(options(&[("BUCKETS", "4"), ("Window", "10")]), w(10, 4));
        assert_eq!(options(&[("BUCKETS", "4")]), Ok(None));
        for bad in ["0", "-5", "1.5", "x", "315360000001", ""] {
            assert_eq!(options(&[("WINDOW", bad)]), Err(E.window), "{bad}");
        }
        assert_eq!(options(&[("WINDOW", "315360000000")]), w(315360000000, 60));
        assert_eq!(
            options(&[("WINDOW", "9"), ("BUCKETS", "0")]),
            Err(E.buckets)
        );
        assert_eq!(
            options(&[("WINDOW", "9"), ("BUCKETS", "1025")]),
            Err(E.buckets)
        );
        assert_eq!(options(&[("WINDOW", "9"), ("BUCKETS", "10")]), Err(E.below));
        let mut o = WindowOptions::default();
        assert_eq!(o.take(b"WINDOW", b"5", &E), Ok(Taken::Yes));
        assert_eq!(o.take(b"window", b"6", &E), Ok(Taken::Again));
        assert_eq!(o.take(b"CELL_SIZE", b"6", &E), Ok(Taken::No));
        assert!(asks_for_window(&["CELL_SIZE", "4", "wInDoW", "5"]));
        assert!(!asks_for_window(&["CELL_SIZE", "WINDOW"]));
    }

    fn ring(span_ms: u64, buckets: u64) -> Ring<Vec<u64>> {
        Ring::new(
            WindowSpec { span_ms, buckets },
            || Ok::<_, ()>(Vec::new()),
            (),
        )
        .unwrap()
    }

    #[test]
    fn shifts_expire_the_oldest_and_reads_age_virtually() {
        let mut r = ring(300, 3);
        assert_eq!(r.period_ms(), 100);
        assert_eq!(r.advance(1000, |_| unreachable!()), 0);
        r.youngest_mut().push(1);
        assert_eq!(r.advance(1150, Vec::clear), 1);
        r.youngest_mut().push(2);
        assert_eq!(r.last_shift_ms(), 1100);
        let live = |r: &Ring<Vec<u64>>, now| r.live(now).flatten().copied().collect::<Vec<_>>();
        assert_eq!(live(&r, 1199), [2, 1]);
        // Bucket 1 (age 1) reaches age 3, out of the window, two shifts on.
        assert_eq!(live(&r, 1200), [2, 1]);
        assert_eq!(live(&r, 1300), [2]);
        assert_eq!(r.expired(1300).flatten().copied().collect::<Vec<_>>(), [1]);
        assert_eq!(live(&r, 1400), Vec::<u64>::new());
        // Backwards: nothing due.
        assert_eq!(live(&r, 5), [2, 1]);
        assert_eq!(r.advance(5, |_| unreachable!()), 0);
        // A long gap clears every bucket once.
        let mut cleared = 0;
        assert_eq!(
            r.advance(10_000, |b| {
                cleared += 1;
                b.clear()
            }),
            89
        );
        assert_eq!(cleared, 3);
        assert_eq!(r.last_shift_ms(), 10_000);
        assert!(r.slots().iter().all(Vec::is_empty));
    }

    #[test]
    fn header_round_trip_and_checks() {
        let mut r = ring(1000, 10);
        r.advance(77, |_| {});
        r.advance(377, Vec::clear);
        let mut sink: Vec<Primitive> = Vec::new();
        r.save_header(&mut sink);
        let mut src = PrimitiveSource::new(&sink);
        let h = Ring::<Vec<u64>>::load_header(&mut src).unwrap();
        assert_eq!(
            h,
            RingHeader {
                spec: r.spec(),
                head: 7,
                last_shift_ms: 377
            }
        );
        let back = Ring::from_parts(h, vec![Vec::new(); 10]).unwrap();
        assert!(back == r);
        assert!(Ring::from_parts(h, vec![Vec::<u64>::new(); 9]).is_err());
        let bad = |v: [u64; 4]| {
            let items: Vec<Primitive> = v.into_iter().map(Primitive::Unsigned).collect();
            Ring::<Vec<u64>>::load_header(&mut PrimitiveSource::new(&items)).is_err()
        };
        assert!(bad([0, 1, 0, 0]));
        assert!(bad([10, 11, 0, 0]));
        assert!(bad([10, 2, 2, 0]));
        assert!(bad([10, 2, 0, MAX_MS + 1]));
        assert!(!bad([10, 2, 1, MAX_MS]));
    }
}
