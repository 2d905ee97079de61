//! libFuzzer targets for tokenmeter, run with `cargo fuzz` (see `scripts/fuzz.sh`).
//!
//! Each target is a thin `fuzz_target!` over a `check` function here, so a crash can be
//! replayed, minimised and turned into a regression test without libFuzzer:
//!
//! - [`sse::check`] (`sse_chunks`): arbitrary bytes cut at arbitrary boundaries, read as the
//!   body of a streaming completion by `tokenmeter_openai::SseChunks` and metered.
//! - [`slo::check`] (`slo_spec`): arbitrary text to the SLO spec parser and `parse_duration`.
//! - [`script::check`] (`metered_script`): arbitrary item/error/pending/panic/drop scripts
//!   through the metered stream, compared field by field with a model.

#![forbid(unsafe_code)]

pub mod script;
pub mod slo;
pub mod sse;
