//! The numeric `run` block of `--json`: when the run started, the version, the command line
//! without its secrets ([`redact_command_line`]), the load as numbers, the user's `--label`
//! and `--metadata K=V`, and what `--extra-body` replaced; with the run's description (URL,
//! model, load, workload, seed) it is the [`RunInfo`] printed above the table.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::request_shape::redact_command_line;
use crate::runner::Load;
use crate::sanitize::{Sanitizer, ServerText};

/// The label and metadata of the `run` block: part of [`BenchArgs`](crate::BenchArgs).
///
/// ```
/// use tokenmeter_bench::{BenchArgs, parse::parse_metadata};
///
/// let mut args = BenchArgs::default();
/// args.run.label = Some("nightly".to_owned());
/// args.run.metadata.push(parse_metadata("gpu=H100").unwrap());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RunArgs {
    /// A name for this run, kept in the `run` block of `--json`; `None` (default).
    pub label: Option<String>,
    /// `KEY=VALUE` pairs kept in the `run` block of `--json`; empty (default).
    pub metadata: Vec<(String, String)>,
}

/// `KEY=VALUE` (`--metadata`), both trimmed, the key not empty.
///
/// ```
/// use tokenmeter_bench::parse::parse_metadata;
///
/// assert_eq!(parse_metadata(" gpu = H100 "), Ok(("gpu".to_owned(), "H100".to_owned())));
/// assert!(parse_metadata("=H100").is_err());
/// ```
pub fn parse_metadata(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err("--metadata is KEY=VALUE, e.g. --metadata gpu=H100".to_owned()),
    }
}

/// The run's numbers (flattened into the `run` block).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RunNumbers {
    /// When the run started, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub(crate) started_at: String,
    /// The same instant in seconds since the Unix epoch.
    pub(crate) started_unix_s: f64,
    /// The version of tokenmeter.
    pub(crate) version: &'static str,
    /// The command line, `--header` values and `--extra-body` values replaced by
    /// `[redacted]`, every URL without user info or query.
    pub(crate) command: Vec<String>,
    /// Open-loop requests per second (`null` when not open-loop, the string `inf` for all at
    /// once).
    pub(crate) rate: serde_json::Value,
    /// Requests in flight (closed loop) or the cap on them (open loop), if any.
    pub(crate) concurrency: Option<usize>,
    /// Requests of the run (per rate when sweeping).
    pub(crate) n: usize,
    /// `--label`.
    pub(crate) label: Option<String>,
    /// `--metadata`.
    pub(crate) metadata: BTreeMap<String, String>,
    /// The keys of the bench's request that `--extra-body` replaces, with the values sent
    /// (`model`, `max_tokens`, `n`, ...; a prompt's text is not repeated); empty when none.
    pub(crate) extra_body_overrides: BTreeMap<String, serde_json::Value>,
}

impl RunNumbers {
    /// The numbers of a run starting now with `load` and `n` requests. The command line,
    /// label and metadata go through the run's sanitiser as well: a piece of the API key or
    /// of a header value typed into them is redacted.
    pub(crate) fn now(load: &Load, n: usize, args: &RunArgs, sanitizer: &Sanitizer) -> Self {
        let clean = |text: &str| sanitizer.clean(text).as_str().to_owned();
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let (rate, concurrency) = match *load {
            Load::Rate {
                rate,
                max_concurrency,
                ..
            } if rate.is_finite() => (rate.into(), max_concurrency),
            Load::Rate {
                max_concurrency, ..
            } => ("inf".into(), max_concurrency),
            Load::Concurrency(c) => (serde_json::Value::Null, Some(c)),
            Load::Replay { .. } => ("replay".into(), None),
        };
        Self {
            started_at: utc(since_epoch),
            started_unix_s: since_epoch.as_secs_f64(),
            version: env!("CARGO_PKG_VERSION"),
            command: redact_command_line(std::env::args())
                .iter()
                .map(|arg| clean(arg))
                .collect(),
            rate,
            concurrency,
            n,
            label: args.label.as_deref().map(clean),
            metadata: args
                .metadata
                .iter()
                .map(|(k, v)| (clean(k), clean(v)))
                .collect(),
            extra_body_overrides: BTreeMap::new(),
        }
    }
}

/// `since_epoch` as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian calendar, UTC).
pub(crate) fn utc(since_epoch: Duration) -> String {
    let secs = since_epoch.as_secs();
    let (days, day_secs) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        day_secs / 3600,
        day_secs % 3600 / 60,
        day_secs % 60
    )
}

/// The date `days` after 1970-01-01: years of 400 (146 097 days) starting on March 1st, so
/// that the leap day is the last day of a year.
fn civil_date(days: u64) -> (u64, u64, u64) {
    // Days since 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// What was run, printed above the numbers.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct RunInfo {
    /// The endpoint (no user info, no query).
    pub(crate) url: String,
    /// The model asked for (sanitised: it may come from the server's model list).
    pub(crate) model: ServerText,
    /// The load.
    pub(crate) load: String,
    /// Input and output length distributions, or the dataset.
    pub(crate) workload: String,
    /// The seed.
    pub(crate) seed: u64,
    /// Start time, version, command line, load numbers, label and metadata.
    #[serde(flatten)]
    pub(crate) numbers: RunNumbers,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_dates() {
        let at = |s: u64| utc(Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(at(4_102_444_800), "2100-01-01T00:00:00Z");
    }

    #[test]
    fn metadata_is_key_value() {
        assert_eq!(
            parse_metadata("gpu = H100"),
            Ok(("gpu".into(), "H100".into()))
        );
        assert_eq!(parse_metadata("k=a=b"), Ok(("k".into(), "a=b".into())));
        assert!(parse_metadata("=x").unwrap_err().contains("KEY=VALUE"));
        assert!(parse_metadata("nokey").is_err());
    }
}
