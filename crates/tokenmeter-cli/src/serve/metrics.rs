//! `/metrics`: the tokenmeter-prometheus sink and handle, and the engine's KV-cache gauge.

use tokenmeter::Labels;
use tokenmeter_prometheus::{Builder, EngineGauges, Handle, Profile, PrometheusSink};
use tokenmeter_sim::{Engine, PROVIDER};

use tokenmeter_slo::SloSpec;

use super::args::MetricsProfile;
use super::slo::add_threshold_edges;

/// What `/metrics` renders.
#[derive(Debug)]
pub(crate) struct Metrics {
    handle: Handle,
    engine: EngineGauges,
}

impl Metrics {
    /// A sink on a recorder of its own (no global state) and the matching metrics.
    pub(crate) fn new(
        profile: MetricsProfile,
        model: &str,
        spec: Option<&SloSpec>,
    ) -> anyhow::Result<(PrometheusSink, Self)> {
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
        Ok((sink, Self { handle, engine }))
    }

    /// The exposition now, with the KV-cache usage read from `engine` at this moment.
    pub(crate) fn render(&self, engine: &Engine) -> String {
        self.engine.set_kv_cache_usage(engine.kv_usage());
        self.handle.render()
    }
}

/// The content type of the exposition.
pub(crate) const CONTENT_TYPE: &str = tokenmeter_prometheus::CONTENT_TYPE;
