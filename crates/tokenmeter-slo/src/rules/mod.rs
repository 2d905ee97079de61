//! Prometheus recording and alerting rules for a spec (`tokenmeter slo rules`).
//!
//! Recording rules follow Sloth's names: `slo:sli_error:ratio_rate5m` … `ratio_rate3d` per class
//! and objective, from the verdict counters ([`crate::names`]); the period's ratio
//! (`slo:sli_error:ratio_rate30d`) from summed increases over the whole period, never from
//! averaged ratios. Goodput and attainment: `tokenmeter:slo_goodput:requests_rate5m`,
//! `tokenmeter:slo_goodput:tokens_rate5m`, `tokenmeter:slo_attainment:ratio_rate5m` (and `1h`),
//! summed over every replica; fleet totals since the processes started
//! (`tokenmeter:slo_requests:sum`, `tokenmeter:slo_requests_good:sum`,
//! `tokenmeter:slo_output_tokens_good:sum`, `tokenmeter:slo_attainment:ratio`).
//!
//! Alerting rules: `TokenmeterSLOBurnRatePage` and `TokenmeterSLOBurnRateTicket` per class and
//! objective with the [`alert::RULES`](crate::alert::RULES) windows and factors derived from the
//! period, guarded against low traffic; `TokenmeterSaturationWaiting`,
//! `TokenmeterSaturationWaitingRising`, `TokenmeterSaturationKvCache` and
//! `TokenmeterSaturationKvCacheRising` when the spec sets saturation limits, on the gauges of the
//! chosen naming profile, per instance.

mod engine;
mod yaml;

pub use engine::EngineMetrics;

use std::fmt::Write as _;
use std::time::Duration;

use crate::alert::{MIN_EVENTS_PER_MINUTE, RULES, Severity};
use crate::names;
use crate::spec::{SloSpec, format_duration};
use crate::window::WINDOWS;
use yaml::{Rule, quote};

/// The gauges the saturation alerts read, which depend on the exporter's naming profile.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuleOptions {
    /// The waiting-requests gauge (`tokenmeter_requests_waiting`, `vllm:num_requests_waiting`).
    pub waiting_metric: String,
    /// The KV-cache usage gauge, 0–1 (`tokenmeter_kv_cache_usage_ratio`,
    /// `vllm:kv_cache_usage_perc`).
    pub kv_usage_metric: String,
    /// The engine counters of the `tokenmeter-engine` group (acceptance and hit rates, and
    /// `_total`-less copies for dashboards); no such group when `None`.
    pub engine: Option<EngineMetrics>,
}

impl RuleOptions {
    /// Options for the given gauge names.
    pub fn new(waiting_metric: impl Into<String>, kv_usage_metric: impl Into<String>) -> Self {
        Self {
            waiting_metric: waiting_metric.into(),
            kv_usage_metric: kv_usage_metric.into(),
            engine: None,
        }
    }

    /// Adds the `tokenmeter-engine` group for these engine counters
    /// ([`EngineMetrics::semconv`], [`EngineMetrics::vllm`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter_slo::SloSpec;
    /// use tokenmeter_slo::rules::{EngineMetrics, RuleOptions, generate};
    ///
    /// let spec = SloSpec::from_toml(
    ///     "[[class]]\nname = \"chat\"\n[[class.objective]]\nlatency = \"ttft\"\npercentile = 95\nthreshold = \"1s\"\n",
    /// )?;
    /// let options = RuleOptions::new("vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")
    ///     .engine(EngineMetrics::vllm());
    /// let yaml = generate(&spec, &options);
    /// assert!(yaml.contains("record: tokenmeter:spec_decode_acceptance:ratio_rate5m"));
    /// assert!(yaml.contains("record: vllm:prefix_cache_hits\n"));
    /// # Ok::<(), tokenmeter_slo::SpecError>(())
    /// ```
    pub fn engine(mut self, metrics: EngineMetrics) -> Self {
        self.engine = Some(metrics);
        self
    }
}

/// A number as Prometheus reads it, without float noise (`0.005`, not `0.0050000000000000044`).
fn num(x: f64) -> String {
    let s = format!("{x:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.into()
    }
}

