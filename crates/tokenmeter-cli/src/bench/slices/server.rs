//! The server's view of each slice, from the scrapes of `--server-metrics`:
//! - waiting and running requests and KV-cache usage: mean and maximum of the scrapes taken
//!   in the slice (the last slice keeps the scrape taken after the run);
//! - the server's TTFT and ITL percentiles: from the histogram's bucket deltas between the
//!   last scrape at or before the slice's start and the last at or before its end (for the
//!   last slice, the scrape after the run), interpolated as `histogram_quantile` does; their
//!   resolution is the server's bucket widths, and a scrape interval blurs the edges;
//! - client − server TTFT: the client's percentile minus the server's (p50 and p95), what the
//!   network, the server's frontend and the client add. A difference of percentiles of the
//!   same slice, not a per-request difference.

use std::time::Duration;

use serde::Serialize;
use tokenmeter::report::Summary;

use super::Slice;
use crate::bench::server_view::histogram::{Buckets, Quantiles};
use crate::bench::server_view::names::Snapshot;
use crate::bench::server_view::scraper::{Scrape, Scrapes};

/// Mean and maximum of a gauge over a slice's scrapes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Gauge {
    /// Mean.
    pub(crate) mean: f64,
    /// Maximum.
    pub(crate) max: f64,
}

/// Client − server TTFT (seconds).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct TtftGap {
    /// Client p50 − server p50.
    pub(crate) p50: f64,
    /// Client p95 − server p95.
    pub(crate) p95: f64,
}

/// The server's view of one slice (or of the whole run).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct ServerSlice {
    /// Successful scrapes taken in the slice.
    pub(crate) scrapes: usize,
    /// Requests waiting in the server's queue.
    pub(crate) waiting: Option<Gauge>,
    /// Requests running.
    pub(crate) running: Option<Gauge>,
    /// KV-cache usage, 0..1.
    pub(crate) kv_usage: Option<Gauge>,
    /// The server's TTFT percentiles (seconds) of the slice's observations.
    pub(crate) ttft: Option<Quantiles>,
    /// The server's inter-token latency percentiles (seconds).
    pub(crate) itl: Option<Quantiles>,
    /// Client − server TTFT.
    pub(crate) client_minus_server_ttft: Option<TtftGap>,
}

impl ServerSlice {
    /// The view from `in_slice` (gauges), with histograms from `earlier` to `later`.
    fn of(
        in_slice: &[&Scrape],
        earlier: Option<&Scrape>,
        later: Option<&Scrape>,
        client_ttft: &Summary,
    ) -> Self {
        let gauge = |read: fn(&Snapshot) -> Option<f64>| {
            let values: Vec<f64> = in_slice.iter().filter_map(|s| read(&s.snapshot)).collect();
            let max = values.iter().copied().reduce(f64::max)?;
            Some(Gauge {
                mean: values.iter().sum::<f64>() / values.len() as f64,
                max,
            })
        };
        let delta = |read: fn(&Snapshot) -> Option<&Buckets>| {
            let later = read(&later?.snapshot)?;
            let earlier = read(&earlier?.snapshot)?;
            later.since(earlier).quantiles()
        };
        let ttft = delta(|s| s.ttft.as_ref());
        let client_minus_server_ttft = ttft.filter(|_| client_ttft.count > 0).map(|s| TtftGap {
            p50: client_ttft.p50 - s.p50,
            p95: client_ttft.p95 - s.p95,
        });
        Self {
            scrapes: in_slice.len(),
            waiting: gauge(|s| s.waiting),
            running: gauge(|s| s.running),
            kv_usage: gauge(|s| s.kv_usage),
            ttft,
            itl: delta(|s| s.itl.as_ref()),
            client_minus_server_ttft,
        }
    }
}

/// The last scrape at or before `at`.
fn state(scrapes: &[Scrape], at: Duration) -> Option<&Scrape> {
    scrapes.iter().take_while(|s| s.at <= at).last()
}

/// Sets each slice's server view (slices start at `origin` on the bench clock); returns the
/// view of the whole run, from the first scrape to the last (`None` without one).
pub(crate) fn fill(
    slices: &mut [Slice],
    scrapes: &Scrapes,
    origin: Duration,
    run_ttft: &Summary,
) -> Option<ServerSlice> {
    let ok = &scrapes.ok;
    let n = slices.len();
    for slice in slices.iter_mut() {
        let start = origin + Duration::from_secs_f64(slice.start_s);
        let end = origin + Duration::from_secs_f64(slice.end_s);
        let last = slice.index + 1 == n;
        let in_slice: Vec<&Scrape> = ok
            .iter()
            .filter(|s| s.at >= start && (last || s.at < end))
            .collect();
        let later = if last { ok.last() } else { state(ok, end) };
        slice.server = Some(ServerSlice::of(
            &in_slice,
            state(ok, start),
            later,
            &slice.summary.ttft,
        ));
    }
    let all: Vec<&Scrape> = ok.iter().collect();
    (!ok.is_empty()).then(|| ServerSlice::of(&all, ok.first(), ok.last(), run_ttft))
}
