//! Arbitrary text to the SLO spec parser and `parse_duration` (see `slo::check`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tokenmeter_fuzz::slo::check(data));
