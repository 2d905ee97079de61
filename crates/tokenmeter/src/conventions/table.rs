//! [`ROWS`], the built-in table, and [`Conventions`], the table an exporter publishes: the
//! built-in rows, plus any of your own.

use std::borrow::Cow;
use std::fmt;

use super::attr_set::AttrSet;
use super::buckets::{
    BATCH_SIZE_EDGES, CHOICE_EDGES, DURATION_EDGES, STEP_DURATION_EDGES, TOKEN_EDGES, TPOT_EDGES,
    TTFT_EDGES,
};
use super::feed::{EngineSignal, Feed, FirstTokenField, ItemField, RecordField, StepField};
use super::instrument::Instrument;
use super::metric::Metric;
use super::names as n;
use super::row::{Roles, Row};
use crate::sink::Gauge;

const fn row(instrument: Instrument, feed: Feed, roles: Roles, attrs: AttrSet) -> Row {
    Row::new(instrument, feed, roles, attrs)
}

use AttrSet::{
    Engine, EngineKind, EngineReason, Modality, Outcome, Own, Semconv, SemconvError, Source,
    TokenType,
};
use Roles::{Both, Client, Server};

/// Every instrument tokenmeter publishes, one row each (two for `gen_ai.client.token.usage`,
/// fed by the input and the output counts; three for `tokenmeter.input_tokens.by_source`), in
/// the order exporters list them. The rows of [`names::ALL`](super::names::ALL), in that order.
///
/// The GenAI conventions' v0.1.0 client instruments come last, next to the ones they replace
/// ([`names::SUPERSEDED`](super::names::SUPERSEDED), in this table for existing dashboards: the
/// Prometheus exporter's default; [`Conventions::current`], the OTel sink's default, leaves
/// those out). Their token counters say
/// `gen_ai.token.modality` = `text`: a table for multimodal traffic can give them
/// [`AttrSet::Modality`]`("unknown")` instead ([`Conventions::from_rows`]).
pub const ROWS: &[Row] = &[
    row(
        n::SERVER_TIME_TO_FIRST_TOKEN,
        Feed::FirstToken(FirstTokenField::Ttft),
        Server,
        Semconv,
    )
    .buckets(&[Metric::Ttft], TTFT_EDGES),
    row(
        n::SERVER_TIME_PER_OUTPUT_TOKEN,
        Feed::End(RecordField::Tpot),
        Server,
        Semconv,
    )
    .buckets(&[Metric::Tpot], TPOT_EDGES),
    row(
        n::SERVER_REQUEST_DURATION,
        Feed::End(RecordField::E2e),
        Server,
        SemconvError,
    )
    .buckets(&[Metric::E2e], DURATION_EDGES),
    row(
        n::CLIENT_OPERATION_DURATION,
        Feed::End(RecordField::E2e),
        Client,
        SemconvError,
    )
    .buckets(&[Metric::E2e], DURATION_EDGES),
    row(
        n::CLIENT_TIME_TO_FIRST_CHUNK,
        Feed::FirstToken(FirstTokenField::Ttft),
        Client,
        Semconv,
    )
    .buckets(&[Metric::Ttft], DURATION_EDGES),
    row(
        n::CLIENT_TIME_PER_OUTPUT_CHUNK,
        Feed::Item(ItemField::Gap),
        Client,
        Semconv,
    )
    .buckets(&[Metric::Itl], DURATION_EDGES),
    row(
        n::CLIENT_TOKEN_USAGE,
        Feed::End(RecordField::InputTokens),
        Client,
        TokenType("input"),
    )
    .buckets(&[Metric::InputTokens], TOKEN_EDGES),
    row(
        n::CLIENT_TOKEN_USAGE,
        Feed::End(RecordField::OutputTokens),
        Client,
        TokenType("output"),
    )
    .buckets(&[Metric::OutputTokens], TOKEN_EDGES),
    row(
        n::INTER_TOKEN_LATENCY,
        Feed::Item(ItemField::Gap),
        Server,
        Own,
    )
    .buckets(&[Metric::Itl], TPOT_EDGES),
    row(
        n::TIME_PER_OUTPUT_TOKEN,
        Feed::End(RecordField::Tpot),
        Client,
        Own,
    )
    .buckets(&[Metric::Tpot], TPOT_EDGES),
    row(n::QUEUE_TIME, Feed::End(RecordField::Queue), Server, Own)
        .buckets(&[Metric::Queue], DURATION_EDGES),
    row(
        n::PREFILL_TIME,
        Feed::End(RecordField::Prefill),
        Server,
        Own,
    )
    .buckets(&[Metric::Prefill], DURATION_EDGES),
    row(n::DECODE_TIME, Feed::End(RecordField::Decode), Both, Own)
        .buckets(&[Metric::Decode], DURATION_EDGES),
    row(
        n::INFERENCE_TIME,
        Feed::End(RecordField::Inference),
        Server,
        Own,
    )
    .buckets(&[Metric::Inference], DURATION_EDGES),
    row(n::REQUESTS, Feed::End(RecordField::Request), Both, Outcome),
    row(
        n::INPUT_TOKENS,
        Feed::End(RecordField::InputTokens),
        Both,
        Own,
    ),
    row(
        n::OUTPUT_TOKENS,
        Feed::End(RecordField::OutputTokens),
        Both,
        Own,
    ),
    row(n::REQUESTS_WAITING, Feed::Gauge(Gauge::Waiting), Both, Own),
    row(n::REQUESTS_RUNNING, Feed::Gauge(Gauge::Running), Both, Own),
    row(n::SERIES_FOLDED, Feed::Folded, Both, AttrSet::Role),
    row(
        n::KV_CACHE_USAGE,
        Feed::Engine(EngineSignal::KvCacheUsage),
        Both,
        Engine,
    ),
    row(
        n::PREEMPTIONS,
        Feed::Engine(EngineSignal::Preemptions),
        Both,
        Engine,
    ),
    row(
        n::ENGINE_STEP_DURATION,
        Feed::Step(StepField::Duration),
        Both,
        EngineKind,
    )
    .buckets(&[Metric::StepDuration], STEP_DURATION_EDGES),
    row(
        n::ENGINE_BATCH_SIZE,
        Feed::Step(StepField::BatchSize),
        Both,
        EngineKind,
    )
    .buckets(&[Metric::BatchSize], BATCH_SIZE_EDGES),
    row(
        n::ENGINE_STEP_TOKENS,
        Feed::Step(StepField::Tokens),
        Both,
        EngineKind,
    ),
    row(
        n::TIME_TO_FIRST_OUTPUT_TOKEN,
        Feed::End(RecordField::FirstOutput),
        Both,
        Own,
    )
    .buckets(&[Metric::Ttft], DURATION_EDGES),
    row(
        n::TIME_TO_SECOND_TOKEN,
        Feed::End(RecordField::SecondToken),
        Both,
        Own,
    )
    .buckets(&[Metric::Ttft], DURATION_EDGES),
    row(
        n::NORMALIZED_TIME_PER_OUTPUT_TOKEN,
        Feed::End(RecordField::NormalizedTpot),
        Both,
        Own,
    )
    .buckets(&[Metric::Tpot], TPOT_EDGES),
    row(
        n::COMPUTED_INPUT_TOKENS,
        Feed::End(RecordField::ComputedInputTokens),
        Server,
        Own,
    )
    .buckets(&[Metric::InputTokens], TOKEN_EDGES),
    row(
        n::INPUT_TOKENS_BY_SOURCE,
        Feed::End(RecordField::ComputedInputTokens),
        Both,
        Source("local_compute"),
    ),
    row(
        n::INPUT_TOKENS_BY_SOURCE,
        Feed::End(RecordField::CachedInputTokens),
        Both,
        Source("local_cache_hit"),
    ),
    row(
        n::INPUT_TOKENS_BY_SOURCE,
        Feed::End(RecordField::ExternalInputTokens),
        Both,
        Source("external_kv_transfer"),
    ),
    row(
        n::REQUEST_MAX_TOKENS,
        Feed::End(RecordField::MaxTokens),
        Both,
        Own,
    )
    .buckets(&[Metric::OutputTokens], TOKEN_EDGES),
    row(
        n::REQUEST_CHOICES,
        Feed::End(RecordField::Choices),
        Both,
        Own,
    )
    .buckets(&[], CHOICE_EDGES),
    row(
        n::PREFIX_CACHE_QUERIES,
        Feed::Engine(EngineSignal::PrefixCacheQueries),
        Both,
        Engine,
    ),
    row(
        n::PREFIX_CACHE_HITS,
        Feed::Engine(EngineSignal::PrefixCacheHits),
        Both,
        Engine,
    ),
    row(
        n::SPEC_DECODE_DRAFTS,
        Feed::Engine(EngineSignal::SpecDrafts),
        Both,
        Engine,
    ),
    row(
        n::SPEC_DECODE_DRAFT_TOKENS,
        Feed::Engine(EngineSignal::SpecDraftTokens),
        Both,
        Engine,
    ),
    row(
        n::SPEC_DECODE_ACCEPTED_TOKENS,
        Feed::Engine(EngineSignal::SpecAcceptedTokens),
        Both,
        Engine,
    ),
    row(
        n::ENGINE_CACHE_CONFIG_INFO,
        Feed::Engine(EngineSignal::CacheConfigInfo),
        Both,
        Engine,
    ),
    row(
        n::ENGINE_LORA_REQUESTS_INFO,
        Feed::Engine(EngineSignal::LoraRequestsInfo),
        Both,
        Engine,
    ),
    row(
        n::ENGINE_WAITING_BY_REASON,
        Feed::Engine(EngineSignal::WaitingCapacity),
        Both,
        EngineReason("capacity"),
    ),
    row(
        n::ENGINE_WAITING_BY_REASON,
        Feed::Engine(EngineSignal::WaitingDeferred),
        Both,
        EngineReason("deferred"),
    ),
    row(
        n::ENGINE_ADMISSION_REJECTIONS,
        Feed::Engine(EngineSignal::RejectedQueueFull),
        Both,
        EngineReason("queue_full"),
    ),
    row(
        n::ENGINE_ADMISSION_REJECTIONS,
        Feed::Engine(EngineSignal::RejectedTooLarge),
        Both,
        EngineReason("too_large"),
    ),
    row(
        n::CLIENT_INFERENCE_DURATION,
        Feed::End(RecordField::E2e),
        Client,
        SemconvError,
    )
    .buckets(&[Metric::E2e], DURATION_EDGES),
    row(
        n::CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
        Feed::FirstToken(FirstTokenField::Ttft),
        Client,
        Semconv,
    )
    .buckets(&[Metric::Ttft], DURATION_EDGES),
    row(
        n::CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
        Feed::Item(ItemField::Gap),
        Client,
        Semconv,
    )
    .buckets(&[Metric::Itl], DURATION_EDGES),
    row(
        n::CLIENT_USAGE_INPUT_TOKENS,
        Feed::End(RecordField::InputTokens),
        Client,
        Modality(TEXT),
    ),
    row(
        n::CLIENT_USAGE_OUTPUT_TOKENS,
        Feed::End(RecordField::OutputTokens),
        Client,
        Modality(TEXT),
    ),
    row(
        n::CLIENT_USAGE_CACHE_READ_INPUT_TOKENS,
        Feed::End(RecordField::CachedInputTokens),
        Client,
        Modality(TEXT),
    ),
    row(
        n::CLIENT_USAGE_REASONING_OUTPUT_TOKENS,
        Feed::End(RecordField::ReasoningTokens),
        Client,
        Modality(TEXT),
    ),
    row(
        n::CLIENT_OPERATION_INPUT_TOKENS,
        Feed::End(RecordField::InputTokens),
        Client,
        SemconvError,
    )
    .buckets(&[Metric::InputTokens], TOKEN_EDGES),
    row(
        n::CLIENT_OPERATION_OUTPUT_TOKENS,
        Feed::End(RecordField::OutputCount),
        Client,
        SemconvError,
    )
    .buckets(&[Metric::OutputTokens], TOKEN_EDGES),
];

