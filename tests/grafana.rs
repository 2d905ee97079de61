//! The Grafana dashboards in `grafana/`: each is a Grafana dashboard model, and every metric
//! name its PromQL queries read exists — raw metrics and SLO counters in the real exposition of
//! the dashboard's naming profile after a workload, recording rules in the YAML that
//! `tokenmeter slo rules` generates.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;
use tokenmeter::sink::{Step, StepKind};
use tokenmeter::{Clock, ErrorClass, Labels, ManualClock, Meter};
use tokenmeter_prometheus::{Builder, Profile};
use tokenmeter_slo::SloMonitor;
use tokenmeter_slo::SloSpec;
use tokenmeter_slo::rules::{EngineMetrics, RuleOptions, generate};

const SEMCONV: &str = include_str!("../grafana/tokenmeter-semconv.json");
const VLLM: &str = include_str!("../grafana/tokenmeter-vllm.json");
const SPEC: &str = include_str!("../examples/slo.toml");
const VLLM_UPSTREAM: &str = include_str!("grafana/vllm-upstream-queries.txt");

#[path = "grafana/promql.rs"]
mod promql;

use promql::{matcher_labels, metric_names};

/// The PromQL of every panel target, and the metric of every `label_values(metric, label)`
/// template variable.
fn queries(dashboard: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                out.push(expr.to_owned());
            }
        }
    }
    for var in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let query = var["query"]["query"].as_str().or(var["query"].as_str());
        if var["type"] == "query" {
            let query = query.expect("a query variable has a query");
            let args = query
                .strip_prefix("label_values(")
                .and_then(|q| q.strip_suffix(')'))
                .unwrap_or_else(|| panic!("unexpected variable query {query}"));
            let (metric, _label) = args
                .rsplit_once(',')
                .unwrap_or_else(|| panic!("label_values needs a metric: {query}"));
            out.push(metric.trim().to_owned());
        }
    }
    out
}

/// Every sample name in an exposition (histograms as `_bucket`, `_sum`, `_count`), with the
/// label names its samples carry.
fn exposed_names(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut names = BTreeMap::<String, BTreeSet<String>>::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let end = line.find([' ', '{']).unwrap_or(line.len());
        let labels = names.entry(line[..end].to_owned()).or_default();
        if line[end..].starts_with('{') {
            let close = line.rfind('}').unwrap_or(line.len());
            labels.extend(matcher_labels(&line[end + 1..close]));
        }
    }
    names
}

/// Every `record:` name in a rules file.
fn recorded_names(yaml: &str) -> BTreeSet<String> {
    yaml.lines()
        .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("record:"))
        .map(|n| n.trim().trim_matches(['"', '\'']).to_owned())
        .collect()
}

/// What the dashboards of `profile` may read: the exposition after a workload and the rules.
struct Known {
    exposed: BTreeMap<String, BTreeSet<String>>,
    recorded: BTreeSet<String>,
}

