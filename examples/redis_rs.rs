//! rsbloom from Rust: the `redis` crate (redis-rs), which has no RedisBloom
//! API of its own, so the commands are built with `redis::cmd`. One small
//! real use per family: Bloom, Cuckoo, Count-Min Sketch, Top-K, T-Digest.
//! Run: cargo run --example redis_rs [PORT]
use redis::{cmd, Connection, RedisResult};

fn main() -> RedisResult<()> {
    let port = std::env::args().nth(1).unwrap_or_else(|| "6379".into());
    let mut r = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?.get_connection()?;
    cmd("DEL")
        .arg(&[
            "crawled",
            "crawled-copy",
            "online",
            "online-copy",
            "hits",
            "top-products",
            "latency",
        ])
        .exec(&mut r)?;
    bloom(&mut r)?;
    cuckoo(&mut r)?;
    count_min_sketch(&mut r)?;
    top_k(&mut r)?;
    t_digest(&mut r)?;

    // SCANDUMP / LOADCHUNK: copy each filter chunk by chunk (e.g. to another
    // server). Chunks are bytes; iterator 0 ends the dump.
    for (family, key) in [("BF", "crawled"), ("CF", "online")] {
        let chunks = copy(&mut r, family, key, &format!("{key}-copy"))?;
        println!("{family}.SCANDUMP {key} -> {family}.LOADCHUNK {key}-copy: {chunks} chunks");
    }
    let found: Vec<bool> = cmd("BF.MEXISTS")
        .arg("crawled-copy")
        .arg(&["https://example.com/", "https://example.com/b"])
        .query(&mut r)?;
    assert_eq!(found, [true, false]);
    let found: Vec<bool> = cmd("CF.MEXISTS")
        .arg("online-copy")
        .arg(&["alice", "bob", "carol"])
        .query(&mut r)?;
    assert_eq!(found, [true, false, true]);

    println!("redis-rs example: ok");
    Ok(())
}

/// Bloom filter: de-duplicate. A crawler visits each URL once: false means
/// certainly new, true already seen (or, 0.1 % of the time, a false positive).
fn bloom(r: &mut Connection) -> RedisResult<()> {
    cmd("BF.RESERVE")
        .arg("crawled")
        .arg(0.001)
        .arg(1000)
        .exec(r)?;
    for url in [
        "https://example.com/",
        "https://example.com/a",
        "https://example.com/",
    ] {
        let new: bool = cmd("BF.ADD").arg("crawled").arg(url).query(r)?;
        println!("{} {url}", if new { "crawl" } else { "skip (seen)" });
    }
    let found: Vec<bool> = cmd("BF.MEXISTS")
        .arg("crawled")
        .arg(&["https://example.com/a", "https://example.com/b"])
        .query(r)?;
    assert_eq!(found, [true, false]);
    // BF.INFO: field names and values, alternating.
    let info: Vec<(String, i64)> = cmd("BF.INFO").arg("crawled").query(r)?;
    println!("BF.INFO crawled: {info:?}");
    assert_eq!(info[3], ("Number of items inserted".into(), 2));
    Ok(())
}

/// Cuckoo filter: membership you can delete from. Who is online: log in
/// adds, log out deletes.
fn cuckoo(r: &mut Connection) -> RedisResult<()> {
    cmd("CF.RESERVE").arg("online").arg(1000).exec(r)?;
    let added: bool = cmd("CF.ADD").arg("online").arg("alice").query(r)?;
    assert!(added);
    let added: bool = cmd("CF.ADDNX").arg("online").arg("alice").query(r)?;
    assert!(!added);
    let added: Vec<bool> = cmd("CF.INSERT")
        .arg("online")
        .arg("ITEMS")
        .arg(&["bob", "carol"])
        .query(r)?;
    assert_eq!(added, [true, true]);
    let deleted: bool = cmd("CF.DEL").arg("online").arg("bob").query(r)?; // bob logs out
    assert!(deleted);
    let found: Vec<bool> = cmd("CF.MEXISTS")
        .arg("online")
        .arg(&["alice", "bob", "carol"])
        .query(r)?;
    assert_eq!(found, [true, false, true]);
    let info: Vec<(String, i64)> = cmd("CF.INFO").arg("online").query(r)?;
    println!("CF.INFO online: {info:?}");
    Ok(())
}

