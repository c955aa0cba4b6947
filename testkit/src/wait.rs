//! The one way the harness waits for a state: poll it until a deadline,
//! and when the deadline passes, say what was seen last. Deadlines are
//! generous (they only matter when something is wrong): the suite shares a
//! 2-core machine with other builds and tests.

use std::time::{Duration, Instant};

/// Default deadline for a server-side state (link up, rewrite done,
/// cluster converged, failover done).
pub const STATE: Duration = Duration::from_secs(60);

/// Polls `probe` every `every` until it returns `Ok`, which is returned.
/// `Err` describes what it saw; after `limit` the last one is returned as
/// `Err`, prefixed with what was awaited.
pub fn poll<T>(
    what: &str,
    limit: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Result<T, String>,
) -> Result<T, String> {
    let start = Instant::now();
    loop {
        match probe() {
            Ok(v) => return Ok(v),
            Err(seen) if start.elapsed() >= limit => {
                return Err(format!(
                    "timed out after {limit:?} waiting for {what}; last seen: {seen}"
                ))
            }
            Err(_) => std::thread::sleep(every),
        }
    }
}

/// [`poll`] every `every`, panicking at the deadline.
pub fn until_every<T>(
    what: &str,
    limit: Duration,
    every: Duration,
    probe: impl FnMut() -> Result<T, String>,
) -> T {
    poll(what, limit, every, probe).unwrap_or_else(|e| panic!("{e}"))
}

/// [`until_every`] polling every 20 ms.
pub fn until<T>(what: &str, limit: Duration, probe: impl FnMut() -> Result<T, String>) -> T {
    until_every(what, limit, Duration::from_millis(20), probe)
}
