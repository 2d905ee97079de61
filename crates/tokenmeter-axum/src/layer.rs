//! [`MeterLayer`]: the tower layer.

use std::fmt;
use std::sync::Arc;

use http::request::Parts;
use tokenmeter::orca::OrcaFormat;
use tokenmeter::{Meter, Series};
use tokenmeter_openai::TenantLabels;
use tower_layer::Layer;

use crate::choose::{ByLabels, LabelsFn};
use crate::orca::{LoadSource, Orca};
use crate::service::MeterService;

/// Longest SSE event, and longest JSON body read for its `usage`, by default: 256 KiB.
pub const DEFAULT_BUFFER_LIMIT: usize = 256 * 1024;

/// A tower [`Layer`] that meters every response of the service it wraps: for axum,
/// `Router::route_layer` (only matched routes) or `Router::layer`; for any tower HTTP service,
/// `ServiceBuilder::layer`. See the [crate docs](crate) for what is measured.
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_axum::{MeterLayer, header_value};
///
/// let meter = Meter::builder().build();
/// // Labels borrowed from the request: the model from a header.
/// let layer = MeterLayer::labels(meter.clone(), |parts| {
///     Labels::server("chat").request_model(header_value(parts, "x-model"))
/// });
/// // Or any function of the request that returns a series.
/// let chat = meter.series(&Labels::server("chat"));
/// let fixed = MeterLayer::new(move |_parts| chat.clone()).buffer_limit(64 * 1024);
/// # let _ = (layer, fixed);
/// ```
pub struct MeterLayer<C> {
    choose: Arc<C>,
    limit: usize,
    slo_headers: bool,
    orca: Option<Orca>,
    metrics: bool,
}

impl<F> MeterLayer<F>
where
    F: Fn(&Parts) -> Series,
{
    /// A layer that measures each request on the series `choose` returns for it.
    pub fn new(choose: F) -> Self {
        Self::with_chooser(choose)
    }
}

impl MeterLayer<ByLabels> {
    /// A layer that measures each request on `meter`'s series for the labels `labels` borrows
    /// from the request (a header, the path, an extension).
    pub fn labels(meter: Meter, labels: LabelsFn) -> Self {
        Self::with_chooser(ByLabels::new(meter, labels))
    }

    /// Labels every request's series also by tenant: the request headers on the allow-list
    /// `tenants` (never any other, never a credential: the list refuses them) and, when
    /// [`TenantLabels::body_user`] was asked for, the JSON body's `user` (add
    /// [`model_from_body`](crate::model_from_body), which reads it in the same pass as the
    /// model). Each distinct set of values is one series under the meter's cap; past it,
    /// requests fold into `_OTHER`. See [`ByLabels::tenants`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter};
    /// use tokenmeter_axum::{MeterLayer, TenantLabels, request_model};
    ///
    /// let tenants = TenantLabels::new()
    ///     .header("x-tenant-id", "tenant.id")?
    ///     .body_user()?;
    /// let layer = MeterLayer::labels(Meter::builder().build(), |parts| {
    ///     Labels::server("chat").request_model(request_model(parts))
    /// })
    /// .tenants(tenants);
    /// # let _ = layer;
    /// # Ok::<(), tokenmeter_axum::TenantError>(())
    /// ```
    pub fn tenants(mut self, tenants: TenantLabels) -> Self {
        let choose = Arc::make_mut(&mut self.choose);
        *choose = choose.clone().tenants(tenants);
        self
    }
}

impl<C> MeterLayer<C> {
    /// A layer with any [`ChooseSeries`](crate::ChooseSeries).
    pub fn with_chooser(choose: C) -> Self {
        Self {
            choose: Arc::new(choose),
            limit: DEFAULT_BUFFER_LIMIT,
            slo_headers: false,
            orca: None,
            metrics: false,
        }
    }

    /// Reads each request's own objectives from its `x-slo-ttft-ms` and `x-slo-tpot-ms`
    /// headers onto its measurement ([`slo_targets`](crate::slo_targets)), for an SLO monitor
    /// to fold into its declared header classes. Off by default; no other header is read.
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter};
    /// let series = Meter::builder().build().series(&Labels::server("chat"));
    /// let layer = tokenmeter_axum::MeterLayer::new(move |_| series.clone()).slo_headers();
    /// # let _ = layer;
    /// ```
    pub fn slo_headers(mut self) -> Self {
        self.slo_headers = true;
        self
    }

    /// The longest SSE event read (a longer one is passed through but not read) and the longest
    /// JSON body kept for its `usage` (default [`DEFAULT_BUFFER_LIMIT`]).
    pub fn buffer_limit(mut self, bytes: usize) -> Self {
        self.limit = bytes;
        self
    }

    /// Adds an ORCA load report (the `endpoint-load-metrics` header, as vLLM writes it; see
    /// [`tokenmeter::orca`]) to every successful answer whose request names a format in
    /// `endpoint-load-metrics-format`, and, with a `default` format, to every other successful
    /// answer. The values are `source`'s when the answer's head passes the layer. Off unless
    /// called.
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter, orca::{LoadReport, OrcaFormat}};
    /// use tokenmeter_axum::MeterLayer;
    ///
    /// let layer = MeterLayer::labels(Meter::builder().build(), |_| Labels::server("chat"))
    ///     .orca(|| LoadReport::new(0.42, 3, 16), Some(OrcaFormat::Text));
    /// # let _ = layer;
    /// ```
    pub fn orca(mut self, source: impl LoadSource, default: Option<OrcaFormat>) -> Self {
        self.orca = Some(Orca::new(source, default));
        self
    }

    /// Adds vLLM's per-request `metrics` object (as its `--enable-per-request-metrics` does)
    /// to the final usage chunk of every stream the layer meters (the chunk with `usage` and
    /// no token, when the server sends one, read whole from one frame, and carrying no
    /// `metrics` already), from the layer's own measurement: `time_to_first_token_ms` from the
    /// arrival at the layer (it sees no queue, so no `queue_time_ms`), `generation_time_ms`,
    /// `mean_itl_ms` and `tokens_per_second` as
    /// [`ServerMetrics::of`](tokenmeter_openai::chunk::ServerMetrics::of) writes them. Whole
    /// JSON answers are passed unchanged: a whole answer's tokens arrive at once, so the layer
    /// has no token times to report. Off unless called.
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter};
    /// use tokenmeter_axum::MeterLayer;
    ///
    /// let layer = MeterLayer::labels(Meter::builder().build(), |_| Labels::server("chat"))
    ///     .per_request_metrics(true);
    /// # let _ = layer;
    /// ```
    pub fn per_request_metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }
}

impl<S, C> Layer<S> for MeterLayer<C> {
    type Service = MeterService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        MeterService::new(
            inner,
            Arc::clone(&self.choose),
            self.limit,
            self.orca.clone(),
            self.metrics,
        )
        .slo_headers(self.slo_headers)
    }
}

impl<C> Clone for MeterLayer<C> {
    fn clone(&self) -> Self {
        Self {
            choose: Arc::clone(&self.choose),
            limit: self.limit,
            slo_headers: self.slo_headers,
            orca: self.orca.clone(),
            metrics: self.metrics,
        }
    }
}

impl<C> fmt::Debug for MeterLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeterLayer")
            .field("buffer_limit", &self.limit)
            .finish_non_exhaustive()
    }
}
