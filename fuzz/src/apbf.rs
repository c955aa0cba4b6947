//! Fuzz checks of the sliding-window filter (docs/apbf.md): its RDB
//! decoder and SCANDUMP header, and the APBF.* argument parsers.

use rsbloom_core::apbf::args::{
    parse_error, parse_loadchunk_iter, parse_reserve, parse_scandump_iter, BAD_TIMESTAMP, MIN_ERROR,
};
use rsbloom_core::apbf::{Apbf, CountFull, Header, LoadError, Window, HEADER_BYTES, MAX_COUNT};
use rsbloom_core::args::{parse_f64, parse_tick_ms};
use rsbloom_core::clock::Aging;
use rsbloom_core::rdb::{ByteSource, Primitive, PrimitiveSource};

use super::{check_arg_error, encode_primitives, ref_i64, PROBE_ITEMS};

/// Filters up to this many bytes are built from fuzzed headers.
const MAX_BYTES: u64 = 1 << 20;

fn saved(f: &Apbf) -> Vec<Primitive> {
    let mut out = Vec::new();
    f.rdb_save(&mut out);
    out
}

fn bytes(h: &Header) -> u64 {
    h.slices().saturating_mul(h.slice_bytes())
}

/// A copy of `f` through SCANDUMP / LOADCHUNK, with header `h`.
fn chunk_copy(f: &Apbf, h: &Header) -> Apbf {
    let mut copy = Apbf::from_header(&h.encode()).unwrap();
    let mut iter = 1;
    while let Some((next, data)) = f.scandump(iter) {
        copy.load_chunk(next, &data).unwrap();
        iter = next;
    }
    copy
}

/// The counts APBF.INFO shows are ones the operations reach (docs/apbf.md
/// §6.2), written from the spec: count mode one shift per full generation
/// before an insert, time mode shifts only by a clock started at ≥ 1 ms,
/// the head moving back one slice per shift (at most `k + l` per advance).
fn check_counts(h: &Header) {
    assert!(h.is_valid(), "{h:?}");
    // APBF.INFO answers them as RESP integers, which are signed.
    let counts = [h.inserts, h.gen_items, h.shifts, h.last_shift_ms];
    assert!(counts.iter().all(|&v| v <= MAX_COUNT), "{h:?}");
    let n = u128::from(h.slices());
    let [shifts, items, inserts, head] = [h.shifts, h.gen_items, h.inserts, h.head].map(u128::from);
    let head_follows = (shifts + head) % n == 0;
    if h.is_time() {
        assert!(items <= inserts, "{h:?}");
        assert!(shifts > 0 || (items == inserts && head == 0), "{h:?}");
        assert!(shifts == 0 || shifts * u128::from(h.period_ms()) < u128::from(h.last_shift_ms));
        assert!(shifts >= n || head_follows, "{h:?}");
    } else {
        let g = u128::from(h.gen_size);
        assert_eq!(inserts, shifts * g + items, "{h:?}");
        assert!(items <= g && (items > 0 || inserts == 0), "{h:?}");
        assert!(head_follows && h.last_shift_ms == 0, "{h:?}");
    }
}

/// Every operation works on `f`: each of `items` is added (then present,
/// counted once) or refused by a full inserts count (nothing changed); an
/// item starting with an odd byte then moves the clock on by the item's
/// bytes and ages the window; the counts stay what the contents allow
/// after each, and the filter still reloads to itself.
fn exercise(f: &mut Apbf, items: &[&[u8]], clock: u64) {
    let mut now = clock;
    f.advance(now);
    // Batches answer and write what item-by-item calls do.
    let (mut one, mut many) = (f.try_clone().unwrap(), f.try_clone().unwrap());
    let singles: Vec<_> = items.iter().map(|i| one.add(i)).collect();
    let mut batched = Vec::new();
    many.add_batch(items, |r| batched.push(r));
    assert_eq!(batched, singles);
    assert!(many == one);
    let mut checks = Vec::new();
    many.contains_batch(items, now, |p| checks.push(p));
    let want: Vec<bool> = items.iter().map(|i| one.contains(i, now)).collect();
    assert_eq!(checks, want);
    for item in items {
        let before = *f.header();
        match f.add(item) {
            Ok(_) => {
                assert_eq!(f.header().inserts, before.inserts + 1);
                assert!(f.contains(item, 0));
            }
            Err(CountFull) => assert!(before.inserts == MAX_COUNT && *f.header() == before),
        }
        check_counts(f.header());
        if let Some(b) = item.first().filter(|&&b| b % 2 == 1) {
            let dt = item.iter().fold(0u64, |a, &x| a << 8 | u64::from(x));
            now = now.saturating_add(dt << (b % 48));
            f.advance(now);
            check_counts(f.header());
        }
    }
    let _ = f.contains(b"x", now.saturating_add(1 << 20));
    assert!(f.size_bytes() >= bytes(f.header()));
    assert!(Apbf::rdb_load(&mut PrimitiveSource::new(&saved(f)), 0).unwrap() == *f);
}

