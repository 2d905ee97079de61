//! The default profile: the instruments of [`tokenmeter::conventions`] under their
//! OTel→Prometheus names — OpenTelemetry GenAI semantic-convention names, and `tokenmeter_`
//! names for what semconv does not define.
//!
//! Each constant is the instrument of the same name in [`tokenmeter::conventions::names`]
//! itself (units, kinds, descriptions and sources are documented there). Its Prometheus name,
//! [`exposition_name`](super::exposition_name), is spelled out here, so that a name read on a
//! dashboard can be found by searching, and checked against the translation when this crate
//! compiles. Where the description spells attribute keys (`gen_ai.token.type`), the `# HELP`
//! text ([`help`](super::help)) spells them as labels (`gen_ai_token_type`); that text is
//! spelled out too, and a test checks it.
//!
//! # Examples
//!
//! ```
//! use tokenmeter::conventions::names as otel;
//! use tokenmeter_prometheus::names::{exposition_name, semconv};
//!
//! assert_eq!(semconv::REQUESTS_WAITING, otel::REQUESTS_WAITING);
//! assert_eq!(exposition_name(&semconv::REQUESTS_WAITING), "tokenmeter_requests_waiting");
//! ```

use tokenmeter::conventions::Instrument;
use tokenmeter::conventions::names as otel;

/// `instrument`, whose Prometheus name is `prometheus`.
///
/// # Panics
///
/// At compile time (in a `const`) when `prometheus` is not the OTel→Prometheus translation
/// of the instrument's name.
const fn published(instrument: Instrument, prometheus: &'static str) -> Instrument {
    assert!(
        instrument.is_prometheus_name(prometheus),
        "a semconv Prometheus name is not the OTel->Prometheus translation of its instrument"
    );
    instrument
}

/// Each `NAME => "prometheus_name"` is `pub const NAME`: the instrument `otel::NAME`, whose
/// Prometheus name is checked when this crate compiles; `help` spells out its `# HELP` text
/// where that is not the description (attribute keys spelled as labels). Then `ALL`, in this
/// order, and for the tests every spelled-out name and help text.
macro_rules! semconv {
    ($($name:ident => $prometheus:literal $(, help $help:literal)?;)*) => {
        $(
            #[doc = concat!(
                "`", $prometheus, "`: [`otel::", stringify!($name), "`]."
                $(, " `# HELP` ", $help)?
            )]
            pub const $name: Instrument = published(otel::$name, $prometheus);
        )*

        /// Every instrument of the semconv profile: [`otel::ALL`], in its order.
        pub const ALL: &[Instrument] = &[$($name),*];

        /// Each instrument with its spelled-out Prometheus name and `# HELP` text (`None`:
        /// the description).
        #[cfg(test)]
        const SPELLED: &[(Instrument, &str, Option<&str>)] = &[$((
            $name,
            $prometheus,
            semconv!(@help $($help)?),
        )),*];
    };
    (@help) => { None };
    (@help $help:literal) => { Some($help) };
}

