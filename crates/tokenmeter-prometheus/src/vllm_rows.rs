//! The vLLM profile as a renaming of the conventions table: which row is renamed
//! ([`Row::renamed`]) to which vLLM instrument (and, where vLLM records more widely or with
//! fewer labels, for which roles and attributes), and vLLM's three metrics that no row of the
//! table has.

use tokenmeter::conventions::{
    AttrSet, CHOICE_EDGES, EngineSignal, Feed, Instrument, Metric, RecordField, Roles, Row,
    StepField, names as otel,
};

use crate::layout::{Layout, VLLM_ITERATION_TOKENS, VLLM_ITL, VLLM_REQUEST, VLLM_TTFT};
use crate::names::vllm;
use crate::rows::PromRow;

/// One renaming: the row of `from` (and of `field`, when several rows share the instrument)
/// renamed to `to` (of the same kind and unit), with vLLM's default layout, and the roles and
/// attributes vLLM records it with when they differ from the row's.
struct Rename {
    from: Instrument,
    field: Option<Feed>,
    to: Instrument,
    layout: Layout,
    roles: Option<Roles>,
    attrs: Option<AttrSet>,
}

const fn to(from: Instrument, to: Instrument, layout: Layout) -> Rename {
    Rename {
        from,
        field: None,
        to,
        layout,
        roles: None,
        attrs: None,
    }
}

impl Rename {
    const fn roles(self, roles: Roles) -> Self {
        Self {
            roles: Some(roles),
            ..self
        }
    }

    const fn attrs(self, attrs: AttrSet) -> Self {
        Self {
            attrs: Some(attrs),
            ..self
        }
    }

    const fn field(self, field: Feed) -> Self {
        Self {
            field: Some(field),
            ..self
        }
    }
}

const TTFT: Layout = Layout::Fixed(VLLM_TTFT);
const ITL: Layout = Layout::Fixed(VLLM_ITL);
const REQUEST: Layout = Layout::Fixed(VLLM_REQUEST);
const NONE: Layout = Layout::Fixed(&[]);

