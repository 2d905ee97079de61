//! The generated rules pass `promtool check rules`, and `promtool test rules` shows each alert
//! (page, ticket, saturation) firing and clearing at the expected times on synthetic series.

use std::path::{Path, PathBuf};
use std::process::Command;

use tokenmeter_slo::SloSpec;
use tokenmeter_slo::rules::{RuleOptions, generate};

const SPEC: &str = r#"
[[class]]
name = "chat"
[[class.objective]]
success_rate = 0.99

[[class]]
name = "quiet"
match = { operation = "embeddings" }
[[class.objective]]
success_rate = 0.99

[saturation]
waiting_max = 50
kv_usage_max = 0.9
horizon = "5m"
"#;

fn promtool() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("promtool"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "promtool is not installed: run `apt-get install prometheus` (scripts/test.sh does it)"
        )
    })
}

fn run(args: &[&str], dir: &Path) -> String {
    let out = Command::new(promtool())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("promtool runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool {args:?} failed:\n{text}");
    text
}

fn write_rules(dir: &Path) {
    let spec = SloSpec::from_toml(SPEC).expect("valid spec");
    let options = RuleOptions::new(
        "tokenmeter_requests_waiting",
        "tokenmeter_kv_cache_usage_ratio",
    );
    std::fs::write(dir.join("rules.yml"), generate(&spec, &options)).expect("write rules");
}

#[test]
fn generated_rules_pass_promtool_check() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_rules(dir.path());
    let out = run(&["check", "rules", "rules.yml"], dir.path());
    assert!(out.contains("SUCCESS"), "{out}");
}

const PAGE: &str = r#"
          - exp_labels: {severity: page, slo_class: chat, objective: success_rate}
            exp_annotations: {summary: "chat success_rate is burning its error budget too fast (page)"}"#;
const TICKET: &str = r#"
          - exp_labels: {severity: ticket, slo_class: chat, objective: success_rate}
            exp_annotations: {summary: "chat success_rate is burning its error budget too fast (ticket)"}"#;

fn expect(alert: &str, at_minutes: u32, body: &str) -> String {
    let alerts = if body.is_empty() {
        " []".to_string()
    } else {
        body.to_string()
    };
    format!(
        "      - eval_time: {at_minutes}m\n        alertname: {alert}\n        exp_alerts:{alerts}\n"
    )
}

#[test]
fn burn_rate_and_saturation_alerts_fire_and_clear_on_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_rules(dir.path());
    // chat: 100 events a minute; every request fails from minute 60 to minute 122, then all
    // succeed again. quiet: every request fails, but only one every two minutes.
    let mut tests = String::from(
        r#"rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'tokenmeter_slo_objective_events_total{slo_class="chat",objective="success_rate"}'
        values: '0+100x600'
      - series: 'tokenmeter_slo_objective_good_total{slo_class="chat",objective="success_rate"}'
        values: '0+100x60 6000x60 6000+100x480'
      - series: 'tokenmeter_slo_objective_events_total{slo_class="quiet",objective="success_rate"}'
        values: '0+0.5x600'
      - series: 'tokenmeter_slo_objective_good_total{slo_class="quiet",objective="success_rate"}'
        values: '0x600'
      - series: 'tokenmeter_requests_waiting{instance="a",gen_ai_request_model="m"}'
        values: '0+1x60 0x60'
      - series: 'tokenmeter_kv_cache_usage_ratio{instance="a"}'
        values: '0+0.01x100 0x20'
    alert_rule_test:
"#,
    );
    // Page: the 6h & 30m rule fires a few minutes into the outage; the 30m window clears it
    // about 30 minutes after recovery (minute ~151).
    for (t, body) in [(58, ""), (80, PAGE), (140, PAGE), (165, "")] {
        tests += &expect("TokenmeterSLOBurnRatePage", t, body);
    }
    // Ticket: fires with the outage; the 3d & 6h rule keeps it until the 6h window has under
    // 1% errors (minute ~479).
    for (t, body) in [
        (58, ""),
        (80, TICKET),
        (300, TICKET),
        (470, TICKET),
        (500, ""),
    ] {
        tests += &expect("TokenmeterSLOBurnRateTicket", t, body);
    }
    // Low traffic never alerts, however bad.
    tests += &expect("TokenmeterSLOBurnRatePage", 300, "");
    let waiting = |which: &str| {
        format!(
            "\n          - exp_labels: {{severity: warning, instance: a}}\n            exp_annotations: {{summary: \"requests waiting in the queue {which}\"}}"
        )
    };
    let kv = |which: &str| {
        format!(
            "\n          - exp_labels: {{severity: warning, instance: a}}\n            exp_annotations: {{summary: \"KV-cache usage {which}\"}}"
        )
    };
    let rising_w = waiting("on course to pass 50 within 5m");
    let above_w = waiting("above 50: scale before latency rises");
    // Waiting rises by one a minute: on course to pass 50 within 5 minutes from ~46 (+1m for),
    // above 50 from 51 (+1m for); back to 0 at 61.
    for (t, rising, above) in [
        (40, "", ""),
        (49, rising_w.as_str(), ""),
        (56, "", above_w.as_str()),
        (70, "", ""),
    ] {
        tests += &expect("TokenmeterSaturationWaitingRising", t, rising);
        tests += &expect("TokenmeterSaturationWaiting", t, above);
    }
    let rising_kv = kv("on course to pass 0.9 within 5m");
    let above_kv = kv("above 0.9: scale before latency rises");
    for (t, rising, above) in [
        (80, "", ""),
        (88, rising_kv.as_str(), ""),
        (95, "", above_kv.as_str()),
        (110, "", ""),
    ] {
        tests += &expect("TokenmeterSaturationKvCacheRising", t, rising);
        tests += &expect("TokenmeterSaturationKvCache", t, above);
    }
    std::fs::write(dir.path().join("tests.yml"), &tests).expect("write tests");
    let out = run(&["test", "rules", "tests.yml"], dir.path());
    assert!(out.contains("SUCCESS"), "{out}");
}

