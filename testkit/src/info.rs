//! Reading `name:value` fields of the server's `INFO` text (and of other
//! replies in that format, like `CLUSTER INFO`).

use std::time::Duration;

use super::resp::Conn;

/// The value of the `name:value` line in `text`, trimmed.
pub fn find<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// The text of `INFO <section>`.
pub fn text(c: &mut Conn, section: &str) -> String {
    let r = c.cmd(&["INFO", section]);
    String::from_utf8_lossy(r.as_bytes()).into_owned()
}

/// A field of `INFO <section>`; panics when it is missing.
pub fn field(c: &mut Conn, section: &str, name: &str) -> String {
    let info = text(c, section);
    match find(&info, name) {
        Some(v) => v.to_string(),
        None => panic!("{name} in {info}"),
    }
}

/// A numeric field of `INFO <section>`.
pub fn num<T: std::str::FromStr>(c: &mut Conn, section: &str, name: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    field(c, section, name).parse().unwrap()
}

/// `used_memory` from `INFO memory`.
pub fn used_memory<T: std::str::FromStr>(c: &mut Conn) -> T
where
    T::Err: std::fmt::Debug,
{
    num(c, "memory", "used_memory")
}

/// Polls `INFO <section>` until `done` holds for its text, which is
/// returned; after `limit` panics showing the last text.
pub fn wait_for(
    c: &mut Conn,
    section: &str,
    limit: Duration,
    done: impl Fn(&str) -> bool,
) -> String {
    super::wait::until(&format!("INFO {section}"), limit, || {
        let info = text(c, section);
        if done(&info) {
            Ok(info)
        } else {
            Err(format!("\n{info}"))
        }
    })
}

/// Waits until no AOF rewrite is running or scheduled.
pub fn wait_aof_rewrite(c: &mut Conn) {
    wait_for(c, "persistence", super::wait::STATE, |i| {
        find(i, "aof_rewrite_in_progress") == Some("0")
            && find(i, "aof_rewrite_scheduled") == Some("0")
    });
}

/// Forks a snapshot (BGSAVE, retried while another child runs) and waits
/// until it is written.
pub fn bgsave_and_wait(c: &mut Conn) {
    super::wait::until("BGSAVE accepted", super::wait::STATE, || {
        match c.cmd(&["BGSAVE"]) {
            super::Reply::Error(e) => Err(e),
            _ => Ok(()),
        }
    });
    wait_for(c, "persistence", super::wait::STATE, |i| {
        find(i, "rdb_bgsave_in_progress") == Some("0")
    });
}

/// Waits until a replica's link to its master is up.
pub fn wait_link_up(replica: &mut Conn) {
    wait_for(replica, "replication", super::wait::STATE, |i| {
        find(i, "master_link_status") == Some("up")
    });
}

/// Waits until the replica has processed everything its master sent.
pub fn wait_replica_synced(master: &mut Conn, replica: &mut Conn) {
    // WAIT returns once the replica acknowledged; the timeout is a deadline.
    assert_eq!(
        master.cmd(&["WAIT", "1", "60000"]),
        super::Reply::Int(1),
        "WAIT"
    );
    super::wait::until("equal replication offsets", super::wait::STATE, || {
        let m = field(master, "replication", "master_repl_offset");
        let r = field(replica, "replication", "master_repl_offset");
        if m == r {
            Ok(())
        } else {
            Err(format!("master {m}, replica {r}"))
        }
    });
}
