//! The server's view beside the client's: the bench scrapes the target's Prometheus
//! `/metrics` during the run (`--server-metrics`) and reduces each scrape to the queue,
//! KV-cache usage, the TTFT/ITL histograms and the `_sum`/`_count` of TTFT, ITL, E2E and
//! queue time ([`names`]); the slices put them beside the
//! client's numbers.
//!
//! | Module | Concept |
//! |---|---|
//! | [`exposition`] | the Prometheus text format, parsed strictly |
//! | [`names`] | vLLM's names and tokenmeter's, one scrape reduced to a [`names::Snapshot`] |
//! | [`histogram`] | bucket deltas between scrapes, and percentiles as the bucket they fall in (with `histogram_quantile`'s estimate) |
//! | [`totals`] | `_sum` and `_count` deltas between scrapes: exact means |
//! | [`scraper`] | the periodic scrape, bounded in time and size, failures counted |
//! | [`slo_counts`] | the server's SLO verdict counters by class, and their increase |

pub(crate) mod exposition;
pub(crate) mod histogram;
pub(crate) mod names;
pub(crate) mod scraper;
pub(crate) mod slo_counts;
pub(crate) mod totals;
