//! `promtool check metrics` on the real exposition of both profiles (Debian package
//! `prometheus`; the test fails, naming the install command, when promtool is missing).

mod support;

use tokenmeter_prometheus::{Profile, names};

#[test]
fn semconv_exposition_passes_promtool_with_no_problem() {
    let text = support::workload::render(Profile::Semconv);
    let output = support::promtool_check(&text);
    let report = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "promtool check metrics failed:\n{report}\n{text}"
    );
    assert_eq!(report.trim(), "", "promtool reported problems");
}

#[test]
fn vllm_exposition_parses_and_promtool_only_objects_to_vllms_names() {
    let text = support::workload::render(Profile::Vllm);
    let output = support::promtool_check(&text);
    let report = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    // Exit 3 is "lint problems found"; 1 would be a parse error.
    assert_eq!(output.status.code(), Some(3), "promtool:\n{report}");
    let problems: Vec<&str> = report.lines().filter(|l| !l.trim().is_empty()).collect();
    let colon = "metric names should not contain ':'";
    // vLLM's own name for a histogram: promtool objects to its `_total` suffix, as it does on
    // vLLM's `/metrics`.
    let iteration_total = format!(
        "{} non-counter metrics should not have \"_total\" suffix",
        names::exposition_name(&names::vllm::ITERATION_TOKENS)
    );
    for problem in &problems {
        assert!(
            (problem.starts_with("vllm:") && problem.ends_with(colon))
                || *problem == iteration_total,
            "unexpected promtool problem: {problem}"
        );
    }
    // One per vLLM family in the exposition, and the suffix; nothing about the tokenmeter_ ones.
    assert_eq!(problems.len(), names::vllm::ALL.len() + 1, "{report}");
    assert!(problems.contains(&iteration_total.as_str()), "{report}");
}

#[test]
fn a_broken_exposition_is_caught_by_promtool() {
    // The check above must be able to fail: promtool rejects a counter without `_total` and without help.
    let output = support::promtool_check("# TYPE broken counter\nbroken 1\n");
    assert!(!output.status.success());
}
