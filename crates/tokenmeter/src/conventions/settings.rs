//! [`Buckets`]: the default layouts, replaced or extended per [`Metric`] (`docs/src/reference/metrics.md` §4:
//! buckets configurable per metric, every SLO threshold a bucket edge).

use std::collections::BTreeMap;
use std::fmt;

use super::metric::Metric;
use super::table::Conventions;

/// The default context length: the top of vLLM's 1-2-5 token-count layouts (the Prometheus
/// exporter's vLLM profile) unless [`Buckets::context_length`] sets it.
pub const DEFAULT_CONTEXT_LENGTH: u64 = 131_072;

/// A bucket setting that was refused.
///
/// Exhaustive on purpose: exporters map each variant to their own error.
#[derive(Clone, Debug, PartialEq)]
pub enum BucketError {
    /// An edge is NaN, infinite or negative.
    InvalidEdge {
        /// The metric.
        metric: Metric,
        /// The edge.
        value: f64,
    },
    /// A replacement layout has no edge.
    EmptyBuckets {
        /// The metric.
        metric: Metric,
    },
    /// A context length of zero tokens.
    ZeroContextLength,
}

impl fmt::Display for BucketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BucketError::InvalidEdge { metric, value } => write!(
                f,
                "bucket edge {value} for `{metric}` is not valid: edges must be finite numbers >= 0 \
                 (seconds for durations, a count for tokens)"
            ),
            BucketError::EmptyBuckets { metric } => write!(
                f,
                "the bucket layout for `{metric}` is empty: give at least one edge, or keep the default"
            ),
            BucketError::ZeroContextLength => f.write_str(
                "the context length must be at least 1 token: pass the model's maximum context length",
            ),
        }
    }
}

impl std::error::Error for BucketError {}

/// Bucket settings for every histogram: the defaults of the table's rows ([`ROWS`](super::ROWS)),
/// replaced or extended per [`Metric`].
///
/// Add an SLO threshold as an edge with [`Buckets::add_edges`], so that the fraction of
/// requests at or under the threshold is exact in the backend (buckets count
/// `value <= edge`).
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::{Buckets, Metric};
///
/// let mut buckets = Buckets::new();
/// buckets.add_edges(Metric::Ttft, &[0.35])?; // "TTFT <= 350 ms" is an SLO
/// let edges = buckets.edges("gen_ai.server.time_to_first_token").unwrap();
/// assert!(edges.contains(&0.35) && edges.contains(&0.25) && edges.contains(&0.5));
///
/// buckets.set(Metric::Itl, &[0.05, 0.01])?; // replace a layout (sorted for you)
/// assert_eq!(buckets.edges("tokenmeter.inter_token_latency").unwrap(), [0.01, 0.05]);
/// # Ok::<(), tokenmeter::conventions::BucketError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buckets {
    replaced: BTreeMap<Metric, Vec<f64>>,
    extra: BTreeMap<Metric, Vec<f64>>,
    context_length: Option<u64>,
}

impl Buckets {
    /// The default layouts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the default layout of `metric` with `edges` (any order; duplicates removed).
    /// Edges added with [`Buckets::add_edges`] are kept.
    ///
    /// # Errors
    ///
    /// An edge that is NaN, infinite or negative, or no edge at all. A refused call changes
    /// nothing.
    pub fn set(&mut self, metric: Metric, edges: &[f64]) -> Result<&mut Self, BucketError> {
        let edges = validate(metric, edges)?;
        if edges.is_empty() {
            return Err(BucketError::EmptyBuckets { metric });
        }
        self.replaced.insert(metric, edges);
        Ok(self)
    }

    /// Adds `edges` to the layout of `metric` (default or replaced): the SLO thresholds.
    ///
    /// # Errors
    ///
    /// An edge that is NaN, infinite or negative. A refused call changes nothing.
    pub fn add_edges(&mut self, metric: Metric, edges: &[f64]) -> Result<&mut Self, BucketError> {
        let edges = validate(metric, edges)?;
        self.extra.entry(metric).or_default().extend(edges);
        Ok(self)
    }

    /// The model's context length: the top of vLLM's 1-2-5 token-count layouts (default
    /// [`DEFAULT_CONTEXT_LENGTH`]).
    ///
    /// # Errors
    ///
    /// [`BucketError::ZeroContextLength`] for 0. A refused call changes nothing.
    pub fn context_length(&mut self, tokens: u64) -> Result<&mut Self, BucketError> {
        if tokens == 0 {
            return Err(BucketError::ZeroContextLength);
        }
        self.context_length = Some(tokens);
        Ok(self)
    }

