//! The count of digests with a merge pending (docs/tdigest.md §8.4) stays
//! exact through every change of state. Its own test binary: the count is
//! process-wide.

use rsbloom_core::rdb::PrimitiveSource;
use rsbloom_core::tdigest::{pending_merges, TDigest};

#[test]
fn pending_merge_count_follows_every_change() {
    assert_eq!(pending_merges(), 0);
    let mut a = TDigest::new(5.0).unwrap();
    a.add(1.0, 1).unwrap();
    assert_eq!(pending_merges(), 0, "one observation never merges");
    a.add(2.0, 1).unwrap();
    assert_eq!(pending_merges(), 1);
    let b = a.try_clone().unwrap();
    assert_eq!(pending_merges(), 2);
    drop(b);
    assert_eq!(pending_merges(), 1);
    a.compress();
    assert_eq!(pending_merges(), 0);
    for v in 0..100 {
        a.add(f64::from(v), 1).unwrap(); // buffer-full compressions inside
    }
    assert_eq!(pending_merges(), 1);
    let mut m = TDigest::new(5.0).unwrap();
    let (_, r) = m.merge_from(&mut a);
    r.unwrap();
    assert_eq!(
        pending_merges(),
        1,
        "the source compressed, the new one pending"
    );
    m.reset();
    assert_eq!(pending_merges(), 0);
    // A crafted value with unmerged nodes no compression leaves is refused
    // (docs/tdigest.md §7.2 item 7) and leaves the count as it was.
    use rsbloom_core::rdb::Primitive::{Double as D, Unsigned as U};
    let image = [
        D(5.0),
        D(0.0),
        D(0.0),
        U(40),
        U(0),
        U(3),
        U(0),
        D(0.0),
        D(3.0),
    ];
    assert!(TDigest::rdb_load(&mut PrimitiveSource::new(&image), 0).is_err());
    assert_eq!(pending_merges(), 0);
    a.add(3.0, 1).unwrap();
    drop(a);
    assert_eq!(pending_merges(), 0);
}