/// The `gen_ai.token.modality` of tokenmeter's token counters: it meters text token streams.
const TEXT: &str = "text";

/// A row that [`Conventions::push`] refused.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RowError {
    /// The name is taken by an instrument with another unit, kind or description.
    NameTaken {
        /// The name.
        name: &'static str,
    },
    /// A histogram row without default edges, or edges on another kind.
    Buckets {
        /// The name.
        name: &'static str,
    },
    /// The attribute set does not fit the feed (an engine set on a request event, …).
    Attrs {
        /// The name.
        name: &'static str,
    },
}

impl fmt::Display for RowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RowError::NameTaken { name } => write!(
                f,
                "the instrument name `{name}` is already in the table with another unit, kind or \
                 description: choose another name, or reuse that instrument as it is"
            ),
            RowError::Buckets { name } => write!(
                f,
                "the row `{name}` has no default bucket edges, or has edges but is not a \
                 histogram: give a histogram its edges with Row::buckets, and nothing else any"
            ),
            RowError::Attrs { name } => write!(
                f,
                "the attributes of the row `{name}` do not fit its feed: use AttrSet::Engine or \
                 EngineKind for engine feeds, AttrSet::Role for Feed::Folded, a series set otherwise"
            ),
        }
    }
}

impl std::error::Error for RowError {}

