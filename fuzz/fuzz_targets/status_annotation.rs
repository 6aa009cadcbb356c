#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrometal_fuzz::status_annotation(data));
