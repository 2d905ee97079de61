//! Scraping a server's `/metrics` while the run goes: one scrape before the first request,
//! one every interval, one after the last; each bounded in time and size, none able to stop
//! the run. Failures are counted and the first few kept, in words.
//!
//! No credential is ever sent to the metrics URL (not the API key, not `--header`): a metrics
//! endpoint is often on another port or host, and vLLM serves its `/metrics` without one.

use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::exposition::{self, ParseError};
use super::names::{self, Snapshot};
use crate::clock::BenchClock;
use crate::tls::Tls;

/// The largest `/metrics` body read; a longer one is a failed scrape.
pub(crate) const MAX_BODY: usize = 4 * 1024 * 1024;

/// Failure messages kept.
const KEPT_ERRORS: usize = 3;

/// Why one scrape gave nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScrapeError {
    /// No answer in time.
    #[error("no answer within {0:?} (the scrape timeout); is the metrics URL right?")]
    Timeout(Duration),
    /// Not 200.
    #[error("HTTP status {0}; the metrics URL should answer 200 with the Prometheus text format")]
    Status(u16),
    /// Too long.
    #[error("the body is longer than {MAX_BODY} bytes; is this a Prometheus /metrics endpoint?")]
    TooLarge,
    /// Not UTF-8.
    #[error("the body is not UTF-8 text")]
    NotText,
    /// Not the text format.
    #[error("not the Prometheus text format: {0}")]
    Parse(#[from] ParseError),
    /// Connection, TLS, protocol.
    #[error("request failed: {0}")]
    Http(String),
}

/// One successful scrape.
#[derive(Clone, Debug)]
pub(crate) struct Scrape {
    /// When the answer was read, on the bench clock.
    pub(crate) at: Duration,
    /// What it held.
    pub(crate) snapshot: Snapshot,
}

/// Every scrape of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scrapes {
    /// The successful ones, in order.
    pub(crate) ok: Vec<Scrape>,
    /// Scrapes that failed.
    pub(crate) failed: u64,
    /// The first few failures, in words.
    pub(crate) errors: Vec<String>,
}

/// What the report says about the scraping itself.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ScrapeReport {
    /// The metrics URL (no user info, no query).
    pub(crate) url: String,
    /// Time between scrapes, in seconds.
    pub(crate) interval_s: f64,
    /// Successful scrapes.
    pub(crate) scrapes: u64,
    /// Failed scrapes.
    pub(crate) failed: u64,
    /// The first failures, in words.
    pub(crate) errors: Vec<String>,
    /// The recognized metric names the server exposed.
    pub(crate) names: Vec<&'static str>,
}

impl Scrapes {
    /// The summary of the scraping for the reports.
    pub(crate) fn report(&self, url: String, interval: Duration) -> ScrapeReport {
        let mut names: Vec<&'static str> = Vec::new();
        for scrape in &self.ok {
            for name in &scrape.snapshot.names {
                if !names.contains(name) {
                    names.push(name);
                }
            }
        }
        ScrapeReport {
            url,
            interval_s: interval.as_secs_f64(),
            scrapes: self.ok.len() as u64,
            failed: self.failed,
            errors: self.errors.clone(),
            names,
        }
    }

    fn note(&mut self, at: Duration, result: Result<Snapshot, ScrapeError>) {
        match result {
            Ok(snapshot) => self.ok.push(Scrape { at, snapshot }),
            Err(error) => {
                self.failed += 1;
                if self.errors.len() < KEPT_ERRORS {
                    self.errors.push(error.to_string());
                }
            }
        }
    }
}

/// A scraping task; [`Scraper::finish`] stops it after one last scrape.
#[derive(Debug)]
pub(crate) struct Scraper {
    stop: watch::Sender<bool>,
    task: JoinHandle<Scrapes>,
}

impl Scraper {
    /// Scrapes `url` once (before the run's first request), then every `interval` until
    /// [`Scraper::finish`]; each scrape gives up after `timeout`.
    pub(crate) async fn start(
        url: reqwest::Url,
        interval: Duration,
        timeout: Duration,
        tls: &Tls,
        clock: BenchClock,
    ) -> anyhow::Result<Self> {
        let http = tls
            .client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let mut scrapes = Scrapes::default();
        let first = scrape(&http, &url, timeout).await;
        scrapes.note(clock.now(), first);
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let start = tokio::time::Instant::now() + interval;
            let mut ticks = tokio::time::interval_at(start, interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    biased;
                    _ = stopped.wait_for(|s| *s) => break,
                    _ = ticks.tick() => {}
                }
                let result = scrape(&http, &url, timeout).await;
                scrapes.note(clock.now(), result);
            }
            let result = scrape(&http, &url, timeout).await;
            scrapes.note(clock.now(), result);
            scrapes
        });
        Ok(Self { stop, task })
    }

    /// Takes the last scrape and returns them all.
    pub(crate) async fn finish(self) -> Scrapes {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

/// One scrape, bounded by `timeout` and [`MAX_BODY`].
pub(crate) async fn scrape(
    http: &reqwest::Client,
    url: &reqwest::Url,
    timeout: Duration,
) -> Result<Snapshot, ScrapeError> {
    let body = tokio::time::timeout(timeout, read(http, url))
        .await
        .map_err(|_| ScrapeError::Timeout(timeout))??;
    let text = std::str::from_utf8(&body).map_err(|_| ScrapeError::NotText)?;
    let samples = exposition::parse(text, names::wanted)?;
    Ok(Snapshot::of(&samples))
}

async fn read(http: &reqwest::Client, url: &reqwest::Url) -> Result<Vec<u8>, ScrapeError> {
    let http_error = |e: reqwest::Error| ScrapeError::Http(e.without_url().to_string());
    let mut response = http
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "text/plain;version=0.0.4")
        .send()
        .await
        .map_err(http_error)?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(ScrapeError::Status(response.status().as_u16()));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_BODY as u64)
    {
        return Err(ScrapeError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(http_error)? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(ScrapeError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
