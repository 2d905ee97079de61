//! The scraping around a run: started before its first request, finished after its last, then
//! turned into the run's [`Slices`].

use std::time::Duration;

use crate::client::Client;
use crate::gaps::Gaps;
use crate::reqs::Reqs;
use crate::server_view::scraper::Scraper;
use crate::slo::Slo;
use crate::url::display_url;

use super::{SliceArgs, Slices};

/// A run's scraping, when `--server-metrics` is on.
#[derive(Debug)]
pub(crate) struct View {
    scraper: Option<(Scraper, String)>,
    interval: Duration,
    width: Option<Duration>,
}

impl View {
    /// Takes the first scrape (bounded by the scrape timeout) and starts the periodic ones,
    /// for a run against `base` (`embedded`: the simulator the bench started).
    pub(crate) async fn start(
        args: &SliceArgs,
        client: &Client,
        base: &reqwest::Url,
        embedded: bool,
    ) -> anyhow::Result<Self> {
        let interval = args.interval();
        let scraper = match args.metrics_url(base, embedded) {
            Some(url) => {
                let shown = display_url(&url);
                let tls = &client.target().tls;
                let clock = client.clock().clone();
                let scraper = Scraper::start(url, interval, args.scrape_timeout(), tls, clock);
                Some((scraper.await?, shown))
            }
            None => None,
        };
        Ok(Self {
            scraper,
            interval,
            width: args.slice,
        })
    }

    /// Takes the last scrape and cuts the run into slices.
    pub(crate) async fn finish<'r>(
        self,
        measured: impl Into<Reqs<'r>>,
        gaps: &Gaps,
        slo: &Slo,
    ) -> Slices {
        let measured: Reqs<'r> = measured.into();
        let scrapes = match self.scraper {
            Some((scraper, url)) => {
                let scrapes = scraper.finish().await;
                let report = scrapes.report(url, self.interval);
                Some((scrapes, report))
            }
            None => None,
        };
        Slices::of(
            measured,
            gaps,
            slo,
            self.width,
            scrapes.as_ref().map(|(s, r)| (s, r.clone())),
        )
    }
}

impl Slices {
    /// What went wrong with the scraping, one line each.
    pub(crate) fn warnings(&self) -> Vec<String> {
        let Some(r) = &self.server_metrics else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if r.failed > 0 {
            out.push(format!(
                "{} of {} scrapes of {} failed (the run went on); first: {}",
                r.failed,
                r.failed + r.scrapes,
                r.url,
                r.errors.first().map_or("", String::as_str)
            ));
        }
        if r.scrapes > 0 && r.names.is_empty() {
            out.push(format!(
                "{} has none of the metric names tokenmeter recognizes (vLLM's or tokenmeter's); no server view",
                r.url
            ));
        }
        out
    }
}