impl Known {
    fn of(profile: Profile) -> Self {
        let spec = SloSpec::from_toml(SPEC).expect("examples/slo.toml is a valid spec");
        let (sink, handle) = Builder::new(profile)
            .build_recorder()
            .expect("local exporter");
        let time = ManualClock::new();
        let clock = Clock::manual(&time);
        let recorder = sink.recorder().expect("a local sink has a recorder");
        let monitor = SloMonitor::publish_to(spec.clone(), clock.clone(), recorder);
        let meter = Meter::builder()
            .clock(clock)
            .sink(sink.clone())
            .sink(monitor)
            .build();
        let labels = Labels::server("chat")
            .provider("vllm")
            .request_model("llama");
        // A server and a client series: semconv names some metrics per role.
        let client = Labels::client("chat")
            .provider("vllm")
            .request_model("llama");
        for series in [meter.series(&labels), meter.series(&client)] {
            Self::workload(&series, &time);
        }
        let steps = meter.engine(&labels);
        steps.record(&Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8)));
        steps.record(&Step::new(
            StepKind::Prefill,
            2,
            512,
            Duration::from_millis(40),
        ));
        steps.set_kv_cache_usage(0.4);
        steps.add_preemptions(1);
        steps.add_prefix_cache(200, 64);
        steps.add_speculation(2, 8, 5);
        let options = match profile {
            Profile::Vllm | Profile::VllmLegacy => {
                RuleOptions::new("vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")
                    .engine(EngineMetrics::vllm())
            }
            _ => RuleOptions::new(
                "tokenmeter_requests_waiting",
                "tokenmeter_kv_cache_usage_ratio",
            )
            .engine(EngineMetrics::semconv()),
        };
        Self {
            exposed: exposed_names(&handle.render()),
            recorded: recorded_names(&generate(&spec, &options)),
        }
    }

    /// Two successes, a rate-limited error and a cancellation, with tokens and phases.
    fn workload(series: &tokenmeter::Series, time: &ManualClock) {
        for (i, fail) in [false, false, true].into_iter().enumerate() {
            let mut request = series.start();
            request.set_input_tokens(100 + i as u64);
            request.set_cached_input_tokens(32);
            request.set_max_tokens(64);
            request.set_choices(1);
            time.advance(Duration::from_millis(20));
            request.mark_scheduled();
            time.advance(Duration::from_millis(80));
            for _ in 0..4 {
                request.record_tokens(1);
                time.advance(Duration::from_millis(30));
            }
            if fail {
                request.fail(ErrorClass::RateLimited);
            } else {
                request.succeed();
            }
        }
        drop(series.start()); // cancelled
    }

    /// The names in `exprs` that neither the exposition nor the rules have, with where
    /// each was looked for.
    fn missing(&self, exprs: &[String]) -> Vec<String> {
        let mut missing = Vec::new();
        for expr in exprs {
            let names = match metric_names(expr) {
                Ok(names) => names,
                Err(e) => {
                    missing.push(format!("{e} in `{expr}`"));
                    continue;
                }
            };
            for (name, labels) in names {
                if self.recorded.contains(&name) {
                    continue; // a recording rule of the generated file
                }
                let rule = name.starts_with("slo:") || name.starts_with("tokenmeter:");
                if rule {
                    if !self.recorded.contains(&name) {
                        missing.push(format!(
                            "`{name}` (in `{expr}`) is not in the generated SLO rules"
                        ));
                    }
                    continue;
                }
                let Some(exposed) = self.exposed.get(&name) else {
                    missing.push(format!("`{name}` (in `{expr}`) is not in the exposition"));
                    continue;
                };
                for label in labels.difference(exposed) {
                    missing.push(format!(
                        "`{name}` has no label `{label}` in the exposition (in `{expr}`)"
                    ));
                }
            }
        }
        missing
    }
}

/// Checks the Grafana dashboard model; returns the problems.
fn model_problems(dashboard: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for key in ["title", "uid"] {
        if dashboard[key].as_str().is_none_or(str::is_empty) {
            problems.push(format!("no `{key}`"));
        }
    }
    if !dashboard["schemaVersion"].is_u64() {
        problems.push("no numeric `schemaVersion`".into());
    }
    let vars = dashboard["templating"]["list"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !vars
        .iter()
        .any(|v| v["type"] == "datasource" && v["query"] == "prometheus")
    {
        problems.push("no Prometheus `datasource` template variable".into());
    }
    let Some(panels) = dashboard["panels"].as_array().filter(|p| !p.is_empty()) else {
        problems.push("no `panels`".into());
        return problems;
    };
    let mut ids = BTreeSet::new();
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or_default();
        if title.is_empty() {
            problems.push(format!("a panel without a title: {panel}"));
        }
        if !panel["id"].as_u64().is_some_and(|id| ids.insert(id)) {
            problems.push(format!("{title}: missing or duplicate `id`"));
        }
        if !panel["gridPos"]["w"].is_u64() {
            problems.push(format!("{title}: no `gridPos`"));
        }
        if panel["type"] == "row" {
            continue;
        }
        let targets = panel["targets"].as_array().cloned().unwrap_or_default();
        if targets.is_empty() {
            problems.push(format!("{title}: no `targets`"));
        }
        for target in targets {
            if target["expr"].as_str().is_none_or(str::is_empty) {
                problems.push(format!("{title}: a target without `expr`"));
            }
            if target["datasource"]["uid"] != "${datasource}" {
                problems.push(format!("{title}: a target not on ${{datasource}}"));
            }
        }
    }
    problems
}

fn check(file: &str, json: &str, profile: Profile, required: &[&str]) {
    let dashboard: Value = serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("grafana/{file} is not valid JSON: {e}"));
    let problems = model_problems(&dashboard);
    assert!(problems.is_empty(), "grafana/{file}: {problems:#?}");
    let exprs = queries(&dashboard);
    let missing = Known::of(profile).missing(&exprs);
    assert!(
        missing.is_empty(),
        "grafana/{file} ({profile}): {missing:#?}"
    );
    let used: BTreeSet<String> = exprs
        .iter()
        .flat_map(|e| metric_names(e).unwrap_or_default().into_keys())
        .collect();
    for name in required {
        assert!(
            used.contains(*name),
            "grafana/{file} has no panel reading {name}"
        );
    }
}

/// What every dashboard must show besides the profile's own names.
const SLO: &[&str] = &[
    "tokenmeter:slo_goodput:requests_rate5m",
    "tokenmeter:slo_attainment:ratio_rate5m",
    "slo:sli_error:ratio_rate5m",
    "slo:error_budget_remaining:ratio",
    "slo:error_budget:ratio",
    "tokenmeter_slo_requests_good_total",
    "tokenmeter_requests_total",
    "tokenmeter_engine_step_duration_seconds_bucket",
    "tokenmeter_engine_batch_size_count",
];