/// Count-Min Sketch: frequencies in fixed memory. Requests per client IP; a
/// count is never under the truth.
fn count_min_sketch(r: &mut Connection) -> RedisResult<()> {
    cmd("CMS.INITBYPROB")
        .arg("hits")
        .arg(0.001)
        .arg(0.01)
        .exec(r)?;
    for ip in ["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.1"] {
        cmd("CMS.INCRBY").arg("hits").arg(ip).arg(1).exec(r)?;
    }
    let counts: Vec<i64> = cmd("CMS.QUERY")
        .arg("hits")
        .arg(&["10.0.0.1", "10.0.0.2", "10.0.0.3"])
        .query(r)?;
    assert_eq!(counts, [3, 1, 0]);
    let info: Vec<(String, i64)> = cmd("CMS.INFO").arg("hits").query(r)?;
    println!("CMS.INFO hits: {info:?}");
    Ok(())
}

/// Top-K: heavy hitters. The 3 most viewed products of a stream of views;
/// TOPK.ADD answers the item each view pushed out of the top 3, if any.
fn top_k(r: &mut Connection) -> RedisResult<()> {
    cmd("TOPK.RESERVE")
        .arg("top-products")
        .arg(&["3", "50", "4", "0.9"])
        .exec(r)?;
    let expelled: Vec<Option<String>> = cmd("TOPK.ADD")
        .arg("top-products")
        .arg(&["shoes", "hat", "shoes", "socks", "shoes", "hat", "scarf"])
        .query(r)?;
    println!(
        "TOPK.ADD pushed out: {:?}",
        expelled.iter().flatten().collect::<Vec<_>>()
    );
    cmd("TOPK.INCRBY")
        .arg("top-products")
        .arg(&["socks", "4", "belt", "1"])
        .exec(r)?;
    let top: Vec<(String, i64)> = cmd("TOPK.LIST")
        .arg("top-products")
        .arg("WITHCOUNT")
        .query(r)?;
    println!("top 3: {top:?}");
    assert_eq!(
        top,
        [("socks".into(), 5), ("shoes".into(), 3), ("hat".into(), 2)]
    );
    let found: Vec<bool> = cmd("TOPK.QUERY")
        .arg("top-products")
        .arg(&["shoes", "scarf"])
        .query(r)?;
    assert_eq!(found, [true, false]);
    Ok(())
}

/// T-Digest: percentiles of a stream. Request latencies in milliseconds, two
/// of 16 slow: median, 90th and 99th percentile, and the share under 20 ms.
fn t_digest(r: &mut Connection) -> RedisResult<()> {
    cmd("TDIGEST.CREATE").arg("latency").exec(r)?;
    cmd("TDIGEST.ADD")
        .arg("latency")
        .arg(&[
            12, 15, 11, 14, 13, 12, 16, 11, 13, 250, 12, 14, 13, 15, 90, 12,
        ])
        .exec(r)?;
    let p: Vec<f64> = cmd("TDIGEST.QUANTILE")
        .arg("latency")
        .arg(&[0.5, 0.9, 0.99])
        .query(r)?;
    println!("latency p50 {} ms, p90 {} ms, p99 {} ms", p[0], p[1], p[2]);
    assert_eq!(p, [13.0, 90.0, 250.0]);
    let under: Vec<f64> = cmd("TDIGEST.CDF").arg("latency").arg(20).query(r)?;
    assert_eq!(under, [0.875]);
    let min: f64 = cmd("TDIGEST.MIN").arg("latency").query(r)?;
    let max: f64 = cmd("TDIGEST.MAX").arg("latency").query(r)?;
    assert_eq!((min, max), (11.0, 250.0));
    Ok(())
}

fn copy(r: &mut Connection, family: &str, from: &str, to: &str) -> RedisResult<usize> {
    let mut chunks = 0;
    let mut iterator = 0i64;
    loop {
        let (next, chunk): (i64, Vec<u8>) = cmd(&format!("{family}.SCANDUMP"))
            .arg(from)
            .arg(iterator)
            .query(r)?;
        if next == 0 {
            return Ok(chunks);
        }
        cmd(&format!("{family}.LOADCHUNK"))
            .arg(to)
            .arg(next)
            .arg(chunk)
            .exec(r)?;
        iterator = next;
        chunks += 1;
    }
}
