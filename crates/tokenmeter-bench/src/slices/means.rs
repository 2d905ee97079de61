//! Client − server as a difference of exact means over one window between two scrapes.
//!
//! The server's mean is Δ`_sum` / Δ`_count` of its histogram between the scrapes bounding the
//! window; the client's is the exact mean of its own requests whose event (the first token for
//! TTFT, the end for E2E) fell between the same two scrapes, on the bench's clock: as far as
//! the client can tell, the requests the server counted. Both counts are reported: when they
//! differ, the window's edges cut a request that one side counted and the other not yet.

use std::time::Duration;

use serde::Serialize;

use crate::reqs::Reqs;
use crate::server_view::totals::Mean;

/// The client's and the server's exact means of one quantity over one window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct MeanGap {
    /// The client's requests' mean (seconds) and count.
    pub(crate) client: Mean,
    /// The server's mean from Δ`_sum` / Δ`_count` (seconds) and Δ`_count`.
    pub(crate) server: Mean,
}

impl MeanGap {
    /// Client − server, in seconds.
    pub(crate) fn difference(&self) -> f64 {
        self.client.mean_s - self.server.mean_s
    }
}

/// The instants (bench clock) and values (seconds) of one client quantity, by instant, with
/// prefix sums: the mean over any window in O(log n).
#[derive(Clone, Debug, Default)]
pub(crate) struct ClientSeries {
    at: Vec<Duration>,
    /// `sums[i]`: Σ of the first `i` values.
    sums: Vec<f64>,
}

impl ClientSeries {
    fn of(mut points: Vec<(Duration, f64)>) -> Self {
        points.sort_by_key(|p| p.0);
        let mut sums = Vec::with_capacity(points.len() + 1);
        sums.push(0.0);
        let mut total = 0.0;
        for (_, v) in &points {
            total += v;
            sums.push(total);
        }
        Self {
            at: points.into_iter().map(|p| p.0).collect(),
            sums,
        }
    }

    /// The mean of the values whose instant is in `(from, to]`.
    pub(crate) fn mean_in(&self, from: Duration, to: Duration) -> Option<Mean> {
        let first = self.at.partition_point(|&t| t <= from);
        let end = self.at.partition_point(|&t| t <= to).max(first);
        let count = end - first;
        (count > 0).then(|| Mean {
            mean_s: (self.sums[end] - self.sums[first]) / count as f64,
            count: count as f64,
        })
    }
}

/// The client's TTFT (by the instant of the first token) and E2E (by the end) of every
/// request with a record, whatever its outcome (the server's histograms count them all).
#[derive(Clone, Debug, Default)]
pub(crate) struct ClientTimes {
    /// TTFT by first-token instant.
    pub(crate) ttft: ClientSeries,
    /// E2E (to the end of the stream) by end instant.
    pub(crate) e2e: ClientSeries,
}

impl ClientTimes {
    /// From the run's requests.
    pub(crate) fn of<'r>(measured: impl Into<Reqs<'r>>) -> Self {
        let measured: Reqs<'r> = measured.into();
        let records = || measured.iter().filter_map(|m| m.owned_record());
        let ttft = records()
            .filter_map(|r| Some((r.arrival + r.ttft?, r.ttft?.as_secs_f64())))
            .collect();
        let e2e = records().map(|r| (r.end(), r.e2e.as_secs_f64())).collect();
        Self {
            ttft: ClientSeries::of(ttft),
            e2e: ClientSeries::of(e2e),
        }
    }
}

/// Both means of one quantity over `(from, to]`, when both sides observed it.
pub(crate) fn gap(
    client: &ClientSeries,
    server: Option<Mean>,
    from: Duration,
    to: Duration,
) -> Option<MeanGap> {
    Some(MeanGap {
        client: client.mean_in(from, to)?,
        server: server?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_means_are_exact() {
        let ms = Duration::from_millis;
        let series = ClientSeries::of(vec![(ms(30), 0.3), (ms(10), 0.1), (ms(20), 0.2)]);
        let all = series.mean_in(Duration::ZERO, ms(30)).unwrap();
        assert!((all.mean_s - 0.2).abs() < 1e-12 && all.count == 3.0);
        // (10, 20]: the instant at the window's start belongs to the window before.
        let one = series.mean_in(ms(10), ms(20)).unwrap();
        assert!((one.mean_s - 0.2).abs() < 1e-12 && one.count == 1.0);
        assert_eq!(series.mean_in(ms(30), ms(40)), None);
        assert_eq!(series.mean_in(ms(20), ms(10)), None, "an empty window");
    }
}
