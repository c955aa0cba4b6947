//! rsbloom from Rust: the `redis` crate (redis-rs), which has no Bloom API of
//! its own, so the commands are built with `redis::cmd`.
//! Run: cargo run --example redis_rs [PORT]
use redis::{cmd, Connection, RedisResult};

fn main() -> RedisResult<()> {
    let port = std::env::args().nth(1).unwrap_or_else(|| "6379".into());
    let mut r = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?.get_connection()?;
    cmd("DEL")
        .arg(&["bf", "bf-copy", "cf", "cf-copy"])
        .exec(&mut r)?;

    // Bloom filter: 1000 items at 0.1 % false positives.
    cmd("BF.RESERVE")
        .arg("bf")
        .arg(0.001)
        .arg(1000)
        .exec(&mut r)?;
    let added: bool = cmd("BF.ADD").arg("bf").arg("apple").query(&mut r)?;
    assert!(added);
    let added: Vec<bool> = cmd("BF.MADD")
        .arg("bf")
        .arg(&["banana", "cherry"])
        .query(&mut r)?;
    assert_eq!(added, [true, true]);
    let found: bool = cmd("BF.EXISTS").arg("bf").arg("apple").query(&mut r)?;
    assert!(found);
    let found: Vec<bool> = cmd("BF.MEXISTS")
        .arg("bf")
        .arg(&["banana", "durian"])
        .query(&mut r)?;
    assert_eq!(found, [true, false]);
    // BF.INFO: field names and values, alternating.
    let info: Vec<(String, i64)> = cmd("BF.INFO").arg("bf").query(&mut r)?;
    println!("BF.INFO bf: {info:?}");
    assert_eq!(info[3], ("Number of items inserted".into(), 3));

    // Cuckoo filter: items can be counted and deleted.
    cmd("CF.RESERVE").arg("cf").arg(1000).exec(&mut r)?;
    let added: bool = cmd("CF.ADD").arg("cf").arg("apple").query(&mut r)?;
    assert!(added);
    let added: bool = cmd("CF.ADDNX").arg("cf").arg("apple").query(&mut r)?;
    assert!(!added);
    let added: Vec<bool> = cmd("CF.INSERT")
        .arg("cf")
        .arg("ITEMS")
        .arg(&["banana", "cherry"])
        .query(&mut r)?;
    assert_eq!(added, [true, true]);
    let count: i64 = cmd("CF.COUNT").arg("cf").arg("apple").query(&mut r)?;
    assert_eq!(count, 1);
    let deleted: bool = cmd("CF.DEL").arg("cf").arg("banana").query(&mut r)?;
    assert!(deleted);
    let found: Vec<bool> = cmd("CF.MEXISTS")
        .arg("cf")
        .arg(&["banana", "cherry"])
        .query(&mut r)?;
    assert_eq!(found, [false, true]);
    let info: Vec<(String, i64)> = cmd("CF.INFO").arg("cf").query(&mut r)?;
    println!("CF.INFO cf: {info:?}");

    // SCANDUMP / LOADCHUNK: copy each filter chunk by chunk (e.g. to another
    // server). Chunks are bytes; iterator 0 ends the dump.
    for (family, key) in [("BF", "bf"), ("CF", "cf")] {
        let chunks = copy(&mut r, family, key, &format!("{key}-copy"))?;
        println!("{family}.SCANDUMP {key} -> {family}.LOADCHUNK {key}-copy: {chunks} chunks");
    }
    let found: Vec<bool> = cmd("BF.MEXISTS")
        .arg("bf-copy")
        .arg(&["apple", "banana", "cherry", "durian"])
        .query(&mut r)?;
    assert_eq!(found, [true, true, true, false]);
    let found: Vec<bool> = cmd("CF.MEXISTS")
        .arg("cf-copy")
        .arg(&["apple", "banana", "cherry"])
        .query(&mut r)?;
    assert_eq!(found, [true, false, true]);

    println!("redis-rs example: ok");
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
