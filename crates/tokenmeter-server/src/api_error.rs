//! [`ApiError`]: a refused request answered in vLLM's error shape,
//! `{"error":{"message","type","param","code"}}`, with vLLM's exception-like `type`
//! (`BadRequestError`, `NotFoundError`), the field at fault as `param`, and the HTTP status as
//! `code` (vLLM's `ErrorInfo`; the official OpenAI SDKs raise `BadRequestError` and
//! `NotFoundError` from the status).

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
        let kind = match self.status {
            StatusCode::NOT_FOUND => "NotFoundError",
            _ => "BadRequestError",
        };
        json!({"error": {
            "message": self.message,
            "type": kind,
            "param": self.param,
            "code": self.status.as_u16(),
        }})
    }
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
