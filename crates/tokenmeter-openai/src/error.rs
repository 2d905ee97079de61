//! Every way a streaming completion can go wrong, classified: [`StreamError`], [`StatusError`],
//! and the [`TransportError`] trait that classifies the body stream's own errors.

use std::convert::Infallible;
use std::fmt;

use tokenmeter::ErrorClass;
use tokenmeter::stream::HasErrorClass;

use crate::chunk::{self, ServerError};

/// Why a stream of chunks ended badly. Each one ends the metered request with
/// [`class`](StreamError::class).
///
/// # Examples
///
/// ```
/// use tokenmeter::ErrorClass;
/// use tokenmeter_openai::{StatusError, StreamError};
///
/// let error = StreamError::Status(StatusError::new(429, br#"{"error":{"message":"slow down"}}"#));
/// assert_eq!(error.class(), ErrorClass::RateLimited);
/// assert_eq!(error.to_string(), "HTTP 429 (rate_limited): slow down");
/// assert_eq!(StreamError::Truncated.class(), ErrorClass::Transport);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamError {
    /// The server answered with a status other than 2xx.
    Status(StatusError),
    /// The body could not be read (reset, closed mid-chunk, a timeout of the HTTP client, ...).
    Transport {
        /// `transport`, or `timeout` when the client's own deadline passed.
        class: ErrorClass,
        /// What failed and what the transport said (without URLs): "reading the stream
        /// failed: ..." or "sending the request failed: ...".
        message: String,
    },
    /// An event was not valid server-sent events, UTF-8, or JSON of a completion chunk.
    Malformed(String),
    /// The server put an error object or an `error` event in the stream.
    Server(ServerError),
    /// The body ended before `[DONE]` and before any finish reason.
    Truncated,
    /// An event or a line was longer than the limit
    /// ([`SseChunks::max_event_size`](crate::SseChunks::max_event_size)): the stream was
    /// stopped before more of it was kept.
    EventTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
}

impl StreamError {
    /// The class the request ends with: from the status, the transport, or the error object;
    /// `transport` for a malformed or truncated body or an event over the size limit.
    pub fn class(&self) -> ErrorClass {
        match self {
            StreamError::Status(e) => e.class,
            StreamError::Transport { class, .. } => *class,
            StreamError::Malformed(_)
            | StreamError::Truncated
            | StreamError::EventTooLarge { .. } => ErrorClass::Transport,
            StreamError::Server(e) => e.class,
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::Status(e) => e.fmt(f),
            StreamError::Transport { message, .. } => f.write_str(message),
            StreamError::Malformed(message) => write!(f, "malformed stream: {message}"),
            StreamError::Server(e) => write!(
                f,
                "the server sent an error ({}): {}",
                e.class.as_str(),
                e.message
            ),
            StreamError::Truncated => f.write_str(
                "the stream ended before [DONE] and before any finish_reason (truncated body); \
                 check proxies and timeouts between the client and the server",
            ),
            StreamError::EventTooLarge { limit } => write!(
                f,
                "an SSE event or line is longer than the limit of {} bytes; the stream was \
                 stopped there (raise the limit if the server's events are that large)",
                limit
            ),
        }
    }
}

impl std::error::Error for StreamError {}

impl HasErrorClass for StreamError {
    fn error_class(&self) -> ErrorClass {
        self.class()
    }
}

/// A response whose status was not 2xx, classified from the status and the error object of its
/// body when there is one.
///
/// The status decides, except that a generic status (`server_error`, `client_error`, `_OTHER`)
/// gives way to a body that names a rate limit, an overload or a timeout (for example HTTP 529
/// with `"type": "overloaded_error"` is `overloaded`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatusError {
    /// The HTTP status code.
    pub status: u16,
    /// Its class.
    pub class: ErrorClass,
    /// The body's error message, or an excerpt of the body (at most
    /// [`MESSAGE_LIMIT`](crate::chunk::MESSAGE_LIMIT) characters, as the server sent them: see
    /// there before showing it).
    pub message: String,
}

