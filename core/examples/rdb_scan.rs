//! Reads an RDB file key by key and reports what it holds and how fast:
//! `cargo run --release -p rsbloom-core --example rdb_scan -- FILE [--skip]`
//! (`-` reads standard input). Values are read (copied out) unless
//! `--skip`. For measuring the reader (peak RSS: `/usr/bin/time -v`).

use rsbloom_core::rdb_file::{type_name, RdbReader};
use std::collections::BTreeMap;
use std::io::Read;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().ok_or("usage: rdb_scan FILE|- [--skip]")?;
    let skip = args.iter().any(|a| a == "--skip");
    let input: Box<dyn Read> = match path.as_str() {
        "-" => Box::new(std::io::stdin().lock()),
        p => Box::new(std::fs::File::open(p)?),
    };
    let start = Instant::now();
    let mut r = RdbReader::new(input)?;
    let (mut keys, mut largest) = (0u64, 0u64);
    let mut types: BTreeMap<String, u64> = BTreeMap::new();
    while let Some(h) = r.next_key()? {
        let len = if skip {
            r.skip_value()?
        } else {
            r.read_value()?.len() as u64
        };
        keys += 1;
        largest = largest.max(len);
        let name = match h.module {
            Some(m) => m.name,
            None => type_name(h.type_byte, r.version()).to_string(),
        };
        *types.entry(name).or_default() += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let mib = r.offset() as f64 / (1 << 20) as f64;
    println!(
        "RDB {}: {keys} keys, {mib:.1} MiB in {secs:.2} s: {:.0} keys/s, {:.0} MiB/s; largest value {largest} B; {types:?}",
        r.version(),
        keys as f64 / secs,
        mib / secs
    );
    Ok(())
}
