//! Latency by token-length class: "p95 = 6 s" means little without "at 3,000 input and 400
//! output tokens". TTFT grows with the prompt (prefill), E2E with the output (decode), so a
//! report breaks them down by the lengths they were measured at.
//!
//! [`LengthClasses`] cuts lengths at edges (given, or chosen from the run at its quantiles);
//! [`by_class`] and [`by_two_classes`] summarise any record quantity per class.

use std::fmt;
use std::time::Duration;

use crate::record::RequestRecord;
use crate::report::Summary;

/// Token-length classes cut at increasing edges: `[1, e0]`, `(e0, e1]`, …, `(e_last, ∞)`.
///
/// # Examples
///
/// ```
/// use tokenmeter::report::LengthClasses;
///
/// let classes = LengthClasses::new(vec![512, 2048]).unwrap();
/// assert_eq!(classes.len(), 3);
/// assert_eq!(classes.class_of(512), 0);
/// assert_eq!(classes.class_of(513), 1);
/// assert_eq!(classes.class_of(9000), 2);
/// assert_eq!(classes.label(1), "513–2048");
/// assert_eq!(classes.label(2), ">2048");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LengthClasses {
    edges: Vec<u64>,
}

/// Why class edges were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClassError {
    /// The edges do not increase strictly from at least 1.
    Edges(Vec<u64>),
}

impl fmt::Display for ClassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClassError::Edges(edges) => write!(
                f,
                "class edges must increase strictly from 1 or more (e.g. 512,2048); got {edges:?}"
            ),
        }
    }
}

impl std::error::Error for ClassError {}

impl LengthClasses {
    /// Classes cut at `edges` (strictly increasing, each at least 1; none: one class).
    pub fn new(edges: Vec<u64>) -> Result<Self, ClassError> {
        let increasing = edges.windows(2).all(|w| w[0] < w[1]);
        if !increasing || edges.first() == Some(&0) {
            return Err(ClassError::Edges(edges));
        }
        Ok(Self { edges })
    }

    /// At most `classes` classes cut at the quantiles of `lengths` (lengths of the run, not
    /// values between them), rounded to two significant digits (2,070 → 2,100); equal edges
    /// merge, so few distinct lengths give few classes.
    ///
    /// ```
    /// use tokenmeter::report::LengthClasses;
    ///
    /// let lengths = (100..=8000).step_by(10);
    /// let classes = LengthClasses::automatic(lengths, 4);
    /// assert_eq!(classes.edges(), [2100, 4100, 6000]);
    /// assert_eq!(LengthClasses::automatic([128; 50], 4).len(), 1);
    /// ```
    pub fn automatic(lengths: impl IntoIterator<Item = u64>, classes: usize) -> Self {
        let mut values: Vec<u64> = lengths.into_iter().collect();
        values.sort_unstable();
        let (Some(&lowest), Some(&highest)) = (values.first(), values.last()) else {
            return Self { edges: Vec::new() };
        };
        let last = values.len() - 1;
        let mut edges: Vec<u64> = (1..classes.max(1))
            .map(|i| values[last * i / classes])
            .map(|v| two_digits(v as f64))
            .filter(|&e| e >= lowest && e < highest)
            .collect();
        edges.dedup();
        Self { edges }
    }

    /// The edges.
    pub fn edges(&self) -> &[u64] {
        &self.edges
    }

    /// Number of classes.
    pub fn len(&self) -> usize {
        self.edges.len() + 1
    }

    /// Always false: there is at least one class.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The class of a length.
    pub fn class_of(&self, tokens: u64) -> usize {
        self.edges.partition_point(|&e| e < tokens)
    }

    /// The class's range, e.g. `513–2048`, `≤512`, `>2048` (`all` for a single class).
    pub fn label(&self, class: usize) -> String {
        match (class, self.edges.len()) {
            (_, 0) => "all".to_owned(),
            (0, _) => format!("≤{}", self.edges[0]),
            (c, n) if c >= n => format!(">{}", self.edges[n - 1]),
            (c, _) => format!("{}–{}", self.edges[c - 1] + 1, self.edges[c]),
        }
    }
}

impl fmt::Display for LengthClasses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let labels: Vec<String> = (0..self.len()).map(|c| self.label(c)).collect();
        write!(f, "{}", labels.join(", "))
    }
}

/// `x` rounded to two significant digits (at least 1).
fn two_digits(x: f64) -> u64 {
    if !(x.is_finite() && x >= 1.0) {
        return 1;
    }
    let scale = 10f64.powi(x.log10().floor() as i32 - 1).max(1.0);
    ((x / scale).round() * scale) as u64
}

/// One class's summary.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ClassSummary {
    /// The class's range, as [`LengthClasses::label`] writes it.
    pub label: String,
    /// The quantity's summary over the records of the class (seconds for latencies).
    pub summary: Summary,
}