impl StatusError {
    /// Classifies a status and (the start of) its body.
    ///
    /// ```
    /// use tokenmeter::ErrorClass;
    /// use tokenmeter_openai::StatusError;
    ///
    /// let vllm = br#"{"object":"error","message":"too long","type":"BadRequestError","code":400}"#;
    /// let error = StatusError::new(400, vllm);
    /// assert_eq!((error.class, error.message.as_str()), (ErrorClass::ClientError, "too long"));
    /// let overloaded = StatusError::new(529, br#"{"error":{"type":"overloaded_error"}}"#);
    /// assert_eq!(overloaded.class, ErrorClass::Overloaded);
    /// ```
    pub fn new(status: u16, body: &[u8]) -> Self {
        let by_status = ErrorClass::from_http_status(status).unwrap_or(ErrorClass::Other);
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let value = serde_json::from_str::<serde_json::Value>(text).ok();
        let object = value.as_ref().and_then(|v| match v.get("error") {
            Some(error) => Some(error),
            None => v.get("message").is_some().then_some(v),
        });
        let Some(object) = object else {
            return Self {
                status,
                class: by_status,
                message: chunk::excerpt(text),
            };
        };
        let named = chunk::error_class(object).filter(|c| {
            matches!(
                c,
                ErrorClass::RateLimited | ErrorClass::Overloaded | ErrorClass::Timeout
            )
        });
        let class = match (by_status, named) {
            (ErrorClass::ServerError | ErrorClass::ClientError | ErrorClass::Other, Some(c)) => c,
            _ => by_status,
        };
        Self {
            status,
            class,
            message: chunk::server_error(object).message,
        }
    }
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {} ({})", self.status, self.class.as_str())?;
        if self.message.is_empty() {
            f.write_str(" with an empty body")
        } else {
            write!(f, ": {}", self.message)
        }
    }
}

impl std::error::Error for StatusError {}

/// An error of the byte stream under the SSE parser: how it is classified and described.
///
/// Implemented for [`std::io::Error`] (by kind), [`Infallible`] (in-memory bodies, fuzzing)
/// and, with the `reqwest` feature, `reqwest::Error`. Implement it for the error type of any
/// other HTTP client.
///
/// # Examples
///
/// ```
/// use tokenmeter::ErrorClass;
/// use tokenmeter_openai::TransportError;
///
/// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
/// assert_eq!(reset.class(), ErrorClass::Transport);
/// ```
pub trait TransportError: Sized {
    /// Its class: usually `transport`, `timeout` for a deadline.
    fn class(&self) -> ErrorClass;

    /// One line saying what went wrong, with no URL or secret in it.
    fn describe(self) -> String;
}

impl TransportError for Infallible {
    fn class(&self) -> ErrorClass {
        match *self {}
    }

    fn describe(self) -> String {
        match self {}
    }
}

impl TransportError for std::io::Error {
    fn class(&self) -> ErrorClass {
        match ErrorClass::from_io(self) {
            // Any failure to read the body is a transport failure unless it is a timeout.
            ErrorClass::Other => ErrorClass::Transport,
            class => class,
        }
    }

    fn describe(self) -> String {
        describe_error(&self)
    }
}

/// Joins an error and its sources into one line, `error: source: source of the source`, leaving
/// out a source whose text the line already holds (many errors repeat their source's message
/// in their own).
///
/// What [`TransportError::describe`] says for [`std::io::Error`] and `reqwest::Error`; use it
/// for errors of your own HTTP client.
///
/// # Examples
///
/// ```
/// use std::{error::Error, fmt, io};
/// use tokenmeter_openai::describe_error;
///
/// /// An error that says `what` and keeps the I/O error as its source.
/// #[derive(Debug)]
/// struct Failed(&'static str, io::Error);
///
/// impl fmt::Display for Failed {
///     fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
///         f.write_str(self.0)
///     }
/// }
///
/// impl Error for Failed {
///     fn source(&self) -> Option<&(dyn Error + 'static)> {
///         Some(&self.1)
///     }
/// }
///
/// let refused = || io::Error::from(io::ErrorKind::ConnectionRefused);
/// let sending = Failed("error sending request", refused());
/// assert_eq!(describe_error(&sending), "error sending request: connection refused");
/// // A source already quoted is not repeated.
/// let quoting = Failed("connect: connection refused", refused());
/// assert_eq!(describe_error(&quoting), "connect: connection refused");
/// ```
pub fn describe_error(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
