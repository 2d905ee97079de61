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

use super::api_error::ApiError;
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

/// Refuses a non-streaming request whose answer could be larger than `limit` bytes (`chat` or
/// completions; `model` the name answers report).
pub(crate) fn check(
    parsed: &Parsed,
    chat: bool,
    limit: usize,
    model: &str,
) -> Result<(), ApiError> {
    let options = &parsed.options;
    if options.stream {
        return Ok(());
    }
    let tokens = parsed.generate.generated();
    let worst = worst_case(chat, options.n, tokens, options.logprobs, model.len());
    if worst <= limit as u64 {
        return Ok(());
    }
    let field = if chat { "top_logprobs" } else { "logprobs" };
    let logprobs = match options.logprobs {
        Some(k) => format!(" with {field} {k}"),
        None => String::new(),
    };
    Err(ApiError::bad_request(
        None,
        format!(
            "this answer could take {worst} bytes ({} MiB: n {} × {tokens} tokens{logprobs}), more than this server's limit of {limit} bytes ({} MiB) for an answer held whole: ask for fewer choices (`n`), tokens (`max_tokens`) or alternatives (`{field}`), stream it with `\"stream\": true`, or start serve with a larger --max-answer-size",
            mib(worst),
            options.n.max(1),
            mib(limit as u64),
        ),
    ))
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
    fn completions_are_bounded_too() {
        let body = r#"{"prompt":"hi","n":128,"max_tokens":8190,"logprobs":20}"#;
        let parsed = openai::completion(body.as_bytes(), 128, &Counter::Estimate).expect("valid");
        let error = check(&parsed, false, DEFAULT_MAX_ANSWER, "m").expect_err("refused");
        assert!(error.message().contains("with logprobs 20"), "{error}");
        assert!(error.message().contains("(`logprobs`)"), "{error}");
    }
}
