//! Time slices (`--slice`): the run cut into equal intervals from its first send, each
//! summarised with the run's own formulas ([`summarize_over`]), so warm-up, steady state and
//! degradation show; beside each, the server's view from its `/metrics` ([`server`]).
//!
//! Which requests belong to a slice:
//! - every number but TTFT — requests, outcomes, throughput (requests/s, output tokens/s),
//!   goodput, attainment, E2E, TPOT, ITL — comes from the requests that **ended** in the
//!   slice (completed-in-slice, as throughput over time is usually drawn), rates divided by
//!   the slice's length (the last slice's runs to the run's last end);
//! - TTFT comes from the successful requests whose **first token** arrived in the slice: the
//!   instant the client saw it, which is when the server's TTFT histogram observed it too, so
//!   the client's and the server's TTFT of a slice describe the same requests.
//!
//! Beside each slice, the server's view ([`server`]): client − server TTFT and E2E as a
//! difference of exact means (the server's from its histograms' `_sum` and `_count`,
//! [`means`]), and the server's percentiles as the histogram bucket they fall in.
//!
//! A request without a record (its task lost, or cancelled by a second interrupt) is in no
//! slice. Slices start at the run's first send. Without `--slice` the width is automatic:
//! the run's length / 20, rounded up to 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min or a
//! whole number of hours; never more than [`MAX_SLICES`] slices.

pub(crate) mod args;
pub(crate) mod means;
pub(crate) mod server;
mod view;

use std::time::Duration;

use serde::Serialize;
use tokenmeter::report::Summary;

use crate::gaps::Gaps;
use crate::reqs::Reqs;
use crate::server_view::scraper::{ScrapeReport, Scrapes};
use crate::server_view::slo_counts::SloCounts;
use crate::slo::Slo;
use crate::summary::{BenchSummary, summarize_over};

pub(crate) use args::SliceArgs;
use server::ServerSlice;
pub(crate) use view::View;

/// The most slices a run is cut into; a narrower `--slice` is widened.
pub(crate) const MAX_SLICES: usize = 1000;

/// Slices an automatic width aims at.
const AUTO_SLICES: f64 = 20.0;

/// One interval of the run.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Slice {
    /// From 0.
    pub(crate) index: usize,
    /// Its start, in seconds after the run's first send.
    pub(crate) start_s: f64,
    /// Its end (the run's last end for the last slice).
    pub(crate) end_s: f64,
    /// The requests that ended in it; TTFT of the first tokens that arrived in it.
    pub(crate) summary: BenchSummary,
    /// What the server's `/metrics` showed in it.
    pub(crate) server: Option<ServerSlice>,
}

/// The slices of a run, and the scraping behind their server view.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Slices {
    /// Width of a slice in seconds.
    pub(crate) width_s: f64,
    /// The width was chosen automatically (no `--slice`).
    pub(crate) automatic: bool,
    /// Which requests belong to a slice, in words.
    pub(crate) membership: &'static str,
    /// The slices, in order.
    pub(crate) slices: Vec<Slice>,
    /// The scraping of `--server-metrics`, when it was on.
    pub(crate) server_metrics: Option<ScrapeReport>,
    /// The server's view over the whole run (first scrape to last).
    pub(crate) server_run: Option<ServerSlice>,
    /// The server's SLO verdict counters by class, increased from the first scrape to the
    /// last (the report puts them beside each `--slo-class`).
    #[serde(skip)]
    pub(crate) server_slo: Option<SloCounts>,
}

/// See the module's documentation.
pub(crate) const MEMBERSHIP: &str = "TTFT: successful requests whose first token arrived in the slice; every other number: requests that ended in the slice, rates over the slice's length";

/// A round width for a run of `span`.
pub(crate) fn automatic_width(span: Duration) -> Duration {
    const ROUND: [u64; 12] = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800];
    let aim = span.as_secs_f64() / AUTO_SLICES;
    let secs = ROUND
        .into_iter()
        .find(|&r| r as f64 >= aim)
        .unwrap_or_else(|| (aim / 3600.0).ceil() as u64 * 3600);
    Duration::from_secs(secs)
}

impl Slices {
    /// Cuts `measured` into slices of `width` (automatic when `None`), with the server's view
    /// from `scrapes` when there were any.
    pub(crate) fn of<'r>(
        measured: impl Into<Reqs<'r>>,
        gaps: &Gaps,
        slo: &Slo,
        width: Option<Duration>,
        scrapes: Option<(&Scrapes, ScrapeReport)>,
    ) -> Self {
        let measured: Reqs<'r> = measured.into();
        let records = || measured.iter().filter_map(|m| m.owned_record());
        let origin = records().map(|r| r.arrival).min().unwrap_or_default();
        let last = records().map(|r| r.end()).max().unwrap_or(origin);
        let span = last.saturating_sub(origin);
        let automatic = width.is_none();
        let mut width = width.unwrap_or_else(|| automatic_width(span));
        let count = |w: Duration| (span.as_secs_f64() / w.as_secs_f64()).ceil().max(1.0) as usize;
        if count(width) > MAX_SLICES {
            width = span.div_f64(MAX_SLICES as f64) + Duration::from_nanos(1);
        }
        let n = count(width);
        let index = |at: Duration| {
            let i = at.saturating_sub(origin).as_secs_f64() / width.as_secs_f64();
            (i as usize).min(n - 1)
        };
        // In seconds (8 bytes a request, where a `Duration` takes 16), as the summary reads them.
        let mut ttft: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut ended = measured.picking(|m, pick| {
            let Some(record) = m.record() else { return };
            pick(index(record.end()));
            if let (true, Some(first)) = (m.succeeded(), record.ttft) {
                ttft[index(record.arrival + first)].push(first.as_secs_f64());
            }
        });
        ended.resize_with(n, || measured.filter(|_| false));
        let span_s = span.as_secs_f64();
        let w = width.as_secs_f64();
        let mut slices: Vec<Slice> = ended
            .into_iter()
            .zip(ttft)
            .enumerate()
            .map(|(i, (ended, ttft))| {
                let start_s = i as f64 * w;
                let end_s = if i + 1 == n {
                    span_s.max(start_s)
                } else {
                    start_s + w
                };
                let mut summary = summarize_over(&ended, gaps, slo, end_s - start_s);
                summary.ttft = Summary::of(ttft);
                Slice {
                    index: i,
                    start_s,
                    end_s,
                    summary,
                    server: None,
                }
            })
            .collect();
        let (server_metrics, server_run, server_slo) = match scrapes {
            Some((scrapes, report)) => {
                let client = means::ClientTimes::of(measured);
                let run = server::fill(&mut slices, scrapes, origin, &client);
                let slo = match (scrapes.ok.first(), scrapes.ok.last()) {
                    (Some(first), Some(last)) => Some(last.snapshot.slo.since(&first.snapshot.slo)),
                    _ => None,
                };
                (Some(report), run, slo)
            }
            None => (None, None, None),
        };
        Self {
            width_s: w,
            automatic,
            membership: MEMBERSHIP,
            slices,
            server_metrics,
            server_run,
            server_slo,
        }
    }
}

#[cfg(test)]
mod tests;
