//! The server's view of each slice, from the scrapes of `--server-metrics`:
//! - waiting and running requests and KV-cache usage: mean and maximum of the scrapes taken
//!   in the slice (the last slice keeps the scrape taken after the run);
//! - the window of the slice: from the last scrape at or before the slice's start to the last
//!   at or before its end (for the last slice, the scrape after the run); a scrape interval
//!   blurs its edges;
//! - exact means over the window ([`means`](super::means)): the server's TTFT, E2E, ITL and
//!   queue time from Δ`_sum` / Δ`_count`, the client's TTFT and E2E of its requests in the same
//!   window, and client − server TTFT and E2E as a **difference of means** (exact from
//!   `_sum`/`_count`): what the network, the server's frontend and the client add;
//! - the server's TTFT and ITL percentiles from the histogram's bucket deltas over the window:
//!   each only known to lie in a bucket, so each is reported as that bucket with
//!   `histogram_quantile`'s estimate inside it, and never subtracted from the client's exact
//!   percentile (vLLM's TTFT buckets are up to 0.25 s wide).

use std::time::Duration;

use serde::Serialize;

use super::Slice;
use super::means::{ClientSeries, ClientTimes, MeanGap, gap};
use crate::server_view::histogram::{Buckets, Percentiles};
use crate::server_view::names::Snapshot;
use crate::server_view::scraper::{Scrape, Scrapes};
use crate::server_view::totals::{Mean, Sums, Totals};

/// Mean and maximum of a gauge over a slice's scrapes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Gauge {
    /// Mean.
    pub(crate) mean: f64,
    /// Maximum.
    pub(crate) max: f64,
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
    /// The scrapes the histograms are read between, in seconds after the run's first send
    /// (the first may be before it).
    pub(crate) window_s: Option<(f64, f64)>,
    /// Client − server TTFT (seconds), a difference of means (exact from `_sum`/`_count`).
    pub(crate) client_minus_server_ttft_mean: Option<f64>,
    /// Client − server E2E (seconds), a difference of means (exact from `_sum`/`_count`).
    pub(crate) client_minus_server_e2e_mean: Option<f64>,
    /// The client's and the server's exact mean TTFT over the window.
    pub(crate) ttft_mean: Option<MeanGap>,
    /// The client's and the server's exact mean E2E over the window.
    pub(crate) e2e_mean: Option<MeanGap>,
    /// The server's exact mean inter-token latency over the window.
    pub(crate) itl_server_mean: Option<Mean>,
    /// The server's exact mean queue time over the window (when it exposes it).
    pub(crate) queue_server_mean: Option<Mean>,
    /// The server's TTFT percentiles (seconds) from its histogram buckets: bucket and estimate.
    pub(crate) ttft: Option<Percentiles>,
    /// The server's inter-token latency percentiles (seconds), as `ttft`.
    pub(crate) itl: Option<Percentiles>,
}

/// The scrapes bounding one window, and where the run starts.
struct Window<'a> {
    earlier: Option<&'a Scrape>,
    later: Option<&'a Scrape>,
    origin: Duration,
}

impl ServerSlice {
    /// The view from `in_slice` (gauges), with histograms over `window`.
    fn of(in_slice: &[&Scrape], window: &Window<'_>, client: &ClientTimes) -> Self {
        let gauge = |read: fn(&Snapshot) -> Option<f64>| {
            let values: Vec<f64> = in_slice.iter().filter_map(|s| read(&s.snapshot)).collect();
            let max = values.iter().copied().reduce(f64::max)?;
            Some(Gauge {
                mean: values.iter().sum::<f64>() / values.len() as f64,
                max,
            })
        };
        let (earlier, later) = (window.earlier, window.later);
        let delta = |read: fn(&Snapshot) -> Option<&Buckets>| {
            let later = read(&later?.snapshot)?;
            let earlier = read(&earlier?.snapshot)?;
            later.since(earlier).percentiles()
        };
        let mean = |read: fn(&Sums) -> Option<Totals>| {
            let later = read(&later?.snapshot.sums)?;
            let earlier = read(&earlier?.snapshot.sums)?;
            later.since(&earlier).mean()
        };
        let bounds = earlier.zip(later).map(|(e, l)| (e.at, l.at));
        let exact = |series: &ClientSeries, server: Option<Mean>| {
            bounds.and_then(|(from, to)| gap(series, server, from, to))
        };
        let ttft_mean = exact(&client.ttft, mean(|s| s.ttft));
        let e2e_mean = exact(&client.e2e, mean(|s| s.e2e));
        let since_origin = |at: Duration| at.as_secs_f64() - window.origin.as_secs_f64();
        Self {
            scrapes: in_slice.len(),
            waiting: gauge(|s| s.waiting),
            running: gauge(|s| s.running),
            kv_usage: gauge(|s| s.kv_usage),
            window_s: bounds.map(|(from, to)| (since_origin(from), since_origin(to))),
            client_minus_server_ttft_mean: ttft_mean.map(|g| g.difference()),
            client_minus_server_e2e_mean: e2e_mean.map(|g| g.difference()),
            ttft_mean,
            e2e_mean,
            itl_server_mean: mean(|s| s.itl),
            queue_server_mean: mean(|s| s.queue),
            ttft: delta(|s| s.ttft.as_ref()),
            itl: delta(|s| s.itl.as_ref()),
        }
    }
}

/// The last scrape at or before `at`.
fn state(scrapes: &[Scrape], at: Duration) -> Option<&Scrape> {
    scrapes.iter().take_while(|s| s.at <= at).last()
}

/// Sets each slice's server view (slices start at `origin` on the bench clock), with the
/// client's times of `client`; returns the view of the whole run, from the first scrape to
/// the last (`None` without one).
pub(crate) fn fill(
    slices: &mut [Slice],
    scrapes: &Scrapes,
    origin: Duration,
    client: &ClientTimes,
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
        let window = Window {
            earlier: state(ok, start),
            later: if last { ok.last() } else { state(ok, end) },
            origin,
        };
        slice.server = Some(ServerSlice::of(&in_slice, &window, client));
    }
    let all: Vec<&Scrape> = ok.iter().collect();
    let window = Window {
        earlier: ok.first(),
        later: ok.last(),
        origin,
    };
    (!ok.is_empty()).then(|| ServerSlice::of(&all, &window, client))
}