/// The table an exporter publishes: [`ROWS`] by default, plus rows of your own
/// ([`Conventions::push`]). Both exporters (Prometheus, OpenTelemetry) take one and publish
/// every row, so an instrument added here appears in both without changing either.
///
/// # Examples
///
/// ```
/// use tokenmeter::conventions::{
///     AttrSet, Conventions, Feed, Instrument, InstrumentKind, RecordField, Roles, Row,
/// };
///
/// let frames = Instrument::new(
///     "example.frames",
///     "{frame}",
///     InstrumentKind::Counter,
///     "Frames received, token-bearing or not.",
/// );
/// let mut table = Conventions::default();
/// table.push(Row::new(frames, Feed::End(RecordField::Frames), Roles::Both, AttrSet::Own))?;
/// assert_eq!(table.rows().len(), tokenmeter::conventions::ROWS.len() + 1);
/// assert!(table.push(Row::new(
///     Instrument::new("example.frames", "s", InstrumentKind::Counter, "clash"),
///     Feed::End(RecordField::E2e), Roles::Both, AttrSet::Own,
/// )).is_err());
/// # Ok::<(), tokenmeter::conventions::RowError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Conventions {
    rows: Cow<'static, [Row]>,
}

impl Default for Conventions {
    fn default() -> Self {
        Self {
            rows: Cow::Borrowed(ROWS),
        }
    }
}

