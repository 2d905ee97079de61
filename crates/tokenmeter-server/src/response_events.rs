//! [`ResponseEvents`]: the typed SSE events and the response object of one `/v1/responses`
//! answer (`responses.rs` says the sequence), in the shapes of the `openai` SDK's types.
//!
//! The answer's text is kept as it comes, for the `done` events and the final response,
//! which repeat it as OpenAI's and vLLM's do.

use std::collections::VecDeque;

use bytes::Bytes;
use serde_json::{Value, json};
use tokenmeter::FinishReason;

use super::choices::{Choices, Piece};

/// What a Responses request asks for besides its chat equivalent, echoed in the response.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ask {
    /// `instructions`.
    pub(crate) instructions: Option<String>,
    /// `max_output_tokens`.
    pub(crate) max_output_tokens: Option<u32>,
}

/// The events of one response.
#[derive(Debug)]
pub(crate) struct ResponseEvents {
    id: String,
    created: u64,
    model: String,
    ask: Ask,
    per_request_metrics: bool,
    /// The next event's `sequence_number`.
    sequence: u64,
    /// The reasoning item's text, once it opened.
    reasoning: Option<String>,
    /// The reasoning item is closed (its `done` events sent).
    reasoning_done: bool,
    /// The message's text, once it opened.
    text: Option<String>,
    reasoning_tokens: u32,
    finish: FinishReason,
}

impl ResponseEvents {
    /// The events of response `id` of `model`, created at `created` (Unix seconds).
    pub(crate) fn new(id: String, created: u64, model: &str, ask: Ask) -> Self {
        Self {
            id,
            created,
            model: model.to_owned(),
            ask,
            per_request_metrics: false,
            sequence: 0,
            reasoning: None,
            reasoning_done: false,
            text: None,
            reasoning_tokens: 0,
            finish: FinishReason::Stop,
        }
    }

    /// Adds the server's `metrics` object to the final response (`--enable-per-request-metrics`).
    pub(crate) fn per_request_metrics(mut self, on: bool) -> Self {
        self.per_request_metrics = on;
        self
    }

    /// `response.created` and `response.in_progress`.
    pub(crate) fn opening(&mut self, out: &mut VecDeque<Bytes>) {
        for kind in ["response.created", "response.in_progress"] {
            let response = self.response("in_progress", Vec::new(), Value::Null);
            out.push_back(self.event(kind, json!({"response": response})));
        }
    }

    /// Takes one token without events (a whole answer).
    pub(crate) fn take(&mut self, piece: &Piece) {
        let into = if piece.reasoning && !self.reasoning_done && self.text.is_none() {
            self.reasoning_tokens += 1;
            self.reasoning.get_or_insert_with(String::new)
        } else {
            self.text.get_or_insert_with(String::new)
        };
        into.push_str(&piece.text);
        if let Some(reason) = piece.finish {
            self.finish = reason;
        }
    }

    /// One token's events: its item opened when it is the item's first, then its delta.
    pub(crate) fn token(&mut self, piece: &Piece, out: &mut VecDeque<Bytes>) {
        let reasoning = piece.reasoning && !self.reasoning_done && self.text.is_none();
        if reasoning && self.reasoning.is_none() {
            let item = self.reasoning_item("in_progress", "");
            out.push_back(self.event(
                "response.output_item.added",
                json!({"output_index": 0, "item": item}),
            ));
        }
        if !reasoning && self.text.is_none() {
            self.close_reasoning(out);
            let index = self.message_index();
            let item = self.message_item("in_progress", None);
            out.push_back(self.event(
                "response.output_item.added",
                json!({"output_index": index, "item": item}),
            ));
            let part =
                json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
            out.push_back(self.event(
                "response.content_part.added",
                json!({"item_id": self.message_id(), "output_index": index, "content_index": 0, "part": part}),
            ));
        }
        self.take(piece);
        let (kind, item_id, index) = if reasoning {
            ("response.reasoning_text.delta", self.reasoning_id(), 0)
        } else {
            (
                "response.output_text.delta",
                self.message_id(),
                self.message_index(),
            )
        };
        let mut fields = json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": &*piece.text});
        if !reasoning {
            fields["logprobs"] = json!([]);
        }
        out.push_back(self.event(kind, fields));
    }

