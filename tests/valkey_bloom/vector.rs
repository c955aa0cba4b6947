//! The recorded valkey-bloom 1.0.1 vectors (tests/data/valkey-bloom/*.txt,
//! COMPAT-VALKEY-BLOOM.md §6), parsed into what a test asserts.

use std::path::PathBuf;

use common::resp::parse_wire;
use common::Reply;

pub const NAMES: [&str; 6] = [
    "1-default",
    "2-scaled",
    "3-nonscaling",
    "4-seeded",
    "5-fixed-seed",
    "6-large",
];

pub struct Vector {
    /// File stem, e.g. `2-scaled`.
    pub name: String,
    pub key: String,
    /// Vector 1: created with a random seed, so only the stable parts of its
    /// replay can be asserted (§6); its DUMP, blob and digest are run 1's.
    pub random_seed: bool,
    /// Each command (split on spaces) with its recorded RESP2 reply.
    pub commands: Vec<(Vec<String>, Reply)>,
    /// The commands valkey-bloom propagated to replicas and the AOF.
    pub propagated: Vec<Vec<Vec<u8>>>,
    /// The whole DUMP payload (Valkey 9.1, RDB version 80).
    pub dump: Vec<u8>,
    /// The blob of `BF.LOAD key blob` in an AOF rewrite.
    pub blob: Vec<u8>,
    pub info2: Reply,
    pub info3: Reply,
    /// `BF.INFO key FIELD` → reply (RESP2).
    pub fields: Vec<(String, Reply)>,
    pub card: i64,
    /// BF.EXISTS of the 20 items (added first, then never added).
    pub exists: Vec<(String, i64)>,
    pub digest: String,
    pub memory: i64,
}

impl Vector {
    /// Number of sub-filters (BF.INFO FILTERS).
    pub fn filters(&self) -> usize {
        self.fields
            .iter()
            .find(|(f, _)| f == "FILTERS")
            .map(|(_, r)| r.as_int() as usize)
            .expect("FILTERS field")
    }

    /// BF.INFO Size as recorded (an RDB-built or command-built object).
    pub fn size(&self) -> i64 {
        self.fields
            .iter()
            .find(|(f, _)| f == "SIZE")
            .map(|(_, r)| r.as_int())
            .expect("SIZE field")
    }

    /// How much smaller Size is after BF.LOAD than after the commands or an
    /// RDB load: BF.LOAD sizes the sub-filter list exactly (L = n), the
    /// other paths grow it 1 → 4 → 8 … (§5.4, §5.6: 8 bytes per slot).
    pub fn load_size_delta(&self) -> i64 {
        let n = self.filters();
        let grown = if n <= 1 {
            1
        } else {
            n.next_power_of_two().max(4)
        };
        8 * (grown - n) as i64
    }

    /// The 20 probe items.
    pub fn items(&self) -> Vec<&str> {
        self.exists.iter().map(|(i, _)| i.as_str()).collect()
    }
}

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/valkey-bloom")
}

/// `\r`, `\n` and `\xNN` escapes of the vector files back to bytes.
pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            match b[i + 1] {
                b'r' => {
                    out.push(b'\r');
                    i += 2;
                    continue;
                }
                b'n' => {
                    out.push(b'\n');
                    i += 2;
                    continue;
                }
                b'x' if i + 3 < b.len() => {
                    let h = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
                    out.push(u8::from_str_radix(h, 16).expect("\\xNN"));
                    i += 4;
                    continue;
                }
                _ => {}
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

pub fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn is_hex_line(l: &str) -> bool {
    l.starts_with("    ") && {
        let t = l.trim();
        !t.is_empty() && t.bytes().all(|c| c.is_ascii_hexdigit())
    }
}

/// A propagated command as recorded: words split on spaces, and
/// `<32 raw bytes, hex …>` for a binary argument.
fn propagated(line: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('<') {
            let (inner, after) = r.split_once('>').expect("closing >");
            let h = inner.rsplit("hex ").next().unwrap();
            out.push(hex(h.trim()));
            rest = after.trim_start();
        } else {
            let (w, after) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push(w.as_bytes().to_vec());
            rest = after.trim_start();
        }
    }
    out
}

