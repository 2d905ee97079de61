//! The per-request rows of the summary and their intervals: each row's values selected
//! exactly as `summary::summarize_over` selects them (the same requests, the same record
//! fields), so an interval surrounds the very figure printed beside it.

use std::borrow::Cow;
use std::time::Duration;

use tokenmeter::report::{Confidence, SummaryBounds};

use crate::reqs::Reqs;

/// The intervals of the per-request rows (ITL aside: its gaps are not independent).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rows {
    pub(crate) ttft: SummaryBounds,
    pub(crate) ttfot: SummaryBounds,
    pub(crate) ttst: SummaryBounds,
    pub(crate) tpot: SummaryBounds,
    pub(crate) ntpot: SummaryBounds,
    pub(crate) e2e: SummaryBounds,
    pub(crate) e2e_stream: SummaryBounds,
    pub(crate) client_queue: SummaryBounds,
    pub(crate) ttft_from_schedule: SummaryBounds,
    pub(crate) e2e_from_schedule: SummaryBounds,
    pub(crate) input_tokens: SummaryBounds,
    pub(crate) output_tokens: SummaryBounds,
}

fn secs(values: impl Iterator<Item = Duration>) -> Vec<f64> {
    values.map(|d| d.as_secs_f64()).collect()
}

impl Rows {
    /// The rows of `measured` at `level`.
    pub(crate) fn of<'r>(measured: impl Into<Reqs<'r>>, level: Confidence) -> Self {
        let measured: Reqs<'r> = measured.into();
        let all = || measured.iter();
        // The successful requests are filtered again for each row (no list of them is kept):
        // one column of values, 8 bytes a request, is held at a time.
        let ok = || all().filter(|m| m.succeeded());
        let records = || ok().filter_map(|m| m.record().map(Cow::into_owned));
        let of = |values: Vec<f64>| SummaryBounds::of(values, level);
        Self {
            ttft: of(secs(records().filter_map(|r| r.ttft))),
            ttfot: of(secs(records().filter_map(|r| r.first_output))),
            ttst: of(secs(records().filter_map(|r| r.second_token))),
            tpot: of(ok().filter_map(|m| m.tpot_seconds()).collect()),
            ntpot: of(secs(records().filter_map(|r| r.normalized_tpot()))),
            e2e: of(secs(ok().filter_map(|m| m.latency()))),
            e2e_stream: of(secs(records().map(|r| r.e2e))),
            client_queue: of(secs(all().filter_map(|m| m.client_queue()))),
            ttft_from_schedule: of(secs(ok().filter_map(|m| m.ttft_from_schedule()))),
            e2e_from_schedule: of(secs(ok().filter_map(|m| m.latency_from_schedule()))),
            input_tokens: of(ok().map(|m| m.prompt_tokens() as f64).collect()),
            output_tokens: of(ok().map(|m| m.output_tokens() as f64).collect()),
        }
    }
}