semconv! {
    SERVER_TIME_TO_FIRST_TOKEN => "gen_ai_server_time_to_first_token_seconds";
    SERVER_TIME_PER_OUTPUT_TOKEN => "gen_ai_server_time_per_output_token_seconds";
    SERVER_REQUEST_DURATION => "gen_ai_server_request_duration_seconds";
    CLIENT_OPERATION_DURATION => "gen_ai_client_operation_duration_seconds";
    CLIENT_TIME_TO_FIRST_CHUNK => "gen_ai_client_operation_time_to_first_chunk_seconds";
    CLIENT_TIME_PER_OUTPUT_CHUNK => "gen_ai_client_operation_time_per_output_chunk_seconds";
    CLIENT_TOKEN_USAGE => "gen_ai_client_token_usage",
        help "Input and output tokens per request, by gen_ai_token_type.";
    INTER_TOKEN_LATENCY => "tokenmeter_inter_token_latency_seconds";
    TIME_PER_OUTPUT_TOKEN => "tokenmeter_time_per_output_token_seconds";
    QUEUE_TIME => "tokenmeter_request_queue_time_seconds";
    PREFILL_TIME => "tokenmeter_request_prefill_time_seconds";
    DECODE_TIME => "tokenmeter_request_decode_time_seconds";
    INFERENCE_TIME => "tokenmeter_request_inference_time_seconds";
    REQUESTS => "tokenmeter_requests_total",
        help "Requests ended, by outcome (success, error, cancelled, degraded) and error_type.";
    INPUT_TOKENS => "tokenmeter_input_tokens_total";
    OUTPUT_TOKENS => "tokenmeter_output_tokens_total";
    REQUESTS_WAITING => "tokenmeter_requests_waiting";
    REQUESTS_RUNNING => "tokenmeter_requests_running";
    SERIES_FOLDED => "tokenmeter_series_folded_total";
    KV_CACHE_USAGE => "tokenmeter_kv_cache_usage_ratio";
    PREEMPTIONS => "tokenmeter_preemptions_total";
    ENGINE_STEP_DURATION => "tokenmeter_engine_step_duration_seconds";
    ENGINE_BATCH_SIZE => "tokenmeter_engine_batch_size";
    ENGINE_STEP_TOKENS => "tokenmeter_engine_step_tokens_total";
    TIME_TO_FIRST_OUTPUT_TOKEN => "tokenmeter_request_time_to_first_output_token_seconds";
    TIME_TO_SECOND_TOKEN => "tokenmeter_request_time_to_second_token_seconds";
    NORMALIZED_TIME_PER_OUTPUT_TOKEN => "tokenmeter_request_normalized_time_per_output_token_seconds";
    COMPUTED_INPUT_TOKENS => "tokenmeter_request_computed_input_tokens";
    INPUT_TOKENS_BY_SOURCE => "tokenmeter_input_tokens_by_source_total";
    REQUEST_MAX_TOKENS => "tokenmeter_request_max_tokens";
    REQUEST_CHOICES => "tokenmeter_request_choices";
    PREFIX_CACHE_QUERIES => "tokenmeter_prefix_cache_queries_total";
    PREFIX_CACHE_HITS => "tokenmeter_prefix_cache_hits_total";
    SPEC_DECODE_DRAFTS => "tokenmeter_spec_decode_drafts_total";
    SPEC_DECODE_DRAFT_TOKENS => "tokenmeter_spec_decode_draft_tokens_total";
    SPEC_DECODE_ACCEPTED_TOKENS => "tokenmeter_spec_decode_accepted_tokens_total";
    ENGINE_CACHE_CONFIG_INFO => "tokenmeter_engine_cache_config_info";
    ENGINE_LORA_REQUESTS_INFO => "tokenmeter_engine_lora_requests_info";
    ENGINE_WAITING_BY_REASON => "tokenmeter_engine_requests_waiting_by_reason";
    ENGINE_ADMISSION_REJECTIONS => "tokenmeter_engine_admission_rejections_total";
    CLIENT_INFERENCE_DURATION => "gen_ai_client_inference_duration_seconds";
    CLIENT_INFERENCE_TIME_TO_FIRST_CHUNK => "gen_ai_client_inference_time_to_first_chunk_seconds";
    CLIENT_INFERENCE_TIME_PER_OUTPUT_CHUNK => "gen_ai_client_inference_time_per_output_chunk_seconds";
    CLIENT_USAGE_INPUT_TOKENS => "gen_ai_client_inference_usage_input_tokens_total",
        help "Input (prompt) tokens spent, cached ones included, by gen_ai_token_modality.";
    CLIENT_USAGE_OUTPUT_TOKENS => "gen_ai_client_inference_usage_output_tokens_total",
        help "Output (completion) tokens spent, reasoning ones included, by gen_ai_token_modality.";
    CLIENT_USAGE_CACHE_READ_INPUT_TOKENS => "gen_ai_client_inference_usage_cache_read_input_tokens_total",
        help "Input tokens served from the provider's cache, a part of the input tokens, by gen_ai_token_modality.";
    CLIENT_USAGE_REASONING_OUTPUT_TOKENS => "gen_ai_client_inference_usage_reasoning_output_tokens_total",
        help "Output tokens spent on reasoning, a part of the output tokens, by gen_ai_token_modality.";
    CLIENT_OPERATION_INPUT_TOKENS => "gen_ai_client_inference_operation_input_tokens";
    CLIENT_OPERATION_OUTPUT_TOKENS => "gen_ai_client_inference_operation_output_tokens";
}

#[cfg(test)]
mod tests {
    use super::super::{exposition_name, help};
    use super::*;

    #[test]
    fn every_instrument_of_the_conventions_is_published_in_order() {
        assert_eq!(ALL, otel::ALL);
        assert_eq!(SPELLED.len(), ALL.len());
    }

    #[test]
    fn the_spelled_out_names_and_help_texts_are_what_the_exporter_publishes() {
        for (instrument, prometheus, spelled_help) in SPELLED {
            assert_eq!(exposition_name(instrument), *prometheus);
            if let Some(spelled) = spelled_help {
                assert_ne!(
                    *spelled, instrument.description,
                    "{prometheus}: not an override"
                );
            }
            let expected = spelled_help.unwrap_or(instrument.description);
            assert_eq!(help(instrument), expected, "{prometheus}");
        }
    }
}
