//! Golden text of the exposition for both profiles: a scripted workload on a manual clock,
//! rendered by a local `metrics-exporter-prometheus` recorder (no global state), compared
//! line for line with `tests/golden/*.prom` after sorting families and series (the exporter
//! renders from hash maps).
//!
//! After a deliberate change, rewrite the files with `TOKENMETER_BLESS=1 cargo test -p
//! tokenmeter-prometheus --test golden` and review the diff.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokenmeter_prometheus::Profile;
use tokenmeter_prometheus::names::exposition_name;

fn check(profile: Profile) {
    let actual = support::canonical(&support::workload::render(profile));
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{profile}.prom"));
    if std::env::var_os("TOKENMETER_BLESS").is_some() {
        std::fs::write(&path, &actual).expect("write golden file");
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    if actual != expected {
        let first = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or(actual.lines().count().min(expected.lines().count()));
        panic!(
            "{profile} exposition differs from {} at line {}:\n  actual:   {:?}\n  expected: {:?}\nwhole actual text:\n{actual}",
            path.display(),
            first + 1,
            actual.lines().nth(first),
            expected.lines().nth(first),
        );
    }
}

#[test]
fn semconv_exposition_matches_the_golden_text() {
    check(Profile::Semconv);
}

#[test]
fn vllm_exposition_matches_the_golden_text() {
    check(Profile::Vllm);
}

#[test]
fn canonical_form_does_not_depend_on_render_order() {
    let a = "# TYPE b counter\nb{x=\"2\"} 1\nb{x=\"1\"} 2\n\n# TYPE a histogram\na_bucket{le=\"1\"} 0\na_bucket{le=\"+Inf\"} 1\na_sum 2\na_count 1\n\n";
    let b = "# TYPE a histogram\na_bucket{le=\"1\"} 0\na_bucket{le=\"+Inf\"} 1\na_sum 2\na_count 1\n\n# TYPE b counter\nb{x=\"1\"} 2\nb{x=\"2\"} 1\n\n";
    assert_eq!(support::canonical(a), support::canonical(b));
    assert!(support::canonical(a).starts_with("# TYPE a histogram\na_bucket{le=\"1\"} 0\n"));
}

/// The `vllm-legacy` profile publishes every series of the `vllm` profile, and each pre-0.11
/// name carries exactly the samples of the current name it aliases.
#[test]
fn vllm_legacy_names_carry_the_samples_of_the_current_ones() {
    use tokenmeter_prometheus::names::vllm::legacy;

    let current = support::canonical(&support::workload::render(Profile::Vllm));
    let legacy_text = support::canonical(&support::workload::render(Profile::VllmLegacy));
    let samples = |text: &str, name: &str| -> Vec<String> {
        let base = name.trim_end_matches("_total");
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| {
                l.strip_prefix(base)
                    .is_some_and(|rest| rest.starts_with(['{', ' ', '_']))
            })
            .map(|l| l[base.len()..].to_owned())
            .collect()
    };
    for line in current.lines().filter(|l| !l.starts_with('#')) {
        assert!(legacy_text.contains(line), "vllm-legacy lacks {line}");
    }
    for (old, new) in legacy::ALIASES {
        let (old, new) = (exposition_name(old), exposition_name(new));
        let want = samples(&current, &new);
        assert!(!want.is_empty(), "the workload records {new}");
        assert_eq!(samples(&legacy_text, &old), want, "{old} against {new}");
    }
}

/// The exposition has one family per metric of the profile, under its exposition name and with
/// the Prometheus type of its instrument's kind.
#[test]
fn every_family_is_a_metric_of_the_profile_with_its_type() {
    for profile in [Profile::Semconv, Profile::Vllm, Profile::VllmLegacy] {
        let text = support::workload::render(profile);
        let families: BTreeMap<String, String> = text
            .lines()
            .filter_map(|line| line.strip_prefix("# TYPE ")?.split_once(' '))
            .map(|(name, kind)| (name.to_owned(), kind.to_owned()))
            .collect();
        let metrics: BTreeMap<String, String> = profile
            .metrics()
            .map(|m| {
                (
                    exposition_name(m).into_owned(),
                    m.kind.prometheus_type().to_owned(),
                )
            })
            .collect();
        assert_eq!(families, metrics, "{profile}");
    }
}
