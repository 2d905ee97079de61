//! Export outcomes: a wrapper exporter that bounds each export, reports failures through
//! `tracing`, and counts them in [`ExportStats`].

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;

/// Counts of OTLP exports since the pipeline started.
///
/// # Examples
///
/// ```
/// use tokenmeter_otel::ExportStats;
///
/// let stats = ExportStats::default();
/// assert_eq!((stats.succeeded, stats.failed), (0, 0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportStats {
    /// Exports the receiver acknowledged.
    pub succeeded: u64,
    /// Exports that failed or timed out (each is logged through `tracing`).
    pub failed: u64,
    /// Failures since the last success.
    pub consecutive_failures: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    succeeded: AtomicU64,
    failed: AtomicU64,
    consecutive: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> ExportStats {
        ExportStats {
            succeeded: self.succeeded.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            consecutive_failures: self.consecutive.load(Ordering::Relaxed),
        }
    }

    fn success(&self) {
        let after = self.consecutive.swap(0, Ordering::Relaxed);
        self.succeeded.fetch_add(1, Ordering::Relaxed);
        if after > 0 {
            tracing::info!(
                target: "tokenmeter_otel",
                failed_exports = after,
                "OTLP export recovered; the receiver got the cumulative totals"
            );
        }
    }

    fn failure(&self, error: &OTelSdkError) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let consecutive = self.consecutive.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::warn!(
            target: "tokenmeter_otel",
            %error,
            consecutive_failures = consecutive,
            "OTLP metric export failed; metrics stay aggregated in memory and the next export \
             sends the cumulative totals (is the collector running at the configured endpoint?)"
        );
    }
}

/// Wraps the OTLP exporter: every export is cut off after `timeout`, and its outcome is
/// counted and logged. Runs on the pipeline's export thread, never on the caller's.
pub(crate) struct Reporting<E> {
    inner: E,
    timeout: Duration,
    counters: Arc<Counters>,
}

impl<E> Reporting<E> {
    pub(crate) fn new(inner: E, timeout: Duration, counters: Arc<Counters>) -> Self {
        Self {
            inner,
            timeout,
            counters,
        }
    }
}

impl<E> fmt::Debug for Reporting<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporting")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<E: PushMetricExporter> PushMetricExporter for Reporting<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = match tokio::time::timeout(self.timeout, self.inner.export(metrics)).await {
            Ok(result) => result,
            Err(_) => Err(OTelSdkError::Timeout(self.timeout)),
        };
        match &result {
            Ok(()) => self.counters.success(),
            Err(error) => self.counters.failure(error),
        }
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}
