//! [`PrometheusSink`]: the [`Sink`] that publishes through the `metrics` facade.

mod engine;
mod handle;
mod labels;
mod series;
mod target;

pub(crate) use target::RecorderTarget;

use std::fmt;
use std::sync::Arc;

use metrics::Recorder;
use tokenmeter::conventions::{Conventions, Feed, Value};
use tokenmeter::sink::{EngineSink, SeriesSink, Sink};
use tokenmeter::{Labels, Role};

use crate::exporter::Upkeep;
use crate::profile::Profile;
use crate::rows::{self, PromRow};
use engine::engine_rows;
use handle::Handle;
use series::SeriesHandles;

/// A [`Sink`] that publishes every measurement through the `metrics` facade, with the names of
/// a [`Profile`].
///
/// The sink publishes the rows of a [`Conventions`] table (the built-in one unless
/// [`Builder::conventions`](crate::Builder::conventions) gives another) under the profile's
/// names. Each series registers a handle per row its role records, once, when the meter
/// resolves it (one duration histogram per `error_type` and one counter per outcome included,
/// at zero): the per-token path is one histogram record per item row on a handle it already
/// holds (no macro, no label, no lookup, no allocation in this crate), and the end of a request
/// indexes arrays.
///
/// Build one with [`Builder`](crate::Builder): it also sets the buckets and renders or serves
/// `/metrics`, or gives the sink for any `metrics` recorder
/// ([`Builder::build_for`](crate::Builder::build_for)). Clones share everything.
///
/// # Examples
///
/// Against a recorder you hold (no global state):
///
/// ```
/// use std::sync::Arc;
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_prometheus::{Builder, Profile};
///
/// let builder = Builder::new(Profile::Semconv);
/// let recorder = builder.prometheus_builder().build_recorder();
/// let handle = recorder.handle();
/// let sink = builder.build_for(Arc::new(recorder));
///
/// let meter = Meter::builder().sink(sink).build();
/// let mut request = meter.series(&Labels::server("chat").request_model("m")).start();
/// request.record_tokens(1);
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
    target: RecorderTarget,
    rows: Box<[PromRow]>,
    /// Per [`Feed::Folded`] row, the server's and the client's handle.
    folded: Box<[[Handle; 2]]>,
    _upkeep: Option<Arc<Upkeep>>,
}

impl PrometheusSink {
    /// A sink that registers with the global `metrics` recorder (whatever is installed when a
    /// series is resolved), and describes the profile's metrics to it now: install the
    /// recorder first.
    #[deprecated(
        since = "0.2.0",
        note = "use `Builder::install_recorder`, or install your recorder as an `Arc` and give a clone to `Builder::build_for`; removed in 0.3.0"
    )]
    pub fn global(profile: Profile) -> Self {
        Self::from_target(
            profile,
            RecorderTarget::Global,
            None,
            &Conventions::default(),
        )
    }

    /// A sink that registers with `recorder` only, and describes the profile's metrics to it.
    #[deprecated(
        since = "0.2.0",
        note = "use `Builder::new(profile).build_for(recorder)`; removed in 0.3.0"
    )]
    pub fn with_recorder<R>(profile: Profile, recorder: Arc<R>) -> Self
    where
        R: Recorder + Send + Sync + 'static,
    {
        Self::from_target(
            profile,
            RecorderTarget::Local(recorder),
            None,
            &Conventions::default(),
        )
    }

    pub(crate) fn from_target(
        profile: Profile,
        target: RecorderTarget,
        upkeep: Option<Arc<Upkeep>>,
        table: &Conventions,
    ) -> Self {
        let rows = profile.rows(table);
        target.with(|recorder| rows::describe(&rows, recorder));
        let folded = rows
            .iter()
            .filter(|row| row.row.feed == Feed::Folded)
            .map(|row| {
                let sink_wide = Labels::folded(Role::Server);
                [Role::Server, Role::Client].map(|role| {
                    let labels = labels::of(profile, row.row.attrs, &sink_wide, role, 0);
                    Handle::register(&target, row, labels)
                })
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                profile,
                target,
                rows: rows.into(),
                folded,
                _upkeep: upkeep,
            }),
        }
    }

    /// The naming profile.
    pub fn profile(&self) -> Profile {
        self.inner.profile
    }

    /// The recorder this sink registers with, when it holds one ([`Builder::build_recorder`],
    /// [`Builder::build_for`]): register other metrics there (the SLO verdict counters, your
    /// own) so they share the exposition. `None` for a global sink.
    ///
    /// [`Builder::build_recorder`]: crate::Builder::build_recorder
    /// [`Builder::build_for`]: crate::Builder::build_for
    pub fn recorder(&self) -> Option<Arc<dyn Recorder + Send + Sync>> {
        match &self.inner.target {
            RecorderTarget::Local(recorder) => Some(recorder.clone()),
            RecorderTarget::Global => None,
        }
    }
}

impl Sink for PrometheusSink {
    fn series(&self, labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(SeriesHandles::new(
            self.inner.profile,
            &self.inner.target,
            &self.inner.rows,
            labels,
        ))
    }

    fn series_folded(&self, role: Role) {
        let index = match role {
            Role::Server => 0,
            Role::Client => 1,
        };
        for handles in self.inner.folded.iter() {
            handles[index].record(Value::Count(1));
        }
    }

    /// Registers the engine handles of `labels`' engine (steps, KV-cache usage, preemptions;
    /// see the crate docs' tables): recording then indexes arrays and updates handles it
    /// already holds.
    fn engine(&self, labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        Some(Box::new(engine_rows(
            self.inner.profile,
            &self.inner.target,
            &self.inner.rows,
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
