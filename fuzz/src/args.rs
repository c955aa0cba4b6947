//! Fuzz checks of the argument parsers of `core::args` for BF.* and CF.*,
//! and of the module configuration (`core::config`).

use rsbloom_core::args::{parse_f64, parse_i64};
use rsbloom_core::bloom::args::{
    parse_bf_insert, parse_bf_reserve, parse_info_field, parse_loadchunk_iter, parse_scandump_iter,
};
use rsbloom_core::config::{Config, NAMES};
use rsbloom_core::cuckoo::args::{
    parse_cf_insert, parse_cf_reserve, parse_loadchunk_pos, parse_scandump_pos,
};
use rsbloom_core::cuckoo::CuckooFilter;

use super::cuckoo::check_cf;
use super::{check_arg_error, ref_i64, Input};

/// Plain decimals (`-?[0-9]+(\.[0-9]+)?`, short): both Rust and strtod are
/// correctly rounded, so they must agree.
fn plain_decimal(s: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(s).ok()?;
    let body = t.strip_prefix('-').unwrap_or(t);
    let mut parts = body.splitn(2, '.');
    let int = parts.next()?;
    let frac = parts.next();
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if t.len() <= 30 && digits(int) && frac.is_none_or(digits) {
        t.parse().ok()
    } else {
        None
    }
}

fn check_config(cfg: &Config) {
    assert!(cfg.bf_error_rate > 0.0 && cfg.bf_error_rate <= 0.25);
    assert!((1..=1 << 30).contains(&cfg.bf_initial_size));
    assert!((0..=32768).contains(&cfg.bf_expansion_factor));
    assert!((1..=255).contains(&cfg.cf_bucket_size));
    assert!(cfg.cf_bucket_size <= cfg.cf_bucket_size_max());
    assert!(cfg.cf_initial_size >= cfg.cf_initial_size_min());
    assert!(2 * cfg.cf_bucket_size <= cfg.cf_initial_size, "{cfg:?}");
    assert!(cfg.cf_initial_size <= 1 << 30);
    assert!((1..=65535).contains(&cfg.cf_max_iterations));
    assert!((0..=32768).contains(&cfg.cf_expansion_factor));
    assert!((1..=65536).contains(&cfg.cf_max_expansions));
    for name in NAMES {
        assert!(cfg.get(name).is_some());
    }
}

