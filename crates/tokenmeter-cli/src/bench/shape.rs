//! [`ShapeFlags`]: `--header`, `--extra-body`, `--max-tokens-field`, `--no-stream`,
//! `--no-stream-options`.

use tokenmeter_bench::{ExtraBody, HeaderArg, ShapeArgs, parse};

use super::enums::MaxTokensField;

/// The request-shaping flags of `tokenmeter bench`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct ShapeFlags {
    /// An HTTP header for every request, `'Name: value'` (repeatable). Values are never printed
    /// and are redacted from what the server sends back.
    #[arg(long = "header", short = 'H', value_name = "'NAME: VALUE'", value_parser = parse::header_arg)]
    pub(crate) headers: Vec<HeaderArg>,

    /// A JSON object merged into every request body (its keys replace the bench's own, as
    /// vLLM's `--extra-body` does), e.g. '{"temperature": 0, "top_p": 0.9}'.
    #[arg(long, value_name = "JSON", value_parser = parse::parse_extra_body)]
    pub(crate) extra_body: Option<ExtraBody>,

    /// The body field that carries the output length.
    #[arg(long, value_enum, default_value = "max_tokens", value_name = "FIELD")]
    pub(crate) max_tokens_field: MaxTokensField,

    /// Send `stream: false` and read one JSON answer: TTFT = E2E (as vLLM reports it), the
    /// output tokens from its `usage`.
    #[arg(long)]
    pub(crate) no_stream: bool,

    /// Do not send `stream_options: {"include_usage": true}` (some servers reject it); output
    /// tokens are then counted from the stream's chunks.
    #[arg(long)]
    pub(crate) no_stream_options: bool,
}

impl ShapeFlags {
    /// The library's request-shape settings.
    pub(crate) fn settings(self) -> ShapeArgs {
        let mut shape = ShapeArgs::default();
        shape.headers = self.headers;
        shape.extra_body = self.extra_body;
        shape.max_tokens_field = self.max_tokens_field.into();
        shape.no_stream = self.no_stream;
        shape.no_stream_options = self.no_stream_options;
        shape
    }
}