/// Every renamed row. Rows not listed keep their `tokenmeter_` name (with `model_name`).
/// vLLM records the request phases and the per-request token histograms for every series, and
/// the end-to-end latency without `error_type`.
const RENAMES: &[Rename] = &[
    to(
        otel::SERVER_TIME_TO_FIRST_TOKEN,
        vllm::TIME_TO_FIRST_TOKEN,
        TTFT,
    ),
    to(
        otel::CLIENT_TIME_TO_FIRST_CHUNK,
        vllm::TIME_TO_FIRST_TOKEN,
        TTFT,
    ),
    to(otel::INTER_TOKEN_LATENCY, vllm::INTER_TOKEN_LATENCY, ITL),
    to(
        otel::CLIENT_TIME_PER_OUTPUT_CHUNK,
        vllm::INTER_TOKEN_LATENCY,
        ITL,
    ),
    to(
        otel::SERVER_TIME_PER_OUTPUT_TOKEN,
        vllm::TIME_PER_OUTPUT_TOKEN,
        ITL,
    ),
    to(
        otel::TIME_PER_OUTPUT_TOKEN,
        vllm::TIME_PER_OUTPUT_TOKEN,
        ITL,
    ),
    to(
        otel::SERVER_REQUEST_DURATION,
        vllm::E2E_REQUEST_LATENCY,
        REQUEST,
    )
    .attrs(AttrSet::Semconv),
    to(
        otel::CLIENT_OPERATION_DURATION,
        vllm::E2E_REQUEST_LATENCY,
        REQUEST,
    )
    .attrs(AttrSet::Semconv),
    to(otel::QUEUE_TIME, vllm::QUEUE_TIME, REQUEST).roles(Roles::Both),
    to(otel::PREFILL_TIME, vllm::PREFILL_TIME, REQUEST).roles(Roles::Both),
    to(otel::DECODE_TIME, vllm::DECODE_TIME, REQUEST),
    to(otel::INFERENCE_TIME, vllm::INFERENCE_TIME, REQUEST).roles(Roles::Both),
    to(
        otel::CLIENT_TOKEN_USAGE,
        vllm::REQUEST_PROMPT_TOKENS,
        Layout::OneTwoFive,
    )
    .field(Feed::End(RecordField::InputTokens))
    .roles(Roles::Both)
    .attrs(AttrSet::Semconv),
    to(
        otel::CLIENT_TOKEN_USAGE,
        vllm::REQUEST_GENERATION_TOKENS,
        Layout::OneTwoFive,
    )
    .field(Feed::End(RecordField::OutputTokens))
    .roles(Roles::Both)
    .attrs(AttrSet::Semconv),
    to(otel::INPUT_TOKENS, vllm::PROMPT_TOKENS, NONE),
    to(otel::OUTPUT_TOKENS, vllm::GENERATION_TOKENS, NONE),
    to(otel::REQUESTS_WAITING, vllm::NUM_REQUESTS_WAITING, NONE),
    to(otel::REQUESTS_RUNNING, vllm::NUM_REQUESTS_RUNNING, NONE),
    to(otel::KV_CACHE_USAGE, vllm::KV_CACHE_USAGE, NONE),
    to(otel::PREEMPTIONS, vllm::NUM_PREEMPTIONS, NONE),
    to(otel::PREFIX_CACHE_QUERIES, vllm::PREFIX_CACHE_QUERIES, NONE),
    to(otel::PREFIX_CACHE_HITS, vllm::PREFIX_CACHE_HITS, NONE),
    to(
        otel::INPUT_TOKENS_BY_SOURCE,
        vllm::PROMPT_TOKENS_BY_SOURCE,
        NONE,
    )
    .field(Feed::End(RecordField::ComputedInputTokens)),
    to(
        otel::INPUT_TOKENS_BY_SOURCE,
        vllm::PROMPT_TOKENS_BY_SOURCE,
        NONE,
    )
    .field(Feed::End(RecordField::CachedInputTokens)),
    to(
        otel::INPUT_TOKENS_BY_SOURCE,
        vllm::PROMPT_TOKENS_BY_SOURCE,
        NONE,
    )
    .field(Feed::End(RecordField::ExternalInputTokens)),
    to(
        otel::COMPUTED_INPUT_TOKENS,
        vllm::REQUEST_PREFILL_KV_COMPUTED_TOKENS,
        Layout::OneTwoFive,
    )
    .roles(Roles::Both),
    to(
        otel::REQUEST_MAX_TOKENS,
        vllm::REQUEST_PARAMS_MAX_TOKENS,
        Layout::OneTwoFive,
    ),
    to(
        otel::REQUEST_CHOICES,
        vllm::REQUEST_PARAMS_N,
        Layout::Fixed(CHOICE_EDGES),
    ),
    to(otel::SPEC_DECODE_DRAFTS, vllm::SPEC_DECODE_NUM_DRAFTS, NONE),
    to(
        otel::SPEC_DECODE_DRAFT_TOKENS,
        vllm::SPEC_DECODE_NUM_DRAFT_TOKENS,
        NONE,
    ),
    to(
        otel::SPEC_DECODE_ACCEPTED_TOKENS,
        vllm::SPEC_DECODE_NUM_ACCEPTED_TOKENS,
        NONE,
    ),
    to(
        otel::ENGINE_CACHE_CONFIG_INFO,
        vllm::CACHE_CONFIG_INFO,
        NONE,
    ),
    to(
        otel::ENGINE_LORA_REQUESTS_INFO,
        vllm::LORA_REQUESTS_INFO,
        NONE,
    ),
    to(
        otel::ENGINE_WAITING_BY_REASON,
        vllm::NUM_REQUESTS_WAITING_BY_REASON,
        NONE,
    )
    .field(Feed::Engine(EngineSignal::WaitingCapacity)),
    to(
        otel::ENGINE_WAITING_BY_REASON,
        vllm::NUM_REQUESTS_WAITING_BY_REASON,
        NONE,
    )
    .field(Feed::Engine(EngineSignal::WaitingDeferred)),
];

