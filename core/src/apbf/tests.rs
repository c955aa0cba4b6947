//! The recurrence against docs/apbf.md's table, the window guarantee,
//! time-mode determinism, RDB and chunk validation, and the measured
//! false-positive rate.

use super::chunk::testing::copy_via_chunks;
use super::header::FIELDS;
use super::*;
use crate::rdb::{Primitive, PrimitiveSource};
use proptest::prelude::*;

fn count(error: f64, capacity: u64) -> Apbf {
    Apbf::new(Window::Count, error, capacity).unwrap()
}

fn timed(error: f64, capacity: u64, span_ms: u64) -> Apbf {
    Apbf::new(Window::Time { span_ms }, error, capacity).unwrap()
}

fn item(i: u64) -> Vec<u8> {
    format!("item:{i}").into_bytes()
}

fn saved(f: &Apbf) -> Vec<Primitive> {
    let mut out = Vec::new();
    f.rdb_save(&mut out);
    out
}

fn load(p: &[Primitive]) -> Result<Apbf, LoadError> {
    Apbf::rdb_load(&mut PrimitiveSource::new(p), ENCODING_VERSION)
}

/// docs/apbf.md's table (APBF.md): k, l, FPR, bits per remembered item.
/// The last row's FPR is printed there as 9.0e-6; the recurrence gives
/// 9.44e-6 (docs/apbf.md §3.1 notes it).
const TABLE: [(u64, u64, f64, f64); 5] = [
    (4, 3, 0.1006, 13.5),
    (7, 5, 0.01123, 24.2),
    (10, 7, 0.001211, 35.0),
    (14, 11, 9.9e-5, 45.9),
    (18, 16, 9.44e-6, 55.2),
];

fn bits_per_item(k: u64, l: u64) -> f64 {
    ((k + l) * k) as f64 / (l as f64 * std::f64::consts::LN_2)
}

#[test]
fn recurrence_matches_the_table() {
    for (k, l, rate, bits) in TABLE {
        let f = fpr(k, l);
        assert!((f - rate).abs() / rate < 0.005, "fpr({k},{l}) = {f}");
        assert!((bits_per_item(k, l) - bits).abs() < 0.05, "{k},{l}");
    }
    assert_eq!(fpr(4, 3), 0.1005859375);
}

#[test]
fn choice_is_the_cheapest_pair_reaching_the_rate() {
    for error in [0.5, 0.1, 0.05, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8] {
        let (k, l) = choose(error).unwrap();
        assert!(fpr(k, l) <= error, "{error}");
        let cost = bits_per_item(k, l);
        for k2 in 1..=MAX_K {
            for l2 in 1..=MAX_L {
                if fpr(k2, l2) <= error {
                    assert!(bits_per_item(k2, l2) >= cost - 1e-9, "{error}: {k2},{l2}");
                }
            }
        }
        // Cheaper than the table's pair for the table's rate.
        for (tk, tl, rate, _) in TABLE {
            if (rate - error).abs() / error < 0.2 && fpr(tk, tl) <= error {
                assert!(cost <= bits_per_item(tk, tl));
            }
        }
    }
    assert_eq!(choose(0.01), Some((11, 46)));
    // The smallest rate within the bounds is FPR(32, 1) ≈ 1.4e-21.
    assert_eq!(choose(1e-22), None);
}

#[test]
fn sizes() {
    let f = count(0.01, 1000);
    let h = f.header();
    assert_eq!((h.k, h.l, h.gen_size), (11, 46, 22));
    assert_eq!(h.slice_bits % 64, 0);
    assert!(h.slice_bits as f64 >= 11.0 * 22.0 / std::f64::consts::LN_2);
    assert!(f.window_items() >= 1000);
    assert_eq!(
        f.size_bytes(),
        RECORD_BYTES + 57 * (SLICE_REF_BYTES + h.slice_bytes())
    );
}

