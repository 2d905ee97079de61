//! SLOs and goodput for tokenmeter: are we meeting our objectives, how fast is the error budget
//! burning, what is our goodput, and what is about to break.
//!
//! # Getting started
//!
//! ```
//! use std::time::Duration;
//! use tokenmeter::{Clock, Labels, ManualClock, Meter};
//! use tokenmeter_slo::{SloMonitor, SloSpec};
//!
//! let spec = SloSpec::from_toml(r#"
//!     [[objective]]
//!     latency = "ttft"
//!     percentile = 95
//!     threshold = "1s"
//!
//!     [[objective]]
//!     success_rate = 0.995
//! "#).unwrap();
//!
//! let time = ManualClock::new();
//! let clock = Clock::manual(&time);
//! let monitor = SloMonitor::new(spec, clock.clone());
//! let meter = Meter::builder().clock(clock).sink(monitor.clone()).build();
//! let series = meter.series(&Labels::server("chat"));
//!
//! let mut request = series.start();
//! time.advance(Duration::from_millis(300));
//! request.record_tokens(1);
//! request.succeed();
//!
//! let status = monitor.status();
//! assert_eq!(status.classes[0].windows[0].good, 1);
//! println!("{status}");
//! ```
//!
//! # What it does
//!
//! - **Spec** ([`SloSpec`]): latency objectives on TTFT, TPOT, E2E and queue time (percentile +
//!   threshold, optionally growing with input tokens), success rate, fallback rate, error rate by
//!   class; the compliance period; classes per model or operation; saturation limits. TOML or a
//!   builder; errors name the field, the line and what is expected.
//! - **Classes from request headers** ([`SloSpec::place`]): requests carrying their own
//!   objectives (`x-slo-ttft-ms`, `x-slo-tpot-ms`, read into
//!   [`SloTargets`](tokenmeter::request::SloTargets)) are judged against them and counted under
//!   the first declared header class (`from_headers = true`) whose thresholds hold them; the
//!   rest under `reason` ([`spec::Unclassified`]), never a label per header value.
//! - **Verdict** ([`Verdict`]): a request is good iff it succeeded (not degraded) and met every
//!   latency objective (inclusive ≤). [`SloMonitor`] counts verdicts at request end and can
//!   publish them as counters ([`names`]) so fleet goodput is `sum(rate(...))` across replicas.
//! - **Windows**: 5m, 30m, 1h, 2h, 6h, 1d, 3d of counters and DDSketches (≤ 1% relative error):
//!   goodput, attainment, percentiles, budget remaining, burn rates and the multiwindow
//!   multi-burn-rate alert state ([`alert`]) with a low-traffic guard.
//! - **Early warning**: queue depth and KV-cache usage against limits and their trend, raised
//!   apart from the budget burn.
//! - **Diagnosis**: which phase dominated a TTFT breach (queue, prefill, the rest), decode for
//!   TPOT, in one sentence.
//! - **Rules** ([`rules`]): Prometheus recording and alerting rules, checked by `promtool`.
//! - **Bounded runs** ([`run`]): a benchmark's status over the span it observed
//!   ([`SloMonitor::run_status`]), with no window, budget or alert longer than the run.
//!
//! # Counting rules
//!
//! A latency objective counts a request only when its value was observed (no TPOT for a
//! one-token answer). Success and error-rate objectives skip cancelled requests; the fallback
//! objective counts answered requests (successes and degraded ones).
#![forbid(unsafe_code)]

pub mod alert;
pub mod batching;
mod common;
pub mod diagnosis;
mod monitor;
pub mod names;
pub mod rules;
pub mod run;
pub mod spec;
pub mod status;
mod verdict;
pub mod window;

pub use monitor::{SaturationLevel, SaturationSignal, SloMonitor};
pub use run::RunStatus;
pub use spec::{
    LatencyMetric, Objective, ObjectiveKind, Selector, SloClass, SloSpec, SpecError, Threshold,
};
pub use status::SloStatus;
pub use verdict::Verdict;

// The README's example runs with the doc tests, so the page crates.io shows stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
