//! Arbitrary bytes, cut at arbitrary boundaries, as an OpenAI SSE body (see `sse::check`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tokenmeter_fuzz::sse::check(data));
