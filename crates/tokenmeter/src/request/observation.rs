//! [`Observation`]: what one stream item means to the meter.

use std::time::Duration;

use crate::outcome::{ErrorClass, FinishReason};

/// What one item of a stream carried: a number of tokens (0 for frames that carry none), an
/// optional finish reason, and an optional error, which ends the request.
///
/// # Examples
///
/// ```
/// use tokenmeter::{ErrorClass, FinishReason, Observation};
///
/// let chunk = Observation::tokens(3).with_finish(FinishReason::Stop);
/// assert_eq!(chunk.token_count(), 3);
/// assert_eq!(Observation::frame().token_count(), 0);
/// assert_eq!(Observation::error(ErrorClass::Transport).error_class(), Some(ErrorClass::Transport));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Observation {
    tokens: u32,
    finish: Option<FinishReason>,
    error: Option<ErrorClass>,
    at: Option<Duration>,
    reasoning: bool,
}

impl Observation {
    /// An item carrying `tokens` tokens.
    pub const fn tokens(tokens: u32) -> Self {
        Self {
            tokens,
            finish: None,
            error: None,
            at: None,
            reasoning: false,
        }
    }

    /// An item carrying no token: a role-only frame, a keep-alive, an empty delta.
    pub const fn frame() -> Self {
        Self::tokens(0)
    }

    /// An error item of `class`: ends the request with [`Outcome::Error`](crate::Outcome::Error).
    pub const fn error(class: ErrorClass) -> Self {
        Self {
            tokens: 0,
            finish: None,
            error: Some(class),
            at: None,
            reasoning: false,
        }
    }

    /// An item of `tokens` *reasoning* tokens: counted like [`tokens`](Self::tokens), but the
    /// time to first output token waits for the first item that is not reasoning
    /// ([`Request::record_reasoning_tokens`](crate::Request::record_reasoning_tokens)).
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::Observation;
    ///
    /// let thinking = Observation::reasoning(2);
    /// assert_eq!(thinking.token_count(), 2);
    /// assert!(thinking.is_reasoning());
    /// assert!(!Observation::tokens(2).is_reasoning());
    /// ```
    pub const fn reasoning(tokens: u32) -> Self {
        let mut observation = Self::tokens(tokens);
        observation.reasoning = true;
        observation
    }

    /// True for an item of reasoning tokens ([`reasoning`](Self::reasoning)).
    pub const fn is_reasoning(&self) -> bool {
        self.reasoning
    }

    /// The same observation, also reporting the stream's finish reason.
    pub const fn with_finish(mut self, reason: FinishReason) -> Self {
        self.finish = Some(reason);
        self
    }

    /// The same observation, taken at `at` (read from the series' clock) instead of when the
    /// request records it: for a reader that stamps each item as it parses it, so the record
    /// holds the parse instant exactly (see [`Request::record_tokens_at`](crate::Request::record_tokens_at)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use tokenmeter::Observation;
    ///
    /// let chunk = Observation::tokens(1).at(Duration::from_millis(40));
    /// assert_eq!(chunk.instant(), Some(Duration::from_millis(40)));
    /// assert_eq!(Observation::tokens(1).instant(), None);
    /// ```
    pub const fn at(mut self, at: Duration) -> Self {
        self.at = Some(at);
        self
    }

    /// When the item was taken, if the reader said ([`at`](Self::at)).
    pub const fn instant(&self) -> Option<Duration> {
        self.at
    }

    /// Tokens carried.
    pub const fn token_count(&self) -> u32 {
        self.tokens
    }

    /// The finish reason, if the item reported one.
    pub const fn finish_reason(&self) -> Option<FinishReason> {
        self.finish
    }

    /// The error class, if the item was an error.
    pub const fn error_class(&self) -> Option<ErrorClass> {
        self.error
    }
}

/// A token count is an observation of an item that carried that many tokens: what a closure
/// observer returns when it only counts ([`Observe`](crate::stream::Observe)).
impl From<u32> for Observation {
    fn from(tokens: u32) -> Self {
        Self::tokens(tokens)
    }
}
