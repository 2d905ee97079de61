//! [`Usage`]: the token counts of a stream's final `usage` object, and [`KeptUsage`], the same
//! in 24 bytes where an `Option<Usage>` takes 40 (a run keeps one per request).

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

/// The flags of a [`KeptUsage`].
const SOME: u8 = 1;
const PROMPT: u8 = 1 << 1;
const COMPLETION: u8 = 1 << 2;
const UNUSABLE: u8 = 1 << 3;
const IMPLAUSIBLE_INPUT: u8 = 1 << 4;

/// An optional [`Usage`] in 24 bytes: its two counts, and one byte of flags for what is
/// present and its two booleans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeptUsage {
    prompt: u64,
    completion: u64,
    flags: u8,
}

impl KeptUsage {
    /// The `usage` kept.
    pub(crate) fn get(self) -> Option<Usage> {
        let has = |flag: u8| self.flags & flag != 0;
        has(SOME).then(|| Usage {
            prompt_tokens: has(PROMPT).then_some(self.prompt),
            completion_tokens: has(COMPLETION).then_some(self.completion),
            unusable: has(UNUSABLE),
            implausible_input: has(IMPLAUSIBLE_INPUT),
        })
    }
}

impl From<Option<Usage>> for KeptUsage {
    fn from(usage: Option<Usage>) -> Self {
        let Some(u) = usage else {
            return Self::default();
        };
        let flag = |on: bool, flag: u8| if on { flag } else { 0 };
        Self {
            prompt: u.prompt_tokens.unwrap_or_default(),
            completion: u.completion_tokens.unwrap_or_default(),
            flags: SOME
                | flag(u.prompt_tokens.is_some(), PROMPT)
                | flag(u.completion_tokens.is_some(), COMPLETION)
                | flag(u.unusable, UNUSABLE)
                | flag(u.implausible_input, IMPLAUSIBLE_INPUT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usages_read_back_exactly_in_24_bytes() {
        assert_eq!(std::mem::size_of::<KeptUsage>(), 24);
        assert_eq!(KeptUsage::default().get(), None);
        assert_eq!(KeptUsage::from(None).get(), None);
        for prompt_tokens in [None, Some(0), Some(u64::MAX)] {
            for completion_tokens in [None, Some(0), Some(7), Some(u64::MAX)] {
                for (unusable, implausible_input) in
                    [(false, false), (true, false), (false, true), (true, true)]
                {
                    let usage = Usage {
                        prompt_tokens,
                        completion_tokens,
                        unusable,
                        implausible_input,
                    };
                    assert_eq!(KeptUsage::from(Some(usage)).get(), Some(usage));
                }
            }
        }
    }
}
