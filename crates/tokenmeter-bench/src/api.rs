//! [`Api`]: which OpenAI API an endpoint speaks, as its URL names it
//! ([`endpoint_url`](crate::url::endpoint_url)).

/// Which OpenAI API the endpoint speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completions,
}

impl Api {
    /// The OTel operation name.
    pub(crate) fn operation(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "text_completion",
        }
    }
}
