//! [`Row`]: one instrument of the table with everything an exporter needs to publish it.

use super::attr_set::AttrSet;
use super::feed::Feed;
use super::instrument::Instrument;
use super::kind::InstrumentKind;
use super::metric::Metric;
use crate::series::Role;

/// The roles whose series record an instrument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Roles {
    /// Server series only.
    Server,
    /// Client series only.
    Client,
    /// Both (and every engine or sink-wide instrument).
    Both,
}

impl Roles {
    /// Whether a series of `role` records the instrument.
    pub const fn includes(self, role: Role) -> bool {
        match self {
            Roles::Both => true,
            Roles::Server => matches!(role, Role::Server),
            Roles::Client => matches!(role, Role::Client),
        }
    }
}

/// One row of the conventions table: an [`Instrument`] (name, unit, kind, description), the
/// [`Feed`] that records into it (event and field), the [`Roles`] whose series record it, its
/// [`AttrSet`], and, for a histogram, the [`Metric`]s whose bucket settings it follows and its
/// default edges.
///
/// An exporter loops over the rows ([`Conventions::rows`](super::Conventions::rows)): one
/// handle per row (and per attribute variant) prepared when a series or an engine is
/// resolved, and each event records into the rows it feeds. Several rows may share an
/// instrument, fed by different fields with different attributes (`gen_ai.client.token.usage`
/// is fed by the input and the output token counts).
///
/// # Examples
///
/// A row of your own: a histogram of token-bearing items per request, for both roles.
///
/// ```
/// use tokenmeter::conventions::{
///     AttrSet, Feed, Instrument, InstrumentKind, Metric, RecordField, Roles, Row, TOKEN_EDGES,
/// };
///
/// let items = Instrument::new(
///     "example.request.items",
///     "{item}",
///     InstrumentKind::Histogram,
///     "Token-bearing items per request.",
/// );
/// let row = Row::new(items, Feed::End(RecordField::Items), Roles::Both, AttrSet::Own)
///     .buckets(&[Metric::OutputTokens], TOKEN_EDGES);
/// assert_eq!(row.instrument.prometheus_name(), "example_request_items");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Row {
    /// The instrument.
    pub instrument: Instrument,
    /// The event and field that record into it.
    pub feed: Feed,
    /// The roles whose series record it (series instruments only).
    pub roles: Roles,
    /// Its attributes.
    pub attrs: AttrSet,
    /// For a histogram, the metrics whose bucket settings apply (empty otherwise).
    pub metrics: &'static [Metric],
    /// For a histogram, the default edges, sorted (empty otherwise).
    pub edges: &'static [f64],
}

impl Row {
    /// A row without buckets: add them with [`Row::buckets`] for a histogram.
    pub const fn new(instrument: Instrument, feed: Feed, roles: Roles, attrs: AttrSet) -> Self {
        Self {
            instrument,
            feed,
            roles,
            attrs,
            metrics: &[],
            edges: &[],
        }
    }

    /// The same row with the bucket settings of `metrics` and the default `edges`.
    pub const fn buckets(self, metrics: &'static [Metric], edges: &'static [f64]) -> Self {
        Self {
            metrics,
            edges,
            ..self
        }
    }

    /// The same row under another instrument (another name, unit or description): how an
    /// exporter renames rows for a naming profile of its own.
    pub const fn renamed(self, instrument: Instrument) -> Self {
        Self { instrument, ..self }
    }

    /// The same row for other roles.
    pub const fn for_roles(self, roles: Roles) -> Self {
        Self { roles, ..self }
    }

    /// The same row with other attributes.
    pub const fn with_attrs(self, attrs: AttrSet) -> Self {
        Self { attrs, ..self }
    }

    /// Whether the instrument is a histogram.
    pub const fn is_histogram(&self) -> bool {
        matches!(self.instrument.kind, InstrumentKind::Histogram)
    }

    /// Whether the values are seconds (unit `s`): a floating-point instrument; any other
    /// histogram or counter counts integers.
    pub const fn is_seconds(&self) -> bool {
        matches!(self.instrument.unit.as_bytes(), b"s")
    }
}
