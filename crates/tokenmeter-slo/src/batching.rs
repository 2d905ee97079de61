//! The batch-size trade-off: from observed decode steps, TPOT, tokens per second per user and per
//! GPU at each batch size, and the largest batch that still meets a TPOT objective.
//!
//! A decode step reads all the weights once whether it serves 1 sequence or 64, so batching
//! multiplies an engine's throughput while each user's tokens get slower: every sequence in a
//! decode step gets one token, so the step time *is* each user's time per output token.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use tokenmeter::Labels;
use tokenmeter::report::percentile;
use tokenmeter::sink::{EngineSink, SeriesSink, Sink, Step, StepKind};

/// Step times kept per batch size for the percentiles: the most recent ones.
pub const RECENT_STEPS: usize = 4_096;

/// Collects decode steps by batch size. Add it to a meter as a sink, or call
/// [`BatchAnalysis::record`]. Clones share the same data.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::sink::{Step, StepKind};
/// use tokenmeter_slo::batching::BatchAnalysis;
///
/// let analysis = BatchAnalysis::new();
/// for (batch, ms) in [(1, 7), (8, 8), (32, 12), (64, 18)] {
///     analysis.record(&Step::new(StepKind::Decode, batch, batch, Duration::from_millis(ms)));
/// }
/// let table = analysis.table();
/// assert_eq!(table.recommend(Duration::from_millis(15)), Some(32));
/// println!("{table}");
/// ```
#[derive(Clone, Default)]
pub struct BatchAnalysis {
    by_batch: Arc<Mutex<BTreeMap<u32, Observed>>>,
}

struct Observed {
    steps: u64,
    seconds: f64,
    tokens: u64,
    /// The last [`RECENT_STEPS`] step times (s), as a ring.
    recent: Vec<f64>,
}

impl BatchAnalysis {
    /// No steps yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one step. Only decode steps inform the table: a prefill or mixed step's time
    /// includes prompt work that is not the batch's cost.
    pub fn record(&self, step: &Step) {
        if step.kind != StepKind::Decode || step.batch_size == 0 {
            return;
        }
        let mut by_batch = self.by_batch.lock().unwrap_or_else(PoisonError::into_inner);
        let observed = by_batch.entry(step.batch_size).or_insert_with(|| Observed {
            steps: 0,
            seconds: 0.0,
            tokens: 0,
            recent: Vec::new(),
        });
        let seconds = step.duration.as_secs_f64();
        let slot = (observed.steps % RECENT_STEPS as u64) as usize;
        if slot < observed.recent.len() {
            observed.recent[slot] = seconds;
        } else {
            observed.recent.push(seconds);
        }
        observed.steps += 1;
        observed.seconds += seconds;
        observed.tokens += u64::from(step.tokens);
    }

    /// The table as observed so far.
    pub fn table(&self) -> BatchTable {
        let by_batch = self.by_batch.lock().unwrap_or_else(PoisonError::into_inner);
        let rows = by_batch
            .iter()
            .map(|(&batch_size, o)| {
                let mut recent = o.recent.clone();
                recent.sort_by(f64::total_cmp);
                let q = |p| percentile(&recent, p).unwrap_or(0.0);
                let (p50, p95) = (q(50.0), q(95.0));
                let mean = o.seconds / o.steps as f64;
                BatchRow {
                    batch_size,
                    steps: o.steps,
                    tpot_p50: p50,
                    tpot_p95: p95,
                    tokens_per_second_per_user: if mean > 0.0 { 1.0 / mean } else { 0.0 },
                    tokens_per_second_per_gpu: if o.seconds > 0.0 {
                        o.tokens as f64 / o.seconds
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        BatchTable { rows }
    }
}

impl fmt::Debug for BatchAnalysis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchAnalysis").finish_non_exhaustive()
    }
}

struct Handle(BatchAnalysis);

impl EngineSink for Handle {
    fn step(&self, step: &Step) {
        self.0.record(step);
    }
}

struct NoSeries;
impl SeriesSink for NoSeries {}

impl Sink for BatchAnalysis {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(NoSeries)
    }

    fn engine(&self, _labels: &Labels<'_>) -> Option<Box<dyn EngineSink>> {
        Some(Box::new(Handle(self.clone())))
    }
}

/// One batch size's figures.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BatchRow {
    /// Sequences per decode step.
    pub batch_size: u32,
    /// Decode steps observed at this size.
    pub steps: u64,
    /// Median step time (s) over the recent steps: each user's TPOT at this batch size.
    pub tpot_p50: f64,
    /// 95th-percentile step time (s) over the recent steps.
    pub tpot_p95: f64,
    /// 1 / mean step time: the speed each user sees.
    pub tokens_per_second_per_user: f64,
    /// Tokens / step time: the engine's (one GPU's) throughput.
    pub tokens_per_second_per_gpu: f64,
}

/// Batch size → TPOT, tokens/s per user and per GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BatchTable {
    /// One row per observed batch size, ascending.
    pub rows: Vec<BatchRow>,
}

impl BatchTable {
    /// The largest observed batch size whose TPOT p95 meets `tpot_target` (inclusive).
    pub fn recommend(&self, tpot_target: Duration) -> Option<u32> {
        let target = tpot_target.as_secs_f64();
        self.rows
            .iter()
            .filter(|r| r.tpot_p95 <= target)
            .map(|r| r.batch_size)
            .max()
    }

    /// The row for `batch_size`, if observed.
    pub fn row(&self, batch_size: u32) -> Option<&BatchRow> {
        self.rows.iter().find(|r| r.batch_size == batch_size)
    }
}

impl fmt::Display for BatchTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>6} {:>8} {:>11} {:>11} {:>16} {:>15}",
            "batch", "steps", "TPOT p50", "TPOT p95", "tok/s per user", "tok/s per GPU"
        )?;
        for r in &self.rows {
            writeln!(
                f,
                "{:>6} {:>8} {:>9.2}ms {:>9.2}ms {:>16.0} {:>15.0}",
                r.batch_size,
                r.steps,
                r.tpot_p50 * 1e3,
                r.tpot_p95 * 1e3,
                r.tokens_per_second_per_user,
                r.tokens_per_second_per_gpu
            )?;
        }
        Ok(())
    }
}