#[test]
fn count_window_never_forgets_the_last_capacity_items() {
    for (error, cap) in [(0.1, 10), (0.01, 100), (1e-4, 37)] {
        let mut f = count(error, cap);
        for i in 0..cap * 30 {
            f.add(&item(i)).unwrap();
            let from = (i + 1).saturating_sub(f.window_items());
            for j in from..=i {
                assert!(f.contains(&item(j), 0), "{error} {cap}: {j} after {i}");
            }
        }
    }
}

#[test]
fn count_window_forgets() {
    let mut f = count(0.01, 1000);
    for i in 0..1000 {
        f.add(&item(i)).unwrap();
    }
    for i in 1000..20_000 {
        f.add(&item(i)).unwrap();
    }
    let remembered = (0..1000).filter(|&i| f.contains(&item(i), 0)).count();
    assert!(remembered < 40, "{remembered}");
}

#[test]
fn add_answers_whether_present_and_refreshes() {
    let mut f = count(0.01, 100);
    assert_eq!(f.add(b"a"), Ok(false));
    assert_eq!(f.add(b"a"), Ok(true));
    // Re-added every 50 insertions, "a" stays inside the window.
    for i in 0..5000 {
        if i % 50 == 0 {
            f.add(b"a").unwrap();
        }
        f.add(&item(i)).unwrap();
        assert!(f.contains(b"a", 0));
    }
}

#[test]
fn time_window_shifts_by_the_clock_given() {
    let mut f = timed(0.01, 100, 46_000); // l = 46: one shift a second
    assert_eq!(f.header().period_ms(), 1000);
    assert!(f.needs_advance(5));
    assert_eq!(f.advance(10_000), 0);
    assert_eq!(f.header().last_shift_ms, 10_000);
    f.add(b"x").unwrap();
    assert!(!f.needs_advance(10_999));
    assert_eq!(f.due_shifts(12_500), 2);
    assert_eq!(f.advance(12_500), 2);
    assert_eq!(f.header().last_shift_ms, 12_000);
    assert!(f.contains(b"x", 12_500));
    // Remembered for l periods, then (virtually) gone.
    assert!(f.contains(b"x", 10_000 + 46_999));
    assert!(!f.contains(b"x", 10_000 + 47_000 + 11_000));
    assert_eq!(f.advance(100_000), 88);
    assert!(!f.contains(b"x", 100_000));
    assert_eq!(f.header().shifts, 90);
    // Clocks going back change nothing.
    assert_eq!(f.advance(50_000), 0);
}

#[test]
fn count_mode_ignores_the_clock() {
    let mut f = count(0.01, 10);
    f.add(b"x").unwrap();
    assert!(!f.needs_advance(u64::MAX));
    assert_eq!(f.advance(u64::MAX), 0);
    assert!(f.contains(b"x", u64::MAX));
}

