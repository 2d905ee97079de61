//! Every committed seed (and regression input) runs through its target's check without
//! libFuzzer: `cargo test --manifest-path fuzz/Cargo.toml`.

use std::fs;
use std::path::Path;

use arbitrary::{Arbitrary, Unstructured};
use tokenmeter_fuzz::script::Script;

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seed in {}", dir.display());
    files.iter().map(|f| fs::read(f).expect("a seed")).collect()
}

#[test]
fn sse_chunks_seeds() {
    for seed in seeds("sse_chunks") {
        tokenmeter_fuzz::sse::check(&seed);
    }
}

#[test]
fn slo_spec_seeds() {
    for seed in seeds("slo_spec") {
        tokenmeter_fuzz::slo::check(&seed);
    }
}

#[test]
fn metered_script_seeds() {
    for seed in seeds("metered_script") {
        // What libfuzzer-sys does with a typed input.
        let scripts = Vec::<Script>::arbitrary_take_rest(Unstructured::new(&seed));
        if let Ok(scripts) = scripts {
            tokenmeter_fuzz::script::check(&scripts);
        }
    }
}
