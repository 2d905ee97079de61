//! [`Options`]: the generation options of a completion request, checked as vLLM checks them
//! (its request models and `SamplingParams`): a value of the wrong type or out of range is a
//! 400 naming the field.
//!
//! | Field | Accepted |
//! |---|---|
//! | `model` | a string (checked against the served names by the route) |
//! | `stream` | a boolean |
//! | `stream_options` | an object (`include_usage`: a boolean), with `"stream": true` only |
//! | `max_tokens`, `max_completion_tokens` (chat) | a whole number, at least 1 |
//! | `n` | a whole number from 1 to [`MAX_N`] |
//! | `temperature` | a number, at least 0 |
//! | `top_p` | a number in (0, 1] |
//! | `presence_penalty`, `frequency_penalty` | a number in [-2, 2] |
//! | `repetition_penalty` | a number above 0 |
//! | `top_k` | a whole number, -1 or 0 (no limit) or more |
//! | `min_p` | a number in [0, 1] |
//! | `min_tokens` | a whole number, at least 0 |
//! | `seed` | a whole number (64-bit) |
//! | `ignore_eos` | a boolean |
//! | `stop` | a string, or an array of up to [`MAX_STOP`] strings, none empty |
//! | `logprobs` | chat: a boolean; completions: a whole number from 0 to [`MAX_LOGPROBS`] |
//! | `top_logprobs` (chat) | a whole number from 0 to [`MAX_LOGPROBS`]; above 0 only with `"logprobs": true` |
//!
//! The sampling values change nothing in the simulated text; they are checked so that a client
//! sending a bad one meets the 400 a real server would answer. Other fields are ignored.

use tokenmeter_sim::Operation;

use super::api_error::ApiError;
use super::fields::{Fields, wrong};
use super::stop::Stops;

/// The most choices a request may ask for (`n`; OpenAI's limit).
pub(crate) const MAX_N: u32 = 128;
/// The most alternatives per token a request may ask for (vLLM's default `--max-logprobs`).
pub(crate) const MAX_LOGPROBS: u32 = 20;
/// The most stop sequences a request may give (OpenAI's limit).
pub(crate) const MAX_STOP: usize = 4;

/// What a completion request asks for, besides its prompt.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    /// The model named, if any.
    pub(crate) model: Option<String>,
    /// Stream the answer as SSE.
    pub(crate) stream: bool,
    /// Send a final `usage` chunk (`stream_options.include_usage`).
    pub(crate) include_usage: bool,
    /// `max_completion_tokens`, else `max_tokens`.
    pub(crate) max_tokens: Option<u32>,
    /// Choices to generate.
    pub(crate) n: u32,
    /// Stop sequences.
    pub(crate) stop: Option<Stops>,
    /// Log probabilities: `Some(k)` with `k` alternatives per token (0: the chosen token's
    /// only).
    pub(crate) logprobs: Option<u8>,
}

/// Reads and checks the options of a request to `operation`'s endpoint.
pub(crate) fn read(fields: Fields<'_>, operation: Operation) -> Result<Options, ApiError> {
    let chat = operation != Operation::TextCompletion;
    let model = fields.str("model")?.map(str::to_owned);
    let stream = fields.bool("stream")?.unwrap_or(false);
    let include_usage = match fields.object("stream_options")? {
        Some(_) if !stream => {
            return Err(ApiError::bad_request(
                Some("stream_options"),
                "`stream_options` can only be given with `\"stream\": true`",
            ));
        }
        Some(options) => options.bool("include_usage")?.unwrap_or(false),
        None => false,
    };
    let max_tokens = length(fields, "max_tokens")?;
    let max_tokens = if chat {
        length(fields, "max_completion_tokens")?.or(max_tokens)
    } else {
        max_tokens
    };
    let n = fields.integer("n", 1, i64::from(MAX_N))?.unwrap_or(1) as u32;
    check_sampling(fields)?;
    let stop = Stops::read(fields, MAX_STOP)?;
    let logprobs = if chat {
        chat_logprobs(fields)?
    } else {
        fields
            .integer("logprobs", 0, i64::from(MAX_LOGPROBS))?
            .map(|k| k as u8)
    };
    Ok(Options {
        model,
        stream,
        include_usage,
        max_tokens,
        n,
        stop,
        logprobs,
    })
}

/// An output length: a whole number, at least 1.
fn length(fields: Fields<'_>, name: &'static str) -> Result<Option<u32>, ApiError> {
    let Some(value) = fields.get(name) else {
        return Ok(None);
    };
    match value.as_i64() {
        Some(n) if n >= 1 => Ok(Some(u32::try_from(n).unwrap_or(u32::MAX))),
        Some(n) => Err(ApiError::bad_request(
            Some(name),
            format!("`{name}` must be at least 1, got {n}: ask for at least 1 token"),
        )),
        None if value.is_number() => Err(ApiError::bad_request(
            Some(name),
            format!("`{name}` must be a whole number, at least 1"),
        )),
        None => Err(wrong(name, "a whole number", value)),
    }
}