proptest! {
    /// The virtual view a read takes is what the write would make.
    #[test]
    fn virtual_shifts_equal_applied_ones(
        steps in prop::collection::vec((0u64..3000, 0u64..20), 1..60),
        probe in 0u64..20,
    ) {
        let mut f = timed(0.1, 20, 6000);
        let mut now = 1_000_000;
        for (dt, x) in steps {
            now += dt;
            let before = f.contains(&item(probe), now);
            let mut applied = f.try_clone().unwrap();
            applied.advance(now);
            prop_assert_eq!(before, applied.contains(&item(probe), now));
            f.advance(now);
            f.add(&item(x)).unwrap();
        }
    }

    /// A header is accepted exactly when its derived fields are consistent
    /// and its counters agree (the model below); an accepted one
    /// round-trips (RDB and SCANDUMP header) and answers every operation.
    /// Counters are drawn agreeing, then one of them is often nudged.
    #[test]
    fn any_valid_header_round_trips(
        h in header(),
        nudge in (0usize..6, prop_oneof![Just(1u64), Just(u64::MAX), any::<u64>()]),
    ) {
        let mut h = h;
        let (field, delta) = nudge;
        let last = h.last_shift_ms;
        match field {
            0 => h.head = h.head.wrapping_add(delta) % h.slices(),
            1 => h.gen_items = h.gen_items.wrapping_add(delta),
            2 => h.inserts = h.inserts.wrapping_add(delta),
            3 => h.shifts = h.shifts.wrapping_add(delta),
            4 => h.last_shift_ms = h.last_shift_ms.wrapping_add(delta),
            _ => {}
        }
        let valid = h.gen_items <= h.inserts
            && h.inserts <= MAX_COUNT
            && h.last_shift_ms <= MAX_COUNT
            && counters_model(&h);
        prop_assert_eq!(h.is_valid(), valid, "{:?}", h);
        prop_assert_eq!(Header::decode(&h.encode()), valid.then_some(h));
        if valid {
            let mut f = Apbf::zeroed(h).unwrap();
            let back = load(&saved(&f)).unwrap();
            prop_assert!(back == f);
            match f.add(b"a") {
                Ok(present) => prop_assert!(!present || f.contains(b"a", 0)),
                Err(CountFull) => prop_assert_eq!(h.inserts, MAX_COUNT),
            }
            f.advance(last.saturating_add(5000));
            f.contains(b"a", last.saturating_add(90_000));
            prop_assert!(f.header().is_valid());
        }
    }

    /// Any command sequence on a genuine filter keeps its counters
    /// agreeing, and the filter round-trips through RDB and SCANDUMP.
    #[test]
    fn genuine_filters_stay_valid(
        h in header(),
        ops in prop::collection::vec(op(), 1..60),
        start in 0u64..1 << 42,
    ) {
        let window = if h.is_time() { Window::Time { span_ms: h.span_ms } } else { Window::Count };
        let f = Apbf::new(window, 0.01, h.capacity).unwrap();
        run_ops(f, &ops, start)?;
    }

    /// So does any sequence on any accepted value (a restored one): what
    /// a loader accepts, the commands never take to what it refuses.
    #[test]
    fn accepted_filters_stay_valid(
        h in header(),
        ops in prop::collection::vec(op(), 1..40),
        from in prop_oneof![Just(0u64), 0u64..1 << 20, u64::MAX - (1 << 20)..=u64::MAX],
    ) {
        prop_assert!(h.is_valid(), "{:?}", h);
        run_ops(Apbf::zeroed(h).unwrap(), &ops, h.last_shift_ms.saturating_add(from))?;
    }
}

/// docs/apbf.md §6.2's counter relations, in u128 arithmetic.
fn counters_model(h: &Header) -> bool {
    let n = u128::from(h.slices());
    let [s, gi, ins, head] = [h.shifts, h.gen_items, h.inserts, h.head].map(u128::from);
    let moved = (n - head) % n;
    if h.is_time() {
        let clock_ok = s == 0 || s * u128::from(h.period_ms()) < u128::from(h.last_shift_ms);
        let head_ok = s == moved || s >= moved + n;
        clock_ok && head_ok && (s > 0 || gi == ins)
    } else {
        let g = u128::from(h.gen_size);
        h.last_shift_ms == 0
            && ins == s * g + gi
            && gi <= g
            && (gi > 0 || ins == 0)
            && (s + head) % n == 0
    }
}

