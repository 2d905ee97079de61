//! How a request ended: [`Outcome`], [`ErrorClass`], [`FinishReason`] and [`Degradation`].
//!
//! Every request ends with exactly one outcome (`docs/src/reference/metrics.md` §2). The string forms are
//! the label values exporters publish; they never change between versions.

use std::fmt;

/// The one outcome every request ends with.
///
/// # Examples
///
/// ```
/// use tokenmeter::{ErrorClass, Outcome};
/// assert_eq!(Outcome::Error(ErrorClass::RateLimited).as_str(), "error");
/// assert_eq!(Outcome::Error(ErrorClass::RateLimited).error_class(), Some(ErrorClass::RateLimited));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// The stream ended normally.
    Success,
    /// The request failed; the class is low-cardinality.
    Error(ErrorClass),
    /// The consumer dropped the request before its end (the client went away, a timeout in the
    /// caller dropped the future, ...). vLLM calls this `abort`.
    Cancelled,
    /// Answered, but by a fallback: not a full success.
    Degraded(Degradation),
}

impl Outcome {
    /// `success`, `error`, `cancelled` or `degraded`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error(_) => "error",
            Outcome::Cancelled => "cancelled",
            Outcome::Degraded(_) => "degraded",
        }
    }

    /// The error class, for [`Outcome::Error`].
    pub const fn error_class(self) -> Option<ErrorClass> {
        match self {
            Outcome::Error(class) => Some(class),
            _ => None,
        }
    }

    /// True only for [`Outcome::Success`]: a degraded answer is not a full success.
    pub const fn is_success(self) -> bool {
        matches!(self, Outcome::Success)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Error(class) => write!(f, "error ({class})"),
            Outcome::Degraded(why) => write!(f, "degraded ({why})"),
            other => f.write_str(other.as_str()),
        }
    }
}

/// The fixed, low-cardinality set of error classes (OTel `error.type`).
///
/// # Examples
///
/// ```
/// use tokenmeter::ErrorClass;
/// assert_eq!(ErrorClass::from_http_status(429), Some(ErrorClass::RateLimited));
/// assert_eq!(ErrorClass::from_http_status(503), Some(ErrorClass::Overloaded));
/// assert_eq!(ErrorClass::from_http_status(200), None);
/// assert_eq!(ErrorClass::Other.as_str(), "_OTHER");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ErrorClass {
    /// A deadline passed (HTTP 408 and 504 too).
    Timeout,
    /// HTTP 429: the server refused for rate.
    RateLimited,
    /// HTTP 503: the server is overloaded.
    Overloaded,
    /// Any other 5xx.
    ServerError,
    /// Any other 4xx: the request was wrong.
    ClientError,
    /// The connection failed, was reset, or the body could not be read or parsed.
    Transport,
    /// The answer ended without any token: a stream that closed (even at `[DONE]`) before any
    /// chunk carried one, or a complete answer with no output. `vllm bench serve` counts such
    /// a request as failed ("Never received a valid chunk"); so does a client metered with
    /// `tokenmeter-openai`.
    EmptyResponse,
    /// Anything else (including a panic while producing the stream).
    Other,
}

impl ErrorClass {
    /// Every class, in a fixed order.
    pub const ALL: [ErrorClass; 8] = [
        ErrorClass::Timeout,
        ErrorClass::RateLimited,
        ErrorClass::Overloaded,
        ErrorClass::ServerError,
        ErrorClass::ClientError,
        ErrorClass::Transport,
        ErrorClass::EmptyResponse,
        ErrorClass::Other,
    ];

