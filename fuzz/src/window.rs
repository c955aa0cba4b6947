//! What the checks of the windowed types share (`cms_window`,
//! `topk_window`, `tdigest_window`): the RDB round trip, reads aged
//! virtually against shifts applied, the first checks of a loaded value,
//! and the model targets' clock moves.

use std::fmt::Debug;

use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource, RdbSource};
use rsbloom_core::window::Windowed;

use super::{encode_primitives, Input};

/// The clock the model targets and the seeds start at.
pub const T0: u64 = 1_700_000_000_000;

/// What the checks need of a windowed type beside its ring.
pub trait Checked: Windowed + Sized {
    /// What a read answers at a time, compared exactly (floats as bits).
    type Answers: PartialEq + Debug;
    /// Whether a loaded value saves the very bytes it was read from.
    const SAVES_AS_READ: bool;
    fn save(&self, out: &mut Vec<Primitive>);
    /// The value in encoding 0, or None when refused.
    fn load<S: RdbSource>(src: &mut S) -> Option<Self>;
    /// A copy to apply shifts to; None where a short memory may refuse it.
    fn copy(&self) -> Option<Self>;
    fn answers(&self, now: u64) -> Self::Answers;
}

pub fn saved<W: Checked>(w: &W) -> Vec<Primitive> {
    let mut out = Vec::new();
    w.save(&mut out);
    out
}

/// A save loads back to the same bytes and the same answers at `now`.
pub fn reloaded<W: Checked>(w: &W, now: u64) -> W {
    let p = saved(w);
    let back = W::load(&mut PrimitiveSource::new(&p)).expect("a saved window loads");
    // As bytes: a NaN loaded is saved with its bits, and NaN != NaN.
    assert!(
        encode_primitives(&saved(&back)) == encode_primitives(&p),
        "RDB round trip changed the window"
    );
    assert_eq!(back.answers(now), w.answers(now));
    back
}

/// Reads at `now` equal the reads after applying the shifts due then.
pub fn virtual_equals_applied<W: Checked>(w: &W, now: u64) {
    let Some(mut applied) = w.copy() else {
        return;
    };
    applied.advance(now);
    assert_eq!(applied.answers(now), w.answers(now), "at {now}");
}

/// The start of a windowed RDB target: the value `data` loads to (None
/// when refused), which saves what was read (where the type does) and
/// reads at its clock, a period, the span and far later as after applying
/// the shifts; returned aged by a period, with that time.
pub fn loaded_and_aged<W: Checked>(data: &[u8]) -> Option<(W, u64)> {
    let mut w = W::load(&mut ByteSource::new(data))?;
    if W::SAVES_AS_READ {
        let bytes = encode_primitives(&saved(&w));
        assert_eq!(&data[..bytes.len()], &bytes[..], "saved value differs");
    }
    let ring = w.ring();
    let base = ring.last_shift_ms();
    for d in [0, 1, ring.period_ms(), ring.span_ms(), u64::MAX] {
        virtual_equals_applied(&w, base.saturating_add(d));
    }
    let now = base.saturating_add(w.ring().period_ms());
    w.advance(now);
    Some((w, now))
}

/// A model target's clock move of up to 65535 ms (backwards when `op` has
/// its top bit): the shifts applied to `w` and to the model ring
/// (youngest first), whose oldest bucket `expire` empties; `now` stays the
/// latest time yet.
pub fn move_clock<W: Windowed, B>(
    inp: &mut Input,
    op: u8,
    now: &mut u64,
    w: &mut W,
    model: &mut Vec<B>,
    expire: impl Fn(B) -> B,
) {
    let d = u64::from(inp.u16());
    let t = if op & 0x80 != 0 {
        now.saturating_sub(d)
    } else {
        *now + d
    };
    let shifts = w.advance(t);
    for _ in 0..shifts.min(model.len() as u64) {
        let oldest = model.pop().expect("buckets ≥ 1");
        model.insert(0, expire(oldest));
    }
    *now = (*now).max(t);
}

/// Operation bytes the model targets' seeds run after their parameters.
pub fn model_ops_seed() -> Vec<u8> {
    (0..=255u8)
        .flat_map(|b| [b, b.wrapping_mul(7), b ^ 0x5a])
        .collect()
}
