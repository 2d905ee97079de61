//! [`Profile`]: which names the exporter publishes, and the table of every metric per profile.

use std::fmt;
use std::str::FromStr;

use tokenmeter::conventions::Instrument;

use crate::error::Error;
use crate::names::{semconv, vllm};

/// The naming profile: which metric and label names are published (`docs/src/reference/metrics.md` §3).
///
/// # Examples
///
/// ```
/// use tokenmeter_prometheus::Profile;
///
/// assert_eq!(Profile::default(), Profile::Semconv);
/// assert_eq!("vllm".parse::<Profile>().unwrap(), Profile::Vllm);
/// assert!("prom".parse::<Profile>().is_err());
/// assert!(Profile::Vllm.metrics().any(|m| m.name == "vllm:kv_cache_usage_perc"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Profile {
    /// OpenTelemetry GenAI semantic conventions (`gen_ai_*`), with `tokenmeter_*` for what
    /// semconv does not name. The default.
    #[default]
    Semconv,
    /// vLLM's names (`vllm:*`, labels `model_name` and `engine`), so vLLM dashboards work
    /// unchanged.
    Vllm,
    /// [`Profile::Vllm`] plus the names vLLM used before 0.11 for what it has since renamed
    /// ([`vllm::legacy`](crate::names::vllm::legacy): `vllm:time_per_output_token_seconds`,
    /// `vllm:gpu_cache_usage_perc`, `vllm:gpu_prefix_cache_*`), published beside the current
    /// ones with the same samples, for dashboards written before the renames.
    VllmLegacy,
}

impl Profile {
    /// `semconv`, `vllm` or `vllm-legacy`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Profile::Semconv => "semconv",
            Profile::Vllm => "vllm",
            Profile::VllmLegacy => "vllm-legacy",
        }
    }

    /// Every metric this profile publishes with the built-in table: the instruments the
    /// table's rows are published as under this profile's names (a test checks that they
    /// agree). [`names::exposition_name`](crate::names::exposition_name) gives each one's name
    /// in the exposition.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter_prometheus::{Profile, names::exposition_name};
    ///
    /// let names: Vec<_> = Profile::Semconv.metrics().map(exposition_name).collect();
    /// assert!(names.iter().any(|n| n == "gen_ai_server_time_to_first_token_seconds"));
    /// assert!(!names.iter().any(|n| n.starts_with("vllm:")));
    /// ```
    pub fn metrics(self) -> impl Iterator<Item = &'static Instrument> {
        let (own, extra): (&'static [Instrument], &'static [Instrument]) = match self {
            Profile::Semconv => (semconv::ALL, &[]),
            Profile::Vllm => (vllm::ALL, VLLM_EXTRAS),
            Profile::VllmLegacy => (vllm::ALL, VLLM_EXTRAS),
        };
        let legacy: &'static [Instrument] = match self {
            Profile::VllmLegacy => vllm::legacy::ALL,
            _ => &[],
        };
        own.iter().chain(extra).chain(legacy)
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
            "vllm-legacy" | "vllm_legacy" => Ok(Profile::VllmLegacy),
            _ => Err(Error::UnknownProfile(s.to_owned())),
        }
    }
}

/// The `tokenmeter_` metrics the vLLM profile publishes besides vLLM's own.
const VLLM_EXTRAS: &[Instrument] = &[
    semconv::REQUESTS,
    semconv::SERIES_FOLDED,
    semconv::ENGINE_STEP_DURATION,
    semconv::ENGINE_BATCH_SIZE,
    semconv::ENGINE_STEP_TOKENS,
    semconv::TIME_TO_FIRST_OUTPUT_TOKEN,
    semconv::TIME_TO_SECOND_TOKEN,
    semconv::NORMALIZED_TIME_PER_OUTPUT_TOKEN,
    semconv::ENGINE_ADMISSION_REJECTIONS,
];

#[cfg(test)]
mod tests {
    use tokenmeter::conventions::{Conventions, InstrumentKind};

    use super::*;
    use crate::names::exposition_name;

    #[test]
    fn every_histogram_of_a_profile_has_a_bucket_entry() {
        let table = Conventions::default();
        for profile in [Profile::Semconv, Profile::Vllm, Profile::VllmLegacy] {
            let with_buckets: Vec<_> = profile
                .histograms(&table)
                .into_iter()
                .map(|(name, ..)| name)
                .collect();
            for metric in profile.metrics() {
                let name = exposition_name(metric);
                assert_eq!(
                    metric.kind == InstrumentKind::Histogram,
                    with_buckets.iter().any(|n| *n == name),
                    "{profile}: {name}"
                );
            }
        }
    }
}