/// Every parser of `core::args` and `core::config` on argument vectors cut
/// from the input (separator `\n`), checked against the ranges of
/// docs/bloom.md §8, docs/cuckoo.md §12 and docs/module.md §5, and against
/// reference number parsers.
pub fn args(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut cfg = Config::default();
    for _ in 0..inp.u8() % 4 {
        let name = NAMES[usize::from(inp.u8()) % NAMES.len()];
        let len = usize::from(inp.u8() % 24);
        let value = inp.bytes(len);
        let before = cfg.clone();
        match cfg.set(name, value) {
            Ok(()) => {
                let text = cfg.get(name).unwrap();
                assert!(text == String::from_utf8_lossy(value) || text == "0.25");
            }
            Err(e) => {
                assert_eq!(cfg, before, "failed CONFIG SET changed the configuration");
                assert!(e.contains(name), "{e}");
            }
        }
        check_config(&cfg);
    }
    let rest = inp.rest();
    let parts: Vec<&[u8]> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split(|&b| b == b'\n').collect()
    };
    for p in &parts {
        assert_eq!(parse_i64(p), ref_i64(p), "parse_i64 {p:?}");
        match parse_f64(p) {
            Some(v) => {
                assert!(!v.is_nan());
                if let Some(r) = plain_decimal(p) {
                    assert_eq!(v, r, "parse_f64 {p:?}");
                }
            }
            None => assert_eq!(plain_decimal(p), None, "parse_f64 rejected {p:?}"),
        }
        let _ = parse_info_field(p);
        for (got, min) in [
            (parse_scandump_iter(p), i64::MIN),
            (parse_scandump_pos(p), 0),
        ] {
            if let Ok(v) = got {
                assert_eq!(Some(v), parse_i64(p));
                assert!(v >= min);
            }
        }
        for got in [parse_loadchunk_iter(p), parse_loadchunk_pos(p)] {
            match got {
                Ok(v) => assert_eq!(Some(v), parse_i64(p)),
                Err(e) => check_arg_error(e),
            }
        }
        if let Ok(v) = parse_loadchunk_pos(p) {
            assert_ne!(v, 0);
        }
    }
    let argv = |name: &'static [u8]| -> Vec<&[u8]> {
        std::iter::once(name).chain(parts.iter().copied()).collect()
    };
    let a = argv(b"BF.RESERVE");
    match parse_bf_reserve(&a, &cfg) {
        Ok(r) => {
            assert!((4..=7).contains(&a.len()));
            let e = parse_f64(a[2]).unwrap();
            assert_eq!(r.error_rate, e.min(0.25));
            assert!(r.error_rate > 0.0 && r.error_rate <= 0.25);
            assert_eq!(Some(r.capacity as i64), parse_i64(a[3]));
            assert!((1..=1 << 30).contains(&r.capacity));
            assert!(r.expansion <= 32768);
            assert!(r.expansion != 0 || r.nonscaling);
        }
        Err(e) => check_arg_error(e),
    }
    let a = argv(b"BF.INSERT");
    match parse_bf_insert(&a, &cfg) {
        Ok(r) => {
            assert!(r.items_at >= 3 && r.items_at < a.len());
            assert_eq!(
                a[r.items_at - 1].first().map(u8::to_ascii_lowercase),
                Some(b'i')
            );
            assert!(r.error_rate > 0.0 && r.error_rate <= 0.25);
            assert!((1..=1 << 30).contains(&r.capacity));
            assert!(r.expansion <= 32768);
            assert!(r.expansion != 0 || r.nonscaling);
            let res = r.reserve();
            assert_eq!(res.capacity, r.capacity);
        }
        Err(e) => check_arg_error(e),
    }
    let a = argv(b"CF.RESERVE");
    match parse_cf_reserve(&a, &cfg) {
        Ok(r) => {
            assert!(a.len() >= 3 && a.len() % 2 == 1);
            assert_eq!(Some(r.capacity as i64), parse_i64(a[2]));
            assert!(r.bucket_size >= 1 && i64::from(r.bucket_size) <= cfg.cf_bucket_size_max());
            assert!(2 * u64::from(r.bucket_size) <= r.capacity && r.capacity <= 1 << 30);
            assert!(r.max_iterations >= 1);
            assert!(r.expansion <= 32768);
            // Such a reservation can be created (small ones only: no huge allocations).
            if r.capacity / u64::from(r.bucket_size) <= 4096 {
                let f = CuckooFilter::new(r.capacity, r.bucket_size, r.max_iterations, r.expansion)
                    .expect("parsed CF.RESERVE must be creatable");
                check_cf(&f);
            }
        }
        Err(e) => check_arg_error(e),
    }
    let a = argv(b"CF.INSERT");
    match parse_cf_insert(&a, &cfg) {
        Ok(r) => {
            assert!(r.items_at >= 3 && r.items_at < a.len());
            assert!(r.capacity <= 1 << 30);
            assert!(
                r.capacity as i64 >= cfg.cf_initial_size_min()
                    || r.capacity as i64 == cfg.cf_initial_size
            );
            let res = r.reserve(&cfg);
            assert!(
                2 * u64::from(res.bucket_size) <= res.capacity,
                "{res:?} {cfg:?}"
            );
        }
        Err(e) => check_arg_error(e),
    }
    let mut c2 = cfg.clone();
    if c2.apply_module_args(&parts).is_ok() {
        // What valkey-bloom's `bloom-<name> <value>` pairs leave are the
        // legacy pairs (or one empty argument).
        let rest = rsbloom_core::config::ValkeyBloomConfig::default()
            .apply_module_args(&parts)
            .expect("accepted as a whole, so accepted in part");
        assert!(rest.len().is_multiple_of(2) || (rest.len() == 1 && rest[0].is_empty()));
    }
    check_config(&c2);
}

/// Seeds: command lines and module arguments.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for line in [
        &b"\x00k\n0.01\n100\nEXPANSION\n2\nNONSCALING"[..],
        b"\x01\x00\x040.02k\nCAPACITY\n1000\nERROR\n0.001\nEXPANSION\n4\nITEMS\na\nb",
        b"\x02\x03\x03255\x04\x03510k\n1000\nBUCKETSIZE\n4\nMAXITERATIONS\n50\nEXPANSION\n2",
        b"\x00k\nCAPACITY\n4\nNOCREATE\nITEMS\nx",
        b"\x00ERROR_RATE\n0.5\nINITIAL_SIZE\n400\nCF_MAX_EXPANSIONS\n64",
        b"\x00-9223372036854775808\n9223372036854775807\n0x1p-3\n1e-400\ninf\n-0\n01\n",
        b"\x00k\n100\nx\nMAXITERATIONS",
    ] {
        out.push(("args", line.to_vec()));
    }
    out
}
