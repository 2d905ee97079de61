//! `--slice`, `--server-metrics`, `--no-server-metrics`, `--scrape-interval`.

use std::time::Duration;

use tokenmeter_slo::spec::parse_duration;

/// The time slices and the server's view: part of [`BenchArgs`](crate::BenchArgs).
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_bench::{BenchArgs, parse::parse_target};
///
/// let mut args = BenchArgs::default();
/// args.slices.slice = Some(Duration::from_secs(10));
/// args.slices.server_metrics = Some(parse_target("http://127.0.0.1:8000/metrics").unwrap());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SliceArgs {
    /// The length of each time slice reported; `None` (default): automatic in `--json`/`--html`, none in the terminal.
    pub slice: Option<Duration>,
    /// The Prometheus endpoint scraped during the run; `None` (default): the embedded simulator's, nothing with a URL.
    pub server_metrics: Option<MetricsTarget>,
    /// Do not scrape the embedded simulator's `/metrics`; default false.
    pub no_server_metrics: bool,
    /// Time between scrapes; `None` (default): a quarter of `slice` from 50 ms to 1 s, 1 s without it.
    pub scrape_interval: Option<Duration>,
}

/// Where `--server-metrics` points.
///
/// ```
/// use tokenmeter_bench::{MetricsTarget, SliceArgs};
///
/// let mut slices = SliceArgs::default();
/// slices.server_metrics = Some(MetricsTarget::Auto);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetricsTarget {
    /// `/metrics` at the origin of `--url`.
    Auto,
    /// This URL.
    Url(Box<reqwest::Url>),
}

impl SliceArgs {
    /// The metrics URL to scrape, if any, for a run against `base` (`embedded`: the simulator
    /// the bench started).
    pub(crate) fn metrics_url(&self, base: &reqwest::Url, embedded: bool) -> Option<reqwest::Url> {
        let at_origin = || base.join("/metrics").ok();
        match &self.server_metrics {
            Some(MetricsTarget::Url(url)) => Some((**url).clone()),
            Some(MetricsTarget::Auto) => at_origin(),
            None if embedded && !self.no_server_metrics => at_origin(),
            None => None,
        }
    }

    /// The time between scrapes.
    pub(crate) fn interval(&self) -> Duration {
        self.scrape_interval.unwrap_or_else(|| match self.slice {
            Some(slice) => (slice / 4).clamp(Duration::from_millis(50), Duration::from_secs(1)),
            None => Duration::from_secs(1),
        })
    }

    /// How long one scrape may take.
    pub(crate) fn scrape_timeout(&self) -> Duration {
        self.interval()
            .clamp(Duration::from_millis(500), Duration::from_secs(2))
    }
}

/// A duration above 0 with a unit, e.g. `10s` (`--slice`, `--scrape-interval`).
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_bench::parse::positive_duration;
///
/// assert_eq!(positive_duration("10s"), Ok(Duration::from_secs(10)));
/// assert!(positive_duration("0s").is_err());
/// ```
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    match parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("must be above 0 (e.g. 10s)".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// `--server-metrics`: `auto` or an http(s) URL.
///
/// ```
/// use tokenmeter_bench::{MetricsTarget, parse::parse_target};
///
/// assert_eq!(parse_target("auto"), Ok(MetricsTarget::Auto));
/// assert!(matches!(parse_target("http://127.0.0.1:8000/metrics"), Ok(MetricsTarget::Url(_))));
/// assert!(parse_target("ftp://host/metrics").unwrap_err().contains("http or https"));
/// ```
pub fn parse_target(text: &str) -> Result<MetricsTarget, String> {
    if text == "auto" {
        return Ok(MetricsTarget::Auto);
    }
    let url = reqwest::Url::parse(text).map_err(|e| {
        format!("`{text}` is not a URL ({e}); e.g. http://127.0.0.1:8000/metrics or auto")
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("`{text}`: the metrics URL must be http or https"));
    }
    Ok(MetricsTarget::Url(Box::new(url)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).unwrap()
    }

    #[test]
    fn the_metrics_url_by_default_auto_and_given() {
        let base = url("http://127.0.0.1:8000/v1");
        let none = SliceArgs::default();
        assert_eq!(none.metrics_url(&base, false), None, "off with --url");
        assert_eq!(
            none.metrics_url(&base, true),
            Some(url("http://127.0.0.1:8000/metrics"))
        );
        let off = SliceArgs {
            no_server_metrics: true,
            ..SliceArgs::default()
        };
        assert_eq!(off.metrics_url(&base, true), None);
        let auto = SliceArgs {
            server_metrics: Some(parse_target("auto").unwrap()),
            ..SliceArgs::default()
        };
        assert_eq!(
            auto.metrics_url(&base, false),
            Some(url("http://127.0.0.1:8000/metrics"))
        );
        assert!(parse_target("ftp://x/metrics").is_err());
        assert!(parse_target("not a url").is_err());
    }

    #[test]
    fn the_interval_follows_the_slice() {
        let mut args = SliceArgs::default();
        assert_eq!(args.interval(), Duration::from_secs(1));
        args.slice = Some(Duration::from_millis(400));
        assert_eq!(args.interval(), Duration::from_millis(100));
        assert_eq!(args.scrape_timeout(), Duration::from_millis(500));
        args.slice = Some(Duration::from_secs(60));
        assert_eq!(args.interval(), Duration::from_secs(1));
        // However long the interval, a scrape gives up after 2 s (SECURITY.md).
        args.scrape_interval = Some(Duration::from_secs(30));
        assert_eq!(args.scrape_timeout(), Duration::from_secs(2));
    }
}
