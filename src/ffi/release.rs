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
            follow_lazy_free_thread();
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

/// Moves this thread onto the cores of the server's own lazy-free thread
/// (`bio_cpulist`, else the mask the process started with): it does that
/// thread's job, and started from the main thread it would otherwise share
/// the main thread's `server_cpulist` cores with the commands it keeps from
/// waiting. Without such a thread it stays where it is.
fn follow_lazy_free_thread() {
    let Some(tid) = thread_named("bio_lazy_free") else {
        return;
    };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: both calls only read or write the set they are given.
    unsafe {
        let mut cpus: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, size, &mut cpus) == 0 {
            libc::sched_setaffinity(0, size, &cpus);
        }
    }
}

/// Id of a thread of this process by name (/proc's `comm`).
fn thread_named(name: &str) -> Option<libc::pid_t> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .find_map(|task| {
            let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
            if comm.trim_end() != name {
                return None;
            }
            task.file_name().to_str()?.parse().ok()
        })
}
