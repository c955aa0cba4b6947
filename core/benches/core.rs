//! Micro-benchmarks of the core: `cargo bench -p rsbloom-core`
//! (`make bench` runs them too, shortened).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rsbloom_core::bloom::Chain;
use rsbloom_core::cuckoo::{hash_item, CuckooFilter};
use rsbloom_core::hash::{murmur2, murmur64a};
use rsbloom_core::tdigest::WindowedTDigest;
use rsbloom_core::topk::WindowedTopK;
use rsbloom_core::valkey_bloom::{Create, Object, FIXED_SEED};
use rsbloom_core::window::{WindowSpec, Windowed};

fn items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i:012}").into_bytes())
        .collect()
}

fn hashing(c: &mut Criterion) {
    let mut g = c.benchmark_group("hash");
    for len in [12usize, 64] {
        let data = vec![0xabu8; len];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(format!("murmur64a/{len}B"), |b| {
            b.iter(|| murmur64a(black_box(&data), 0xc6a4a7935bd1e995))
        });
        g.bench_function(format!("murmur2/{len}B"), |b| {
            b.iter(|| murmur2(black_box(&data), 0x9747b28c))
        });
    }
    g.finish();
}

/// Successive 1000-item slices of a large pool of absent items, so probes
/// of a large filter miss the cache as they would on a server.
struct Fresh {
    pool: Vec<Vec<u8>>,
    next: usize,
}

impl Fresh {
    fn new(prefix: &str) -> Fresh {
        Fresh {
            pool: items(prefix, 1_000_000),
            next: 0,
        }
    }

    fn slice(&mut self) -> &[Vec<u8>] {
        let start = self.next;
        self.next = (start + 1000) % self.pool.len();
        &self.pool[start..start + 1000]
    }
}

/// A scaling chain (expansion 2) holding `n` items named `<prefix><i>`.
fn filled_chain(capacity: u64, error: f64, prefix: &str, n: usize) -> Box<Chain> {
    let mut chain = Chain::new(capacity, error, 2, false).unwrap();
    for it in items(prefix, n) {
        chain.add(&it);
    }
    chain
}

fn bloom(c: &mut Criterion) {
    let mut g = c.benchmark_group("bloom");
    let probe = items("x", 1000);
    g.throughput(Throughput::Elements(probe.len() as u64));

    // 1M capacity, 1% (about 1.2 MiB: cache-resident).
    let small = filled_chain(1_000_000, 0.01, "s", 500_000);
    g.bench_function("check/1M", |b| {
        b.iter(|| probe.iter().filter(|i| small.contains(i)).count())
    });
    g.bench_function("add/1M", |b| {
        b.iter_batched_ref(
            || Chain::new(1_000_000, 0.01, 2, false).unwrap(),
            |chain| {
                probe.iter().for_each(|i| {
                    black_box(chain.add(i));
                })
            },
            BatchSize::LargeInput,
        )
    });

    // 50M capacity, 0.1% (about 90 MiB: far larger than cache).
    let mut big = filled_chain(50_000_000, 0.001, "b", 200_000);
    let mut fresh = Fresh::new("y");
    g.bench_function("check/90MiB one by one", |b| {
        b.iter(|| fresh.slice().iter().filter(|i| big.contains(i)).count())
    });
    g.bench_function("check/90MiB batch", |b| {
        b.iter(|| {
            let mut n = 0;
            for chunk in fresh.slice().chunks(100) {
                big.contains_batch(chunk, |f| n += usize::from(f));
            }
            n
        })
    });
    let mut round = 0u32;
    g.bench_function("add/90MiB one by one", |b| {
        b.iter(|| {
            round += 1;
            for i in &probe {
                let mut item = i.clone();
                item.extend_from_slice(&round.to_le_bytes());
                big.add(&item);
            }
        })
    });
    g.bench_function("add/90MiB batch", |b| {
        b.iter(|| {
            round += 1;
            let batch: Vec<Vec<u8>> = probe
                .iter()
                .map(|i| [i.as_slice(), &round.to_le_bytes()].concat())
                .collect();
            for chunk in batch.chunks(100) {
                big.add_batch(chunk, None, |_| true);
            }
        })
    });

    // A chain of 10 links (capacity 1000, expansion 2).
    let chain = filled_chain(1000, 0.01, "c", 1_030_000);
    assert!(chain.num_links() >= 10);
    g.bench_function("check/10 links", |b| {
        b.iter(|| fresh.slice().iter().filter(|i| chain.contains(i)).count())
    });
    g.finish();
}