/// Headers of small filters of both windows with agreeing counters, some
/// at the edge of what loads (MAX_COUNT).
fn header() -> impl Strategy<Value = Header> {
    let big = || prop_oneof![0u64..5000, MAX_COUNT - 100..=MAX_COUNT, 0..=MAX_COUNT];
    (
        1u64..=12,
        1u64..=MAX_L,
        1u64..300,
        prop::option::of(1u64..100),
        (big(), prop_oneof![Just(0u64), 1u64..1 << 45, big()]),
        (
            prop_oneof![0u64..200, any::<u64>()],
            any::<u64>(),
            any::<u64>(),
        ),
    )
        .prop_map(|(k, l, capacity, span_s, (inserts, last), draws)| {
            let g = gen_size(capacity, l);
            let h = Header {
                span_ms: span_s.map_or(0, |s| s * 1000),
                k,
                l,
                capacity,
                error: 0.01,
                gen_size: g,
                slice_bits: slice_bits(k, g),
                head: 0,
                gen_items: 0,
                inserts,
                shifts: 0,
                last_shift_ms: last,
            };
            agreeing(h, draws)
        })
}

/// `h` with counters some sequence of operations reaches, given its
/// inserts (and clock, time mode), from draws for the others.
fn agreeing(mut h: Header, (a, b, c): (u64, u64, u64)) -> Header {
    let n = h.slices();
    if h.is_time() {
        let last = h.last_shift_ms;
        h.shifts = if last == 0 {
            0
        } else {
            a % ((last - 1) / h.period_ms() + 1)
        };
        h.head = b % n;
        let moved = (n - h.head) % n;
        if !(h.shifts == moved || h.shifts.saturating_sub(moved) >= n) {
            h.head = (n - h.shifts % n) % n;
        }
        h.gen_items = match h.inserts.checked_add(1) {
            _ if h.shifts == 0 => h.inserts,
            Some(m) => c % m,
            None => c,
        };
    } else {
        h.last_shift_ms = 0;
        h.shifts = h.inserts.saturating_sub(1) / h.gen_size;
        h.gen_items = h.inserts - h.shifts * h.gen_size;
        h.head = (n - h.shifts % n) % n;
    }
    h
}

#[derive(Debug, Clone)]
enum Op {
    Add(Vec<u16>),
    /// The clock moves on, and a TICK (or a write on the master) ages the
    /// window to it.
    Tick(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(0u16..400, 1..40).prop_map(Op::Add),
        2 => prop_oneof![0u64..3000, 0u64..1 << 22, Just(u64::MAX)].prop_map(Op::Tick),
    ]
}

/// Runs `ops` from the clock `now`: after each the header is valid, adds
/// are refused only as a suffix once the inserts count is full, and a
/// refused add changes nothing; at the end RDB and SCANDUMP copy it.
fn run_ops(mut f: Apbf, ops: &[Op], mut now: u64) -> Result<(), TestCaseError> {
    for op in ops {
        match op {
            Op::Add(items) => {
                let before = f.try_clone().unwrap();
                let items: Vec<Vec<u8>> = items.iter().map(|&i| item(i.into())).collect();
                let mut out = Vec::new();
                if let [one] = &items[..] {
                    out.push(f.add(one));
                } else {
                    f.add_batch(&items, |o| out.push(o));
                }
                let added = out.iter().take_while(|o| o.is_ok()).count();
                prop_assert!(out[added..].iter().all(|o| *o == Err(CountFull)));
                prop_assert_eq!(f.header().inserts - before.header().inserts, added as u64);
                prop_assert!(added == items.len() || f.header().inserts == MAX_COUNT);
                prop_assert!(added > 0 || f == before);
            }
            Op::Tick(dt) => {
                now = now.saturating_add(*dt);
                f.advance(now);
            }
        }
        prop_assert!(f.header().is_valid(), "{:?}", f.header());
    }
    prop_assert!(load(&saved(&f)).unwrap() == f);
    prop_assert!(copy_via_chunks(&f, 64).1 == f);
    Ok(())
}