pub fn load(name: &str) -> Vector {
    let path = data_dir().join(format!("{name}.txt"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse(name, &text)
}

pub fn all() -> Vec<Vector> {
    NAMES.iter().map(|n| load(n)).collect()
}

fn parse(name: &str, text: &str) -> Vector {
    let mut v = Vector {
        name: name.to_string(),
        key: String::new(),
        random_seed: name.starts_with("1-"),
        commands: Vec::new(),
        propagated: Vec::new(),
        dump: Vec::new(),
        blob: Vec::new(),
        info2: Reply::Nil,
        info3: Reply::Nil,
        fields: Vec::new(),
        card: -1,
        exists: Vec::new(),
        digest: String::new(),
        memory: -1,
    };
    let first = text.lines().next().unwrap_or("");
    v.key = first
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("{name}: no key in {first:?}"))
        .to_string();
    let mut section = "";
    let mut pending: Option<Vec<String>> = None;
    let (mut dump_hex, mut blob_hex) = (String::new(), String::new());
    let (mut dump_partial, mut blob_partial) = (false, false);
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            section = if h.starts_with("Commands") {
                "commands"
            } else if h.starts_with("Propagated") {
                "propagated"
            } else if h.starts_with("DUMP") {
                "dump"
            } else if h.starts_with("AOF rewrite") {
                "blob"
            } else if h.starts_with("BF.INFO") {
                "info"
            } else if let Some(c) = h.strip_prefix("BF.CARD ") {
                v.card = c.rsplit(' ').next().unwrap().parse().expect("card");
                "card"
            } else if h.starts_with("BF.EXISTS") {
                "exists"
            } else if h.starts_with("Other") {
                "other"
            } else {
                "ignored"
            };
            continue;
        }
        match section {
            "commands" => {
                if let Some(c) = line.strip_prefix("> ") {
                    pending = Some(c.split(' ').map(String::from).collect());
                } else if let (Some(r), Some(_)) = (line.strip_prefix("  "), pending.as_ref()) {
                    let cmd = pending.take().unwrap();
                    v.commands.push((cmd, parse_wire(&unescape(r))));
                }
            }
            "propagated" if line.starts_with("  ") => v.propagated.push(propagated(line.trim())),
            "dump" | "blob" => {
                let (hexs, partial) = if section == "dump" {
                    (&mut dump_hex, &mut dump_partial)
                } else {
                    (&mut blob_hex, &mut blob_partial)
                };
                if line.starts_with("first 128 bytes") {
                    *partial = true;
                } else if is_hex_line(line) {
                    hexs.push_str(line.trim());
                }
            }
            "info" => {
                if let Some(r) = line.strip_prefix("RESP2: ") {
                    v.info2 = parse_wire(&unescape(r));
                } else if let Some(r) = line.strip_prefix("RESP3: ") {
                    v.info3 = parse_wire(&unescape(r));
                } else if let Some((cmd, r)) = line.split_once(" -> ") {
                    let field = cmd.rsplit(' ').next().unwrap().to_string();
                    v.fields.push((field, parse_wire(&unescape(r))));
                }
            }
            "exists" if line.starts_with("  ") => {
                let mut it = line.split_whitespace();
                let (item, e) = (it.next().unwrap(), it.next().unwrap());
                v.exists.push((item.to_string(), e.parse().unwrap()));
            }
            "other" => {
                if let Some(r) = line.strip_prefix(&format!("DEBUG DIGEST-VALUE {} -> ", v.key)) {
                    v.digest = r.trim().to_string();
                } else if let Some(r) = line.strip_prefix(&format!("MEMORY USAGE {} -> ", v.key)) {
                    v.memory = r.split(' ').next().unwrap().parse().unwrap();
                }
            }
            _ => {}
        }
    }
    // Vector 6 records only the first 128 bytes: the whole payload and blob
    // were regenerated with the oracle (same sha256, see the README there).
    v.dump = hex(&dump_hex);
    if dump_partial {
        let whole = std::fs::read(data_dir().join(format!("{name}.dump"))).expect("dump file");
        assert_eq!(
            &whole[..v.dump.len()],
            &v.dump[..],
            "{name}.dump: first bytes"
        );
        v.dump = whole;
    }
    v.blob = hex(&blob_hex);
    if blob_partial {
        let whole = std::fs::read(data_dir().join(format!("{name}.load"))).expect("load file");
        assert_eq!(
            &whole[..v.blob.len()],
            &v.blob[..],
            "{name}.load: first bytes"
        );
        v.blob = whole;
    }
    assert!(!v.commands.is_empty(), "{name}: no commands");
    assert_eq!(v.exists.len(), 20, "{name}: 20 EXISTS items");
    assert_eq!(v.fields.len(), 8, "{name}: 8 BF.INFO fields");
    assert!(
        v.card >= 0 && v.memory > 0 && v.digest.len() == 40,
        "{name}: parse"
    );
    assert!(common::dump::crc_ok(&v.dump), "{name}: DUMP CRC");
    v
}
