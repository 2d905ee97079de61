//! In-process windows: rings of sub-window counters and of mergeable sketches.
//!
//! Counters are kept for each of [`WINDOWS`] and for the compliance period, in
//! [`COUNTER_SLOTS`] sub-windows each; percentiles come from DDSketches (relative error
//! [`SKETCH_ALPHA`]) in [`SKETCH_SLOTS`] sub-windows per window, merged on query. A window's
//! figures cover its last full sub-windows plus the current one.

mod ring;

use std::time::Duration;

use sketches_ddsketch::{Config, DDSketch};

use crate::spec::LatencyMetric;
use ring::Ring;

/// The windows burn rates and percentiles are kept for: 5m, 30m, 1h, 2h, 6h, 1d, 3d.
pub const WINDOWS: [Duration; 7] = [
    Duration::from_secs(300),
    Duration::from_secs(1_800),
    Duration::from_secs(3_600),
    Duration::from_secs(7_200),
    Duration::from_secs(21_600),
    Duration::from_secs(86_400),
    Duration::from_secs(259_200),
];

/// Sub-windows per counter ring.
pub const COUNTER_SLOTS: usize = 30;
/// Sub-windows per sketch ring.
pub const SKETCH_SLOTS: usize = 10;
/// Relative accuracy of windowed percentiles (0.5%, within the 1% promised).
pub const SKETCH_ALPHA: f64 = 0.005;

/// Sums of the TTFT phases of a set of requests, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseSums {
    /// Requests summed.
    pub n: u64,
    /// Σ queue time.
    pub queue: f64,
    /// Σ prefill time.
    pub prefill: f64,
    /// Σ (TTFT − queue − prefill): time outside the engine's phases.
    pub other: f64,
}

impl PhaseSums {
    fn add(&mut self, other: &PhaseSums) {
        self.n += other.n;
        self.queue += other.queue;
        self.prefill += other.prefill;
        self.other += other.other;
    }
}

/// Event counts over a window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// Requests evaluated.
    pub requests: u64,
    /// Requests that met every objective of the goodput predicate.
    pub good: u64,
    /// Output tokens of every request.
    pub output_tokens: u64,
    /// Output tokens of good requests.
    pub good_tokens: u64,
    /// Per objective: (good, valid) events.
    pub objectives: Vec<(u64, u64)>,
    /// TTFT phases of requests that broke the TTFT objective.
    pub ttft_bad: PhaseSums,
    /// TTFT phases of requests that met it.
    pub ttft_ok: PhaseSums,
}

impl Counts {
    fn reset(&mut self, objectives: usize) {
        *self = Counts {
            objectives: vec![(0, 0); objectives],
            ..Counts::default()
        };
    }

    fn add(&mut self, other: &Counts) {
        self.requests += other.requests;
        self.good += other.good;
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.good_tokens = self.good_tokens.saturating_add(other.good_tokens);
        if self.objectives.len() < other.objectives.len() {
            self.objectives.resize(other.objectives.len(), (0, 0));
        }
        for (mine, theirs) in self.objectives.iter_mut().zip(&other.objectives) {
            mine.0 += theirs.0;
            mine.1 += theirs.1;
        }
        self.ttft_bad.add(&other.ttft_bad);
        self.ttft_ok.add(&other.ttft_ok);
    }
}

/// What one request contributes.
#[derive(Debug)]
pub(crate) struct Contribution<'a> {
    pub(crate) good: bool,
    pub(crate) output_tokens: u64,
    pub(crate) objectives: &'a [Option<bool>],
    pub(crate) ttft_phases: Option<(bool, PhaseSums)>,
    pub(crate) latencies: [Option<Duration>; 4],
}

fn sketch() -> DDSketch {
    DDSketch::new(Config::new(SKETCH_ALPHA, 4_096, 1e-9))
}

/// The rings of one class.
pub(crate) struct Windows {
    objectives: usize,
    counts: Vec<Ring<Counts>>,
    sketches: Vec<Ring<[DDSketch; 4]>>,
}

impl std::fmt::Debug for Windows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Windows")
            .field("objectives", &self.objectives)
            .finish_non_exhaustive()
    }
}

impl Windows {
    pub(crate) fn new(objectives: usize, period: Duration) -> Self {
        let counts = WINDOWS
            .iter()
            .chain(std::iter::once(&period))
            .map(|w| Ring::new(*w, COUNTER_SLOTS, Counts::default))
            .collect();
        let sketches = WINDOWS
            .iter()
            .map(|w| {
                Ring::new(*w, SKETCH_SLOTS, || {
                    [sketch(), sketch(), sketch(), sketch()]
                })
            })
            .collect();
        Self {
            objectives,
            counts,
            sketches,
        }
    }

    pub(crate) fn record(&mut self, at: Duration, c: &Contribution<'_>) {
        let objectives = self.objectives;
        for ring in &mut self.counts {
            let slot = ring.at(at, |s| s.reset(objectives));
            slot.requests += 1;
            slot.output_tokens = slot.output_tokens.saturating_add(c.output_tokens);
            if c.good {
                slot.good += 1;
                slot.good_tokens = slot.good_tokens.saturating_add(c.output_tokens);
            }
            for (counter, verdict) in slot.objectives.iter_mut().zip(c.objectives) {
                if let Some(good) = verdict {
                    counter.1 += 1;
                    counter.0 += u64::from(*good);
                }
            }
            if let Some((ok, phases)) = &c.ttft_phases {
                if *ok {
                    &mut slot.ttft_ok
                } else {
                    &mut slot.ttft_bad
                }
                .add(phases);
            }
        }
        for ring in &mut self.sketches {
            let slot = ring.at(at, |s| *s = [sketch(), sketch(), sketch(), sketch()]);
            for (sketch, value) in slot.iter_mut().zip(c.latencies) {
                if let Some(v) = value {
                    sketch.add(v.as_secs_f64());
                }
            }
        }
    }

    /// Counts over window `w` (an index into [`WINDOWS`], or `WINDOWS.len()` for the period).
    pub(crate) fn counts(&self, w: usize, now: Duration) -> Counts {
        let mut total = Counts {
            objectives: vec![(0, 0); self.objectives],
            ..Counts::default()
        };
        for slot in self.counts[w].live(now) {
            total.add(slot);
        }
        total
    }

    /// The `q` quantile (0–1) of `metric` over window `w`, in seconds.
    pub(crate) fn quantile(
        &self,
        w: usize,
        now: Duration,
        metric: LatencyMetric,
        q: f64,
    ) -> Option<f64> {
        let index = LatencyMetric::ALL.iter().position(|m| *m == metric)?;
        let mut merged = sketch();
        for slot in self.sketches.get(w)?.live(now) {
            merged.merge(&slot[index]).ok()?;
        }
        merged.quantile(q).ok().flatten()
    }
}