fn cuckoo(c: &mut Criterion) {
    let mut g = c.benchmark_group("cuckoo");
    let probe: Vec<_> = items("x", 1000).iter().map(|i| hash_item(i)).collect();
    g.throughput(Throughput::Elements(probe.len() as u64));
    g.bench_function("hash_item", |b| {
        let raw = items("x", 1000);
        b.iter(|| raw.iter().map(|i| hash_item(i).fp as u64).sum::<u64>())
    });

    let mut cf = CuckooFilter::new(2_000_000, 2, 20, 1).unwrap();
    for it in items("s", 1_000_000) {
        cf.insert(hash_item(&it));
    }
    g.bench_function("check/2M", |b| {
        b.iter(|| probe.iter().filter(|&&h| cf.contains(h)).count())
    });
    g.bench_function("insert/2M empty", |b| {
        b.iter_batched_ref(
            || CuckooFilter::new(2_000_000, 2, 20, 1).unwrap(),
            |f| {
                probe.iter().for_each(|&h| {
                    black_box(f.insert(h));
                })
            },
            BatchSize::LargeInput,
        )
    });
    // Nearly full (95%): most inserts go through the kick-out path.
    let full = {
        let mut f = CuckooFilter::new(65536, 2, 500, 1).unwrap();
        for it in items("f", 62_000) {
            f.insert(hash_item(&it));
        }
        f
    };
    g.bench_function("insert/kick-out (95% full)", |b| {
        b.iter_batched_ref(
            || full.try_clone().unwrap(),
            |f| {
                probe.iter().for_each(|&h| {
                    black_box(f.insert(h));
                })
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// valkey-bloom's flavour: SipHash-1-3, one 100M-bit (12.5 MB) sub-filter
/// holding 200k items; items one by one and in batches of 100.
fn valkey_bloom(c: &mut Criterion) {
    let mut g = c.benchmark_group("valkey_bloom");
    let create = Create {
        capacity: 10_433_000,
        fp_rate: 0.01,
        tightening: 0.5,
        expansion: 2,
        seed: FIXED_SEED,
        seed_random: false,
    };
    let mut big = Object::new(&create, None).unwrap();
    assert!(big.size() > 12_500_000);
    big.add_batch(&items("v", 200_000), None, |_| true);
    let mut fresh = Fresh::new("w");
    g.throughput(Throughput::Elements(1000));
    g.bench_function("check/100Mbit one by one", |b| {
        b.iter(|| fresh.slice().iter().filter(|i| big.contains(i)).count())
    });
    g.bench_function("check/100Mbit batch of 100", |b| {
        b.iter(|| {
            let mut n = 0;
            for chunk in fresh.slice().chunks(100) {
                big.contains_batch(chunk, |f| n += usize::from(f));
            }
            n
        })
    });
    let probe = items("z", 1000);
    let mut round = 0u32;
    let mut fresh_items = move || {
        round += 1;
        probe
            .iter()
            .map(|i| [i.as_slice(), &round.to_le_bytes()].concat())
            .collect::<Vec<Vec<u8>>>()
    };
    g.bench_function("add/100Mbit one by one", |b| {
        b.iter_batched(
            &mut fresh_items,
            |batch| {
                for i in &batch {
                    black_box(big.add(i, None)).ok();
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("add/100Mbit batch of 100", |b| {
        b.iter_batched(
            &mut fresh_items,
            |batch| {
                for chunk in batch.chunks(100) {
                    big.add_batch(chunk, None, |_| true);
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// A Zipf stream (s = 1.1) over `n` items, from a fixed seed.
struct Zipf {
    cdf: Vec<f64>,
    state: u64,
}

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut total = 0.0;
        let cdf = (1..=n)
            .map(|r| {
                total += (r as f64).powf(-1.1);
                total
            })
            .collect::<Vec<_>>();
        let cdf = cdf.iter().map(|c| c / total).collect();
        Zipf { cdf, state: 42 }
    }

    fn next(&mut self) -> usize {
        self.state = self
            .state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let u = (self.state >> 11) as f64 / (1u64 << 53) as f64;
        self.cdf.partition_point(|&c| c < u)
    }
}

/// A full window of `buckets` one-second buckets, each of 10,000 Zipf
/// events over 50,000 items (bench/window.py's stream); read half a
/// bucket after its last shift.
fn full_window(k: u32, width: u32, buckets: u64) -> (WindowedTopK, u64) {
    let spec = WindowSpec {
        span_ms: 1000 * buckets,
        buckets,
    };
    let mut w = WindowedTopK::new(k, width, 5, 0.9, spec).unwrap();
    let names = items("item:", 50_000);
    let mut zipf = Zipf::new(names.len());
    let mut now = 1_700_000_000_000;
    w.advance(now);
    for b in 0..buckets {
        if b > 0 {
            now += 1000;
            w.advance(now);
        }
        for _ in 0..10_000 {
            w.youngest_mut().add(&names[zipf.next()], 1).unwrap();
        }
    }
    (w, now + 500)
}

/// Windowed Top-K reads and shifts on full windows (docs/topk-window.md).
fn topk_window(c: &mut Criterion) {
    let mut g = c.benchmark_group("topk_window");
    g.sample_size(10);
    // The 100 heaviest items, and 100 of the tail (in no heap).
    let names = items("item:", 50_000);
    let (heavy, rare) = (&names[..100], &names[49_900..]);
    for (k, width, buckets) in [(100, 1000, 60), (1000, 4000, 300)] {
        let (w, now) = full_window(k, width, buckets);
        let name = format!("k{k} B{buckets}");
        g.bench_function(format!("list/{name}"), |b| {
            b.iter(|| w.list(black_box(now)).unwrap().len())
        });
        // A bucket later, no write: the read expires the oldest itself.
        g.bench_function(format!("list idle/{name}"), |b| {
            b.iter(|| w.list(black_box(now + 1000)).unwrap().len())
        });
        for (kind, probe) in [("heavy", heavy), ("rare", rare)] {
            g.bench_function(format!("count x100 {kind}/{name}"), |b| {
                b.iter(|| probe.iter().map(|i| w.count(i, now)).sum::<u64>())
            });
        }
        g.bench_function(format!("shift/{name}"), |b| {
            b.iter_batched_ref(
                || w.try_clone().unwrap(),
                |w| w.advance(now + 500),
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// A windowed T-Digest's read (its live buckets as one digest) on a full
/// window of 60 buckets of 10,000 values: the usual read (the closed
/// buckets' merge and the youngest) and a reader a bucket late (every live
/// bucket merged).
fn tdigest_window(c: &mut Criterion) {
    let mut g = c.benchmark_group("tdigest_window");
    g.sample_size(10);
    let buckets = 60;
    let spec = WindowSpec {
        span_ms: 1000 * buckets,
        buckets,
    };
    let mut w = WindowedTDigest::new(100, spec).unwrap();
    let mut now = 1_700_000_000_000;
    w.advance(now);
    let mut x = 1u64;
    for b in 0..buckets {
        if b > 0 {
            now += 1000;
            w.advance(now);
        }
        let values: Vec<f64> = (0..10_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((x >> 11) as f64 / (1u64 << 53) as f64).ln().abs()
            })
            .collect();
        w.add_values(&values).unwrap();
    }
    let now = now + 500;
    g.bench_function("view/B60", |b| {
        b.iter(|| w.view(black_box(now)).unwrap().size())
    });
    g.bench_function("view idle/B60", |b| {
        b.iter(|| w.view(black_box(now + 1000)).unwrap().size())
    });
    g.finish();
}

criterion_group!(
    benches,
    hashing,
    bloom,
    cuckoo,
    valkey_bloom,
    topk_window,
    tdigest_window
);
criterion_main!(benches);
