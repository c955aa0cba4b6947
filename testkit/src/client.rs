//! redis-rs, the client real users run: for tests whose assertions are
//! about state (typed replies), not reply bytes (those use [`super::resp`]).
//! Its cluster client: [`super::cluster::Cluster::client`].

use redis::{ConnectionLike, FromRedisValue, RedisResult};

use super::diff::show_args;

/// A plain (not cluster-aware) connection to the server on `port`.
pub fn connect(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|c| c.get_connection())
        .unwrap_or_else(|e| panic!("connect to {port}: {e}"))
}

/// Runs the command `args` on `c`, its reply converted to `T`; a server
/// error reply (also one inside an array) is an `Err`.
pub fn try_query<T: FromRedisValue, A: AsRef<[u8]>>(
    c: &mut dyn ConnectionLike,
    args: &[A],
) -> RedisResult<T> {
    let mut cmd = redis::Cmd::new();
    for a in args {
        cmd.arg(a.as_ref());
    }
    cmd.query(c)
}

/// [`try_query`]; an error fails the test, naming the command.
pub fn query<T: FromRedisValue, A: AsRef<[u8]>>(c: &mut dyn ConnectionLike, args: &[A]) -> T {
    try_query(c, args).unwrap_or_else(|e| {
        let head: Vec<Vec<u8>> = args.iter().take(3).map(|a| a.as_ref().to_vec()).collect();
        panic!("{} …: {e}", show_args(&head))
    })
}