impl Conventions {
    /// The built-in rows without those of the instruments the GenAI conventions replaced in
    /// v0.1.0 ([`names::SUPERSEDED`](super::names::SUPERSEDED)): what the conventions'
    /// `gen_ai_latest_experimental` opt-in asks for. Dashboards that read
    /// `gen_ai.client.token.usage` or `gen_ai.client.operation.*` need [`Conventions::default`].
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::conventions::{Conventions, names};
    ///
    /// let current = Conventions::current();
    /// let published = current.instruments();
    /// assert!(!published.contains(&names::CLIENT_TOKEN_USAGE));
    /// assert!(published.contains(&names::CLIENT_USAGE_INPUT_TOKENS));
    /// assert!(published.contains(&names::CLIENT_INFERENCE_DURATION));
    /// ```
    pub fn current() -> Self {
        let rows: Vec<Row> = ROWS
            .iter()
            .filter(|row| !super::names::SUPERSEDED.contains(&row.instrument))
            .copied()
            .collect();
        Self::from_rows(rows)
    }

    /// A table of exactly `rows` (no built-in row unless given).
    pub fn from_rows(rows: impl Into<Cow<'static, [Row]>>) -> Self {
        Self { rows: rows.into() }
    }

    /// The rows, in order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Adds `row` after the others.
    ///
    /// # Errors
    ///
    /// [`RowError`] when its name is taken by a different instrument, when a histogram has no
    /// default edges (or another kind has some), or when its attributes do not fit its feed. A
    /// refused row changes nothing.
    pub fn push(&mut self, row: Row) -> Result<&mut Self, RowError> {
        let name = row.instrument.name;
        if self
            .rows
            .iter()
            .any(|r| r.instrument.name == name && r.instrument != row.instrument)
        {
            return Err(RowError::NameTaken { name });
        }
        if row.is_histogram() == row.edges.is_empty() {
            return Err(RowError::Buckets { name });
        }
        let engine_attrs = matches!(
            row.attrs,
            AttrSet::Engine | AttrSet::EngineKind | AttrSet::EngineReason(_)
        );
        let fits = match row.feed {
            Feed::Step(_) | Feed::Engine(_) => engine_attrs,
            Feed::Folded => row.attrs == AttrSet::Role,
            _ => !engine_attrs && row.attrs != AttrSet::Role,
        };
        if !fits {
            return Err(RowError::Attrs { name });
        }
        self.rows.to_mut().push(row);
        Ok(self)
    }

    /// Every distinct instrument, in the order of its first row.
    pub fn instruments(&self) -> Vec<Instrument> {
        let mut out: Vec<Instrument> = Vec::new();
        for row in self.rows.iter() {
            if !out.iter().any(|i| i.name == row.instrument.name) {
                out.push(row.instrument);
            }
        }
        out
    }

