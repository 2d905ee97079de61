//! [`Profile`]: which names the exporter publishes, and the table of every metric per profile.

use std::fmt;
use std::str::FromStr;

use tokenmeter::conventions;

use crate::buckets::{Layout, Metric};
use crate::error::Error;
use crate::layout::{VLLM_ITERATION_TOKENS, VLLM_ITL, VLLM_REQUEST, VLLM_TTFT};
use crate::names::{self, MetricName, semconv, vllm};

/// The naming profile: which metric and label names are published (`docs/metrics.md` §3).
///
/// # Examples
///
/// ```
/// use tokenmeter_prometheus::Profile;
///
/// assert_eq!(Profile::default(), Profile::Semconv);
/// assert_eq!("vllm".parse::<Profile>().unwrap(), Profile::Vllm);
/// assert!("prom".parse::<Profile>().is_err());
/// assert!(Profile::Vllm.metrics().any(|m| m.prometheus == "vllm:kv_cache_usage_perc"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Profile {
    /// OpenTelemetry GenAI semantic conventions (`gen_ai_*`), with `tokenmeter_*` for what
    /// semconv does not name. The default.
    #[default]
    Semconv,
    /// vLLM's names (`vllm:*`, label `model_name`), so vLLM dashboards work unchanged.
    Vllm,
}

impl Profile {
    /// `semconv` or `vllm`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Profile::Semconv => "semconv",
            Profile::Vllm => "vllm",
        }
    }

    /// Every metric this profile can publish.
    pub fn metrics(self) -> impl Iterator<Item = &'static MetricName> {
        let (own, extra): (&'static [MetricName], &'static [MetricName]) = match self {
            Profile::Semconv => (semconv::ALL, &[]),
            Profile::Vllm => (vllm::ALL, VLLM_EXTRAS),
        };
        own.iter().chain(extra)
    }

    /// The histograms of this profile, with the bucket concepts they follow.
    pub(crate) fn histograms(self) -> impl Iterator<Item = Histogram> {
        self.metrics().filter_map(Histogram::of)
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "semconv" | "otel" | "opentelemetry" => Ok(Profile::Semconv),
            "vllm" => Ok(Profile::Vllm),
            _ => Err(Error::UnknownProfile(s.to_owned())),
        }
    }
}

/// The `tokenmeter_` metrics the vLLM profile publishes besides vLLM's own.
const VLLM_EXTRAS: &[MetricName] = &[
    semconv::REQUESTS,
    semconv::SERIES_FOLDED,
    semconv::ENGINE_STEP_DURATION,
    semconv::ENGINE_BATCH_SIZE,
    semconv::ENGINE_STEP_TOKENS,
];

/// A histogram of a profile: its name, the concepts whose buckets it takes, its default layout.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Histogram {
    pub(crate) name: &'static MetricName,
    pub(crate) concepts: &'static [Metric],
    pub(crate) default: Layout,
}

impl Histogram {
    /// The histogram that `metric` is: a histogram of [`tokenmeter::conventions`] (the semconv
    /// names, and the engine-step histograms the vLLM profile borrows) or one of vLLM's; `None`
    /// for a counter or a gauge.
    fn of(metric: &'static MetricName) -> Option<Self> {
        if let Some(h) = conventions::histogram(metric.otel) {
            return Some(Histogram {
                name: metric,
                concepts: h.metrics,
                default: Layout::Fixed(h.edges),
            });
        }
        VLLM_HISTOGRAMS.iter().find(|h| h.name == metric).copied()
    }
}

const fn h(name: &'static MetricName, concepts: &'static [Metric], default: Layout) -> Histogram {
    Histogram {
        name,
        concepts,
        default,
    }
}

/// vLLM's own histograms (`docs/metrics.md` §4).
const VLLM_HISTOGRAMS: &[Histogram] = &[
    h(
        &vllm::TIME_TO_FIRST_TOKEN,
        &[Metric::Ttft],
        Layout::Fixed(VLLM_TTFT),
    ),
    h(
        &vllm::INTER_TOKEN_LATENCY,
        &[Metric::Itl],
        Layout::Fixed(VLLM_ITL),
    ),
    h(
        &vllm::TIME_PER_OUTPUT_TOKEN,
        &[Metric::Tpot],
        Layout::Fixed(VLLM_ITL),
    ),
    h(
        &vllm::E2E_REQUEST_LATENCY,
        &[Metric::E2e],
        Layout::Fixed(VLLM_REQUEST),
    ),
    h(
        &vllm::QUEUE_TIME,
        &[Metric::Queue],
        Layout::Fixed(VLLM_REQUEST),
    ),
    h(
        &vllm::PREFILL_TIME,
        &[Metric::Prefill],
        Layout::Fixed(VLLM_REQUEST),
    ),
    h(
        &vllm::DECODE_TIME,
        &[Metric::Decode],
        Layout::Fixed(VLLM_REQUEST),
    ),
    h(
        &vllm::INFERENCE_TIME,
        &[Metric::Inference],
        Layout::Fixed(VLLM_REQUEST),
    ),
    h(
        &vllm::REQUEST_PROMPT_TOKENS,
        &[Metric::InputTokens],
        Layout::OneTwoFive,
    ),
    h(
        &vllm::REQUEST_GENERATION_TOKENS,
        &[Metric::OutputTokens],
        Layout::OneTwoFive,
    ),
    h(
        &vllm::ITERATION_TOKENS,
        &[Metric::StepTokens],
        Layout::Fixed(VLLM_ITERATION_TOKENS),
    ),
];

/// Describes every metric of `profile` (help text and unit) on `recorder`.
pub(crate) fn describe(profile: Profile, recorder: &dyn metrics::Recorder) {
    for metric in profile.metrics() {
        let key = metrics::KeyName::from_const_str(metric.prometheus);
        let unit = metric.metrics_unit();
        let help = metrics::SharedString::const_str(metric.help);
        match metric.kind {
            names::Kind::Histogram => recorder.describe_histogram(key, unit, help),
            names::Kind::Counter => recorder.describe_counter(key, unit, help),
            names::Kind::Gauge => recorder.describe_gauge(key, unit, help),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Kind;

    #[test]
    fn every_histogram_of_a_profile_has_a_bucket_entry() {
        for profile in [Profile::Semconv, Profile::Vllm] {
            let with_buckets: Vec<_> = profile.histograms().map(|h| h.name.prometheus).collect();
            for metric in profile.metrics() {
                assert_eq!(
                    metric.kind == Kind::Histogram,
                    with_buckets.contains(&metric.prometheus),
                    "{profile}: {}",
                    metric.prometheus
                );
            }
        }
    }
}
