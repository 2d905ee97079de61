//! The server's view beside the client's: the bench scrapes the target's Prometheus
//! `/metrics` during the run (`--server-metrics`) and reduces each scrape to the queue,
//! KV-cache usage and the TTFT/ITL histograms ([`names`]); the slices put them beside the
//! client's numbers.
//!
//! | Module | Concept |
//! |---|---|
//! | [`exposition`] | the Prometheus text format, parsed strictly |
//! | [`names`] | vLLM's names and tokenmeter's, one scrape reduced to a [`names::Snapshot`] |
//! | [`histogram`] | bucket deltas between scrapes and `histogram_quantile` |
//! | [`scraper`] | the periodic scrape, bounded in time and size, failures counted |

pub(crate) mod exposition;
pub(crate) mod histogram;
pub(crate) mod names;
pub(crate) mod scraper;
