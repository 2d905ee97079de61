//! [`ChooseSeries`]: how the layer picks the series of each request.

use std::fmt;

use http::request::Parts;
use tokenmeter::{Labels, Meter, Series};
use tokenmeter_openai::TenantLabels;

use crate::model::request_user;

/// Picks the [`Series`] a request is measured on, from its method, URI, headers and
/// extensions. Called once per request, before the inner service; the body is not read.
///
/// Implemented for every `Fn(&Parts) -> Series` and for [`ByLabels`].
///
/// # Examples
///
/// ```
/// use http::request::Parts;
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_axum::ChooseSeries;
///
/// let meter = Meter::builder().build();
/// let chat = meter.series(&Labels::server("chat")); // resolved once
/// let completions = meter.series(&Labels::server("text_completion"));
/// let choose = move |parts: &Parts| {
///     if parts.uri.path().ends_with("/chat/completions") { chat.clone() } else { completions.clone() }
/// };
///
/// let (parts, ()) = http::Request::post("/v1/completions").body(()).unwrap().into_parts();
/// assert_eq!(choose.series(&parts).labels().operation(), "text_completion");
/// ```
pub trait ChooseSeries {
    /// The series for the request with these `parts`.
    fn series(&self, parts: &Parts) -> Series;
}

impl<F> ChooseSeries for F
where
    F: Fn(&Parts) -> Series,
{
    fn series(&self, parts: &Parts) -> Series {
        self(parts)
    }
}

/// A function that borrows a request's labels from its parts (see [`header_value`]).
pub type LabelsFn = for<'a> fn(&'a Parts) -> Labels<'a>;

/// Resolves `meter.series(&labels(parts))` per request, with the tenant attributes of
/// [`ByLabels::tenants`]: one lock and one lookup per request (none per token), no allocation
/// once the series exists. Values taken from requests are bounded by the meter's series cap
/// (past it, label sets fold into `_OTHER`).
///
/// Built by [`MeterLayer::labels`](crate::MeterLayer::labels).
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_axum::{ByLabels, ChooseSeries, header_value};
///
/// let meter = Meter::builder().build();
/// let choose = ByLabels::new(meter.clone(), |parts| {
///     Labels::server("chat").request_model(header_value(parts, "x-model"))
/// });
/// let (parts, ()) = http::Request::post("/").header("x-model", "llama").body(()).unwrap().into_parts();
/// let series = choose.series(&parts);
/// assert_eq!(series.labels().request_model_name(), "llama");
/// assert!(series.same(&choose.series(&parts))); // the same series for the same labels
/// ```
#[derive(Clone)]
pub struct ByLabels {
    meter: Meter,
    labels: LabelsFn,
    tenants: TenantLabels,
}

impl ByLabels {
    /// Labels from `labels`, series from `meter`.
    pub fn new(meter: Meter, labels: LabelsFn) -> Self {
        Self {
            meter,
            labels,
            tenants: TenantLabels::new(),
        }
    }

    /// Adds to every request's labels the tenant attributes `tenants` takes from its headers
    /// (only those on the list) and, when [`TenantLabels::body_user`] was asked for, the body's
    /// `user` as [`model_from_body`](crate::model_from_body) found it ([`request_user`]).
    pub fn tenants(mut self, tenants: TenantLabels) -> Self {
        self.tenants = tenants;
        self
    }

    /// The labels of the request with these `parts`: those of the labels function, then the
    /// tenant attributes. What [`ChooseSeries::series`] resolves.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::{Labels, Meter, TenantKey};
    /// use tokenmeter_axum::{ByLabels, TenantLabels};
    ///
    /// let tenants = TenantLabels::new().header("x-tenant-id", "tenant.id")?;
    /// let choose = ByLabels::new(Meter::builder().build(), |_| Labels::server("chat")).tenants(tenants);
    /// let (parts, ()) = http::Request::post("/").header("x-tenant-id", "acme").body(())?.into_parts();
    /// assert_eq!(choose.labels(&parts).tenant_value(&TenantKey::TENANT_ID), Some("acme"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn labels<'a>(&self, parts: &'a Parts) -> Labels<'a> {
        let user = self
            .tenants
            .reads_body_user()
            .then(|| request_user(parts))
            .filter(|user| !user.is_empty());
        self.tenants
            .apply((self.labels)(parts), &parts.headers, user)
    }
}

impl ChooseSeries for ByLabels {
    fn series(&self, parts: &Parts) -> Series {
        self.meter.series(&self.labels(parts))
    }
}

impl fmt::Debug for ByLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByLabels")
            .field("meter", &self.meter)
            .field("tenants", &self.tenants)
            .finish_non_exhaustive()
    }
}

/// The value of header `name` as text, or `""` when it is missing or not visible ASCII
/// (an empty label value means "not known").
///
/// # Examples
///
/// ```
/// use tokenmeter_axum::header_value;
///
/// let (parts, ()) = http::Request::post("/").header("x-model", "llama").body(()).unwrap().into_parts();
/// assert_eq!(header_value(&parts, "x-model"), "llama");
/// assert_eq!(header_value(&parts, "x-missing"), "");
/// ```
pub fn header_value<'a>(parts: &'a Parts, name: &str) -> &'a str {
    parts
        .headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
}