/// The rules file for `spec`, as YAML for Prometheus's `rule_files`.
///
/// # Examples
///
/// ```
/// use tokenmeter_slo::SloSpec;
/// use tokenmeter_slo::rules::{RuleOptions, generate};
///
/// let spec = SloSpec::from_toml("[[objective]]\nsuccess_rate = 0.995\n").unwrap();
/// let yaml = generate(&spec, &RuleOptions::new("tokenmeter_requests_waiting", "tokenmeter_kv_cache_usage_ratio"));
/// assert!(yaml.contains("record: slo:sli_error:ratio_rate5m"));
/// assert!(yaml.contains("alert: TokenmeterSLOBurnRatePage"));
/// ```
pub fn generate(spec: &SloSpec, options: &RuleOptions) -> String {
    let mut sli = Vec::new();
    let mut meta = Vec::new();
    let mut alerts = Vec::new();
    for class in &spec.classes {
        let class_sel = format!("{}={}", names::SLO_CLASS, quote(&class.name));
        // Fleet totals since the processes started: exact sums over every replica.
        let total = |metric: &str| format!("sum({metric}{{{class_sel}}})");
        let labels = vec![(names::SLO_CLASS, class.name.clone())];
        for (record, metric) in [
            ("tokenmeter:slo_requests:sum", names::REQUESTS),
            ("tokenmeter:slo_requests_good:sum", names::REQUESTS_GOOD),
            (
                "tokenmeter:slo_output_tokens_good:sum",
                names::OUTPUT_TOKENS_GOOD,
            ),
        ] {
            sli.push(Rule::record(record, total(metric), labels.clone()));
        }
        sli.push(Rule::record(
            "tokenmeter:slo_attainment:ratio",
            format!(
                "{} / {}",
                total(names::REQUESTS_GOOD),
                total(names::REQUESTS)
            ),
            labels,
        ));
        for window in WINDOWS
            .iter()
            .filter(|w| [300, 3_600].contains(&w.as_secs()))
        {
            let w = format_duration(*window);
            let rate = |metric: &str| format!("sum(rate({metric}{{{class_sel}}}[{w}]))");
            let labels = vec![(names::SLO_CLASS, class.name.clone())];
            sli.push(Rule::record(
                format!("tokenmeter:slo_goodput:requests_rate{w}"),
                rate(names::REQUESTS_GOOD),
                labels.clone(),
            ));
            sli.push(Rule::record(
                format!("tokenmeter:slo_goodput:tokens_rate{w}"),
                rate(names::OUTPUT_TOKENS_GOOD),
                labels.clone(),
            ));
            sli.push(Rule::record(
                format!("tokenmeter:slo_attainment:ratio_rate{w}"),
                format!("{} / {}", rate(names::REQUESTS_GOOD), rate(names::REQUESTS)),
                labels,
            ));
        }
        for objective in &class.objectives {
            let sel = format!(
                "{class_sel},{}={}",
                names::OBJECTIVE,
                quote(&objective.name)
            );
            let labels = vec![
                (names::SLO_CLASS, class.name.clone()),
                (names::OBJECTIVE, objective.name.clone()),
            ];
            for window in WINDOWS {
                let w = format_duration(window);
                sli.push(Rule::record(
                    format!("slo:sli_error:ratio_rate{w}"),
                    format!(
                        "1 - (sum(rate({good}{{{sel}}}[{w}])) / sum(rate({events}{{{sel}}}[{w}])))",
                        good = names::OBJECTIVE_GOOD,
                        events = names::OBJECTIVE_EVENTS
                    ),
                    labels.clone(),
                ));
            }
            let p = format_duration(spec.period);
            let budget = num(objective.budget());
            meta.push(Rule::record(
                format!("slo:sli_error:ratio_rate{p}"),
                format!(
                    "1 - (sum(increase({good}{{{sel}}}[{p}])) / sum(increase({events}{{{sel}}}[{p}])))",
                    good = names::OBJECTIVE_GOOD,
                    events = names::OBJECTIVE_EVENTS
                ),
                labels.clone(),
            ));
            meta.push(Rule::record(
                "slo:objective:ratio",
                format!("vector({})", num(objective.target)),
                labels.clone(),
            ));
            meta.push(Rule::record(
                "slo:error_budget:ratio",
                format!("vector({budget})"),
                labels.clone(),
            ));
            meta.push(Rule::record(
                "slo:error_budget_remaining:ratio",
                format!("1 - (slo:sli_error:ratio_rate{p}{{{sel}}} / {budget})"),
                labels.clone(),
            ));
            for severity in [Severity::Page, Severity::Ticket] {
                alerts.push(burn_alert(
                    spec.period,
                    &sel,
                    &budget,
                    severity,
                    &labels,
                    &class.name,
                    &objective.name,
                ));
            }
        }
    }
    let mut groups = vec![
        ("tokenmeter-slo-sli", sli),
        ("tokenmeter-slo-meta", meta),
        ("tokenmeter-slo-alerts", alerts),
    ];
    let saturation = saturation_alerts(spec, options);
    if !saturation.is_empty() {
        groups.push(("tokenmeter-saturation", saturation));
    }
    if let Some(metrics) = &options.engine {
        groups.push(("tokenmeter-engine", engine::rules(metrics)));
    }
    let mut out = String::from(
        "# Generated by `tokenmeter slo rules`: recording and alerting rules for the SLO spec.\ngroups:\n",
    );
    for (name, rules) in groups {
        let _ = writeln!(out, "  - name: {name}\n    rules:");
        for rule in rules {
            out.push_str(&rule.to_yaml());
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn burn_alert(
    period: Duration,
    sel: &str,
    budget_text: &str,
    severity: Severity,
    labels: &[(&'static str, String)],
    class: &str,
    objective: &str,
) -> Rule {
    let conditions: Vec<String> = RULES
        .iter()
        .filter(|r| r.severity == severity)
        .map(|r| {
            let long = format_duration(r.long);
            let short = format_duration(r.short);
            let factor = num(r.factor(period));
            let guard = num(MIN_EVENTS_PER_MINUTE / 60.0);
            format!(
                "(slo:sli_error:ratio_rate{long}{{{sel}}} > ({factor} * {budget_text}) and slo:sli_error:ratio_rate{short}{{{sel}}} > ({factor} * {budget_text}) and on() sum(rate({events}{{{sel}}}[{long}])) >= {guard})",
                events = names::OBJECTIVE_EVENTS,
            )
        })
        .collect();
    let name = match severity {
        Severity::Page => "TokenmeterSLOBurnRatePage",
        _ => "TokenmeterSLOBurnRateTicket",
    };
    let mut all_labels = labels.to_vec();
    all_labels.push(("severity", severity.as_str().to_string()));
    Rule::alert(
        name,
        conditions.join(" or "),
        None,
        all_labels,
        format!(
            "{class} {objective} is burning its error budget too fast ({})",
            severity.as_str()
        ),
    )
}

fn saturation_alerts(spec: &SloSpec, options: &RuleOptions) -> Vec<Rule> {
    let s = &spec.saturation;
    let horizon = s.horizon.as_secs().max(1);
    let trend = format_duration(Duration::from_secs((horizon / 5).max(60)));
    let mut rules = Vec::new();
    for (name, metric, limit, agg, what) in [
        (
            "Waiting",
            &options.waiting_metric,
            s.waiting_max,
            "sum",
            "requests waiting in the queue",
        ),
        (
            "KvCache",
            &options.kv_usage_metric,
            s.kv_usage_max,
            "max",
            "KV-cache usage",
        ),
    ] {
        let Some(limit) = limit else { continue };
        let limit = num(limit);
        let now = format!("{agg} by (instance) ({metric})");
        let labels = vec![("severity", "warning".to_string())];
        rules.push(Rule::alert(
            format!("TokenmeterSaturation{name}"),
            format!("{now} > {limit}"),
            Some("1m"),
            labels.clone(),
            format!("{what} above {limit}: scale before latency rises"),
        ));
        rules.push(Rule::alert(
            format!("TokenmeterSaturation{name}Rising"),
            format!("{agg} by (instance) (predict_linear({metric}[{trend}], {horizon})) > {limit} and {now} <= {limit}"),
            Some("1m"),
            labels,
            format!("{what} on course to pass {limit} within {}", format_duration(s.horizon)),
        ));
    }
    rules
}
