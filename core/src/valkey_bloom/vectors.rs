//! The six valkey-bloom 1.0.1 test vectors (COMPAT-VALKEY-BLOOM.md §6), as
//! extracted into core/tests/data/valkey-bloom/: each object is rebuilt by the
//! vector's commands (with its recorded seed) and compared byte for byte; the
//! recorded RDB value and BF.LOAD blob, where given in full, are also loaded.

use super::tests::{saved, unhex};
use super::*;
use crate::rdb::{Primitive, PrimitiveSource};
use sha2::{Digest, Sha256};

const DEFAULT_LIMIT: u64 = 134217728;

/// An RDB field or blob as the vector records it: in full, or (large
/// blobs) by length, SHA-256 and first bytes.
#[derive(Debug)]
enum Recorded {
    Field(Primitive),
    Digest {
        len: usize,
        sha: String,
        head: Vec<u8>,
    },
}

impl Recorded {
    fn check(&self, got: &Primitive, what: &str) {
        match (self, got) {
            (Recorded::Field(want), got) => assert_eq!(got, want, "{what}"),
            (Recorded::Digest { len, sha, head }, Primitive::Buffer(b)) => {
                check_digest(b, *len, sha, head, what)
            }
            _ => panic!("{what}: {got:?} is not a buffer"),
        }
    }
}

fn check_digest(b: &[u8], len: usize, sha: &str, head: &[u8], what: &str) {
    assert_eq!(b.len(), len, "{what} length");
    assert_eq!(&b[..head.len()], head, "{what} first bytes");
    let hex: String = Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    assert_eq!(hex, sha, "{what} sha256");
}

/// One vector file, parsed.
#[derive(Default, Debug)]
struct Vector {
    create: Option<Create>,
    /// Per command: items, answers, the error element if any.
    adds: Vec<(Vec<String>, Vec<bool>, Option<String>)>,
    rdb: Vec<Recorded>,
    load: Option<Recorded>,
    info: Vec<(String, String)>,
    card: i64,
    exists: Vec<(String, bool)>,
}

fn parse(text: &str) -> Vector {
    let mut v = Vector::default();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
        let w: Vec<&str> = rest.split_whitespace().collect();
        match tag {
            "create" => {
                let seed: [u8; 32] = unhex(w[4]).try_into().unwrap();
                v.create = Some(Create {
                    capacity: w[0].parse().unwrap(),
                    fp_rate: w[1].parse().unwrap(),
                    tightening: w[2].parse().unwrap(),
                    expansion: w[3].parse().unwrap(),
                    seed,
                    seed_random: w[5] == "1",
                });
            }
            "add" => v
                .adds
                .push((w.iter().map(|s| s.to_string()).collect(), vec![], None)),
            "answers" => v.adds.last_mut().unwrap().1 = w.iter().map(|a| *a == "1").collect(),
            "error" => v.adds.last_mut().unwrap().2 = Some(rest.to_string()),
            "rdb" => v.rdb.push(recorded(&w)),
            "load" | "load-sha256" => {
                let mut w = w.clone();
                w.insert(0, if tag == "load" { "s" } else { "s-sha256" });
                v.load = Some(recorded(&w));
            }
            "info" => v.info.push((w[0].to_string(), w[1].to_string())),
            "card" => v.card = w[0].parse().unwrap(),
            "exists" => v.exists.push((w[0].to_string(), w[1] == "1")),
            _ => panic!("unknown line {line}"),
        }
    }
    v
}

fn recorded(w: &[&str]) -> Recorded {
    match w[0] {
        "u" => Recorded::Field(Primitive::Unsigned(w[1].parse().unwrap())),
        "d" => Recorded::Field(Primitive::Double(w[1].parse().unwrap())),
        "s" => Recorded::Field(Primitive::Buffer(unhex(w[1]))),
        _ => Recorded::Digest {
            len: w[1].parse().unwrap(),
            sha: w[2].to_string(),
            head: unhex(w[3]),
        },
    }
}