#[test]
fn semconv_dashboard_reads_only_names_we_publish() {
    let own = [
        "gen_ai_server_time_to_first_token_seconds_bucket",
        "gen_ai_server_time_per_output_token_seconds_bucket",
        "tokenmeter_inter_token_latency_seconds_bucket",
        "gen_ai_client_inference_operation_input_tokens_bucket",
        "gen_ai_client_inference_operation_output_tokens_bucket",
        "tokenmeter_requests_waiting",
        "tokenmeter_requests_running",
        "tokenmeter_kv_cache_usage_ratio",
    ];
    check(
        "tokenmeter-semconv.json",
        SEMCONV,
        Profile::Semconv,
        &[&own[..], SLO].concat(),
    );
}

#[test]
fn vllm_dashboard_reads_only_names_we_publish() {
    let own = [
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:request_time_per_output_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
        "vllm:request_prompt_tokens_bucket",
        "vllm:request_generation_tokens_bucket",
        "vllm:request_success_total",
        "vllm:num_requests_waiting",
        "vllm:num_requests_running",
        "vllm:kv_cache_usage_perc",
    ];
    check(
        "tokenmeter-vllm.json",
        VLLM,
        Profile::Vllm,
        &[&own[..], SLO].concat(),
    );
}

#[test]
fn a_misspelt_name_is_reported() {
    let known = Known::of(Profile::Semconv);
    let bogus = [
        "sum(rate(tokenmeter_requets_total[5m]))".to_owned(),
        "histogram_quantile(0.5, rate(gen_ai_server_time_to_first_token_seconds[5m]))".to_owned(),
        "tokenmeter:slo_goodput:request_rate5m".to_owned(),
        "sum(rate(vllm:request_success_total[5m]))".to_owned(),
        "sum(rate(tokenmeter_requests_total[5m]))".to_owned(),
        r#"sum(rate(tokenmeter_requests_total{model_name="m"}[5m]))"#.to_owned(),
    ];
    let missing = known.missing(&bogus);
    assert_eq!(missing.len(), 5, "{missing:#?}");
    for name in [
        "`tokenmeter_requets_total`",
        // A histogram is only queryable as `_bucket`, `_sum` or `_count`.
        "`gen_ai_server_time_to_first_token_seconds`",
        "`tokenmeter:slo_goodput:request_rate5m`",
        // A vLLM name is not in the semconv exposition.
        "`vllm:request_success_total`",
        // vLLM's label is not on the semconv metrics.
        "`tokenmeter_requests_total` has no label `model_name`",
    ] {
        assert!(
            missing.iter().any(|m| m.starts_with(name)),
            "{name} not reported: {missing:#?}"
        );
    }
    let dashboard = serde_json::json!({"title": "t", "uid": "u", "schemaVersion": 39,
        "panels": [{"id": 1, "title": "", "gridPos": {"w": 8}, "targets": []}]});
    let problems = model_problems(&dashboard);
    assert!(
        problems.iter().any(|p| p.contains("without a title")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("no `targets`")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("datasource")),
        "{problems:?}"
    );
}

/// The series vLLM's own example dashboards and alert rules read (copied as data into
/// `tests/grafana/vllm-upstream-queries.txt`): every line has data in the `vllm` profile (with
/// the rules `tokenmeter slo rules --profile vllm` writes), the lines of names vLLM renamed in
/// 0.11 only in the `vllm-legacy` profile; and every `vllm:` series carries `engine`.
#[test]
fn vllms_own_dashboards_and_rules_find_every_series() {
    let lines: Vec<(bool, &str)> = VLLM_UPSTREAM
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.strip_prefix("[legacy]") {
            Some(rest) => (true, rest.trim()),
            None => (false, l),
        })
        .collect();
    assert!(lines.len() > 40, "the data file has {} lines", lines.len());
    let vllm = Known::of(Profile::Vllm);
    let legacy = Known::of(Profile::VllmLegacy);
    let found = |known: &Known, line: &str| {
        line.split(" or ")
            .any(|alternative| known.missing(&[alternative.to_owned()]).is_empty())
    };
    for (is_legacy, line) in &lines {
        assert!(
            found(&legacy, line),
            "vllm-legacy has no data for `{line}`: {:#?}",
            legacy.missing(&[(*line).to_owned()])
        );
        assert_eq!(
            found(&vllm, line),
            !is_legacy,
            "`{line}` in the vllm profile (a pre-0.11 name is only in vllm-legacy)"
        );
    }
    for (name, labels) in &vllm.exposed {
        if name.starts_with("vllm:") {
            assert!(labels.contains("engine"), "{name} has no engine label");
        }
    }
}
