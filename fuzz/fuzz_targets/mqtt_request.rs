#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| kgbox_fuzz_harness::mqtt_request(data));
