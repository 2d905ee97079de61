//! [`PrometheusSink`]: the [`Sink`] that publishes through the `metrics` facade.

mod engine;
mod labels;
mod series;
mod steps;
mod target;

pub use engine::EngineGauges;
pub(crate) use target::Target;

use std::fmt;
use std::sync::Arc;

use metrics::{Counter, Label, Recorder};
use tokenmeter::sink::{EngineSink, SeriesSink, Sink};
use tokenmeter::{Labels, Role};

use crate::exporter::Upkeep;
use crate::names::{label, semconv};
use crate::profile::{self, Profile};
use series::SeriesHandles;
use steps::StepHandles;

/// A [`Sink`] that publishes every measurement through the `metrics` facade, with the names of
/// a [`Profile`].
///
/// Each series registers all its handles once, when the meter resolves it (one duration
/// histogram per `error_type` and one counter per outcome included, at zero): the per-token
/// path is one histogram record on a handle it already holds (no macro, no label, no lookup,
/// no allocation in this crate), and the end of a request indexes arrays.
///
/// Build one with [`Builder`](crate::Builder) (which also sets the buckets and renders or
/// serves `/metrics`), or directly against any `metrics` recorder with
/// [`PrometheusSink::global`] or [`PrometheusSink::with_recorder`]. Clones share everything.
///
/// # Examples
///
/// Against a recorder you hold (no global state):
///
/// ```
/// use std::sync::Arc;
/// use metrics_exporter_prometheus::PrometheusBuilder;
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_prometheus::{Buckets, PrometheusSink, Profile};
///
/// let recorder = Buckets::new().apply(Profile::Semconv, PrometheusBuilder::new()).build_recorder();
/// let handle = recorder.handle();
/// let sink = PrometheusSink::with_recorder(Profile::Semconv, Arc::new(recorder));
///
/// let meter = Meter::builder().sink(sink).build();
/// let mut request = meter.series(&Labels::server("chat").request_model("m")).start();
/// request.tokens(1);
/// request.succeed();
///
/// let text = handle.render();
/// assert!(text.contains("gen_ai_server_request_duration_seconds_count{gen_ai_operation_name=\"chat\",gen_ai_request_model=\"m\"} 1"));
/// ```
#[derive(Clone)]
pub struct PrometheusSink {
    inner: Arc<Inner>,
}

struct Inner {
    profile: Profile,
    target: Target,
    folded: [Counter; 2],
    _upkeep: Option<Arc<Upkeep>>,
}

impl PrometheusSink {
    /// A sink that registers with the global `metrics` recorder (whatever is installed when a
    /// series is resolved), and describes the profile's metrics to it now: install the
    /// recorder first.
    pub fn global(profile: Profile) -> Self {
        Self::from_target(profile, Target::Global, None)
    }

    /// A sink that registers with `recorder` only, and describes the profile's metrics to it.
    pub fn with_recorder<R>(profile: Profile, recorder: Arc<R>) -> Self
    where
        R: Recorder + Send + Sync + 'static,
    {
        Self::from_target(profile, Target::Local(recorder), None)
    }

    pub(crate) fn from_target(
        profile: Profile,
        target: Target,
        upkeep: Option<Arc<Upkeep>>,
    ) -> Self {
        target.with(|recorder| profile::describe(profile, recorder));
        let folded = [Role::Server, Role::Client].map(|role| {
            let labels = vec![Label::from_static_parts(
                label::ROLE.prometheus,
                role.as_str(),
            )];
            target.counter(semconv::SERIES_FOLDED.prometheus, labels)
        });
        Self {
            inner: Arc::new(Inner {
                profile,
                target,
                folded,
                _upkeep: upkeep,
            }),
        }
    }

    /// The naming profile.
    pub fn profile(&self) -> Profile {
        self.inner.profile
    }

    /// The recorder this sink registers with, when it holds one ([`Builder::build_local`],
    /// [`PrometheusSink::with_recorder`]): register other metrics there (the SLO verdict
    /// counters, your own) so they share the exposition. `None` for a global sink.
    ///
    /// [`Builder::build_local`]: crate::Builder::build_local
    pub fn recorder(&self) -> Option<Arc<dyn Recorder + Send + Sync>> {
        match &self.inner.target {
            Target::Local(recorder) => Some(recorder.clone()),
            Target::Global => None,
        }
    }

    /// Setters for the gauges an engine reports (KV-cache usage, preemptions), labelled like a
    /// series of `labels` without the operation (semconv) or by `model_name` (vLLM). Register
    /// once per engine and keep the handle.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use metrics_exporter_prometheus::PrometheusBuilder;
    /// use tokenmeter::Labels;
    /// use tokenmeter_prometheus::{PrometheusSink, Profile};
    ///
    /// let recorder = PrometheusBuilder::new().build_recorder();
    /// let handle = recorder.handle();
    /// let sink = PrometheusSink::with_recorder(Profile::Vllm, Arc::new(recorder));
    /// let engine = sink.engine(&Labels::server("chat").request_model("llama"));
    /// engine.set_kv_cache_usage(0.42);
    /// assert!(handle.render().contains("vllm:kv_cache_usage_perc{model_name=\"llama\"} 0.42"));
    /// ```
    pub fn engine(&self, labels: &Labels<'_>) -> EngineGauges {
        EngineGauges::new(self.inner.profile, &self.inner.target, labels)
    }
}

impl Sink for PrometheusSink {
    fn series(&self, labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(SeriesHandles::new(
            self.inner.profile,
            &self.inner.target,
            labels,
        ))
    }

    fn series_folded(&self, role: Role) {
        let index = match role {
            Role::Server => 0,
            Role::Client => 1,
        };
        self.inner.folded[index].increment(1);
    }

    /// Registers the engine-step handles of `labels`' engine (see the crate docs' tables):
    /// recording a step then indexes arrays and updates handles it already holds.
    fn steps(&self, labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        Some(Box::new(StepHandles::new(
            self.inner.profile,
            &self.inner.target,
            labels,
        )))
    }
}

impl fmt::Debug for PrometheusSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrometheusSink")
            .field("profile", &self.inner.profile)
            .field("recorder", &self.inner.target)
            .finish()
    }
}
