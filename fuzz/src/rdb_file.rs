//! The RDB file reader (`rsbloom_core::rdb_file`) over arbitrary files.

use rsbloom_core::rdb_file::{KeyHeader, RdbError, RdbReader};

/// What one pass over a file saw: each key and its value's length, then
/// how it ended.
type Pass = (Vec<(KeyHeader, u64)>, Result<(), RdbError>);

fn pass(data: &[u8], read: bool) -> Pass {
    let mut keys = Vec::new();
    let end = (|| -> Result<(), RdbError> {
        let mut r = RdbReader::new(data)?;
        while let Some(h) = r.next_key()? {
            assert!(h.offset < r.offset() && r.offset() <= data.len() as u64);
            let len = if read {
                let v = r.read_value()?;
                // Type byte first, or Redis 8.6's key metadata before it.
                assert!(v.first() == Some(&h.type_byte) || v.first() == Some(&243));
                v.len() as u64
            } else {
                r.skip_value()?
            };
            keys.push((h, len));
        }
        assert_eq!(r.next_key(), Ok(None));
        Ok(())
    })();
    if let Err(e) = &end {
        assert!(e.offset <= data.len() as u64, "{e}");
    }
    (keys, end)
}

/// Reads every value, then skips every value: never a panic, and both
/// passes see the same keys, lengths and end (error included).
pub fn rdb_file(data: &[u8]) {
    assert_eq!(pass(data, true), pass(data, false));
}

/// The files written by real servers for the core's tests.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    macro_rules! files {
        ($($name:literal),*) => {
            vec![$(("rdb_file", include_bytes!(concat!("../../core/tests/data/rdb/", $name, ".rdb")).to_vec())),*]
        };
    }
    files!(
        "redis-7.0-on",
        "redis-7.0-off",
        "valkey-8.0-on",
        "valkey-8.0-off",
        "redis-8.0-on",
        "redis-8.0-off",
        "redis-8.6-on",
        "redis-8.6-off",
        "valkey-9.1-on",
        "valkey-9.1-off"
    )
}
