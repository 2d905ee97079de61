//! What a handler hands the engine thread (a [`Job`]) and what the engine sends back
//! ([`Event`]s, one per token, then the end).

use tokenmeter::Request;
use tokio::sync::mpsc::UnboundedSender;

/// One request for the engine: its prompt, its limit, its measurement and where its tokens go.
#[derive(Debug)]
pub struct Job {
    /// The prompt's token ids (at least one).
    pub prompt: Vec<u32>,
    /// The most output tokens (at least one).
    pub max_tokens: usize,
    /// The request's measurement, started by the handler at arrival. From here on the engine
    /// thread owns it: it marks `scheduled`, records each token as it emits it, and ends it.
    pub request: Request,
    /// The handler's end of the stream; closed once the client went away.
    pub events: UnboundedSender<Event>,
}

/// What the engine sends a handler.
#[derive(Debug)]
pub enum Event {
    /// One output token.
    Token(u32),
    /// The answer ended after `completion_tokens` tokens (at `max_tokens`: the model has no
    /// end-of-sequence token, so every answer ends with `length`).
    Done {
        /// Prompt tokens.
        prompt_tokens: usize,
        /// Output tokens.
        completion_tokens: usize,
        /// vLLM's per-request `metrics` object, from the engine's own measurement.
        metrics: Option<serde_json::Value>,
    },
    /// The forward pass failed; the request was ended as a server error.
    Failed(String),
}