    /// The context length set with [`Buckets::context_length`], or [`DEFAULT_CONTEXT_LENGTH`].
    pub fn context_length_tokens(&self) -> u64 {
        self.context_length.unwrap_or(DEFAULT_CONTEXT_LENGTH)
    }

    /// The sorted edges of the histogram instrument `name` (an OpenTelemetry name of
    /// [`names`](super::names)), or `None` if no histogram has that name.
    pub fn edges(&self, name: &str) -> Option<Vec<f64>> {
        self.edges_in(&Conventions::default(), name)
    }

    /// The sorted edges of the histogram instrument `name` of `table`, or `None` if no
    /// histogram row of it has that name.
    pub fn edges_in(&self, table: &Conventions, name: &str) -> Option<Vec<f64>> {
        let (metrics, edges) = table.histogram(name)?;
        Some(self.edges_for(&metrics, edges))
    }

    /// The sorted edges of any histogram that follows the settings of `metrics` and has the
    /// layout `default` unless replaced: how an exporter lays out histograms of its own, such
    /// as vLLM's.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::conventions::{Buckets, Metric};
    ///
    /// let mut buckets = Buckets::new();
    /// buckets.add_edges(Metric::E2e, &[3.0])?;
    /// assert_eq!(buckets.edges_for(&[Metric::E2e], &[5.0, 1.0]), [1.0, 3.0, 5.0]);
    /// # Ok::<(), tokenmeter::conventions::BucketError>(())
    /// ```
    pub fn edges_for(&self, metrics: &[Metric], default: &[f64]) -> Vec<f64> {
        if metrics.is_empty() {
            // a row no setting applies to keeps its own edges
            return default.to_vec();
        }
        let mut edges = Vec::new();
        for metric in metrics {
            match self.replaced.get(metric) {
                Some(replaced) => edges.extend_from_slice(replaced),
                None => edges.extend_from_slice(default),
            }
            if let Some(extra) = self.extra.get(metric) {
                edges.extend_from_slice(extra);
            }
        }
        edges.sort_by(f64::total_cmp);
        edges.dedup();
        edges
    }
}

fn validate(metric: Metric, edges: &[f64]) -> Result<Vec<f64>, BucketError> {
    if let Some(&value) = edges.iter().find(|v| !v.is_finite() || **v < 0.0) {
        return Err(BucketError::InvalidEdge { metric, value });
    }
    let mut edges = edges.to_vec();
    edges.sort_by(f64::total_cmp);
    edges.dedup();
    Ok(edges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conventions::{InstrumentKind, names};

    #[test]
    fn every_histogram_has_a_layout_and_nothing_else_does() {
        for instrument in names::ALL {
            let has = Buckets::new().edges(instrument.name).is_some();
            assert_eq!(
                has,
                instrument.kind == InstrumentKind::Histogram,
                "{instrument}"
            );
        }
    }

    #[test]
    fn extra_edges_merge_across_metrics_and_survive_a_replacement() {
        let mut b = Buckets::new();
        b.add_edges(Metric::InputTokens, &[3000.0]).unwrap();
        b.add_edges(Metric::OutputTokens, &[400.0]).unwrap();
        let usage = b.edges(names::CLIENT_TOKEN_USAGE.name).unwrap();
        assert!(usage.contains(&3000.0) && usage.contains(&400.0) && usage.contains(&1.0));
        b.add_edges(Metric::Ttft, &[0.35]).unwrap();
        b.set(Metric::Ttft, &[2.0, 1.0, 1.0]).unwrap();
        assert_eq!(
            b.edges(names::CLIENT_TIME_TO_FIRST_CHUNK.name).unwrap(),
            [0.35, 1.0, 2.0]
        );
    }

    #[test]
    fn invalid_edges_are_refused_with_a_fix_and_change_nothing() {
        let mut b = Buckets::new();
        let err = b.add_edges(Metric::Ttft, &[0.5, f64::NAN]).unwrap_err();
        assert!(err.to_string().contains("finite"), "{err}");
        assert!(b.add_edges(Metric::Ttft, &[-1.0]).is_err());
        assert!(b.add_edges(Metric::Ttft, &[f64::INFINITY]).is_err());
        assert_eq!(
            b.set(Metric::E2e, &[]).unwrap_err(),
            BucketError::EmptyBuckets {
                metric: Metric::E2e
            }
        );
        assert!(
            b.set(Metric::E2e, &[])
                .unwrap_err()
                .to_string()
                .contains("at least one edge")
        );
        assert_eq!(b.context_length(0), Err(BucketError::ZeroContextLength));
        assert_eq!(b, Buckets::new());
        assert_eq!(b.context_length_tokens(), DEFAULT_CONTEXT_LENGTH);
    }
}
