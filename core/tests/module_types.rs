//! The module type table (core/src/lib.rs TYPES): every name valid for the
//! server, every id the one a DUMP payload carries.

use rsbloom_core::module_type::{decode_id, CHARSET};

#[test]
fn every_type_has_a_valid_name_and_round_trips_its_id() {
    for t in rsbloom_core::TYPES {
        assert_eq!(t.name().len(), 9, "{t:?}");
        assert!(t.name().bytes().all(|b| CHARSET.contains(&b)), "{t:?}");
        let v = t.encoding_version as u16;
        assert_eq!(decode_id(t.id(v)), (t.name().to_string(), v));
    }
}

#[test]
fn ids_are_redis_ids() {
    // As DUMP payloads carry them (testkit/src/dump.rs, COMPAT-VALKEY-BLOOM §1.1).
    assert_eq!(rsbloom_core::bloom::TYPE.current_id(), 0x3016e5a289bef804);
    assert_eq!(rsbloom_core::cuckoo::TYPE.current_id(), 0x3016e5a289821404);
    assert_eq!(rsbloom_core::cms::TYPE.id(0), 0x08c4a4f9360f1000);
    assert_eq!(rsbloom_core::topk::TYPE.current_id(), 0x4e8a4af9360f1000);
    assert_eq!(
        rsbloom_core::valkey_bloom::TYPE.current_id(),
        0x6e5a2899f96dac01
    );
}
