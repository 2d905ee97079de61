//! `/metrics`: the tokenmeter-prometheus sink and handle, and the server's HTTP answers and
//! closed connections ([`HttpCounts`]). The engine's KV-cache usage reaches the sink through
//! the meter's engine recorder, which the simulated engine updates as its state changes.

use std::sync::Arc;

use tokenmeter_prometheus::{Builder, Handle, Profile, PrometheusSink};

use tokenmeter_slo::SloSpec;

use super::http_counts::HttpCounts;
use super::slo::add_threshold_edges;
use crate::profile::MetricsProfile;

/// What `/metrics` renders.
#[derive(Debug)]
pub(crate) struct Metrics {
    handle: Handle,
    /// Every HTTP answer and every connection the server closed.
    pub(crate) http: Arc<HttpCounts>,
}

impl Metrics {
    /// A sink on a recorder of its own (no global state) and the matching metrics.
    pub(crate) fn new(
        profile: MetricsProfile,
        spec: Option<&SloSpec>,
    ) -> Result<(PrometheusSink, Self), tokenmeter_prometheus::Error> {
        let http = Arc::new(HttpCounts::new(profile));
        let profile = match profile {
            MetricsProfile::Semconv => Profile::Semconv,
            MetricsProfile::Vllm => Profile::Vllm,
            MetricsProfile::VllmLegacy => Profile::VllmLegacy,
        };
        let mut builder = Builder::new(profile);
        if let Some(spec) = spec {
            builder = add_threshold_edges(builder, spec)?;
        }
        let (sink, handle) = builder.build_recorder()?;
        Ok((sink, Self { handle, http }))
    }

    /// The exposition now, then the HTTP counts.
    pub(crate) fn render(&self) -> String {
        let mut text = self.handle.render();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&self.http.render());
        text
    }
}

/// The content type of the exposition.
pub(crate) const CONTENT_TYPE: &str = tokenmeter_prometheus::CONTENT_TYPE;
