//! [`Answer`]: a whole (non-streaming) answer, written as JSON while its tokens come.
//!
//! Each choice keeps its text, its reasoning text and the JSON bytes of its `logprobs`
//! ([`JsonLogprobs`]), appended token by token; nothing else of a token is kept. At the end the
//! answer becomes a list of byte parts (the head, each choice, the `usage` tail) that are
//! handed to hyper one by one and freed as they go ([`WholeBody`](super::sse::WholeBody)), so
//! the server holds about the answer's own size, once. Its worst case is bounded before the
//! request runs (`budget.rs`).

use bytes::Bytes;
use serde_json::Value;
use tokenmeter::FinishReason;

use super::choices::Piece;
use super::chunks::Frames;
use super::logprobs::{JsonLogprobs, write_json_str};

/// One choice, as its tokens come.
#[derive(Debug)]
struct Choice {
    text: String,
    reasoning: String,
    finish: FinishReason,
    logprobs: Option<JsonLogprobs>,
}

/// The choices of a whole answer, as their tokens come.
#[derive(Debug)]
pub(crate) struct Answer {
    chat: bool,
    choices: Vec<Choice>,
}

impl Answer {
    /// `n` choices of the endpoint of `frames`, with `logprobs` when asked for.
    pub(crate) fn new(frames: &Frames, n: usize, logprobs: bool) -> Self {
        let chat = frames.is_chat();
        let choices = (0..n)
            .map(|_| Choice {
                text: String::new(),
                reasoning: String::new(),
                finish: FinishReason::Stop,
                logprobs: logprobs.then(|| JsonLogprobs::new(chat)),
            })
            .collect();
        Self { chat, choices }
    }

    /// Takes one token of a choice: its text, its finish reason, and its logprobs written as
    /// JSON (then dropped). A piece of a choice this answer does not have is ignored.
    pub(crate) fn push(&mut self, piece: Piece) {
        let Some(choice) = self.choices.get_mut(piece.index as usize) else {
            return;
        };
        if piece.reasoning && self.chat {
            choice.reasoning.push_str(&piece.text);
        } else {
            choice.text.push_str(&piece.text);
        }
        if let Some(reason) = piece.finish {
            choice.finish = reason;
        }
        if let (Some(json), Some(lp)) = (&mut choice.logprobs, &piece.logprobs) {
            json.push(lp, piece.offset);
        }
    }

    /// The answer's JSON, in parts: the head of `frames`, each choice in order of its index
    /// (each choice's buffers are consumed as it is written), and the tail with `usage`
    /// (`completion` counts the tokens of every choice) and the server's `metrics` if given.
    pub(crate) fn into_parts(
        self,
        frames: &Frames,
        prompt: u32,
        completion: u32,
        cached: u32,
        metrics: Option<Value>,
    ) -> Vec<Bytes> {
        let mut parts = Vec::with_capacity(2 * self.choices.len() + 2);
        let mut small = frames.whole_head();
        for (index, choice) in self.choices.into_iter().enumerate() {
            if index > 0 {
                small.push(b',');
            }
            small.extend_from_slice(format!(r#"{{"index":{index},"finish_reason":"#).as_bytes());
            write_json_str(&mut small, choice.finish.as_str());
            small.extend_from_slice(br#","logprobs":"#);
            match choice.logprobs {
                Some(json) => {
                    parts.push(Bytes::from(std::mem::take(&mut small)));
                    parts.push(Bytes::from(json.finish()));
                }
                None => small.extend_from_slice(b"null"),
            }
            if self.chat {
                small.extend_from_slice(br#","message":{"role":"assistant","content":"#);
                write_json_str(&mut small, &choice.text);
                if !choice.reasoning.is_empty() {
                    small.extend_from_slice(br#","reasoning_content":"#);
                    write_json_str(&mut small, &choice.reasoning);
                }
                small.push(b'}');
            } else {
                small.extend_from_slice(br#","text":"#);
                write_json_str(&mut small, &choice.text);
            }
            small.push(b'}');
        }
        small.extend(frames.whole_tail(prompt, completion, cached, metrics));
        parts.push(Bytes::from(small));
        parts
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::json;
    use tokenmeter_sim::Operation;

    use super::*;
    use crate::logprobs::TokenLogprobs;

    fn piece(index: u32, text: &'static str, position: u32, finish: bool, k: u8) -> Piece {
        Piece {
            index,
            text: Cow::Borrowed(text),
            finish: finish.then_some(FinishReason::Length),
            logprobs: Some(TokenLogprobs::simulate(text, position, index, k)),
            offset: position as usize * 3,
            reasoning: false,
        }
    }

    fn render(operation: Operation, logprobs: bool) -> Value {
        let frames = Frames::new(operation, "x-1".into(), 7, "m", false);
        let mut answer = Answer::new(&frames, 2, logprobs);
        answer.push(piece(1, " b\"", 0, false, 2));
        answer.push(piece(0, " a", 0, false, 2));
        answer.push(piece(1, " c", 1, true, 2));
        answer.push(piece(0, " d", 1, true, 2));
        answer.push(piece(9, " ignored", 0, false, 2));
        let parts = answer.into_parts(&frames, 5, 4, 1, None);
        let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        serde_json::from_slice(&bytes).expect("valid JSON")
    }

    #[test]
    fn a_chat_answer_has_openais_shape() {
        let whole = render(Operation::Chat, true);
        assert_eq!(whole["object"], "chat.completion");
        assert_eq!(whole["id"], "x-1");
        assert_eq!(whole["choices"][0]["index"], 0);
        assert_eq!(
            whole["choices"][1]["message"],
            json!({"role": "assistant", "content": " b\" c"})
        );
        assert_eq!(whole["choices"][0]["finish_reason"], "length");
        let content = &whole["choices"][1]["logprobs"]["content"];
        assert_eq!(content[0]["token"], " b\"");
        assert_eq!(content[1]["top_logprobs"].as_array().map(Vec::len), Some(2));
        assert_eq!(whole["usage"]["total_tokens"], 9);
        assert_eq!(whole["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
        assert_eq!(
            render(Operation::Chat, false)["choices"][0]["logprobs"],
            json!(null)
        );
    }

    #[test]
    fn a_completion_answer_has_openais_shape() {
        let whole = render(Operation::TextCompletion, true);
        assert_eq!(whole["object"], "text_completion");
        assert_eq!(whole["choices"][0]["text"], " a d");
        let logprobs = &whole["choices"][0]["logprobs"];
        assert_eq!(logprobs["tokens"], json!([" a", " d"]));
        assert_eq!(logprobs["text_offset"], json!([0, 3]));
        assert_eq!(logprobs["top_logprobs"].as_array().map(Vec::len), Some(2));
    }
}