impl Vector {
    /// Rebuilds the object by the vector's commands, checking every answer.
    fn build(&self) -> Object {
        let mut o = Object::new(self.create.as_ref().unwrap(), Some(DEFAULT_LIMIT)).unwrap();
        for (items, answers, error) in &self.adds {
            let (mut got, mut err) = (Vec::new(), None);
            o.add_batch(items, Some(DEFAULT_LIMIT), |r| {
                match r {
                    Ok(a) => got.push(a),
                    Err(e) => err = Some(e.message().to_string()),
                }
                true
            });
            assert_eq!((&got, &err), (answers, error), "{items:?}");
        }
        o
    }

    /// BF.INFO fields, BF.CARD and BF.EXISTS answers.
    fn check_answers(&self, o: &Object, what: &str) {
        let scaling = o.expansion() != 0;
        for (field, want) in &self.info {
            let got = match field.as_str() {
                "capacity" => o.capacity().to_string(),
                "size" => o.size().to_string(),
                "filters" => o.num_filters().to_string(),
                "items" => o.card().to_string(),
                "expansion" if !scaling => "null".into(),
                "expansion" => o.expansion().to_string(),
                "error" => o.fp_rate().to_string(),
                _ if !scaling => "invalid".into(),
                "tightening" => o.tightening().to_string(),
                _ => o.max_scaled_capacity(DEFAULT_LIMIT).unwrap().to_string(),
            };
            assert_eq!(&got, want, "{what}: BF.INFO {field}");
        }
        assert_eq!(o.card(), self.card, "{what}: BF.CARD");
        let items: Vec<&str> = self.exists.iter().map(|(i, _)| i.as_str()).collect();
        let want: Vec<bool> = self.exists.iter().map(|(_, e)| *e).collect();
        let mut got = Vec::new();
        o.contains_batch(&items, |c| got.push(c));
        assert_eq!(got, want, "{what}: BF.MEXISTS");
        let single: Vec<bool> = items.iter().map(|i| o.contains(i.as_bytes())).collect();
        assert_eq!(single, want, "{what}: BF.EXISTS");
    }

    fn full_rdb(&self) -> Option<Vec<Primitive>> {
        self.rdb
            .iter()
            .map(|r| match r {
                Recorded::Field(p) => Some(p.clone()),
                Recorded::Digest { .. } => None,
            })
            .collect()
    }

    fn run(&self, name: &str) {
        let o = self.build();
        let fields = saved(&o);
        assert_eq!(fields.len(), self.rdb.len(), "{name}: RDB fields");
        for (i, (want, got)) in self.rdb.iter().zip(&fields).enumerate() {
            want.check(got, &format!("{name}: RDB field {i}"));
        }
        let blob = o.to_load_blob().unwrap();
        self.load
            .as_ref()
            .unwrap()
            .check(&Primitive::Buffer(blob.clone()), name);
        self.check_answers(&o, name);
        if let Some(p) = self.full_rdb() {
            let back = Object::rdb_load(&mut PrimitiveSource::new(&p), 1, Some(DEFAULT_LIMIT));
            self.check_answers(&back.unwrap(), &format!("{name} (RDB load)"));
        }
        if let Some(Recorded::Field(Primitive::Buffer(b))) = &self.load {
            let back = Object::from_load_blob(b, Some(DEFAULT_LIMIT)).unwrap();
            assert_eq!(saved(&back), fields, "{name}: BF.LOAD then save");
            let mut d = (Vec::new(), Vec::new());
            back.digest(&mut d.0);
            o.digest(&mut d.1);
            assert_eq!(d.0, d.1, "{name}: digest after BF.LOAD");
        }
    }
}

macro_rules! vector {
    ($test:ident, $file:literal) => {
        #[test]
        fn $test() {
            let text = include_str!(concat!("../../tests/data/valkey-bloom/", $file));
            parse(text).run($file);
        }
    };
}

vector!(vector_1_default_random_seed, "1-default.txt");
vector!(vector_2_scaled, "2-scaled.txt");
vector!(vector_3_nonscaling, "3-nonscaling.txt");
vector!(vector_4_seeded, "4-seeded.txt");
vector!(vector_5_fixed_seed, "5-fixed-seed.txt");
vector!(vector_6_large, "6-large.txt");