/// Byte 0 chooses: encoding 0 or 1 of `Apbf::rdb_load` over the rest
/// (version 1 refused; a loaded value has counts its contents allow, saves
/// exactly what was read, reloads `==`, copies `==` through chunks and
/// takes adds and time advances driven by the input), or the rest as a
/// SCANDUMP header (a decoded header is valid and re-encodes identically).
pub fn apbf_rdb(data: &[u8]) {
    let Some((&v, rest)) = data.split_first() else {
        return;
    };
    if v % 3 == 2 {
        return header(rest);
    }
    let encver = i32::from(v % 3);
    let f = match Apbf::rdb_load(&mut ByteSource::new(rest), encver) {
        Ok(f) => f,
        Err(e) => {
            if encver != 0 {
                assert_eq!(e, LoadError::UnsupportedVersion);
            }
            return;
        }
    };
    assert_eq!(encver, 0);
    check_counts(f.header());
    let out = encode_primitives(&saved(&f));
    assert_eq!(
        &rest[..out.len()],
        &out[..],
        "saved value differs from the input"
    );
    let back = Apbf::rdb_load(&mut PrimitiveSource::new(&saved(&f)), 0).unwrap();
    assert!(back == f);
    assert!(chunk_copy(&f, f.header()) == f);
    let mut f = f;
    exercise(&mut f, &PROBE_ITEMS, u64::from(v) << 10);
    let items: Vec<&[u8]> = rest.chunks(3).take(64).collect();
    let clock = f.header().last_shift_ms;
    exercise(&mut f, &items, clock);
}

fn header(rest: &[u8]) {
    let Some(h) = Header::decode(rest) else {
        return;
    };
    check_counts(&h);
    assert_eq!(rest.len(), HEADER_BYTES);
    assert_eq!(h.encode(), rest);
    if bytes(&h) <= MAX_BYTES {
        exercise(&mut Apbf::from_header(rest).unwrap(), &PROBE_ITEMS, 1);
    }
}

/// Every APBF.* parser on argument vectors cut from the input (`\n`),
/// against docs/apbf.md §5 and reference number parsers.
pub fn apbf_args(data: &[u8]) {
    let parts: Vec<&[u8]> = if data.is_empty() {
        Vec::new()
    } else {
        data.split(|&b| b == b'\n').collect()
    };
    for p in &parts {
        let int = ref_i64(p);
        match parse_error(p) {
            Ok(e) => {
                assert!((MIN_ERROR..1.0).contains(&e));
                match int {
                    Some(n) => assert!((1..=5).contains(&n) && e == 10f64.powi(-(n as i32))),
                    None => assert_eq!(Some(e), parse_f64(p)),
                }
            }
            Err(e) => check_arg_error(e),
        }
        assert_eq!(
            parse_scandump_iter(p).ok(),
            int.filter(|&n| n >= 0).map(|n| n as u64)
        );
        assert_eq!(
            parse_loadchunk_iter(p).ok(),
            int.filter(|&n| n >= 1).map(|n| n as u64)
        );
        assert_eq!(
            parse_tick_ms(p, BAD_TIMESTAMP).ok(),
            int.filter(|&n| n >= 1).map(|n| n as u64)
        );
    }
    for n in 0..=parts.len().min(6) {
        let argv: Vec<&[u8]> = [&b"APBF.RESERVE"[..], b"k"]
            .into_iter()
            .chain(parts[..n].iter().copied())
            .collect();
        match parse_reserve(&argv) {
            Ok(r) => {
                assert!(argv.len() == 5 || argv.len() == 6);
                assert_eq!(matches!(r.window, Window::Time { .. }), argv.len() == 6);
                assert_eq!(Some(r.capacity as i64), ref_i64(argv[4]));
                create(r.window, r.error, r.capacity);
            }
            Err(e) => check_arg_error(e),
        }
    }
}

/// `Apbf::new` for small filters: parsed arguments always make one.
fn create(window: Window, error: f64, capacity: u64) {
    if capacity > 4096 {
        return;
    }
    let f = Apbf::new(window, error, capacity).unwrap();
    assert!(f.computed_error() <= error);
    assert!(f.window_items() >= capacity);
}

/// Seed inputs: genuine values of both windows (and one of version 1), a
/// header, the same values with counters near 2^63 that still agree,
/// argument lines of every parser.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    let mut genuine = Vec::new();
    for (window, error, cap, n) in [
        (Window::Count, 0.1, 10u64, 35u64),
        (Window::Count, 0.01, 50, 20),
        (Window::Time { span_ms: 5000 }, 0.1, 20, 30),
    ] {
        let mut f = Apbf::new(window, error, cap).unwrap();
        f.advance(1_000_000);
        for i in 0..n {
            f.add(format!("i{i}").as_bytes()).unwrap();
        }
        f.advance(1_003_000);
        let bytes = encode_primitives(&saved(&f));
        out.push(("apbf_rdb", [vec![0], bytes.clone()].concat()));
        if n == 20 {
            out.push(("apbf_rdb", [vec![1], bytes].concat()));
        }
        let (_, header) = f.scandump(0).unwrap();
        out.push(("apbf_rdb", [vec![2], header.into_owned()].concat()));
        genuine.push(f);
    }
    for f in genuine.iter().step_by(2) {
        // Count window: whole turns of the ring later; time window: its
        // clock and inserts count near the end.
        let mut h = *f.header();
        if h.is_time() {
            (h.inserts, h.last_shift_ms) = (MAX_COUNT - 3, MAX_COUNT - 1000);
        } else {
            let turn = h.slices() * h.gen_size;
            let turns = (MAX_COUNT - h.inserts) / turn;
            h.inserts += turns * turn;
            h.shifts += turns * h.slices();
        }
        let far = encode_primitives(&saved(&chunk_copy(f, &h)));
        out.push(("apbf_rdb", [vec![0], far].concat()));
    }
    for line in [
        &b"COUNT\n0.01\n1000"[..],
        b"TIME\n2\n50\n60",
        b"time\n1e-8\n1073741824\n315360000",
        b"COUNT\n1\n0\n5",
        b"TIME\n0.5\n1\n-1\n0x1p-3",
        b"1\n5\n6\n0\n-0\n01\n9223372036854775807\n1.0\nnan",
    ] {
        out.push(("apbf_args", line.to_vec()));
    }
    out
}
