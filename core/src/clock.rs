//! The clock of a time window (docs/apbf.md §4.1; APBF, the windowed types): a
//! window of `span` ms is cut into `slots` periods, and a value keeps the
//! master's Unix time (ms) of its last shift. Pure arithmetic on that
//! time and the time given, so replicas and AOF replays that are handed
//! the master's time shift exactly as the master did.

/// Largest clock (Unix ms): INFO replies carry it as a signed RESP
/// integer, and no server's clock is past it.
pub const MAX_MS: u64 = i64::MAX as u64;

/// Longest time window: ten years, in milliseconds.
pub const MAX_SPAN_MS: u64 = 10 * 365 * 86_400_000;

/// How far a client's tick may run ahead of the master's clock: the skew
/// between cluster nodes (a slot migration forwards the source's ticks),
/// never a jump that would stop the window for years.
pub const MAX_AHEAD_MS: u64 = 60_000;

/// A value that ages with its window on this clock (APBF's time windows,
/// every value on a `crate::window::Ring`): what the master's clock and
/// the TICK commands drive.
pub trait Aging {
    /// Whether `advance(now_ms)` changes the value.
    fn needs_advance(&self, now_ms: u64) -> bool;
    /// Ages the value to `now_ms` (starting its clock); the shifts due.
    fn advance(&mut self, now_ms: u64) -> u64;
}

/// Milliseconds between shifts: `span / slots` rounded up so that `slots`
/// periods cover the span (at least 1).
pub fn period_ms(span_ms: u64, slots: u64) -> u64 {
    span_ms.div_ceil(slots.max(1)).max(1)
}

/// A window's clock: the time of its last shift (0 until the first write
/// starts it) and its period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub last_shift_ms: u64,
    pub period_ms: u64,
}

/// What [`Clock::advance`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advanced {
    /// The clock's new time of last shift.
    pub last_shift_ms: u64,
    /// Shifts due (the caller applies at most its slot count of them).
    pub shifts: u64,
}

impl Clock {
    /// Shifts due at `now_ms` since the last one: 0 before the clock
    /// started, or when `now_ms` is earlier (time running backwards shifts
    /// nothing).
    pub fn due(self, now_ms: u64) -> u64 {
        if self.last_shift_ms == 0 {
            return 0;
        }
        // A clock past MAX_MS (no server has one) counts as at it.
        now_ms.min(MAX_MS).saturating_sub(self.last_shift_ms) / self.period_ms.max(1)
    }

    /// Whether `advance(now_ms)` changes anything: the clock is not
    /// started, or shifts are due.
    pub fn needs_advance(self, now_ms: u64) -> bool {
        // `due(now_ms) > 0` without its division: every write asks.
        self.last_shift_ms == 0
            || now_ms.min(MAX_MS).saturating_sub(self.last_shift_ms) >= self.period_ms.max(1)
    }

    /// Starts the clock at `now_ms` (no shift), or moves it by the whole
    /// periods due then.
    pub fn advance(self, now_ms: u64) -> Advanced {
        if self.last_shift_ms == 0 {
            return Advanced {
                last_shift_ms: now_ms.clamp(1, MAX_MS),
                shifts: 0,
            };
        }
        let shifts = self.due(now_ms);
        Advanced {
            last_shift_ms: self
                .last_shift_ms
                .saturating_add(shifts.saturating_mul(self.period_ms)),
            shifts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_then_moves_by_whole_periods() {
        let c = Clock {
            last_shift_ms: 0,
            period_ms: 100,
        };
        assert!(c.needs_advance(5));
        assert_eq!(c.due(10_000), 0);
        assert_eq!(
            c.advance(0),
            Advanced {
                last_shift_ms: 1,
                shifts: 0
            }
        );
        let c = Clock {
            last_shift_ms: 1000,
            ..c
        };
        assert_eq!(c.due(1099), 0);
        assert!(!c.needs_advance(1099));
        assert_eq!(c.due(1350), 3);
        assert_eq!(
            c.advance(1350),
            Advanced {
                last_shift_ms: 1300,
                shifts: 3
            }
        );
        // Backwards: nothing due, nothing moves.
        assert_eq!(c.due(10), 0);
        assert_eq!(c.advance(10).last_shift_ms, 1000);
        assert_eq!(c.due(u64::MAX), (MAX_MS - 1000) / 100);
    }

    proptest::proptest! {
        /// The division-free test is the division's.
        #[test]
        fn needs_advance_is_a_shift_due(
            last in proptest::prop_oneof![proptest::strategy::Just(0u64), 0..=MAX_MS, proptest::num::u64::ANY],
            period in 0u64..100_000,
            now in proptest::num::u64::ANY,
            near in 0u64..300_000,
        ) {
            let c = Clock { last_shift_ms: last, period_ms: period };
            for t in [now, last.saturating_add(near), last.saturating_sub(near)] {
                proptest::prop_assert_eq!(c.needs_advance(t), last == 0 || c.due(t) > 0);
            }
        }
    }

    #[test]
    fn periods_cover_the_span() {
        assert_eq!(period_ms(3_600_000, 60), 60_000);
        assert_eq!(period_ms(1000, 3), 334);
        assert_eq!(period_ms(1, 60), 1);
        assert_eq!(period_ms(5, 0), 5);
    }
}
