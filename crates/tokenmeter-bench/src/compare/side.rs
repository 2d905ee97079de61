//! [`Side`]: one side of a comparison — each run's per-request figures, computed as the
//! run's summary computes them, and the shape of the runs (model, lengths, load).

/// One request's figures, in seconds, as the run's summary computes them: `None` where the
/// request has none (an error has no TTFT; a one-token answer no TPOT).
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
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RunRequests {
    /// Every request sent.
    pub requests: Vec<RequestFigures>,
    /// Last end − first send, in seconds: the run's rates are per this.
    pub duration_s: f64,
}

/// What a run asked for: two runs of different shapes measure different things.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Shape {
    /// Each facet known of the runs, by name (`model`, `input_tokens`, `output_tokens`,
    /// `load`, `slo`, …), as text; a facet absent from one side is not compared.
    pub facets: Vec<(String, String)>,
}

/// One side of a comparison: one or more runs of one shape.
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