/// Time mode: the heads `k + l` slices reach after `s` shifts, by every
/// way of splitting `s` into advances (each moves min(due, n) slices),
/// are those the header accepts.
#[test]
fn time_heads_are_those_shift_sequences_reach() {
    for l in 1..=5u64 {
        let n = 1 + l;
        // reach[s]: the slices moved, modulo n, over the splits of s.
        let mut reach: Vec<Vec<bool>> = vec![vec![false; n as usize]];
        reach[0][0] = true;
        for s in 1..4 * n {
            let mut r = vec![false; n as usize];
            for due in 1..=s {
                for (m, &ok) in reach[(s - due) as usize].iter().enumerate() {
                    if ok {
                        r[(m + due.min(n) as usize) % n as usize] = true;
                    }
                }
            }
            reach.push(r);
        }
        let mut h = *timed(0.5, 10, 100_000).header();
        h.k = 1;
        h.l = l;
        h.gen_size = gen_size(h.capacity, l);
        h.slice_bits = slice_bits(1, h.gen_size);
        h.last_shift_ms = 1 << 40;
        for (s, moved) in reach.iter().enumerate() {
            for head in 0..n {
                h.shifts = s as u64;
                h.head = head;
                h.gen_items = if s == 0 { h.inserts } else { 0 };
                let want = moved[((n - head) % n) as usize];
                assert_eq!(h.is_valid(), want, "l {l} shifts {s} head {head}");
            }
        }
    }
}

/// Crafted counters a genuine filter cannot have are refused by the RDB
/// loader and the SCANDUMP header alike.
#[test]
fn counter_mismatches_are_refused() {
    let mut c = count(0.1, 10);
    (0..25).for_each(|i| {
        c.add(&item(i)).unwrap();
    });
    let mut t = timed(0.1, 10, 5000);
    t.advance(1_000_000);
    (0..5).for_each(|i| {
        t.add(&item(i)).unwrap();
    });
    let fresh = *timed(0.1, 10, 5000).header();
    let ch = *c.header();
    let th = *t.header();
    assert!(ch.shifts > 0 && th.shifts == 0);
    let n = ch.slices();
    let cases: [(&str, Header); 14] = [
        (
            "count: inserts above",
            Header {
                inserts: ch.inserts + 1,
                ..ch
            },
        ),
        (
            "count: gen_items below",
            Header {
                gen_items: ch.gen_items - 1,
                ..ch
            },
        ),
        (
            "count: shifts above",
            Header {
                shifts: ch.shifts + 1,
                ..ch
            },
        ),
        (
            "count: head off",
            Header {
                head: (ch.head + 1) % n,
                ..ch
            },
        ),
        (
            "count: empty generation after a shift",
            Header {
                gen_items: 0,
                inserts: ch.inserts - ch.gen_items,
                ..ch
            },
        ),
        (
            "count: inserts near 2^64",
            Header {
                inserts: u64::MAX,
                ..ch
            },
        ),
        (
            "time: shifts before the clock started",
            Header {
                shifts: 1,
                head: n - 1,
                ..fresh
            },
        ),
        (
            "time: inserts outside the generation before a shift",
            Header { gen_items: 1, ..th },
        ),
        ("time: head moved without a shift", Header { head: 1, ..th }),
        (
            "time: inserts past 2^63 − 1",
            Header {
                inserts: MAX_COUNT + 1,
                gen_items: MAX_COUNT + 1,
                ..th
            },
        ),
        (
            "time: clock past 2^63 − 1",
            Header {
                last_shift_ms: MAX_COUNT + 1,
                ..th
            },
        ),
        (
            "time: more shifts than the clock ran periods",
            Header {
                shifts: th.last_shift_ms.div_ceil(th.period_ms()),
                head: 0,
                gen_items: 0,
                ..th
            },
        ),
        (
            "time: one shift, head unmoved",
            Header {
                shifts: 1,
                gen_items: 0,
                ..th
            },
        ),
        (
            "time: a clock started at 0 ms",
            Header {
                shifts: 1,
                head: n - 1,
                gen_items: 0,
                last_shift_ms: th.period_ms(),
                ..th
            },
        ),
    ];
    for (what, h) in cases {
        assert!(!h.is_valid(), "{what}");
        assert_eq!(
            Apbf::from_header(&h.encode()).unwrap_err(),
            ChunkError::Header,
            "{what}"
        );
        let mut p = saved(&c);
        for (w, v) in p.iter_mut().zip(h.to_words()) {
            *w = Primitive::Unsigned(v);
        }
        assert_eq!(load(&p).unwrap_err(), LoadError::Invalid, "{what}");
    }
}

