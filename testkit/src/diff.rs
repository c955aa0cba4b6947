//! Helpers for differential tests (rsbloom against the reference RedisBloom
//! 2.8.2): server pairs, pipelined execution on both sides and Redis'
//! number parsers (SCANDUMP walks and LOADCHUNK replays are in
//! `filters`); the random-stream driver is in `driver`.

pub mod driver;

use super::{Conn, Flavor, Module, Reply, Server};

pub type Args = Vec<Vec<u8>>;

/// A command name or option word as Redis matches it.
pub fn upper(a: &[u8]) -> String {
    String::from_utf8_lossy(a).to_ascii_uppercase()
}

pub fn err_is(r: &Reply, text: &str) -> bool {
    matches!(r, Reply::Error(e) if e == text)
}

/// Builds an argument vector from string slices.
pub fn sargs(parts: &[&str]) -> Args {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// The module whose behaviour is checked against the reference.
/// `RSBLOOM_DIFF_SELF=1` runs the reference against itself, which must
/// trivially agree (a sanity check of the test machinery).
pub fn subject_module() -> Module {
    if std::env::var("RSBLOOM_DIFF_SELF").is_ok_and(|v| v == "1") {
        Module::Reference
    } else {
        Module::Rsbloom
    }
}

/// One server of a differential pair with a RESP2 and a RESP3 connection.
pub struct Side {
    pub server: Server,
    c2: Conn,
    c3: Conn,
}

impl Side {
    pub fn start(flavor: Flavor, module: Module) -> Side {
        Side::from_server(Server::start(flavor, module))
    }

    pub fn from_server(server: Server) -> Side {
        let c2 = server.conn();
        let c3 = server.conn3();
        Side { server, c2, c3 }
    }

    pub fn conn(&mut self, resp3: bool) -> &mut Conn {
        if resp3 {
            &mut self.c3
        } else {
            &mut self.c2
        }
    }

    pub fn cmd(&mut self, args: &[Vec<u8>]) -> Reply {
        self.c2.cmd(args)
    }
}

/// Sends the same commands to both servers before reading either, so the
/// two servers work concurrently.
pub fn pipeline2(a: &mut Conn, b: &mut Conn, cmds: &[Args]) -> (Vec<Reply>, Vec<Reply>) {
    a.send_many(cmds);
    b.send_many(cmds);
    let ra = (0..cmds.len()).map(|_| a.read()).collect();
    let rb = (0..cmds.len()).map(|_| b.read()).collect();
    (ra, rb)
}

/// Redis' strict integer parser (`string2ll`): optional `-`, no `+`, no
/// spaces, no leading zeros, no `-0`, must fit in i64.
pub fn redis_ll(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || neg) {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    text.parse().ok()
}

/// Redis' double parser (strtod without surrounding space, NaN and range
/// errors rejected), for the forms the generators produce (decimal,
/// exponent, `inf`, simple hexadecimal `0x<hex>[p<exp>]`).
pub fn redis_double(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    if text.is_empty() || text.trim() != text {
        return None;
    }
    let (sign, body) = match text.strip_prefix('-') {
        Some(b) => (-1.0, b),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let (mant, exp) = match hex.split_once(['p', 'P']) {
            Some((m, e)) => (m, e.parse::<i32>().ok()?),
            None => (hex, 0),
        };
        let m = u64::from_str_radix(mant, 16).ok()?;
        return Some(sign * m as f64 * 2f64.powi(exp));
    }
    let v: f64 = body.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    // strtod reports ERANGE for underflow to zero and overflow to infinity.
    let mantissa = body.split(['e', 'E']).next().unwrap_or("");
    if v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return None;
    }
    if v.is_infinite() && !body.to_ascii_lowercase().starts_with("inf") {
        return None;
    }
    Some(sign * v)
}

/// Printable form of an argument vector (binary bytes escaped, long ones cut).
pub fn show_args(args: &[Vec<u8>]) -> String {
    args.iter()
        .map(|a| {
            let s: String = a
                .iter()
                .flat_map(|b| std::ascii::escape_default(*b))
                .map(char::from)
                .collect();
            if s.len() > 80 {
                format!("\"{}…({} bytes)\"", &s[..60], a.len())
            } else {
                format!("\"{s}\"")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Printable form of a reply, cut to a reasonable length.
pub fn show_reply(r: &Reply) -> String {
    let s = format!("{r:?}");
    if s.len() > 300 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(300).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s
    }
}
