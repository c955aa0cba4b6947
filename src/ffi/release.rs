//! The module's own thread for releasing the memory of large values after
//! the server has unlinked and uncounted them (ffi/datatype.rs `free`).

use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

type Job = Box<dyn FnOnce() + Send>;

/// The queue and the process that started its thread: a forked child (a
/// snapshot) has no such thread, and releases in place.
static QUEUE: OnceLock<Option<(u32, Sender<Job>)>> = OnceLock::new();

fn start() -> Option<(u32, Sender<Job>)> {
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("rsbloom-free".into())
        .spawn(move || {
            for job in rx {
                // A panic must not end the thread: later jobs still run.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        })
        .ok()?;
    Some((std::process::id(), tx))
}

/// Runs `job` on the release thread, or here where there is none.
pub fn later(job: Job) {
    match QUEUE.get_or_init(start) {
        Some((pid, tx)) if *pid == std::process::id() => {
            if let Err(unsent) = tx.send(job) {
                (unsent.0)();
            }
        }
        _ => job(),
    }
}