/// The sampling values, which must be of the right type and in range.
fn check_sampling(fields: Fields<'_>) -> Result<(), ApiError> {
    fields.number("temperature", |t| t >= 0.0, "at least 0")?;
    fields.number("top_p", |p| p > 0.0 && p <= 1.0, "in (0, 1]")?;
    for penalty in ["presence_penalty", "frequency_penalty"] {
        fields.number(penalty, |p| (-2.0..=2.0).contains(&p), "in [-2, 2]")?;
    }
    fields.number("repetition_penalty", |p| p > 0.0, "above 0")?;
    fields.integer("top_k", -1, i64::MAX)?;
    fields.number("min_p", |p| (0.0..=1.0).contains(&p), "in [0, 1]")?;
    fields.integer("min_tokens", 0, i64::MAX)?;
    fields.integer("seed", i64::MIN, i64::MAX)?;
    fields.bool("ignore_eos")?;
    fields.str("user")?;
    Ok(())
}

/// Chat's `logprobs` (a boolean) and `top_logprobs`.
fn chat_logprobs(fields: Fields<'_>) -> Result<Option<u8>, ApiError> {
    let wanted = fields.bool("logprobs")?.unwrap_or(false);
    let top = fields
        .integer("top_logprobs", 0, i64::from(MAX_LOGPROBS))?
        .unwrap_or(0) as u8;
    if top > 0 && !wanted {
        return Err(ApiError::bad_request(
            Some("top_logprobs"),
            "`top_logprobs` needs `\"logprobs\": true`",
        ));
    }
    Ok(wanted.then_some(top))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn options(body: Value, operation: Operation) -> Result<Options, ApiError> {
        read(Fields::of(&body).expect("object"), operation)
    }

    #[test]
    fn bad_values_are_refused_naming_the_field() {
        for (body, param) in [
            (json!({"temperature": "hot"}), "temperature"),
            (json!({"temperature": -0.5}), "temperature"),
            (json!({"top_p": 0}), "top_p"),
            (json!({"top_p": 1.5}), "top_p"),
            (json!({"presence_penalty": 3}), "presence_penalty"),
            (json!({"frequency_penalty": -2.5}), "frequency_penalty"),
            (json!({"max_tokens": 0}), "max_tokens"),
            (json!({"max_tokens": "10"}), "max_tokens"),
            (
                json!({"max_completion_tokens": 1.5}),
                "max_completion_tokens",
            ),
            (json!({"n": 0}), "n"),
            (json!({"n": MAX_N + 1}), "n"),
            (json!({"seed": "42"}), "seed"),
            (json!({"stream": "yes"}), "stream"),
            (
                json!({"stream_options": {"include_usage": true}}),
                "stream_options",
            ),
            (json!({"stop": ["a", "b", "c", "d", "e"]}), "stop"),
            (json!({"stop": 7}), "stop"),
            (json!({"logprobs": 2}), "logprobs"),
            (json!({"top_logprobs": 2}), "top_logprobs"),
            (
                json!({"logprobs": true, "top_logprobs": 21}),
                "top_logprobs",
            ),
            (json!({"model": 3}), "model"),
        ] {
            let error = options(body.clone(), Operation::Chat).expect_err("refused");
            assert_eq!(error.param(), Some(param), "{body}: {error}");
            assert!(error.message().contains(param), "{body}: {error}");
        }
        let error = options(json!({"logprobs": 21}), Operation::TextCompletion)
            .expect_err("above the limit");
        assert_eq!(error.param(), Some("logprobs"));
    }

    #[test]
    fn good_values_are_read() {
        let chat = options(
            json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
                "max_tokens": 9, "max_completion_tokens": 5, "n": 3, "temperature": 0,
                "top_p": 1, "seed": -1, "stop": "x", "logprobs": true, "top_logprobs": 2,
                "presence_penalty": null}),
            Operation::Chat,
        )
        .expect("valid");
        assert_eq!(chat.model.as_deref(), Some("m"));
        assert!(chat.stream && chat.include_usage);
        assert_eq!(
            (chat.max_tokens, chat.n, chat.logprobs),
            (Some(5), 3, Some(2))
        );
        assert!(chat.stop.is_some());
        let text = options(
            json!({"max_tokens": 4, "max_completion_tokens": 2, "logprobs": 0}),
            Operation::TextCompletion,
        )
        .expect("valid");
        assert_eq!(
            (text.max_tokens, text.n, text.logprobs),
            (Some(4), 1, Some(0))
        );
        let plain = options(json!({"logprobs": false}), Operation::Chat).expect("valid");
        assert_eq!(plain.logprobs, None);
    }
}
