//! Load from many machines: `--shard I/N` (or `--shards N` with the index from a Kubernetes
//! Indexed Job's `JOB_COMPLETION_INDEX`) and `--start-at`.
//!
//! Every shard draws the whole run from `--seed` — prompts, arrival times, injected
//! cancellations — and sends only the k-th request (or conversation, with all its turns) of
//! the run when `k % N == I`, at the time the whole run would have sent it (the others'
//! arrivals are still drawn, so the schedules agree). The union of the shards is the
//! single-process workload, request ids included; `tokenmeter bench merge` turns their traces
//! into the summary of the union. A closed loop (`--concurrency C`) keeps C in flight per
//! shard: give each shard C/N for a total of C.
//!
//! `--start-at` makes every shard wait for one wall-clock instant before its first request;
//! the trace records the wall-clock time of each run's origin (`run_start_unix_ns`) so merge
//! can put the shards on one time line (as exact as the hosts' clocks agree: use NTP).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};

/// The environment variable a Kubernetes Indexed Job sets to the pod's index.
pub(crate) const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// How far ahead `--start-at` may be.
const MAX_AHEAD: Duration = Duration::from_secs(3600);

/// How late `--start-at` may be (a shard started slowly still joins, at once).
const MAX_LATE: Duration = Duration::from_secs(5);

/// One run split over processes: part of [`BenchArgs`](crate::BenchArgs).
///
/// ```
/// use tokenmeter_bench::{BenchArgs, parse::parse_shard};
///
/// // The second of three processes sending one run.
/// let mut args = BenchArgs::default();
/// args.shard.shard = Some(parse_shard("1/3").unwrap());
/// assert_eq!(args.shard.start_at, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ShardArgs {
    /// Send only this shard's part of the run; `None` (default): the whole run (unless `shards`).
    pub shard: Option<Shard>,
    /// The number of shards (at least 1), this one's index read from `JOB_COMPLETION_INDEX`; `None` (default).
    pub shards: Option<u64>,
    /// The wall-clock instant of the first request, at most an hour ahead; `None` (default): at once.
    pub start_at: Option<StartAt>,
}

impl ShardArgs {
    /// The shard of this process, if any: `--shard`, or `--shards` with the index from
    /// `JOB_COMPLETION_INDEX`.
    pub(crate) fn shard(&self) -> anyhow::Result<Option<Shard>> {
        self.shard_from(std::env::var(INDEX_ENV).ok().as_deref())
    }

    fn shard_from(&self, index: Option<&str>) -> anyhow::Result<Option<Shard>> {
        if let Some(shard) = self.shard {
            return Ok(Some(shard));
        }
        let Some(count) = self.shards else {
            return Ok(None);
        };
        let Some(index) = index else {
            bail!(
                "--shards {count} reads this shard's index from {INDEX_ENV}, which is not set; \
                 set it (a Kubernetes Indexed Job does) or give --shard I/{count}"
            );
        };
        let shard = parse_shard(&format!("{}/{count}", index.trim()))
            .map_err(|e| anyhow::anyhow!("{INDEX_ENV}={index:?} with --shards {count}: {e}"))?;
        Ok(Some(shard))
    }
}

/// This process's part of the run: request ids `i` with `i % count == index` (read by
/// [`parse_shard`]).
///
/// ```
/// use tokenmeter_bench::parse::parse_shard;
///
/// assert_eq!(parse_shard("0/3").unwrap().to_string(), "0/3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub(crate) index: u64,
    /// The number of shards, at least 1.
    pub(crate) count: u64,
}

