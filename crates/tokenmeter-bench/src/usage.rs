//! [`Usage`]: the token counts of a stream's final `usage` object.

use serde::{Deserialize, Serialize};

/// Token counts from the final `usage` object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Usage {
    /// `usage.prompt_tokens`.
    pub(crate) prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub(crate) completion_tokens: Option<u64>,
    /// A `usage` of the stream held a count that is not a non-negative integer (a float, a
    /// string, ...): it was ignored, as if absent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) unusable: bool,
    /// `usage.prompt_tokens` or its cached tokens were implausible (above
    /// [`input_usage_bound`](crate::measured::input_usage_bound) of what was sent): ignored, as if absent
    /// ([`Measured::check_input_usage`](crate::measured::Measured::check_input_usage)).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) implausible_input: bool,
}

impl From<tokenmeter_openai::chunk::Usage> for Usage {
    fn from(usage: tokenmeter_openai::chunk::Usage) -> Self {
        Self {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            unusable: usage.unusable,
            implausible_input: false,
        }
    }
}
