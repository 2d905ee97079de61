//! Arbitrary item/error/pending/panic/drop scripts through the metered stream (see
//! `script::check`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tokenmeter_fuzz::script::{self, Script};

fuzz_target!(|scripts: Vec<Script>| script::check(&scripts));
