#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| rsbloom_fuzz::cms_window_model(data));