/// `value` of the records whose `key` length falls in each class (records without a key or a
/// value are left out).
///
/// The items may be [`RequestRecord`]s or anything of your own that holds one (a request with
/// what only your application knows, or references to them): the keys read what they need, and
/// nothing is copied.
///
/// ```
/// use std::time::Duration;
/// use tokenmeter::report::{LengthClasses, by_class};
/// use tokenmeter::{Clock, Labels, ManualClock, Meter, sink::InMemorySink};
///
/// let time = ManualClock::new();
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().clock(Clock::manual(&time)).sink(memory.clone()).build();
/// let series = meter.series(&Labels::client("chat"));
/// for (input, ttft_ms) in [(100, 20), (200, 30), (4000, 400), (6000, 600)] {
///     let mut request = series.start();
///     request.set_input_tokens(input);
///     time.advance(Duration::from_millis(ttft_ms));
///     request.record_tokens(1);
///     request.succeed();
/// }
/// let records = memory.records();
/// let classes = LengthClasses::new(vec![1000]).unwrap();
/// let ttft = by_class(&records, &classes, |r| r.input_tokens, |r| r.ttft);
/// assert_eq!(ttft[0].label, "≤1000");
/// assert_eq!(ttft[0].summary.p50, 0.025);
/// assert_eq!(ttft[1].summary.p50, 0.5);
/// ```
pub fn by_class<T>(
    records: &[T],
    classes: &LengthClasses,
    key: impl Fn(&T) -> Option<u64>,
    value: impl Fn(&T) -> Option<Duration>,
) -> Vec<ClassSummary> {
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); classes.len()];
    for record in records {
        if let (Some(k), Some(v)) = (key(record), value(record)) {
            values[classes.class_of(k)].push(v.as_secs_f64());
        }
    }
    values
        .into_iter()
        .enumerate()
        .map(|(class, values)| ClassSummary {
            label: classes.label(class),
            summary: Summary::of(values),
        })
        .collect()
}

/// Which length of an item a class reads (e.g. `|r| r.input_tokens` of a [`RequestRecord`],
/// the default item).
pub type LengthKey<'a, T = RequestRecord> = &'a dyn Fn(&T) -> Option<u64>;

/// The same over two lengths: one summary per (row class, column class), rows first (e.g. E2E
/// by input × output class).
pub fn by_two_classes<T>(
    records: &[T],
    rows: (&LengthClasses, LengthKey<'_, T>),
    columns: (&LengthClasses, LengthKey<'_, T>),
    value: impl Fn(&T) -> Option<Duration>,
) -> Vec<Vec<ClassSummary>> {
    let (row_classes, row_key) = rows;
    let (column_classes, column_key) = columns;
    let mut values = vec![vec![Vec::new(); column_classes.len()]; row_classes.len()];
    for record in records {
        if let (Some(r), Some(c), Some(v)) = (row_key(record), column_key(record), value(record)) {
            values[row_classes.class_of(r)][column_classes.class_of(c)].push(v.as_secs_f64());
        }
    }
    values
        .into_iter()
        .enumerate()
        .map(|(row, cells)| {
            cells
                .into_iter()
                .enumerate()
                .map(|(column, values)| ClassSummary {
                    label: format!(
                        "{} × {}",
                        row_classes.label(row),
                        column_classes.label(column)
                    ),
                    summary: Summary::of(values),
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_must_increase() {
        assert!(LengthClasses::new(vec![]).is_ok());
        for bad in [vec![0, 5], vec![5, 5], vec![9, 3]] {
            let err = LengthClasses::new(bad).unwrap_err().to_string();
            assert!(err.contains("increase strictly"), "{err}");
        }
    }

    #[test]
    fn lengths_fall_in_their_class() {
        let classes = LengthClasses::new(vec![10, 100]).unwrap();
        let got: Vec<usize> = [1, 10, 11, 100, 101, u64::MAX]
            .iter()
            .map(|&n| classes.class_of(n))
            .collect();
        assert_eq!(got, [0, 0, 1, 1, 2, 2]);
        assert_eq!(classes.to_string(), "≤10, 11–100, >100");
        assert_eq!(LengthClasses::new(vec![]).unwrap().label(0), "all");
    }

    #[test]
    fn automatic_edges_are_round_and_inside_the_range() {
        assert_eq!(two_digits(2075.0), 2100);
        assert_eq!(two_digits(47.0), 47);
        assert_eq!(two_digits(3.0), 3);
        let none = LengthClasses::automatic(std::iter::empty(), 4);
        assert_eq!(none.len(), 1);
        let two = LengthClasses::automatic([10, 10, 10, 500, 500, 500], 4);
        assert_eq!(two.edges(), [10]);
    }
}