    /// The closing events of the open items, then `response.completed` with the usage.
    pub(crate) fn completed(&mut self, prompt: u32, choices: &Choices, out: &mut VecDeque<Bytes>) {
        self.close_reasoning(out);
        if let Some(text) = self.text.clone() {
            let index = self.message_index();
            let id = self.message_id();
            out.push_back(self.event(
                "response.output_text.done",
                json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
            ));
            out.push_back(self.event(
                "response.content_part.done",
                json!({"item_id": id, "output_index": index, "content_index": 0, "part": output_text(&text)}),
            ));
            let item = self.message_item("completed", Some(&text));
            out.push_back(self.event(
                "response.output_item.done",
                json!({"output_index": index, "item": item}),
            ));
        }
        let response = self.whole(prompt, choices);
        out.push_back(self.event("response.completed", json!({"response": response})));
    }

    /// `response.failed`, with the error.
    pub(crate) fn failed(&mut self, message: &str, out: &mut VecDeque<Bytes>) {
        let mut response = self.response("failed", self.output("incomplete"), Value::Null);
        response["error"] = json!({"code": "server_error", "message": message});
        out.push_back(self.event("response.failed", json!({"response": response})));
    }

    /// The final response object: every item, the usage, `incomplete` when the answer stopped
    /// at its token limit.
    pub(crate) fn whole(&self, prompt: u32, choices: &Choices) -> Value {
        let completion = choices.completion_tokens();
        let usage = json!({
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": choices.cached_tokens()},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": u64::from(prompt) + u64::from(completion),
        });
        let cut = self.finish == FinishReason::Length;
        let status = if cut { "incomplete" } else { "completed" };
        let mut response = self.response(status, self.output("completed"), usage);
        if cut {
            response["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
        if self.per_request_metrics
            && let Some(metrics) = choices.server_metrics()
        {
            response["metrics"] = metrics;
        }
        response
    }

    /// Sends the reasoning item's closing events, once, if it opened.
    fn close_reasoning(&mut self, out: &mut VecDeque<Bytes>) {
        let Some(text) = self.reasoning.clone().filter(|_| !self.reasoning_done) else {
            return;
        };
        self.reasoning_done = true;
        let id = self.reasoning_id();
        out.push_back(self.event(
            "response.reasoning_text.done",
            json!({"item_id": id, "output_index": 0, "content_index": 0, "text": text}),
        ));
        let item = self.reasoning_item("completed", &text);
        out.push_back(self.event(
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ));
    }

    /// One SSE event: `event:` its type, `data:` its fields with `type` and `sequence_number`.
    fn event(&mut self, kind: &str, mut fields: Value) -> Bytes {
        fields["type"] = kind.into();
        fields["sequence_number"] = self.sequence.into();
        self.sequence += 1;
        Bytes::from(format!("event: {kind}\ndata: {fields}\n\n"))
    }

    /// The response object with `status`, `output` and `usage`.
    fn response(&self, status: &str, output: Vec<Value>, usage: Value) -> Value {
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "output": output,
            "usage": usage,
            "error": null,
            "incomplete_details": null,
            "instructions": self.ask.instructions,
            "max_output_tokens": self.ask.max_output_tokens,
            "parallel_tool_calls": true,
            "tool_choice": "auto",
            "tools": [],
            "text": {"format": {"type": "text"}},
            "truncation": "disabled",
            "metadata": {},
        })
    }

    /// The output items so far, each with `status`.
    fn output(&self, status: &str) -> Vec<Value> {
        let reasoning = self
            .reasoning
            .as_deref()
            .map(|text| self.reasoning_item(status, text));
        let message = self
            .text
            .as_deref()
            .map(|text| self.message_item(status, Some(text)));
        reasoning.into_iter().chain(message).collect()
    }

    fn message_index(&self) -> u32 {
        u32::from(self.reasoning.is_some())
    }

    fn message_id(&self) -> String {
        format!("msg_{}", self.id)
    }

    fn reasoning_id(&self) -> String {
        format!("rs_{}", self.id)
    }

    fn message_item(&self, status: &str, text: Option<&str>) -> Value {
        let content: Vec<Value> = text.map(output_text).into_iter().collect();
        json!({"id": self.message_id(), "type": "message", "role": "assistant", "status": status, "content": content})
    }

    fn reasoning_item(&self, status: &str, text: &str) -> Value {
        let content = if text.is_empty() {
            json!([])
        } else {
            json!([{"type": "reasoning_text", "text": text}])
        };
        json!({"id": self.reasoning_id(), "type": "reasoning", "summary": [], "content": content, "status": status})
    }
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}
