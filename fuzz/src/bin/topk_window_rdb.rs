#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| rsbloom_fuzz::topk_window_rdb(data));
