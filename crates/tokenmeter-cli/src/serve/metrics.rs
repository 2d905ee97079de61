//! `/metrics`: the tokenmeter-prometheus sink and handle, the engine's KV-cache gauge, and the
//! server's HTTP answers and closed connections ([`HttpCounts`]).

use std::sync::Arc;

use tokenmeter::Labels;
use tokenmeter_prometheus::{Builder, EngineGauges, Handle, Profile, PrometheusSink};
use tokenmeter_sim::{Engine, PROVIDER};

use tokenmeter_slo::SloSpec;

use super::args::MetricsProfile;
use super::http_counts::HttpCounts;
use super::slo::add_threshold_edges;

/// What `/metrics` renders.
#[derive(Debug)]
pub(crate) struct Metrics {
    handle: Handle,
    engine: EngineGauges,
    /// Every HTTP answer and every connection the server closed.
    pub(crate) http: Arc<HttpCounts>,
}

impl Metrics {
    /// A sink on a recorder of its own (no global state) and the matching metrics.
    pub(crate) fn new(
        profile: MetricsProfile,
        model: &str,
        spec: Option<&SloSpec>,
    ) -> anyhow::Result<(PrometheusSink, Self)> {
        let http = Arc::new(HttpCounts::new(profile));
        let profile = match profile {
            MetricsProfile::Semconv => Profile::Semconv,
            MetricsProfile::Vllm => Profile::Vllm,
        };
        let mut builder = Builder::new(profile);
        if let Some(spec) = spec {
            builder = add_threshold_edges(builder, spec)?;
        }
        let (sink, handle) = builder.build_local()?;
        let engine = sink.engine(
            &Labels::server("chat")
                .provider(PROVIDER)
                .request_model(model),
        );
        Ok((
            sink,
            Self {
                handle,
                engine,
                http,
            },
        ))
    }

    /// The exposition now, with the KV-cache usage read from `engine` at this moment, then the
    /// HTTP counts.
    pub(crate) fn render(&self, engine: &Engine) -> String {
        self.engine.set_kv_cache_usage(engine.kv_usage());
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