/// An inserts count at 2^63 − 1 refuses further adds and changes nothing;
/// the items before it are added.
#[test]
fn a_full_inserts_count_refuses_adds() {
    for window in [Window::Count, Window::Time { span_ms: 5000 }] {
        let mut h = Apbf::plan(window, 0.1, 10).unwrap();
        h.inserts = MAX_COUNT - 1;
        h.last_shift_ms = if h.is_time() { 1 } else { 0 };
        let mut f = Apbf::zeroed(agreeing(h, (0, 0, 5))).unwrap();
        assert!(f.header().is_valid());
        let mut out = Vec::new();
        f.add_batch(&[&b"a"[..], b"b", b"c"], |o| out.push(o));
        assert_eq!(out, [Ok(false), Err(CountFull), Err(CountFull)]);
        let before = f.try_clone().unwrap();
        assert_eq!(f.add(b"d"), Err(CountFull));
        assert!(f == before && f.contains(b"a", 0) && f.header().is_valid());
        assert_eq!(f.header().inserts, MAX_COUNT);
        assert!(load(&saved(&f)).unwrap() == f);
    }
}

#[test]
fn rdb_round_trip() {
    let mut f = timed(0.01, 500, 60_000);
    f.advance(1_700_000_000_000);
    (0..700).for_each(|i| {
        f.add(&item(i)).unwrap();
    });
    f.advance(1_700_000_005_000);
    let p = saved(&f);
    assert_eq!(p.len(), FIELDS + 57);
    assert!(load(&p).unwrap() == f);
}

#[test]
fn rdb_refuses_bad_values() {
    let f = count(0.01, 100);
    let good = saved(&f);
    assert_eq!(
        Apbf::rdb_load(&mut PrimitiveSource::new(&good), 1).unwrap_err(),
        LoadError::UnsupportedVersion
    );
    let mut bad_words = Vec::new();
    for i in 0..FIELDS {
        for v in [0, 3, u64::MAX, 1 << 40] {
            let mut p = good.clone();
            p[i] = Primitive::Unsigned(v);
            if p == good {
                continue;
            }
            if let Ok(mut g) = load(&p) {
                // Accepted (a changed k may read fewer slices): that
                // value again, and it works.
                let again = saved(&g);
                assert_eq!(again[..], p[..again.len()], "field {i} = {v}");
                g.add(b"x").unwrap();
                assert!(g.contains(b"x", 0));
            } else {
                bad_words.push(i);
            }
        }
    }
    assert!(bad_words.contains(&0) && bad_words.contains(&12));
    let mut short = good.clone();
    short[FIELDS] = Primitive::Buffer(vec![0; 3]);
    assert_eq!(load(&short).unwrap_err(), LoadError::Invalid);
    assert_eq!(load(&good[..good.len() - 1]).unwrap_err(), LoadError::Read);
    let mut nan = good.clone();
    nan[4] = Primitive::Unsigned(f64::NAN.to_bits());
    assert!(load(&nan).is_err());
}

#[test]
fn chunks_round_trip_in_small_pieces() {
    let mut f = timed(0.001, 3000, 10_000);
    f.advance(1000);
    (0..5000).for_each(|i| {
        f.add(&item(i)).unwrap();
    });
    for piece in [1, 7, 64, CHUNK_BYTES] {
        let (chunks, copy) = copy_via_chunks(&f, piece);
        assert!(copy == f, "piece {piece}");
        assert!(chunks.iter().skip(1).all(|(_, d)| d.len() as u64 <= piece));
        let per_slice = f.header().slice_bytes().div_ceil(piece);
        assert_eq!(chunks.len() as u64, 1 + per_slice * f.header().slices());
    }
    assert!(f.scandump(u64::MAX).is_none());
}

