//! docs/differences.md §1, Bloom items 8–13: inputs that break RedisBloom get an error
//! reply (or the correct result) and the server stays up.
use common::bloom::header::*;
use common::bloom::*;
use common::*;

const BAD_DATA: &str = "ERR received bad data";
const INSERT_FAILED: &str = "ERR problem inserting into filter";

/// Header and data pairs of a fresh `BF.RESERVE <src> <error> <capacity>`
/// after adding `items`.
fn dump_of(c: &mut Conn, src: &str, reserve: &str, items: &[&str]) -> Vec<(i64, Vec<u8>)> {
    assert_eq!(line(c, &format!("BF.RESERVE {src} {reserve}")), ok());
    for item in items {
        assert_eq!(c.cmd(&["BF.ADD", src, item]), int(1));
    }
    filters::scandump(c, Fam::Bf, src)
}

/// Item 8: a failed link creation leaves the chain unchanged and answers
/// `ERR problem inserting into filter` every time (2.8.2 kept a broken link).
#[test]
fn item8_failed_scaling_is_an_error_and_changes_nothing() {
    each_server(|c, c3| {
        // Growth 0 in the header: the full link cannot grow.
        let mut pairs = dump_of(c, "src", "0.1 1", &["a"]);
        patch(&mut pairs[0].1, GROWTH, &0u32.to_le_bytes());
        filters::load_ok(c, Fam::Bf, "poc", &pairs);
        assert_eq!(info_field(c, "poc", "EXPANSION"), int(0));
        let before = debug_lines(c, "poc");
        assert_eq!(line(c, "BF.ADD poc b"), err(INSERT_FAILED));
        assert_eq!(line(c, "BF.ADD poc b"), err(INSERT_FAILED));
        assert_eq!(line(c3, "BF.ADD poc b"), err(INSERT_FAILED));
        // Embedded in arrays; processing continues after it.
        assert_eq!(
            line(c, "BF.MADD poc c a d"),
            arr(vec![err(INSERT_FAILED), int(0), err(INSERT_FAILED)])
        );
        assert_eq!(
            line(c3, "BF.INSERT poc ITEMS a c"),
            arr(vec![Reply::Bool(false), err(INSERT_FAILED)])
        );
        assert_eq!(debug_lines(c, "poc"), before);
        assert_eq!(before.len(), 2, "still one link");
        assert_eq!(
            line(c, "BF.MEXISTS poc a b c"),
            arr(vec![int(1), int(0), int(0)])
        );
        assert_eq!(line(c, "BF.CARD poc"), int(1));

        // A link whose capacity is 0: growing gives capacity 0 → invalid.
        let mut pairs = dump_of(c, "src0", "0.1 1", &[]);
        patch(&mut pairs[0].1, link(0) + ENTRIES, &0u64.to_le_bytes());
        filters::load_ok(c, Fam::Bf, "zero", &pairs);
        assert_eq!(line(c, "BF.ADD zero a"), err(INSERT_FAILED));
        assert_eq!(line(c, "BF.ADD zero a"), err(INSERT_FAILED));
        assert_eq!(line(c, "BF.EXISTS zero a"), int(0));
        assert_eq!(debug_lines(c, "zero").len(), 2);
        alive(c);
    });
}

/// Item 9: a legitimate chain of more than 1000 links survives RDB reload
/// and DUMP/RESTORE (2.8.2 aborted).
#[test]
fn item9_chain_of_over_1000_links_reloads() {
    each_server(|c, _| {
        assert_eq!(line(c, "BF.RESERVE poc 0.0001 1 EXPANSION 1"), ok());
        // Each new item needs a new link until the link error underflows.
        let batches: Vec<Vec<String>> = (0..30)
            .map(|batch| {
                let mut cmd = vec!["BF.MADD".to_string(), "poc".into()];
                cmd.extend((0..100).map(|i| format!("item-{batch}-{i}")));
                cmd
            })
            .collect();
        let replies = c.pipeline(&batches);
        let errors = replies
            .iter()
            .flat_map(|r| r.as_array())
            .filter(|r| **r == err(INSERT_FAILED))
            .count();
        let links = info_field(c, "poc", "FILTERS").as_int();
        assert!(links >= 1000, "only {links} links");
        assert!(errors > 0, "link creation must eventually fail");
        assert_eq!(line(c, "BF.CARD poc").as_int(), links, "one item per link");

        let debug = debug_lines(c, "poc");
        let dump = filters::scandump(c, Fam::Bf, "poc");
        assert_eq!(line(c, "DEBUG RELOAD"), ok());
        assert_eq!(debug_lines(c, "poc"), debug);
        assert_eq!(filters::scandump(c, Fam::Bf, "poc"), dump);

        let payload = c.cmd(&["DUMP", "poc"]).as_bytes().to_vec();
        assert_eq!(c.cmd(&args!["RESTORE", "copy", "0", payload]), ok());
        assert_eq!(debug_lines(c, "copy"), debug);
        assert_eq!(filters::scandump(c, Fam::Bf, "copy"), dump);
        assert_eq!(line(c, "BF.EXISTS copy item-0-0"), int(1));
        alive(c);
    });
}

