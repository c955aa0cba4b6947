//! The straightforward implementation the hot paths replaced (a division
//! per probe, windows tried from the oldest and tested from their oldest
//! slice, item by item): the optimised paths must answer and write exactly
//! what it does. Also the probe counts of docs/performance.md (APBF).

use super::probe::{run_of, Hashes, Modulus};
use super::*;
use proptest::prelude::*;

fn ref_test(f: &Apbf, h: Hashes, age: u64, probes: &mut Vec<u64>) -> bool {
    probes.push(age);
    let n = f.slices.len() as u64;
    let pos = (f.h.head + age) % n;
    let i = h.0.wrapping_add(pos.wrapping_mul(h.1)) % f.h.slice_bits;
    f.slices[pos as usize][(i / 8) as usize] & (1 << (i % 8)) != 0
}

fn ref_contains_within(f: &Apbf, h: Hashes, live: u64, probes: &mut Vec<u64>) -> bool {
    let k = f.h.k;
    let Some(mut start) = live.checked_sub(k) else {
        return false;
    };
    'windows: loop {
        for age in (start..start + k).rev() {
            if !ref_test(f, h, age, probes) {
                match age.checked_sub(k) {
                    Some(s) => start = s,
                    None => return false,
                }
                continue 'windows;
            }
        }
        return true;
    }
}

fn ref_contains(f: &Apbf, item: &[u8], now: u64) -> bool {
    let live = f.slices.len() as u64 - f.due_shifts(now).min(f.slices.len() as u64);
    ref_contains_within(f, Hashes::of(item), live, &mut Vec::new())
}

fn ref_add(f: &mut Apbf, item: &[u8]) -> bool {
    if !f.h.is_time() && f.h.gen_items >= f.h.gen_size {
        f.shift(1);
    }
    let h = Hashes::of(item);
    let present = ref_contains_within(f, h, f.slices.len() as u64, &mut Vec::new());
    let n = f.slices.len() as u64;
    for age in 0..f.h.k {
        let pos = (f.h.head + age) % n;
        let i = h.0.wrapping_add(pos.wrapping_mul(h.1)) % f.h.slice_bits;
        f.slices[pos as usize][(i / 8) as usize] |= 1 << (i % 8);
    }
    f.h.gen_items += 1;
    f.h.inserts += 1;
    present
}

fn scandump(f: &Apbf) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut it = 0;
    while let Some((next, data)) = f.scandump(it) {
        if next == 0 {
            break;
        }
        out.push(data.into_owned());
        it = next;
    }
    out
}

#[derive(Debug, Clone)]
enum Op {
    Add(Vec<u16>),
    Check(Vec<u16>, u64),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    let items = || prop::collection::vec(0u16..400, 1..40);
    prop_oneof![
        4 => items().prop_map(Op::Add),
        2 => (items(), 0u64..20_000).prop_map(|(i, dt)| Op::Check(i, dt)),
        1 => (0u64..20_000).prop_map(Op::Advance),
    ]
}