impl Shard {
    /// True when the k-th request (or conversation) of the run is this shard's to send.
    pub(crate) fn owns(self, k: u64) -> bool {
        k % self.count == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `--shard I/N` with 0 ≤ I < N.
///
/// ```
/// use tokenmeter_bench::parse::parse_shard;
///
/// assert!(parse_shard("2/3").is_ok());
/// assert!(parse_shard("3/3").unwrap_err().contains("0 ≤ I < N"));
/// ```
pub fn parse_shard(text: &str) -> Result<Shard, String> {
    let usage = "a shard is I/N with 0 ≤ I < N, e.g. --shard 0/3 for the first of three";
    let (index, count) = text.split_once('/').ok_or_else(|| usage.to_owned())?;
    let number = |s: &str| s.trim().parse::<u64>().map_err(|_| usage.to_owned());
    let (index, count) = (number(index)?, number(count)?);
    if count == 0 || index >= count {
        return Err(format!("{text}: {usage}"));
    }
    Ok(Shard { index, count })
}

/// A wall-clock instant to start at, since the Unix epoch (read by [`parse_start_at`]).
///
/// ```
/// use tokenmeter_bench::{ShardArgs, parse::parse_start_at};
///
/// let mut shard = ShardArgs::default();
/// shard.start_at = Some(parse_start_at("2026-01-01T00:00:00Z").unwrap());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StartAt(pub(crate) Duration);

impl StartAt {
    /// How long to wait from `now` (both since the Unix epoch); an error when the instant is
    /// more than [`MAX_LATE`] past or more than [`MAX_AHEAD`] ahead.
    pub(crate) fn wait_from(self, now: Duration) -> anyhow::Result<Duration> {
        let fix = "give a time a few seconds ahead on every shard, e.g. \
                   --start-at $(( $(date +%s) + 30 )), and check that the hosts' clocks agree (NTP)";
        if self.0 + MAX_LATE < now {
            bail!(
                "--start-at {} is {:.1} s in the past; {fix}",
                self.0.as_secs_f64(),
                (now - self.0).as_secs_f64()
            );
        }
        if self.0 > now + MAX_AHEAD {
            bail!(
                "--start-at {} is {:.0} s ahead, more than the hour allowed; {fix}",
                self.0.as_secs_f64(),
                (self.0 - now).as_secs_f64()
            );
        }
        Ok(self.0.saturating_sub(now))
    }

    /// Checks the instant against the clock now (before the test request and warm-up).
    pub(crate) fn check(self) -> anyhow::Result<()> {
        self.wait_from(unix_now()).map(drop)
    }

    /// Sleeps until the instant (returns at once when it has passed).
    pub(crate) async fn wait(self) -> anyhow::Result<()> {
        let wait = self.wait_from(unix_now())?;
        if !wait.is_zero() {
            crate::console::err(&format!(
                "waiting {:.1} s for --start-at {}\n",
                wait.as_secs_f64(),
                self.0.as_secs_f64()
            ));
        }
        tokio::time::sleep(wait).await;
        Ok(())
    }
}

/// The wall clock, since the Unix epoch.
pub(crate) fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// `--start-at`: seconds since the Unix epoch (fractions allowed) or UTC
/// `YYYY-MM-DDTHH:MM:SS[.fff]Z`.
///
/// ```
/// use tokenmeter_bench::parse::parse_start_at;
///
/// assert_eq!(parse_start_at("1767225600"), parse_start_at("2026-01-01T00:00:00Z"));
/// assert!(parse_start_at("tomorrow").is_err());
/// ```
pub fn parse_start_at(text: &str) -> Result<StartAt, String> {
    let usage = "--start-at is seconds since the Unix epoch (e.g. 1767225600) or UTC \
                 YYYY-MM-DDTHH:MM:SSZ (e.g. 2026-01-01T00:00:00Z)";
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(secs)
            .map(StartAt)
            .map_err(|_| usage.to_owned());
    }
    rfc3339_utc(text)
        .map(StartAt)
        .ok_or_else(|| format!("{text}: {usage}"))
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or `+00:00`) since the epoch.
fn rfc3339_utc(text: &str) -> Option<Duration> {
    let text = text
        .strip_suffix('Z')
        .or_else(|| text.strip_suffix("+00:00"))?;
    let (date, time) = text.split_once(['T', ' '])?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<u64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(|p| p.parse::<u64>().ok());
    let (h, min, s) = (t.next()??, t.next()??, t.next()??);
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    if h > 23 || min > 59 || s > 60 || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac: f64 = format!("0.{frac}0").parse().ok()?;
    let secs = days_from_civil(y, m, day) * 86_400 + h * 3600 + min * 60 + s;
    Some(Duration::from_secs(secs) + Duration::from_secs_f64(frac))
}

/// Days from 1970-01-01 to the date (proleptic Gregorian).
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A sweep is not split: its rates follow one another from the results of each.
pub(crate) fn refuse_with_sweep(shard: Option<Shard>, sweep: bool) -> anyhow::Result<()> {
    if shard.is_some() && sweep {
        bail!(
            "--shard and --shards split one run and cannot be used with --sweep; run the \
             sweep from one process"
        );
    }
    Ok(())
}

/// The shard of this process for `args`, with the context of the flag.
pub(crate) fn resolve(args: &ShardArgs, sweep: bool) -> anyhow::Result<Option<Shard>> {
    let shard = args.shard().context("--shards")?;
    refuse_with_sweep(shard, sweep)?;
    if let Some(at) = args.start_at {
        at.check()?;
    }
    Ok(shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_ids_by_remainder() {
        let shards: Vec<Shard> = (0..3)
            .map(|i| parse_shard(&format!("{i}/3")).unwrap())
            .collect();
        for id in 0..30 {
            let owners = shards.iter().filter(|s| s.owns(id)).count();
            assert_eq!(owners, 1, "request {id} belongs to exactly one shard");
        }
        assert!(parse_shard("3/3").unwrap_err().contains("0 ≤ I < N"));
        assert!(parse_shard("0/0").is_err());
        assert!(parse_shard("1").is_err());
        assert_eq!(parse_shard("2/5").unwrap().to_string(), "2/5");
    }

    #[test]
    fn the_index_comes_from_the_indexed_job() {
        let args = ShardArgs {
            shards: Some(4),
            ..ShardArgs::default()
        };
        assert_eq!(
            args.shard_from(Some("2")).unwrap(),
            Some(Shard { index: 2, count: 4 })
        );
        let missing = args.shard_from(None).unwrap_err().to_string();
        assert!(missing.contains(INDEX_ENV), "{missing}");
        let out_of_range = args.shard_from(Some("4")).unwrap_err().to_string();
        assert!(
            out_of_range.contains("JOB_COMPLETION_INDEX=\"4\""),
            "{out_of_range}"
        );
        assert_eq!(ShardArgs::default().shard_from(Some("1")).unwrap(), None);
    }

    #[test]
    fn start_times_parse_and_are_bounded() {
        let at = parse_start_at("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(at, StartAt(Duration::from_secs(1_767_225_600)));
        assert_eq!(parse_start_at("1767225600").unwrap(), at);
        assert_eq!(
            parse_start_at("2024-02-29T23:59:59.5Z").unwrap(),
            StartAt(Duration::from_millis(1_709_251_199_500))
        );
        assert!(
            parse_start_at("tomorrow")
                .unwrap_err()
                .contains("Unix epoch")
        );
        assert!(parse_start_at("2026-13-01T00:00:00Z").is_err());
        let now = Duration::from_secs(1_767_225_600);
        let wait = |secs: i64| StartAt(now.saturating_add_signed_secs(secs)).wait_from(now);
        assert_eq!(wait(10).unwrap(), Duration::from_secs(10));
        assert_eq!(wait(-2).unwrap(), Duration::ZERO, "a little late: at once");
        assert!(wait(-60).unwrap_err().to_string().contains("in the past"));
        assert!(wait(7200).unwrap_err().to_string().contains("hour"));
    }

    trait AddSigned {
        fn saturating_add_signed_secs(self, secs: i64) -> Duration;
    }

    impl AddSigned for Duration {
        fn saturating_add_signed_secs(self, secs: i64) -> Duration {
            if secs >= 0 {
                self + Duration::from_secs(secs.unsigned_abs())
            } else {
                self - Duration::from_secs(secs.unsigned_abs())
            }
        }
    }
}
