//! A minimal RESP2/RESP3 client that keeps every reply type distinct
//! (simple vs bulk string, null kinds, bool vs integer, map vs array), so
//! differential tests compare exactly what the wire carried. It exists next
//! to redis-rs ([`super::client`]) for the byte-exact comparisons, which
//! redis-rs normalizes away: `$-1`, `*-1` and RESP3 `_` all read as `Nil`, a
//! double as an `f64` (its text is gone), and `query` turns an error reply,
//! even one inside an array, into an `Err` for the whole reply.

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

#[derive(Clone, PartialEq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    /// RESP2 `$-1` / `*-1`.
    Nil,
    /// RESP3 `_`.
    Null,
    Bool(bool),
    Double(String),
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    Set(Vec<Reply>),
    Verbatim(Vec<u8>),
    BigNumber(String),
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Simple(s) => write!(f, "+{s}"),
            Reply::Error(s) => write!(f, "-{s}"),
            Reply::Int(i) => write!(f, ":{i}"),
            Reply::Bulk(b) => write!(f, "${:?}", String::from_utf8_lossy(b)),
            Reply::Nil => write!(f, "nil"),
            Reply::Null => write!(f, "_"),
            Reply::Bool(b) => write!(f, "#{}", if *b { "t" } else { "f" }),
            Reply::Double(d) => write!(f, ",{d}"),
            Reply::Array(a) => f.debug_list().entries(a).finish(),
            Reply::Map(m) => f
                .debug_map()
                .entries(m.iter().map(|(k, v)| (k, v)))
                .finish(),
            Reply::Set(s) => write!(f, "~{s:?}"),
            Reply::Verbatim(b) => write!(f, "={:?}", String::from_utf8_lossy(b)),
            Reply::BigNumber(n) => write!(f, "({n}"),
        }
    }
}

impl Reply {
    pub fn as_int(&self) -> i64 {
        match self {
            Reply::Int(i) => *i,
            other => panic!("expected integer, got {other:?}"),
        }
    }
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Reply::Bulk(b) | Reply::Verbatim(b) => b,
            Reply::Simple(s) => s.as_bytes(),
            other => panic!("expected string, got {other:?}"),
        }
    }
    pub fn as_array(&self) -> &[Reply] {
        match self {
            Reply::Array(a) | Reply::Set(a) => a,
            other => panic!("expected array, got {other:?}"),
        }
    }
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }
    pub fn error_text(&self) -> &str {
        match self {
            Reply::Error(e) => e,
            other => panic!("expected error, got {other:?}"),
        }
    }
}

pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Conn {
    pub fn connect(port: u16) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        stream.set_nodelay(true)?;
        let writer = stream.try_clone()?;
        Ok(Conn {
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// Sends one command and reads its reply.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Reply {
        self.send(args);
        self.read()
    }

    /// Like [`Conn::cmd`], but `None` instead of a panic when the connection fails.
    pub fn try_cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Option<Reply> {
        let mut buf = Vec::new();
        encode_into(&mut buf, args);
        self.writer.write_all(&buf).ok()?;
        read_reply(&mut self.reader).ok()
    }

    /// Switches the connection to RESP3 (`HELLO 3`).
    pub fn resp3(&mut self) {
        let r = self.cmd(&["HELLO", "3"]);
        assert!(matches!(r, Reply::Map(_)), "HELLO 3 failed: {r:?}");
    }

    /// Writes a command without waiting (for pipelining).
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let mut buf = Vec::new();
        encode_into(&mut buf, args);
        self.writer.write_all(&buf).expect("write to server");
    }

    /// Writes many commands with a single write (pipelining).
    pub fn send_many<A: AsRef<[u8]>>(&mut self, cmds: &[Vec<A>]) {
        let mut buf = Vec::new();
        for args in cmds {
            encode_into(&mut buf, args);
        }
        self.writer.write_all(&buf).expect("write to server");
    }

    /// Sends all commands in one write, then reads all their replies.
    pub fn pipeline<A: AsRef<[u8]>>(&mut self, cmds: &[Vec<A>]) -> Vec<Reply> {
        self.send_many(cmds);
        (0..cmds.len()).map(|_| self.read()).collect()
    }

    pub fn read(&mut self) -> Reply {
        read_reply(&mut self.reader).expect("read reply from server")
    }
}

/// Appends the RESP array encoding of one command to `buf`.
pub fn encode_into<A: AsRef<[u8]>>(buf: &mut Vec<u8>, args: &[A]) {
    buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        let a = a.as_ref();
        buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        buf.extend_from_slice(a);
        buf.extend_from_slice(b"\r\n");
    }
}

fn read_line(r: &mut impl BufRead) -> std::io::Result<String> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.len() < 2 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    line.truncate(line.len() - 2);
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn read_blob(r: &mut impl BufRead, len: usize) -> std::io::Result<Vec<u8>> {
    let mut data = vec![0; len + 2];
    r.read_exact(&mut data)?;
    data.truncate(len);
    Ok(data)
}

fn read_many(r: &mut impl BufRead, n: &str) -> std::io::Result<Vec<Reply>> {
    let n: usize = n.parse().map_err(|_| bad(n))?;
    (0..n).map(|_| read_reply(r)).collect()
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("bad RESP: {what}"))
}

pub fn read_reply(r: &mut impl BufRead) -> std::io::Result<Reply> {
    let line = read_line(r)?;
    let (kind, rest) = line.split_at(1);
    Ok(match kind {
        "+" => Reply::Simple(rest.into()),
        "-" => Reply::Error(rest.into()),
        ":" => Reply::Int(rest.parse().map_err(|_| bad(rest))?),
        "$" | "=" if rest == "-1" => Reply::Nil,
        "$" => Reply::Bulk(read_blob(r, rest.parse().map_err(|_| bad(rest))?)?),
        "=" => Reply::Verbatim(read_blob(r, rest.parse().map_err(|_| bad(rest))?)?),
        "*" if rest == "-1" => Reply::Nil,
        "*" => Reply::Array(read_many(r, rest)?),
        "~" => Reply::Set(read_many(r, rest)?),
        ">" => Reply::Array(read_many(r, rest)?),
        "%" => {
            let flat = read_many(
                r,
                &(rest.parse::<usize>().map_err(|_| bad(rest))? * 2).to_string(),
            )?;
            let mut it = flat.into_iter();
            let mut pairs = Vec::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            Reply::Map(pairs)
        }
        "_" => Reply::Null,
        "#" => Reply::Bool(rest == "t"),
        "," => Reply::Double(rest.into()),
        "(" => Reply::BigNumber(rest.into()),
        _ => return Err(bad(&line)),
    })
}

/// Builds an argument vector from anything byte-like: `args!["BF.ADD", key, item]`.
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => { [$(AsRef::<[u8]>::as_ref(&$a).to_vec()),*] };
}

/// The one reply whose raw bytes are `wire` (e.g. a recorded `*2\r\n:1\r\n…`);
/// panics unless `wire` is exactly one complete reply. Comparing the parsed
/// form with a received [`Reply`] is a byte-exact comparison, since `Reply`
/// keeps every wire type apart (only `$-1` and `*-1` both read as `Nil`).
pub fn parse_wire(wire: &[u8]) -> Reply {
    let mut r = wire;
    let reply = read_reply(&mut r).unwrap_or_else(|e| {
        panic!(
            "bad recorded reply {:?}: {e}",
            String::from_utf8_lossy(wire)
        )
    });
    assert!(
        r.is_empty(),
        "trailing bytes after the recorded reply {:?}",
        String::from_utf8_lossy(wire)
    );
    reply
}
