//! The answer budget: a non-streaming answer is held whole before it is sent, so its
//! worst-case size, known from the request before it runs, must fit under
//! `--max-answer-size` (default [`DEFAULT_MAX_ANSWER`]); a larger one is refused with a 400
//! that names the limit and how to fit under it.
//!
//! The worst case is `n` × (`max_tokens` × the most bytes a token adds + [`CHOICE_BYTES`]) +
//! [`FIXED_BYTES`] and 6 bytes per character of the model name: a token adds its text (the
//! longest word of the vocabulary) and, with logprobs, its entry with every alternative the
//! longest word ([`worst_entry_bytes`]). With `top_logprobs` 20 a token takes up to about
//! 1.7 KB, so the default of 256 MiB holds `n` = 128 × 1,000 tokens (about 220 MB) and refuses
//! `n` = 128 × 8,190. A streaming answer keeps only what it has not sent yet, so it has no
//! such limit.
//!
//! Every whole answer in flight together is bounded by [`AnswerBudget`]
//! (`--max-answer-memory`, default [`DEFAULT_ANSWER_MEMORY`]): a non-streaming request holds
//! its worst case ([`AnswerHold`]) from before it is submitted to the engine until its last
//! byte is handed to hyper or the request ends on any other path; one that does not fit is
//! answered 503 with `retry-after` ([`over_budget`]) and never runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use super::api_error::ApiError;
use super::api_error::error_body;
use super::logprobs::worst_entry_bytes;
use super::openai::Parsed;

/// Default largest worst-case size of a non-streaming answer: 256 MiB.
pub const DEFAULT_MAX_ANSWER: usize = 256 * 1024 * 1024;

/// The most bytes of a choice outside its tokens: index, finish reason, message or text keys.
pub(crate) const CHOICE_BYTES: u64 = 160;

/// The most bytes of an answer outside its choices and model name: id, object, created,
/// `usage` and the server's `metrics`.
pub(crate) const FIXED_BYTES: u64 = 2048;

/// The largest size a non-streaming answer of `n` choices of `tokens` tokens each may take,
/// in the shape of `chat` or completions, with `logprobs` alternatives per token if asked for
/// and the model name `model` bytes long.
pub(crate) fn worst_case(
    chat: bool,
    n: u32,
    tokens: u32,
    logprobs: Option<u8>,
    model: usize,
) -> u64 {
    let text = tokenmeter_sim::VOCABULARY
        .iter()
        .map(|w| w.len())
        .max()
        .unwrap_or(0) as u64;
    let per_token = text + logprobs.map_or(0, |k| worst_entry_bytes(chat, k));
    let choice = u64::from(tokens)
        .saturating_mul(per_token)
        .saturating_add(CHOICE_BYTES);
    u64::from(n.max(1))
        .saturating_mul(choice)
        .saturating_add(FIXED_BYTES)
        .saturating_add(6 * model as u64)
}

/// The worst-case size of the answer to `parsed` (`chat` or completions; `model` the name
/// answers report) when it is held whole; `None` for a stream, which is not.
pub(crate) fn whole_answer(parsed: &Parsed, chat: bool, model: &str) -> Option<u64> {
    let options = &parsed.options;
    (!options.stream).then(|| {
        let tokens = parsed.generate.generated();
        worst_case(
            chat,
            parsed.choices(),
            tokens,
            options.logprobs,
            model.len(),
        )
    })
}

/// Refuses a non-streaming request whose answer could be larger than `limit` bytes (`chat` or
/// completions; `model` the name answers report).
pub(crate) fn check(
    parsed: &Parsed,
    chat: bool,
    limit: usize,
    model: &str,
) -> Result<(), ApiError> {
    let options = &parsed.options;
    let Some(worst) = over(parsed, chat, limit, model) else {
        return Ok(());
    };
    let tokens = parsed.generate.generated();
    let field = if chat { "top_logprobs" } else { "logprobs" };
    let n = options.n.max(1);
    let choices = match parsed.rest.len() {
        0 => format!("n {n}"),
        more => format!("n {n} × {} prompts", more + 1),
    };
    let logprobs = match options.logprobs {
        Some(k) => format!(" with {field} {k}"),
        None => String::new(),
    };
    Err(ApiError::bad_request(
        None,
        format!(
            "this answer could take {worst} bytes ({} MiB: {choices} × {tokens} tokens{logprobs}), more than this server's limit of {limit} bytes ({} MiB) for an answer held whole: ask for fewer choices (`n`), tokens (`max_tokens`) or alternatives (`{field}`), stream it with `\"stream\": true`, or start serve with a larger --max-answer-size",
            mib(worst),
            mib(limit as u64),
        ),
    ))
}

