//! ORCA load reports on the answers the layer meters ([`MeterLayer::orca`](crate::MeterLayer::orca)):
//! the `endpoint-load-metrics` header, from a [`LoadSource`] the server supplies.

use std::fmt;
use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokenmeter::orca::{FORMAT_HEADER, HEADER, LoadReport, OrcaFormat};

/// Where the layer reads the server's load when it writes a report: the engine's KV-cache
/// usage and its waiting and running requests. Any `Fn() -> LoadReport` is one.
///
/// Called once per answer that gets a report, when the answer's head passes the layer: keep
/// it cheap (read atomics or a snapshot; never block).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use tokenmeter::orca::LoadReport;
/// use tokenmeter_axum::LoadSource;
///
/// let waiting = Arc::new(AtomicU64::new(2));
/// let source = move || LoadReport::new(0.5, waiting.load(Ordering::Relaxed), 8);
/// assert_eq!(source.load().waiting, 2);
/// ```
pub trait LoadSource: Send + Sync + 'static {
    /// The load now.
    fn load(&self) -> LoadReport;
}

impl<F> LoadSource for F
where
    F: Fn() -> LoadReport + Send + Sync + 'static,
{
    fn load(&self) -> LoadReport {
        self()
    }
}

/// The layer's reports: the source, and the format of answers whose request names none.
#[derive(Clone)]
pub(crate) struct Orca {
    source: Arc<dyn LoadSource>,
    default: Option<OrcaFormat>,
}

impl Orca {
    pub(crate) fn new(source: impl LoadSource, default: Option<OrcaFormat>) -> Self {
        Self {
            source: Arc::new(source),
            default,
        }
    }

    /// The format of the answer to a request with `headers`: the one it names in
    /// `endpoint-load-metrics-format` (none for a value other than `TEXT` or `JSON`, as vLLM),
    /// else the default.
    pub(crate) fn format(&self, headers: &HeaderMap) -> Option<OrcaFormat> {
        let asked = headers.get(FORMAT_HEADER).map(HeaderValue::as_bytes);
        OrcaFormat::for_request(asked, self.default)
    }

    /// Adds the report, in `format`, to a successful answer's `headers`.
    pub(crate) fn add(&self, format: OrcaFormat, status: StatusCode, headers: &mut HeaderMap) {
        if !status.is_success() {
            return;
        }
        let report = self.source.load();
        if let Ok(value) = HeaderValue::from_str(&report.header_value(format)) {
            headers.insert(HeaderName::from_static(HEADER), value);
        }
    }
}

impl fmt::Debug for Orca {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Orca")
            .field("default", &self.default)
            .finish_non_exhaustive()
    }
}
