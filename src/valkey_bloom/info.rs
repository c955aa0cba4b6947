//! valkey-bloom's INFO sections, `bf_bloom_core_metrics` and
//! `bf_bloom_defrag_metrics` (COMPAT-VALKEY-BLOOM §1.4): sums over every
//! live `bloomfltr` value, kept as values are made, changed and freed.

use rsbloom_core::valkey_bloom::Object;

use crate::ffi::context::ModuleValue;

/// (section, [(field, value)]) in valkey-bloom's order; the server
/// prefixes each name with `bf_`.
pub fn sections() -> [(&'static str, Vec<(&'static str, i64)>); 2] {
    let stats = Object::stats();
    let (objects, _) = stats.snapshot();
    let t = stats.totals();
    let (hits, misses) = stats.defrag_counts();
    [
        (
            "bloom_core_metrics",
            vec![
                ("bloom_total_memory_bytes", t.bytes),
                ("bloom_num_objects", objects),
                ("bloom_num_filters_across_objects", t.filters),
                ("bloom_num_items_across_objects", t.items),
                ("bloom_capacity_across_objects", t.capacity),
            ],
        ),
        (
            "bloom_defrag_metrics",
            vec![
                ("bloom_defrag_hits", hits as i64),
                ("bloom_defrag_misses", misses as i64),
            ],
        ),
    ]
}