/// [`check`] for a Responses API request (`POST /v1/responses`), whose answer is held whole
/// streamed or not (its closing events repeat the text): the refusal names its own token
/// limit, `max_output_tokens`.
pub(crate) fn check_responses(parsed: &Parsed, limit: usize, model: &str) -> Result<(), ApiError> {
    let Some(worst) = over(parsed, true, limit, model) else {
        return Ok(());
    };
    Err(ApiError::bad_request(
        Some("max_output_tokens"),
        format!(
            "this answer could take {worst} bytes ({} MiB: {} tokens), more than this server's limit of {limit} bytes ({} MiB) for an answer held whole (a Responses answer is, streamed or not): ask for fewer tokens (`max_output_tokens`) or start serve with a larger --max-answer-size",
            mib(worst),
            parsed.generate.generated(),
            mib(limit as u64),
        ),
    ))
}

/// The worst-case size of the answer to `parsed` when it is held whole and larger than
/// `limit`, else `None`.
fn over(parsed: &Parsed, chat: bool, limit: usize, model: &str) -> Option<u64> {
    whole_answer(parsed, chat, model).filter(|&worst| worst > limit as u64)
}

/// Default memory every whole answer in flight may take together: 1 GiB, four answers of the
/// default largest worst case (`--max-answer-size`, 256 MiB) or nine of the `n` 128 ×
/// `max_tokens` 500 × `top_logprobs` 20 (about 110 MB each), and about 300,000 ordinary ones
/// (`n` 1, 128 tokens, no logprobs: about 3.6 KB each), far more than the connections can
/// ask for at once. See `Config::answer_memory_limit`.
pub const DEFAULT_ANSWER_MEMORY: usize = 1024 * 1024 * 1024;

/// The bytes of whole answers the server holds at once: `memory` (`--max-answer-memory`), no
/// more than `connections` answers of `max_answer` (more could never be in flight at once),
/// and no less than one answer of `max_answer` (so that every answer the size limit admits
/// can be served).
pub(crate) fn answer_memory(memory: usize, max_answer: usize, connections: usize) -> usize {
    memory
        .min(connections.saturating_mul(max_answer))
        .max(max_answer)
}

/// The bytes every whole answer in flight may take together, each counted at its worst case.
#[derive(Debug)]
pub(crate) struct AnswerBudget {
    limit: u64,
    used: AtomicU64,
}

impl AnswerBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: limit as u64,
            used: AtomicU64::new(0),
        })
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// Holds `bytes` until the returned guard is dropped, if they fit with what is held.
    pub(crate) fn hold(self: &Arc<Self>, bytes: u64) -> Option<AnswerHold> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .ok()?;
        Some(AnswerHold {
            budget: self.clone(),
            bytes,
        })
    }
}

/// The worst case of one whole answer, held of an [`AnswerBudget`]; given back when dropped.
/// It lives as long as the answer's bytes: the handler while the tokens come, then the body
/// ([`WholeBody`](super::sse::WholeBody)) until its last part is handed to hyper.
#[derive(Debug)]
pub(crate) struct AnswerHold {
    budget: Arc<AnswerBudget>,
    bytes: u64,
}

