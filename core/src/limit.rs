//! The per-key memory limit (docs/operations.md "Per-key memory limit"):
//! a write that would take a value above it is refused before anything is
//! allocated. A value's size is what it reports to the server as its memory
//! usage: MEMORY USAGE of the key less the server's own key overhead (for
//! Bloom and Cuckoo filters, BF.INFO / CF.INFO `Size`).
//!
//! A limit is `Option<u64>`: `None` when no limit applies (the setting is 0,
//! or the command comes from the master or the AOF, which must be obeyed).

/// The error reply of a write refused by `bf.max-key-memory`.
pub const OVER_LIMIT: &str = "ERR operation exceeds the key memory limit (bf.max-key-memory)";

/// Whether a value of `bytes` would be above `limit`.
pub fn exceeds(limit: Option<u64>, bytes: u64) -> bool {
    limit.is_some_and(|l| bytes > l)
}

/// `bf.max-key-memory` as a limit: 0 means none.
pub fn from_setting(bytes: u64) -> Option<u64> {
    (bytes != 0).then_some(bytes)
}

/// The tighter of two limits.
pub fn tighter(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        _ => a.or(b),
    }
}

/// Ok when a value of `bytes` is within `limit`, else the limit's error.
pub fn check(limit: Option<u64>, bytes: u64) -> Result<(), &'static str> {
    if exceeds(limit, bytes) {
        Err(OVER_LIMIT)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_off_and_the_limit_itself_is_allowed() {
        assert_eq!(from_setting(0), None);
        assert!(!exceeds(None, u64::MAX));
        assert!(!exceeds(from_setting(100), 100));
        assert!(exceeds(from_setting(100), 101));
        assert_eq!(check(Some(10), 11), Err(OVER_LIMIT));
        assert_eq!(tighter(Some(5), None), Some(5));
        assert_eq!(tighter(Some(5), Some(3)), Some(3));
        assert_eq!(tighter(None, None), None);
    }
}
