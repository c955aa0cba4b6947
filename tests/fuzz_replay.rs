//! Replays the fuzz targets' checks (fuzz/src/lib.rs) on stable Rust: the
//! committed seed corpora, every crash reproducer in `fuzz/regressions/`, and
//! a few thousand seeded pseudo-random inputs per target. `cargo fuzz` itself
//! (nightly flags) runs from `make fuzz` / `make fuzz-ci`.
//!
//! Regenerate the seed corpora with
//! `cargo test --release --test fuzz_replay -- --ignored write_seed_corpus`.

#[path = "../fuzz/src/lib.rs"]
mod harness;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Records the largest allocation that succeeded on this thread, so a replay
/// fails where libFuzzer's malloc limit would (the fuzzer reports successful
/// allocations above `-malloc_limit_mb` as crashes).
struct Tracking;

thread_local! {
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize, ptr: *mut u8) -> *mut u8 {
    if !ptr.is_null() {
        let _ = PEAK.try_with(|p| p.set(p.get().max(size)));
    }
    ptr
}

// SAFETY: forwards to the system allocator unchanged.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size(), System.alloc(l))
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size(), System.alloc_zeroed(l))
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note(n, System.realloc(p, l, n))
    }
}

#[global_allocator]
static ALLOC: Tracking = Tracking;

/// libFuzzer's default malloc limit (-rss_limit_mb=2048).
const MALLOC_LIMIT: usize = 2048 << 20;

/// Runs one input; panics on a failed check or an allocation libFuzzer
/// would have reported.
fn check(name: &str, f: fn(&[u8]), data: &[u8]) -> Result<(), String> {
    PEAK.with(|p| p.set(0));
    std::panic::catch_unwind(|| f(data)).map_err(|_| format!("{name}: check failed"))?;
    let peak = PEAK.with(Cell::get);
    if peak > MALLOC_LIMIT {
        return Err(format!("{name}: allocated {peak} bytes"));
    }
    Ok(())
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

fn run(name: &str, f: fn(&[u8]), path: &Path) {
    let data = std::fs::read(path).unwrap();
    if let Err(e) = check(name, f, &data) {
        panic!("{e} on {}", path.display());
    }
}

/// The targets cargo-fuzz builds (the files of fuzz/src/bin) are the ones
/// replayed here.
#[test]
fn every_target_file_is_replayed() {
    let mut bins: Vec<String> = files(&fuzz_dir().join("src/bin"))
        .iter()
        .filter_map(|p| p.file_stem()?.to_str().map(String::from))
        .collect();
    let mut names: Vec<String> = harness::TARGETS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    bins.sort();
    names.sort();
    assert_eq!(
        bins, names,
        "fuzz/src/bin against TARGETS in fuzz/src/lib.rs"
    );
}

#[test]
fn seed_corpora_pass_every_target() {
    for (name, f) in harness::TARGETS {
        let seeds = files(&fuzz_dir().join("corpus").join(name));
        assert!(!seeds.is_empty(), "no seed corpus for {name}");
        for p in &seeds {
            run(name, f, p);
        }
    }
}

#[test]
fn regressions_stay_fixed() {
    let mut n = 0;
    for (name, f) in harness::TARGETS {
        for p in files(&fuzz_dir().join("regressions").join(name)) {
            run(name, f, &p);
            n += 1;
        }
    }
    // Reproducers are kept for every crash found (see fuzz/README.md).
    assert!(n >= 1, "fuzz/regressions is empty");
}

/// Seed inputs with random mutations: a small, deterministic stand-in for
/// the fuzzer that runs with every `cargo test`.
#[test]
fn mutated_seeds_pass_every_target() {
    let mut rng = SmallRng::seed_from_u64(0x5eed_f022);
    let seeds = harness::seeds();
    for (name, f) in harness::TARGETS {
        let mine: Vec<&Vec<u8>> = seeds
            .iter()
            .filter(|(t, _)| *t == name)
            .map(|(_, d)| d)
            .collect();
        assert!(!mine.is_empty(), "no seeds for {name}");
        for round in 0..300 {
            let mut d = mine[round % mine.len()].clone();
            match rng.gen_range(0..4) {
                0 if !d.is_empty() => {
                    let n = rng.gen_range(1..=4);
                    for _ in 0..n {
                        let i = rng.gen_range(0..d.len());
                        d[i] ^= 1 << rng.gen_range(0..8);
                    }
                }
                1 if !d.is_empty() => {
                    let n = rng.gen_range(0..d.len());
                    d.truncate(n);
                }
                2 if d.len() >= 8 => {
                    let i = rng.gen_range(0..d.len() - 7);
                    let v: u64 = [0, 1, 2, 1 << 32, 1 << 63, u64::MAX][rng.gen_range(0..6)];
                    d[i..i + 8].copy_from_slice(&v.to_le_bytes());
                }
                _ => {
                    let n = rng.gen_range(0..64);
                    d.extend((0..n).map(|_| rng.gen::<u8>()));
                }
            }
            if let Err(e) = check(name, f, &d) {
                panic!("{e} on mutated seed {d:02x?}");
            }
        }
    }
}

#[test]
#[ignore = "writes fuzz/corpus; run by hand after changing the seeds"]
fn write_seed_corpus() {
    let mut count = std::collections::HashMap::new();
    for (name, data) in harness::seeds() {
        let dir = fuzz_dir().join("corpus").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let k = count.entry(name).or_insert(0);
        std::fs::write(dir.join(format!("seed-{k:02}")), &data).unwrap();
        *k += 1;
    }
}