impl Drop for AnswerHold {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// The answer to a non-streaming request whose worst case of `worst` bytes does not fit in
/// what the answers in flight leave of `budget` bytes: 503 with `retry-after: 1`, OpenAI's
/// error body with code `overloaded`. The connection stays open.
pub(crate) fn over_budget(worst: u64, budget: &AnswerBudget) -> Response {
    let message = format!(
        "the whole answers this server is writing already take its budget of {} bytes ({} MiB), and this one could take {worst} bytes ({} MiB): retry shortly, stream it with `\"stream\": true`, or start serve with a larger --max-answer-memory",
        budget.limit,
        mib(budget.limit),
        mib(worst),
    );
    let body = error_body(StatusCode::SERVICE_UNAVAILABLE, &message);
    let mut response = Response::new(body.to_string().into());
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Bytes in MiB, one decimal.
fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::{self, Counter};

    fn chat(body: &str) -> Parsed {
        openai::chat(body.as_bytes(), 128, &Counter::Estimate).expect("valid")
    }

    #[test]
    fn the_default_holds_the_large_answers_and_refuses_the_largest() {
        let limit = DEFAULT_MAX_ANSWER;
        let fits = chat(
            r#"{"messages":[{"role":"user","content":"hi"}],"n":128,"max_tokens":500,"logprobs":true,"top_logprobs":20}"#,
        );
        assert_eq!(check(&fits, true, limit, "m"), Ok(()));
        let worst = worst_case(true, 128, 500, Some(20), 1);
        assert!((100_000_000..150_000_000).contains(&worst), "{worst}");
        let largest = chat(
            r#"{"messages":[{"role":"user","content":"hi"}],"n":128,"max_tokens":8190,"logprobs":true,"top_logprobs":20}"#,
        );
        let error = check(&largest, true, limit, "m").expect_err("refused");
        let message = error.message();
        for says in [
            "268435456 bytes",
            "n 128 × 8190 tokens with top_logprobs 20",
            "(`top_logprobs`)",
            "--max-answer-size",
            "\"stream\": true",
        ] {
            assert!(message.contains(says), "{says}: {message}");
        }
        assert_eq!(error.status(), axum::http::StatusCode::BAD_REQUEST);
        // Streamed, the same request keeps only what it has not sent: no limit.
        let streamed = chat(
            r#"{"messages":[{"role":"user","content":"hi"}],"n":128,"max_tokens":8190,"logprobs":true,"top_logprobs":20,"stream":true}"#,
        );
        assert_eq!(check(&streamed, true, limit, "m"), Ok(()));
        // A larger flag lets it through.
        assert_eq!(check(&largest, true, 4 << 30, "m"), Ok(()));
        // Without logprobs, the largest answer the limits allow fits.
        let plain =
            chat(r#"{"messages":[{"role":"user","content":"hi"}],"n":128,"max_tokens":8190}"#);
        assert_eq!(check(&plain, true, limit, "m"), Ok(()));
    }

    #[test]
    fn a_hold_is_given_back_when_dropped_and_a_refused_one_takes_nothing() {
        let budget = AnswerBudget::new(100);
        let first = budget.hold(60).expect("fits");
        assert_eq!(budget.used(), 60);
        assert!(budget.hold(41).is_none(), "60 + 41 > 100");
        assert_eq!(budget.used(), 60, "a refused hold takes nothing");
        let second = budget.hold(40).expect("60 + 40 fits exactly");
        assert_eq!(budget.used(), 100);
        drop(first);
        assert_eq!(budget.used(), 40);
        drop(second);
        assert_eq!(budget.used(), 0);
        assert!(budget.hold(101).is_none(), "never more than the budget");
        let response = over_budget(101, &budget);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn only_whole_answers_are_counted() {
        let whole = chat(r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":10}"#);
        assert_eq!(
            whole_answer(&whole, true, "m"),
            Some(worst_case(true, 1, 10, None, 1))
        );
        let streamed =
            chat(r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"stream":true}"#);
        assert_eq!(whole_answer(&streamed, true, "m"), None);
    }

    #[test]
    fn the_answer_memory_fits_one_answer_and_no_more_than_the_connections_hold() {
        let mib = 1024 * 1024;
        let default = DEFAULT_MAX_ANSWER;
        assert_eq!(
            answer_memory(DEFAULT_ANSWER_MEMORY, default, 1024),
            1024 * mib
        );
        assert_eq!(answer_memory(DEFAULT_ANSWER_MEMORY, default, 2), 512 * mib);
        assert_eq!(answer_memory(mib, default, 1024), default);
        assert_eq!(answer_memory(usize::MAX, usize::MAX, 2), usize::MAX);
        // The derivation of the default: four of the largest, about 300,000 ordinary ones.
        assert_eq!(DEFAULT_ANSWER_MEMORY / DEFAULT_MAX_ANSWER, 4);
        let large = worst_case(true, 128, 500, Some(20), 64);
        assert_eq!(DEFAULT_ANSWER_MEMORY as u64 / large, 9, "{large}");
        let ordinary = worst_case(true, 1, 128, None, 64);
        assert!(
            (250_000..350_000).contains(&(DEFAULT_ANSWER_MEMORY as u64 / ordinary)),
            "{ordinary}"
        );
    }

    #[test]
    fn completions_are_bounded_too() {
        let body = r#"{"prompt":"hi","n":128,"max_tokens":8190,"logprobs":20}"#;
        let parsed = openai::completion(body.as_bytes(), 128, &Counter::Estimate).expect("valid");
        let error = check(&parsed, false, DEFAULT_MAX_ANSWER, "m").expect_err("refused");
        assert!(error.message().contains("with logprobs 20"), "{error}");
        assert!(error.message().contains("(`logprobs`)"), "{error}");
    }
}
