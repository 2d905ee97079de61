//! [`MeterLayer::slo_headers`](crate::MeterLayer::slo_headers): the request's own objectives
//! from its `x-slo-ttft-ms` and `x-slo-tpot-ms` headers, onto its measurement.

use http::request::Parts;
use tokenmeter::request::{SloTargets, TPOT_HEADER, TTFT_HEADER};

/// The objectives `parts` carry in the two allow-listed headers (no other header is read):
/// empty when neither was sent, [`SloTargets::malformed`] when one is malformed or repeated
/// (the layer meters and never refuses: an SLO monitor counts such a request apart, as
/// `reason="malformed"`; refuse it in the handler if you want a 400, with
/// [`SloTargets::from_header_values`]'s error).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_axum::slo_targets;
///
/// let (parts, ()) = http::Request::get("/").header("x-slo-ttft-ms", "250").body(()).unwrap().into_parts();
/// assert_eq!(slo_targets(&parts).ttft, Some(Duration::from_millis(250)));
///
/// let (parts, ()) = http::Request::get("/").header("x-slo-tpot-ms", "1e3").body(()).unwrap().into_parts();
/// assert!(slo_targets(&parts).malformed);
/// ```
pub fn slo_targets(parts: &Parts) -> SloTargets {
    let values = |name| parts.headers.get_all(name).iter().map(|v| v.as_bytes());
    SloTargets::from_header_values(values(TTFT_HEADER), values(TPOT_HEADER))
        .unwrap_or_else(|_| SloTargets::malformed())
}