fn key(i: u16) -> Vec<u8> {
    format!("i{i}").into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random windows of both shapes, random items, single and batched
    /// adds and checks, virtual and applied shifts: the same answers, the
    /// same RDB value and SCANDUMP chunks as the reference.
    #[test]
    fn optimised_paths_equal_the_reference(
        error in prop_oneof![Just(0.5), Just(0.1), Just(0.01), Just(1e-3), 1e-6f64..0.3],
        capacity in 1u64..300,
        span_s in prop::option::of(1u64..60),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let window = span_s.map_or(Window::Count, |s| Window::Time { span_ms: s * 1000 });
        let mut fast = Apbf::new(window, error, capacity).unwrap();
        let mut slow = fast.try_clone().unwrap();
        let mut now = 1_000_000;
        for op in ops {
            match op {
                Op::Add(items) => {
                    let items: Vec<Vec<u8>> = items.into_iter().map(key).collect();
                    let want: Vec<_> = items.iter().map(|i| Ok(ref_add(&mut slow, i))).collect();
                    let mut got = Vec::new();
                    if let [one] = &items[..] {
                        got.push(fast.add(one));
                    } else {
                        fast.add_batch(&items, |p| got.push(p));
                    }
                    prop_assert_eq!(got, want);
                }
                Op::Check(items, dt) => {
                    let items: Vec<Vec<u8>> = items.into_iter().map(key).collect();
                    let at = now + dt;
                    let want: Vec<bool> = items.iter().map(|i| ref_contains(&slow, i, at)).collect();
                    let single: Vec<bool> = items.iter().map(|i| fast.contains(i, at)).collect();
                    let mut got = Vec::new();
                    fast.contains_batch(&items, at, |p| got.push(p));
                    prop_assert_eq!(&got, &want);
                    prop_assert_eq!(single, want);
                }
                Op::Advance(dt) => {
                    now += dt;
                    prop_assert_eq!(fast.advance(now), slow.advance(now));
                }
            }
            prop_assert!(fast == slow);
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        fast.rdb_save(&mut a);
        slow.rdb_save(&mut b);
        prop_assert_eq!(a, b);
        prop_assert_eq!(scandump(&fast), scandump(&slow));
    }

    #[test]
    fn reduce_is_the_remainder(x in any::<u64>(), m in prop_oneof![1u64..1 << 20, any::<u64>()]) {
        prop_assert_eq!(Modulus::of(m).reduce(x), x % m.max(1));
    }
}

#[test]
fn reduce_at_the_edges() {
    for m in [
        1,
        2,
        3,
        64,
        1 << 32,
        (1 << 32) + 1,
        u64::MAX / 2,
        u64::MAX - 1,
        u64::MAX,
    ] {
        for x in [0, 1, m - 1, m, m.wrapping_add(1), u64::MAX, u64::MAX - 1] {
            assert_eq!(Modulus::of(m).reduce(x), x % m, "{x} mod {m}");
        }
    }
}

// ---- probes per item (docs/performance.md, APBF) ----

/// Distinct slices (cache lines) a check touches: before (the reference)
/// and now (`run_of` from the youngest).
fn check_probes(f: &Apbf, h: Hashes) -> (usize, usize) {
    let mut before = Vec::new();
    ref_contains_within(f, h, f.slices.len() as u64, &mut before);
    let md = Modulus::of(f.h.slice_bits);
    let mut now = 0;
    run_of(f.h.k, 0, f.slices.len() as u64, |age| {
        now += 1;
        f.test(md, h, age)
    });
    (distinct(before), now)
}

/// The same for an add: the search, and the `k` youngest slices it writes
/// (now: the search among the older slices, the young ones it reads as it
/// sets them, the slice just older and, for a run ending among the young
/// ones, those above it).
fn add_probes(f: &Apbf, h: Hashes) -> (usize, usize) {
    let (k, n) = (f.h.k, f.slices.len() as u64);
    let mut before = Vec::new();
    ref_contains_within(f, h, n, &mut before);
    before.extend(0..k);
    let md = Modulus::of(f.h.slice_bits);
    let mut now: Vec<u64> = (0..k).collect();
    run_of(k, k, n, |age| {
        now.push(age);
        f.test(md, h, age)
    });
    let tail = (0..k).rev().take_while(|&age| f.test(md, h, age)).count() as u64;
    if k < n {
        now.push(k);
        if tail > 0 && f.test(md, h, k) && 2 * k - tail <= n {
            for age in k + 1..2 * k - tail {
                now.push(age);
                if !f.test(md, h, age) {
                    break;
                }
            }
        }
    }
    (distinct(before), distinct(now))
}

fn distinct(mut v: Vec<u64>) -> usize {
    v.sort_unstable();
    v.dedup();
    v.len()
}

/// A Bloom filter as RedisBloom sizes one (bits = capacity · -ln e / ln²2,
/// hashes = ceil(ln 2 · bits per item)), one line per probe: the pair's.
struct Bloom {
    bits: Vec<bool>,
    k: u64,
}

impl Bloom {
    fn new(capacity: u64, error: f64) -> Bloom {
        let bpe = -error.ln() / std::f64::consts::LN_2.powi(2);
        let m = (capacity as f64 * bpe).ceil() as usize;
        Bloom {
            bits: vec![false; m],
            k: (std::f64::consts::LN_2 * bpe).ceil() as u64,
        }
    }
    fn at(&self, h: Hashes, i: u64) -> usize {
        (h.0.wrapping_add(i.wrapping_mul(h.1)) % self.bits.len() as u64) as usize
    }
    fn add(&mut self, h: Hashes) {
        for i in 0..self.k {
            let at = self.at(h, i);
            self.bits[at] = true;
        }
    }
    /// Probes of a check: up to the first miss.
    fn check_probes(&self, h: Hashes) -> usize {
        (0..self.k)
            .position(|i| !self.bits[self.at(h, i)])
            .map_or(self.k as usize, |p| p + 1)
    }
}

/// `cargo test -p rsbloom-core --release apbf::reference::probes --
/// --ignored --nocapture`: probes per item of the benchmark's filters (a
/// window at 1 %, k and l as for any size; 1.25 windows inserted) and of
/// the rotated pair (previous filter full, current half full), for new
/// items and items of the last window.
#[test]
#[ignore]
fn probes() {
    let w = 200_000u64;
    let mut f = Apbf::new(Window::Count, 0.01, w).unwrap();
    let total = w * 5 / 4;
    for i in 0..total {
        f.add(format!("p{i}").as_bytes()).unwrap();
    }
    let (mut prev, mut cur) = (Bloom::new(w, 0.005), Bloom::new(w, 0.005));
    for i in 0..w {
        prev.add(Hashes::of(format!("p{i}").as_bytes()));
    }
    for i in w..w * 3 / 2 {
        cur.add(Hashes::of(format!("p{i}").as_bytes()));
    }
    let samples = 100_000u64;
    let mean =
        |v: &dyn Fn(u64) -> usize| (0..samples).map(v).sum::<usize>() as f64 / samples as f64;
    let fresh = |i: u64| Hashes::of(format!("fresh{i}").as_bytes());
    // Pair: items of the last window are the last half of prev and all of cur.
    let recent = |i: u64| Hashes::of(format!("p{}", w / 2 + i * 7 % w).as_bytes());
    let ap_recent = |i: u64| Hashes::of(format!("p{}", total - w + i * 7 % w).as_bytes());
    println!("k = {}, l = {}, pair: 2 x {} hashes", f.h.k, f.h.l, prev.k);
    println!("| item | APBF add before | now | APBF check before | now | pair add | pair check |");
    for (name, pair_h, ap_h) in [
        (
            "new",
            &fresh as &dyn Fn(u64) -> Hashes,
            &fresh as &dyn Fn(u64) -> Hashes,
        ),
        ("of the window", &recent, &ap_recent),
    ] {
        let add_b = mean(&|i| add_probes(&f, ap_h(i)).0);
        let add_n = mean(&|i| add_probes(&f, ap_h(i)).1);
        let chk_b = mean(&|i| check_probes(&f, ap_h(i)).0);
        let chk_n = mean(&|i| check_probes(&f, ap_h(i)).1);
        let pair_add = mean(&|i| prev.check_probes(pair_h(i)) + cur.k as usize);
        let pair_chk = mean(&|i| prev.check_probes(pair_h(i)) + cur.check_probes(pair_h(i)));
        println!(
            "| {name} | {add_b:.2} | {add_n:.2} | {chk_b:.2} | {chk_n:.2} | {pair_add:.2} | {pair_chk:.2} |"
        );
    }
}
