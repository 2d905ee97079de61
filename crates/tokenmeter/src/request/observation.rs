//! [`Observation`]: what one stream item means to the meter.

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
}

impl Observation {
    /// An item carrying `tokens` tokens.
    pub const fn tokens(tokens: u32) -> Self {
        Self {
            tokens,
            finish: None,
            error: None,
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
        }
    }

    /// The same observation, also reporting the stream's finish reason.
    pub const fn with_finish(mut self, reason: FinishReason) -> Self {
        self.finish = Some(reason);
        self
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