/// The instruments the vLLM profile leaves out: the GenAI conventions' v0.1.0 client
/// instruments, whose samples it already publishes under vLLM's names (from the rows of the
/// instruments they replace: `vllm:e2e_request_latency_seconds`, `vllm:request_prompt_tokens`,
/// …) or under `tokenmeter_` ones.
const SEMCONV_ONLY: &[Instrument] = &[
    otel::CLIENT_INFERENCE_DURATION,
    otel::CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK,
    otel::CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    otel::CLIENT_USAGE_INPUT_TOKENS,
    otel::CLIENT_USAGE_OUTPUT_TOKENS,
    otel::CLIENT_USAGE_CACHE_READ_INPUT_TOKENS,
    otel::CLIENT_USAGE_REASONING_OUTPUT_TOKENS,
    otel::CLIENT_OPERATION_INPUT_TOKENS,
    otel::CLIENT_OPERATION_OUTPUT_TOKENS,
];

/// Whether the vLLM profile leaves `row` out ([`SEMCONV_ONLY`]).
pub(crate) fn left_out(row: &Row) -> bool {
    SEMCONV_ONLY.contains(&row.instrument)
}

/// `row` as the vLLM profile publishes it, when vLLM has a name for it.
pub(crate) fn rename(row: &Row) -> Option<PromRow> {
    let rename = RENAMES.iter().find(|r| {
        r.from.name == row.instrument.name && r.field.is_none_or(|field| field == row.feed)
    })?;
    let mut renamed = row.renamed(rename.to);
    if let Some(roles) = rename.roles {
        renamed = renamed.for_roles(roles);
    }
    if let Some(attrs) = rename.attrs {
        renamed = renamed.with_attrs(attrs);
    }
    Some(PromRow::new(renamed, rename.layout))
}

/// vLLM's metrics that no row of the table has: `request_success_total` by `finished_reason`,
/// the `iteration_tokens_total` histogram and `request_max_num_generation_tokens`.
pub(crate) fn own_rows() -> [PromRow; 3] {
    let success = Row::new(
        vllm::REQUEST_SUCCESS,
        Feed::End(RecordField::Request),
        Roles::Both,
        AttrSet::FinishedReason,
    );
    let iteration = Row::new(
        vllm::ITERATION_TOKENS,
        Feed::Step(StepField::Tokens),
        Roles::Both,
        AttrSet::Engine,
    )
    .buckets(&[Metric::StepTokens], VLLM_ITERATION_TOKENS);
    let longest = Row::new(
        vllm::REQUEST_MAX_NUM_GENERATION_TOKENS,
        Feed::End(RecordField::OutputTokens),
        Roles::Both,
        AttrSet::Semconv,
    )
    .buckets(&[Metric::OutputTokens], &[1.0]);
    [
        PromRow::new(success, NONE),
        PromRow::new(iteration, Layout::Fixed(VLLM_ITERATION_TOKENS)),
        PromRow::new(longest, Layout::OneTwoFive),
    ]
}

/// The rows of the pre-0.11 names ([`vllm::legacy`]): each a copy of a row renamed to the
/// current name it aliases, renamed to the old one, so both series carry the same samples.
pub(crate) fn legacy_rows(rows: &[PromRow]) -> Vec<PromRow> {
    let mut out = Vec::new();
    for (old, new) in vllm::legacy::ALIASES {
        for row in rows.iter().filter(|row| row.row.instrument == *new) {
            out.push(PromRow::new(row.row.renamed(*old), row.layout));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenmeter::conventions::Conventions;

    #[test]
    fn every_rename_matches_a_row_of_the_table() {
        let table = Conventions::default();
        for rename in RENAMES {
            let matches = table
                .rows()
                .iter()
                .filter(|row| {
                    row.instrument == rename.from && rename.field.is_none_or(|f| f == row.feed)
                })
                .count();
            assert_eq!(matches, 1, "{}", rename.to.name);
        }
    }

    /// A renamed row records as before: the vLLM instrument has the kind (which handle) and
    /// the unit (seconds or counts) of the one it renames, and so has an old name of the
    /// current one.
    #[test]
    fn a_renaming_keeps_kind_and_unit() {
        let pairs = RENAMES
            .iter()
            .map(|rename| (rename.from, rename.to))
            .chain(vllm::legacy::ALIASES.iter().map(|(old, new)| (*new, *old)));
        for (from, to) in pairs {
            assert_eq!((from.kind, from.unit), (to.kind, to.unit), "{}", to.name);
        }
    }
}