    /// The label value: `timeout`, `rate_limited`, `overloaded`, `server_error`, `client_error`,
    /// `transport`, `empty_response` or `_OTHER`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Overloaded => "overloaded",
            ErrorClass::ServerError => "server_error",
            ErrorClass::ClientError => "client_error",
            ErrorClass::Transport => "transport",
            ErrorClass::EmptyResponse => "empty_response",
            ErrorClass::Other => "_OTHER",
        }
    }

    /// Parses a label value produced by [`ErrorClass::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The class of an HTTP status, or `None` for a status below 400.
    pub const fn from_http_status(status: u16) -> Option<Self> {
        Some(match status {
            408 | 504 => ErrorClass::Timeout,
            429 => ErrorClass::RateLimited,
            503 => ErrorClass::Overloaded,
            500..=599 => ErrorClass::ServerError,
            400..=499 => ErrorClass::ClientError,
            600.. => ErrorClass::Other,
            _ => return None,
        })
    }

    /// The class of an I/O error by its kind.
    pub fn from_io(error: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        match error.kind() {
            K::TimedOut | K::WouldBlock => ErrorClass::Timeout,
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::BrokenPipe
            | K::UnexpectedEof
            | K::AddrNotAvailable
            | K::InvalidData => ErrorClass::Transport,
            _ => ErrorClass::Other,
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a successful generation stopped (OpenAI `finish_reason`, vLLM `finished_reason`).
///
/// # Examples
///
/// ```
/// use tokenmeter::FinishReason;
/// assert_eq!(FinishReason::parse("tool_calls"), FinishReason::ToolCalls);
/// assert_eq!(FinishReason::parse("repetition"), FinishReason::Repetition); // vLLM 0.33
/// assert_eq!(FinishReason::parse("something_new"), FinishReason::Other);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FinishReason {
    /// A stop sequence or the end-of-sequence token.
    Stop,
    /// The token limit.
    Length,
    /// The model called tools.
    ToolCalls,
    /// A content filter cut the answer.
    ContentFilter,
    /// The engine ended the generation with an error of its own (vLLM's `error`: a
    /// retryable request-level failure, such as a KV-cache transfer that failed).
    Error,
    /// The engine detected a repetitive token pattern and stopped (vLLM's `repetition`).
    Repetition,
    /// Any other reason.
    Other,
}

impl FinishReason {
    /// `stop`, `length`, `tool_calls`, `content_filter`, `error`, `repetition` or `_OTHER`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Error => "error",
            FinishReason::Repetition => "repetition",
            FinishReason::Other => "_OTHER",
        }
    }

    /// Parses an OpenAI-style finish reason; unknown values become [`FinishReason::Other`].
    pub fn parse(s: &str) -> Self {
        match s {
            "stop" | "eos" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            "error" => FinishReason::Error,
            "repetition" => FinishReason::Repetition,
            _ => FinishReason::Other,
        }
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a degraded answer was produced.
///
/// # Examples
///
/// ```
/// use tokenmeter::Degradation;
/// assert_eq!(Degradation::OtherModel.as_str(), "other_model");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Degradation {
    /// A fallback model answered.
    OtherModel,
    /// A cached answer was served.
    Cached,
    /// The answer was cut short.
    Truncated,
    /// Any other fallback.
    Other,
}

impl Degradation {
    /// `other_model`, `cached`, `truncated` or `_OTHER`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Degradation::OtherModel => "other_model",
            Degradation::Cached => "cached",
            Degradation::Truncated => "truncated",
            Degradation::Other => "_OTHER",
        }
    }
}

impl fmt::Display for Degradation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_statuses_map_to_the_fixed_classes() {
        assert_eq!(ErrorClass::from_http_status(408), Some(ErrorClass::Timeout));
        assert_eq!(ErrorClass::from_http_status(504), Some(ErrorClass::Timeout));
        assert_eq!(
            ErrorClass::from_http_status(500),
            Some(ErrorClass::ServerError)
        );
        assert_eq!(
            ErrorClass::from_http_status(404),
            Some(ErrorClass::ClientError)
        );
        assert_eq!(ErrorClass::from_http_status(399), None);
    }

    #[test]
    fn error_class_round_trips_through_its_label() {
        for class in ErrorClass::ALL {
            assert_eq!(ErrorClass::parse(class.as_str()), Some(class));
        }
        assert_eq!(ErrorClass::parse("nope"), None);
    }

    #[test]
    fn io_errors_are_classified() {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(ErrorClass::from_io(&reset), ErrorClass::Transport);
        let slow = std::io::Error::from(std::io::ErrorKind::TimedOut);
        assert_eq!(ErrorClass::from_io(&slow), ErrorClass::Timeout);
    }

    #[test]
    fn only_success_is_success() {
        assert!(Outcome::Success.is_success());
        assert!(!Outcome::Degraded(Degradation::Cached).is_success());
        assert_eq!(Outcome::Cancelled.to_string(), "cancelled");
        assert_eq!(
            Outcome::Error(ErrorClass::Transport).to_string(),
            "error (transport)"
        );
    }
}
