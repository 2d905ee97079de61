//! Every error the server answers has one shape, vLLM's `ErrorResponse`:
//! `{"error":{"message","type","param","code"}}` with the HTTP status as the integer `code`
//! ([`error_body`]). `type` is vLLM's exception name for the statuses vLLM raises them for
//! (`BadRequestError` 400, `NotFoundError` 404, `InternalServerError` 500,
//! `ServiceUnavailableError` 503), else the status' reason phrase, as vLLM's handler of
//! framework errors writes it (`Not Found` for an unknown route, `Method Not Allowed`,
//! `Request Timeout`, `Too Many Requests`, ...). [`ApiError`] is a request refused for its
//! body or its model, with the field at fault as `param`. The official OpenAI SDKs raise
//! their error classes from the status.

use axum::http::StatusCode;
use serde_json::{Value, json};

/// The longest client-sent name (a model) quoted in a message; longer ones are withheld.
const QUOTED_LIMIT: usize = 256;

/// A request refused before it reached the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
    param: Option<&'static str>,
}

impl ApiError {
    /// 400: a body that is not the JSON the endpoint expects, or a field (`param`) of the
    /// wrong type or out of range.
    pub(crate) fn bad_request(param: Option<&'static str>, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            param,
        }
    }

    /// 404 for a model this server does not serve: vLLM's ``The model `x` does not exist.``
    pub(crate) fn unknown_model(name: &str) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            message: format!("The model `{}` does not exist.", quoted(name)),
            param: Some("model"),
        }
    }

    /// The HTTP status.
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The field at fault, if one is.
    #[cfg(test)]
    pub(crate) fn param(&self) -> Option<&'static str> {
        self.param
    }

    /// The body: `{"error":{"message","type","param","code"}}`.
    pub(crate) fn body(&self) -> Value {
        let mut body = error_body(self.status, &self.message);
        body["error"]["param"] = self.param.into();
        body
    }
}

/// vLLM's `type` of an error answered with `status`.
fn kind(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "BadRequestError",
        StatusCode::NOT_FOUND => "NotFoundError",
        StatusCode::UNPROCESSABLE_ENTITY => "UnprocessableEntityError",
        StatusCode::INTERNAL_SERVER_ERROR => "InternalServerError",
        StatusCode::SERVICE_UNAVAILABLE => "ServiceUnavailableError",
        other => phrase(other),
    }
}

/// The reason phrase of `status` (Python's `HTTPStatus(status).phrase`, which vLLM writes as
/// the `type` of framework errors).
fn phrase(status: StatusCode) -> &'static str {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => "Request Entity Too Large",
        other => other.canonical_reason().unwrap_or("Error"),
    }
}

/// The error body of `status`: `{"error":{"message","type","param":null,"code":status}}`.
pub(crate) fn error_body(status: StatusCode, message: &str) -> Value {
    json!({"error": {
        "message": message,
        "type": kind(status),
        "param": null,
        "code": status.as_u16(),
    }})
}

/// The body of a framework error (an unknown route, a method the route does not answer):
/// `type` is the status' reason phrase, as vLLM's handler of HTTP exceptions writes it.
pub(crate) fn http_error_body(status: StatusCode, message: &str) -> Value {
    let mut body = error_body(status, message);
    body["error"]["type"] = phrase(status).into();
    body
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// `name` as a 404 quotes it: as vLLM does when it has the shape of a model id (at most
/// [`QUOTED_LIMIT`] characters of letters, digits and `._:/@+-`, no piece that looks like a
/// credential), so that a mistyped `--model` is named; otherwise withheld, as the server
/// repeats nothing else a client sent (a key pasted in the wrong field must not come back).
fn quoted(name: &str) -> &str {
    const WITHHELD: &str = "(the name sent, withheld: it does not look like a model id)";
    let shaped = !name.is_empty()
        && name.len() <= QUOTED_LIMIT
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:/@+-".contains(c));
    if shaped && !looks_like_a_credential(name) {
        name
    } else {
        WITHHELD
    }
}

/// A piece of `name` that looks like a credential: an OpenAI-style `sk-` key, the word `key`
/// or `token`, or a long run of letters and digits mixed (hex or base64 secrets).
fn looks_like_a_credential(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    if ["sk-", "sk_", "key", "token", "secret", "bearer"]
        .iter()
        .any(|word| lower.contains(word))
    {
        return true;
    }
    lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|piece| {
            piece.len() >= 20
                && piece.chars().any(|c| c.is_ascii_digit())
                && piece.chars().any(|c| c.is_ascii_alphabetic())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_vllms_type_and_an_integer_code() {
        for (status, kind) in [
            (StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError"),
            (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailableError"),
            (StatusCode::TOO_MANY_REQUESTS, "Too Many Requests"),
            (StatusCode::REQUEST_TIMEOUT, "Request Timeout"),
            (StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large"),
        ] {
            let body = error_body(status, "m");
            assert_eq!(
                body,
                json!({"error": {"message": "m", "type": kind, "param": null,
                    "code": status.as_u16()}})
            );
        }
        let route = http_error_body(StatusCode::NOT_FOUND, "no such route");
        assert_eq!(route["error"]["type"], "Not Found");
        assert_eq!(route["error"]["code"], 404);
        let method = http_error_body(StatusCode::METHOD_NOT_ALLOWED, "no");
        assert_eq!(method["error"]["type"], "Method Not Allowed");
    }

    #[test]
    fn errors_have_vllms_shape() {
        let error = ApiError::unknown_model("gpt-5");
        assert_eq!(
            error.body(),
            json!({"error": {"message": "The model `gpt-5` does not exist.",
                "type": "NotFoundError", "param": "model", "code": 404}})
        );
        let error = ApiError::bad_request(Some("temperature"), "no");
        assert_eq!(error.status(), StatusCode::BAD_REQUEST);
        assert_eq!(error.body()["error"]["type"], "BadRequestError");
        assert_eq!(error.body()["error"]["code"], 400);
    }

    #[test]
    fn names_that_are_not_model_ids_are_withheld() {
        for shown in [
            "meta-llama/Llama-3.1-8B-Instruct",
            "lama-8b",
            "qwen2.5:7b",
            "m",
        ] {
            let message = ApiError::unknown_model(shown).message().to_owned();
            assert_eq!(message, format!("The model `{shown}` does not exist."));
        }
        for hidden in [
            "sk-planted-4c1e9b7d20a3".to_owned(),
            "my key".to_owned(),
            "m".repeat(300),
            "a7f3c9e1b5d2048f6a9c3e7b".to_owned(),
            "model\u{1b}[31m".to_owned(),
            String::new(),
        ] {
            let message = ApiError::unknown_model(&hidden).message().to_owned();
            assert!(message.contains("withheld"), "{hidden}: {message}");
        }
    }
}
