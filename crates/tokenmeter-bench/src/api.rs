//! [`Api`]: which OpenAI API an endpoint speaks, as its URL names it
//! ([`endpoint_url`](crate::url::endpoint_url)).

/// Which OpenAI API the endpoint speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completions,
    /// `/v1/responses`: OpenAI's Responses API (`input`, `max_output_tokens`; typed SSE
    /// events, metered through the same chunk parser as chat).
    Responses,
}

impl Api {
    /// The OTel operation name.
    pub(crate) fn operation(self) -> &'static str {
        match self {
            Api::Chat | Api::Responses => "chat",
            Api::Completions => "text_completion",
        }
    }

    /// The API an endpoint path names: `…/chat/completions`, `…/responses`, else completions.
    pub(crate) fn of_path(path: &str) -> Self {
        let path = path.trim_end_matches('/');
        if path.ends_with("chat/completions") {
            Api::Chat
        } else if path.ends_with("/responses") {
            Api::Responses
        } else {
            Api::Completions
        }
    }

    /// The request body's field of the output length, when the API fixes it
    /// (`max_output_tokens`); `None`: `--max-tokens-field`'s.
    pub(crate) fn length_field(self) -> Option<&'static str> {
        (self == Api::Responses).then_some("max_output_tokens")
    }
}