/// Header classes (`from_headers = true`) get their own recording and burn-rate rules, per
/// class and objective, like series classes: one class burning pages for that class alone.
#[test]
fn header_classes_get_their_own_burn_rate_rules() {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = SloSpec::from_toml(
        r#"
[[class]]
name = "interactive"
from_headers = true
[[class.objective]]
latency = "ttft"
percentile = 99
threshold = "500ms"

[[class]]
name = "batch"
from_headers = true
[[class.objective]]
latency = "ttft"
percentile = 99
threshold = "10s"

[[objective]]
success_rate = 0.99
"#,
    )
    .expect("valid spec");
    let options = RuleOptions::new(
        "tokenmeter_requests_waiting",
        "tokenmeter_kv_cache_usage_ratio",
    );
    let rules = generate(&spec, &options);
    for class in ["interactive", "batch", "default"] {
        assert!(rules.contains(&format!("slo_class=\"{class}\"")), "{class}");
    }
    std::fs::write(dir.path().join("rules.yml"), rules).expect("write rules");
    let out = run(&["check", "rules", "rules.yml"], dir.path());
    assert!(out.contains("SUCCESS"), "{out}");
    // interactive: every request misses its TTFT target from minute 60; batch never does.
    let mut tests = String::from(
        r#"rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'tokenmeter_slo_objective_events_total{slo_class="interactive",objective="ttft_p99"}'
        values: '0+100x200'
      - series: 'tokenmeter_slo_objective_good_total{slo_class="interactive",objective="ttft_p99"}'
        values: '0+100x60 6000x140'
      - series: 'tokenmeter_slo_objective_events_total{slo_class="batch",objective="ttft_p99"}'
        values: '0+100x200'
      - series: 'tokenmeter_slo_objective_good_total{slo_class="batch",objective="ttft_p99"}'
        values: '0+100x200'
    alert_rule_test:
"#,
    );
    let page = r#"
          - exp_labels: {severity: page, slo_class: interactive, objective: ttft_p99}
            exp_annotations: {summary: "interactive ttft_p99 is burning its error budget too fast (page)"}"#;
    for (t, body) in [(58, ""), (80, page)] {
        tests += &expect("TokenmeterSLOBurnRatePage", t, body);
    }
    std::fs::write(dir.path().join("tests.yml"), &tests).expect("write tests");
    let out = run(&["test", "rules", "tests.yml"], dir.path());
    assert!(out.contains("SUCCESS"), "{out}");
}