#[test]
fn load_chunk_refuses_and_keeps_data() {
    let mut f = count(0.01, 100);
    f.add(b"a").unwrap();
    let before = saved(&f);
    let len = f.header().slice_bytes() as usize;
    assert_eq!(f.load_chunk(1, &[]), Err(ChunkError::Iterator));
    assert_eq!(f.load_chunk(2, &vec![0; len + 1]), Err(ChunkError::Length));
    assert_eq!(f.load_chunk(1000, &vec![0; len]), Err(ChunkError::Iterator));
    assert_eq!(saved(&f), before);
    assert_eq!(Apbf::from_header(b"APBF").unwrap_err(), ChunkError::Header);
    let mut h = f.header().encode();
    h[3] = b'X';
    assert_eq!(Apbf::from_header(&h).unwrap_err(), ChunkError::Header);
}

/// The false-positive rate of fresh items after a stream of 10 windows,
/// right after a generation completed (the recurrence's state): within
/// 4 standard deviations of the computed rate. Also the false negatives
/// among the last `window` items (none allowed).
fn measured_fpr(error: f64, window: u64, queries: u64) -> (f64, f64) {
    let mut f = count(error, window);
    let stream = 10 * f.window_items();
    for i in 0..stream {
        f.add(&item(i)).unwrap();
    }
    let missed = (stream - window..stream)
        .filter(|&i| !f.contains(&item(i), 0))
        .count();
    assert_eq!(missed, 0, "false negatives");
    let hits = (0..queries)
        .filter(|q| f.contains(format!("fresh:{q}").as_bytes(), 0))
        .count();
    (hits as f64 / queries as f64, f.computed_error())
}

#[test]
fn measured_fpr_is_within_the_band() {
    for (error, window) in [(0.1, 2000), (0.01, 5000)] {
        let n = 100_000;
        let (measured, computed) = measured_fpr(error, window, n);
        let sigma = (computed * (1.0 - computed) / n as f64).sqrt();
        assert!(
            (measured - computed).abs() < 4.0 * sigma + computed * 0.1,
            "{error} {window}: {measured} vs {computed}"
        );
    }
}

/// The README's table: `cargo test -p rsbloom-core --release apbf::tests::
/// measure -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure() {
    println!("error\twindow\tk\tl\tcomputed\tmeasured\tqueries\tbits/item (none of the last window missed)");
    for (error, window) in [
        (0.1, 10_000),
        (0.01, 10_000),
        (0.01, 100_000),
        (0.001, 100_000),
        (1e-4, 100_000),
    ] {
        let queries = 1_000_000;
        let (measured, computed) = measured_fpr(error, window, queries);
        let f = count(error, window);
        let (k, l) = (f.header().k, f.header().l);
        let bits = (f.header().slices() * f.header().slice_bits) as f64 / window as f64;
        println!(
            "{error}\t{window}\t{k}\t{l}\t{computed:.3e}\t{measured:.3e}\t{queries}\t{bits:.1}"
        );
    }
    println!("\nforgetting curve (error 0.01, window 10000): items aged a to a + 0.01 windows");
    let mut f = count(0.01, 10_000);
    let total = 100_000u64;
    for i in 0..total {
        f.add(&item(i)).unwrap();
    }
    for a in [
        0.5, 0.99, 1.0, 1.01, 1.02, 1.03, 1.04, 1.05, 1.1, 1.5, 2.0, 5.0,
    ] {
        let newest = total - 1 - (a * 10_000.0) as u64;
        let share = (newest - 99..=newest)
            .filter(|&i| f.contains(&item(i), 0))
            .count();
        println!("{a}\t{:.2}", share as f64 / 100.0);
    }
}
