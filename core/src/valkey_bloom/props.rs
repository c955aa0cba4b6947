//! Property tests: both persistence forms round-trip, whatever a loader
//! accepts saves back to itself and stays usable, adds never lose items.

use super::tests::saved;
use super::*;
use crate::rdb::{ByteSource, Primitive, PrimitiveSource};
use proptest::prelude::*;

type Items = Vec<Vec<u8>>;

fn items(max: usize) -> impl Strategy<Value = Items> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..10), 0..max)
}

/// Creation parameters valkey-bloom accepts, small enough to scale often.
fn creates() -> impl Strategy<Value = Create> {
    (
        1i64..40,
        1e-6f64..0.5,
        0.05f64..0.95,
        0u32..4,
        any::<[u8; 32]>(),
        any::<bool>(),
    )
        .prop_map(
            |(capacity, fp_rate, tightening, expansion, seed, random)| Create {
                capacity,
                fp_rate,
                tightening,
                expansion,
                seed: if random { seed } else { FIXED_SEED },
                seed_random: random,
            },
        )
}

fn build(c: &Create, items: &Items) -> Object {
    let mut o = Object::new(c, None).unwrap();
    o.add_batch(items, None, |_| true);
    o
}

fn digest(o: &Object) -> Vec<Primitive> {
    let mut d = Vec::new();
    o.digest(&mut d);
    d
}

/// The same answers, Size aside.
fn same_contents(a: &Object, b: &Object, probe: &Items) {
    let answers = |o: &Object| probe.iter().map(|i| o.contains(i)).collect::<Vec<_>>();
    assert_eq!(answers(a), answers(b));
    assert_eq!(digest(a), digest(b));
    assert_eq!((a.card(), a.capacity()), (b.card(), b.capacity()));
}

/// Adds `items` to a (possibly loaded) object: never a panic, every item
/// answered 1 or 0 is then present, CARD grows by the 1s, an error changes
/// nothing, and the counts stay what every loader accepts (issue 30).
fn exercise(o: &mut Object, items: &Items) {
    for item in items {
        let (before, card) = (saved(o), o.card());
        match o.add(item, Some(1 << 20)) {
            Ok(added) => {
                assert!(o.contains(item));
                assert_eq!(o.card(), card + i64::from(added));
            }
            Err(_) => assert_eq!(saved(o), before),
        }
        assert!(o.sums_fit());
    }
    assert!(o.card() >= 0 && o.capacity() > 0);
    let _ = o.max_scaled_capacity(1 << 20);
}

/// A genuine value with one field replaced, or one blob byte changed.
fn mutate(mut p: Vec<Primitive>, at: usize, value: u64, byte: usize) -> Vec<Primitive> {
    let n = p.len();
    match p.get_mut(at % n) {
        Some(Primitive::Unsigned(v)) => *v = value % 4 * (value >> 2),
        Some(Primitive::Double(d)) => *d = f64::from_bits(value),
        Some(Primitive::Buffer(b)) => {
            let len = b.len();
            if let Some(x) = b.get_mut(byte % len) {
                *x = value as u8;
            }
        }
        None => {}
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn rdb_round_trip(c in creates(), added in items(120), probe in items(60)) {
        let o = build(&c, &added);
        let p = saved(&o);
        let back = Object::rdb_load(&mut PrimitiveSource::new(&p), 1, None).unwrap();
        same_contents(&o, &back, &probe);
        prop_assert_eq!(back.size(), o.size());
        prop_assert_eq!(&back, &o);
        prop_assert_eq!(saved(&back), p);
    }

    #[test]
    fn load_blob_round_trip(c in creates(), added in items(120), probe in items(60)) {
        let o = build(&c, &added);
        let blob = o.to_load_blob().unwrap();
        let back = Object::from_load_blob(&blob, None).unwrap();
        same_contents(&o, &back, &probe);
        let n = o.num_filters() as u64;
        let list = |o: &Object| (o.size() - 48 - o.filters.iter().map(|f| 208 + f.bytes()).sum::<u64>()) / 8;
        prop_assert_eq!(list(&back), n);
        prop_assert_eq!(list(&o), o.list_cap);
        prop_assert_eq!(back.to_load_blob().unwrap(), blob);
        prop_assert_eq!(back.try_clone().unwrap(), back);
    }

    #[test]
    fn accepted_rdb_values_save_back_to_themselves(
        c in creates(), added in items(60), at in any::<usize>(), value in any::<u64>(),
        byte in any::<usize>(), more in items(30),
    ) {
        let p = mutate(saved(&build(&c, &added)), at, value, byte);
        if let Ok(mut o) = Object::rdb_load(&mut PrimitiveSource::new(&p), 1, Some(1 << 20)) {
            let again = saved(&o);
            let back = Object::rdb_load(&mut PrimitiveSource::new(&again), 1, None).unwrap();
            // The same bytes in both forms, the same Size.
            prop_assert_eq!(back.to_load_blob().unwrap(), o.to_load_blob().unwrap());
            prop_assert_eq!(back.size(), o.size());
            exercise(&mut o, &more);
        }
    }

    #[test]
    fn accepted_load_blobs_save_back_to_themselves(
        c in creates(), added in items(60), at in any::<usize>(), value in any::<u8>(),
        cut in any::<usize>(), more in items(30),
    ) {
        let mut blob = build(&c, &added).to_load_blob().unwrap();
        let len = blob.len();
        if let Some(b) = blob.get_mut(at % len) {
            *b = value;
        }
        if cut % 3 == 0 {
            blob.truncate(cut % len);
        }
        if let Ok(mut o) = Object::from_load_blob(&blob, Some(1 << 20)) {
            let again = o.to_load_blob().unwrap();
            prop_assert_eq!(&blob[..again.len()], &again[..]);
            exercise(&mut o, &more);
        }
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400), more in items(10)) {
        for encver in [0, 1, 2] {
            if let Ok(mut o) = Object::rdb_load(&mut ByteSource::new(&bytes), encver, None) {
                exercise(&mut o, &more);
            }
        }
        if let Ok(mut o) = Object::from_load_blob(&bytes, None) {
            exercise(&mut o, &more);
        }
    }

    #[test]
    fn added_items_are_always_contained(c in creates(), added in items(200)) {
        let mut o = Object::new(&c, None).unwrap();
        let mut card = 0i64;
        for item in &added {
            match o.add(item, Some(1 << 16)) {
                Ok(true) => card += 1,
                Ok(false) => {}
                Err(_) => continue,
            }
            prop_assert!(o.contains(item));
        }
        prop_assert_eq!(o.card(), card);
    }
}