/// Item 10: n2 above 63 in a LOADCHUNK header is refused.
#[test]
fn item10_header_n2_above_63_refused() {
    each_server(|c, _| {
        let pairs = dump_of(c, "src", "0.01 100", &[]);
        for n2 in [64u8, 200, 255] {
            let mut h = pairs[0].1.clone();
            h[link(0) + N2] = n2;
            assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "k", "1", h]), err(BAD_DATA));
        }
        assert_eq!(line(c, "EXISTS k"), int(0));
        alive(c);
    });
}

/// Item 11: a header whose bpe does not belong to its error rate (huge hash
/// counts: every operation would take seconds) is refused.
#[test]
fn item11_header_with_unbounded_hash_count_refused() {
    each_server(|c, _| {
        let pairs = dump_of(c, "src", "0.01 100", &[]);
        for bpe in [1e8f64, 3e9] {
            let mut h = pairs[0].1.clone();
            // Consistent with bpe, as RedisBloom checks: hashes = ceil(LN2c·bpe).
            let hashes = (rsbloom_core::bloom::LN2C * bpe).ceil() as u32;
            patch(&mut h, link(0) + BPE, &bpe.to_le_bytes());
            patch(&mut h, link(0) + HASHES, &hashes.to_le_bytes());
            assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "k", "1", h]), err(BAD_DATA));
        }
        // A hash count that does not match the (genuine) bpe is refused too.
        let mut h = pairs[0].1.clone();
        patch(&mut h, link(0) + HASHES, &1000u32.to_le_bytes());
        assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "k", "1", h]), err(BAD_DATA));
        assert_eq!(line(c, "EXISTS k"), int(0));
        alive(c);
    });
}

/// Item 12: sizes from untrusted input are allocated fallibly.
#[test]
fn item12_untrusted_sizes_fail_cleanly() {
    each_server(|c, _| {
        // Header: a consistent link of 2^60 bytes (2^63 bits).
        let pairs = dump_of(c, "src", "0.01 100", &[]);
        let mut h = pairs[0].1.clone();
        patch(&mut h, link(0) + BYTES, &(1u64 << 60).to_le_bytes());
        patch(&mut h, link(0) + BITS, &(1u64 << 63).to_le_bytes());
        assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "k", "1", h]), err(BAD_DATA));
        assert_eq!(line(c, "EXISTS k"), int(0));

        // Growth: a link claiming capacity 2^48 (full) must grow to 2^49
        // entries (~800 TB, beyond any address space): the add fails and
        // the chain is unchanged.
        let mut h = pairs[0].1.clone();
        patch(&mut h, SIZE, &(1u64 << 48).to_le_bytes());
        patch(&mut h, link(0) + LINK_SIZE, &(1u64 << 48).to_le_bytes());
        patch(&mut h, link(0) + ENTRIES, &(1u64 << 48).to_le_bytes());
        assert_eq!(c.cmd(&args!["BF.LOADCHUNK", "grow", "1", h]), ok());
        assert_eq!(line(c, "BF.ADD grow x"), err(INSERT_FAILED));
        assert_eq!(info_field(c, "grow", "FILTERS"), int(1));

        // Creation: ~3.9 GB may or may not be available; either way a reply.
        let r = line(c, "BF.RESERVE huge 0.000001 1073741824");
        assert!(
            r == ok() || r == err("ERR Insufficient memory to create filter"),
            "{r:?}"
        );
        line(c, "DEL huge");
        assert_eq!(line(c, "EXISTS huge"), int(0));
        alive(c);
    });
}

/// Item 13: BF.INSERT option tokens of 1–2 characters starting with `n` are
/// NONSCALING (RedisBloom reads past their end).
#[test]
fn item13_short_n_tokens_are_nonscaling() {
    each_server(|c, _| {
        for (key, token) in [("a", "n"), ("b", "N"), ("c", "nO"), ("d", "nx")] {
            assert_eq!(
                c.cmd(&["BF.INSERT", key, token, "ITEMS", "x"]),
                arr(vec![int(1)])
            );
            assert_eq!(info_field(c, key, "EXPANSION"), Reply::Nil, "{token}");
        }
        // Without items after them: a wrong arity, not a read past the end.
        assert_eq!(
            line(c, "BF.INSERT e CAPACITY 10 n"),
            err("ERR wrong number of arguments for 'bf.insert' command")
        );
        assert_eq!(
            line(c, "BF.INSERT e n n"),
            err("ERR wrong number of arguments for 'bf.insert' command")
        );
        assert_eq!(line(c, "EXISTS e"), int(0));
        alive(c);
    });
}
