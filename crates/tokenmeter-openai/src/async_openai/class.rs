//! [`error_class`]: the class an async-openai error ends a request with.

use ::async_openai::error::{ApiErrorResponse, OpenAIError, WrappedError};
use tokenmeter::ErrorClass;

use crate::chunk::{self, ChunkError};
use crate::error::StatusError;

/// The class a metered async-openai request ends with when `error` is its error, classified by
/// the same rules as the `reqwest` helper's [`StreamError`](crate::StreamError):
///
/// | `OpenAIError` | Class |
/// |---|---|
/// | `ApiError` (a non-2xx answer) | from the status and the error's `type` and `code`, as [`StatusError`]: 429 `rate_limited`, 503 `overloaded`, 408/504 `timeout`, other 5xx `server_error`, other 4xx `client_error`; a generic status gives way to a `type`/`code` naming a rate limit, an overload or a timeout |
/// | `Reqwest` | `timeout` for the client's own deadline, else `transport` |
/// | `StreamError` (the SSE stream broke: a reset, a body cut mid-chunk, bad SSE) | `transport` |
/// | `JSONDeserialize` of an error object the server put in the stream (`data: {"error": ...}`) | the object's class (a numeric `code` as a status, a named rate limit, overload or timeout, else `server_error`) |
/// | `JSONDeserialize` of anything else (a malformed chunk, an error body that is not JSON) | `transport` |
/// | `InvalidArgument` (refused by async-openai before sending) | `client_error` |
/// | anything else (file errors, middleware errors) | `_OTHER` |
///
/// # Examples
///
/// ```
/// use async_openai::error::OpenAIError;
/// use tokenmeter::ErrorClass;
/// use tokenmeter_openai::async_openai::error_class;
///
/// let in_stream = r#"{"error":{"message":"engine died","code":503}}"#;
/// let error = OpenAIError::JSONDeserialize(
///     serde_json::from_str::<u8>(in_stream).unwrap_err(),
///     in_stream.to_owned(),
/// );
/// assert_eq!(error_class(&error), ErrorClass::Overloaded);
/// let refused = OpenAIError::InvalidArgument("When stream is false, use Chat::create".into());
/// assert_eq!(error_class(&refused), ErrorClass::ClientError);
/// ```
pub fn error_class(error: &OpenAIError) -> ErrorClass {
    match error {
        OpenAIError::ApiError(response) => api_error_class(response),
        OpenAIError::Reqwest(error) if error.is_timeout() => ErrorClass::Timeout,
        OpenAIError::Reqwest(_) | OpenAIError::StreamError(_) => ErrorClass::Transport,
        OpenAIError::JSONDeserialize(_, content) => match chunk::parse(content) {
            Err(ChunkError::Server(error)) => error.class,
            _ => ErrorClass::Transport,
        },
        OpenAIError::InvalidArgument(_) => ErrorClass::ClientError,
        _ => ErrorClass::Other,
    }
}

/// The [`StatusError`] class of the status and the error object async-openai parsed from the
/// body (written back as the body it came from).
fn api_error_class(response: &ApiErrorResponse) -> ErrorClass {
    let body = WrappedError {
        error: response.api_error.clone(),
    };
    let body = serde_json::to_vec(&body).unwrap_or_default();
    StatusError::new(response.status_code.as_u16(), &body).class
}
