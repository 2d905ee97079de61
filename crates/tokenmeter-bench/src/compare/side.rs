//! [`Side`]: one side of a comparison — each run's per-request figures, computed as the
//! run's summary computes them, and the shape of the runs (model, lengths, load).
//!
//! ```
//! use tokenmeter_bench::compare::side::{RequestFigures, RunRequests, Side};
//!
//! let mut request = RequestFigures::default();
//! (request.ok, request.ttft) = (true, Some(0.2));
//! let mut run = RunRequests::default();
//! (run.requests, run.duration_s) = (vec![request], 1.0);
//! let mut side = Side::default();
//! side.runs.push(run);
//! assert_eq!(side.runs[0].requests.len(), 1);
//! ```

/// One request's figures, in seconds, as the run's summary computes them: `None` where the
/// request has none (an error has no TTFT; a one-token answer no TPOT).
///
/// ```
/// use tokenmeter_bench::compare::RequestFigures;
/// let mut r = RequestFigures::default();
/// (r.ok, r.ttft, r.itl) = (true, Some(0.2), vec![0.01, 0.012]);
/// assert_eq!(r.tpot, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RequestFigures {
    /// It succeeded.
    pub ok: bool,
    /// It succeeded and met every objective of the run.
    pub good: bool,
    /// Time to first token, from the send.
    pub ttft: Option<f64>,
    /// Time per output token.
    pub tpot: Option<f64>,
    /// End to end, from the send to the last token.
    pub e2e: Option<f64>,
    /// Output tokens.
    pub output_tokens: u64,
    /// The inter-token gaps (one per token-bearing chunk after the first); empty when the
    /// source does not hold them (see [`Side::itl_known`]).
    pub itl: Vec<f64>,
}

/// One run's requests (every request sent, in any order) and its duration.
///
/// ```
/// use tokenmeter_bench::compare::{RequestFigures, RunRequests};
/// let mut run = RunRequests::default();
/// (run.requests, run.duration_s) = (vec![RequestFigures::default(); 3], 1.5);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RunRequests {
    /// Every request sent.
    pub requests: Vec<RequestFigures>,
    /// Last end − first send, in seconds: the run's rates are per this.
    pub duration_s: f64,
}

/// What a run asked for: two runs of different shapes measure different things.
///
/// ```
/// use tokenmeter_bench::compare::Shape;
/// let mut shape = Shape::default();
/// shape.facets.push(("model".into(), "llama".into()));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Shape {
    /// Each facet known of the runs, by name (`model`, `input_tokens`, `output_tokens`,
    /// `load`, `slo`, …), as text; a facet absent from one side is not compared.
    pub facets: Vec<(String, String)>,
}

impl Shape {
    /// How `self` and `other` differ: one line per facet both name with different values
    /// (`model: a vs b`), in `self`'s order; a facet only one side names is not compared.
    ///
    /// ```
    /// use tokenmeter_bench::compare::Shape;
    ///
    /// let mut base = Shape::default();
    /// base.facets = vec![("model".into(), "a".into()), ("load".into(), "rate 5".into())];
    /// let mut new = Shape::default();
    /// new.facets = vec![("model".into(), "b".into()), ("seed".into(), "1".into())];
    /// assert_eq!(base.differences(&new), ["model: a vs b"]);
    /// assert!(base.differences(&base).is_empty());
    /// ```
    pub fn differences(&self, other: &Self) -> Vec<String> {
        self.facets
            .iter()
            .filter_map(|(name, value)| {
                let theirs = other.facets.iter().find(|(n, _)| n == name)?;
                (theirs.1 != *value).then(|| format!("{name}: {value} vs {}", theirs.1))
            })
            .collect()
    }
}

/// One side of a comparison: one or more runs of one shape.
///
/// ```
/// use tokenmeter_bench::compare::{RunRequests, Side};
/// let mut side = Side::default();
/// side.source = "base.json".into();
/// side.runs = vec![RunRequests::default(); 3]; // three repeated runs
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Side {
    /// Where it came from (a file name), for the outputs.
    pub source: String,
    /// What the runs asked for.
    pub shape: Shape,
    /// The runs: one, or several repeated runs.
    pub runs: Vec<RunRequests>,
    /// The requests carry their inter-token gaps (a trace does; `--json` does not).
    pub itl_known: bool,
}