    /// The bucket settings of the histogram `name`: the metrics of all its rows and the
    /// default edges of its first; `None` when no histogram row has that name.
    pub fn histogram(&self, name: &str) -> Option<(Vec<Metric>, &'static [f64])> {
        let mut rows = self
            .rows
            .iter()
            .filter(|r| r.is_histogram() && r.instrument.name == name);
        let first = rows.next()?;
        let mut metrics = first.metrics.to_vec();
        for row in rows {
            for metric in row.metrics {
                if !metrics.contains(metric) {
                    metrics.push(*metric);
                }
            }
        }
        Some((metrics, first.edges))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conventions::{InstrumentKind, names};

    #[test]
    fn the_table_has_every_instrument_in_order_and_every_built_in_row_is_valid() {
        let table = Conventions::default();
        assert_eq!(table.instruments(), names::ALL);
        let mut rebuilt = Conventions::from_rows(Vec::new());
        for row in ROWS {
            rebuilt.push(*row).unwrap();
        }
        assert_eq!(rebuilt.rows(), ROWS);
        let (metrics, edges) = table.histogram(names::CLIENT_TOKEN_USAGE.name).unwrap();
        assert_eq!(metrics, [Metric::InputTokens, Metric::OutputTokens]);
        assert_eq!(edges, TOKEN_EDGES);
        assert_eq!(table.histogram(names::REQUESTS.name), None);
    }

    #[test]
    fn current_leaves_out_the_superseded_instruments_and_nothing_else() {
        let (all, current) = (Conventions::default(), Conventions::current());
        let superseded = |row: &&Row| names::SUPERSEDED.contains(&row.instrument);
        let kept: Vec<Row> = all
            .rows()
            .iter()
            .filter(|row| !superseded(row))
            .copied()
            .collect();
        assert_eq!(current.rows(), kept);
        assert_eq!(all.rows().iter().filter(superseded).count(), 5);
        // each replacement reads what the instrument it replaces read
        for (old, new) in [
            (
                names::CLIENT_OPERATION_DURATION,
                names::CLIENT_INFERENCE_DURATION,
            ),
            (
                names::CLIENT_TIME_TO_FIRST_CHUNK,
                names::CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
            ),
            (
                names::CLIENT_TIME_PER_OUTPUT_CHUNK,
                names::CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
            ),
        ] {
            let row = |i: Instrument| *all.rows().iter().find(|r| r.instrument == i).unwrap();
            let (old, new) = (row(old), row(new));
            assert_eq!(
                (old.feed, old.roles, old.attrs, old.edges),
                (new.feed, new.roles, new.attrs, new.edges)
            );
        }
        for counter in [
            names::CLIENT_USAGE_INPUT_TOKENS,
            names::CLIENT_USAGE_OUTPUT_TOKENS,
            names::CLIENT_USAGE_CACHE_READ_INPUT_TOKENS,
            names::CLIENT_USAGE_REASONING_OUTPUT_TOKENS,
        ] {
            let row = all.rows().iter().find(|r| r.instrument == counter).unwrap();
            assert_eq!(counter.kind, InstrumentKind::Counter);
            assert_eq!((row.roles, row.attrs), (Client, Modality("text")));
        }
    }

    #[test]
    fn a_row_that_does_not_fit_is_refused_and_changes_nothing() {
        let mut table = Conventions::default();
        let counter = Instrument::new("x.y", "{x}", InstrumentKind::Counter, "x");
        let histogram = Instrument::new("x.h", "s", InstrumentKind::Histogram, "x");
        let end = Feed::End(RecordField::E2e);
        for (row, expected) in [
            (
                Row::new(histogram, end, Both, Own),
                RowError::Buckets { name: "x.h" },
            ),
            (
                Row::new(counter, end, Both, Own).buckets(&[Metric::E2e], DURATION_EDGES),
                RowError::Buckets { name: "x.y" },
            ),
            (
                Row::new(counter, end, Both, Engine),
                RowError::Attrs { name: "x.y" },
            ),
            (
                Row::new(counter, Feed::Step(StepField::Tokens), Both, Own),
                RowError::Attrs { name: "x.y" },
            ),
            (
                Row::new(names::REQUESTS.renamed_for_test(), end, Both, Own),
                RowError::NameTaken {
                    name: names::REQUESTS.name,
                },
            ),
        ] {
            let err = table.push(row).unwrap_err();
            assert_eq!(err, expected);
            assert!(err.to_string().contains(": "), "{err}");
        }
        assert_eq!(table, Conventions::default());
    }

    impl Instrument {
        fn renamed_for_test(self) -> Self {
            Instrument::new(self.name, "s", self.kind, self.description)
        }
    }
}
