//! OpenAI-compatible streaming for tokenmeter.
//!
//! [`chunk::parse`] reads one SSE `data:` event of a streaming chat or text completion into what
//! the meter needs: how many token-bearing deltas it carried (content, reasoning or tool calls;
//! never the role-only frame), the finish reason, the `usage` object and the response id. Errors
//! the server put in the stream are classified like HTTP statuses.
//!
//! ```
//! use tokenmeter::FinishReason;
//! use tokenmeter_openai::chunk;
//!
//! let role = chunk::parse(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#)?;
//! assert_eq!(role.tokens, 0); // the role frame is not the first token
//! let last = chunk::parse(r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#)?;
//! assert_eq!((last.tokens, last.finish), (1, Some(FinishReason::Stop)));
//! # Ok::<(), tokenmeter_openai::chunk::ChunkError>(())
//! ```

#![forbid(unsafe_code)]

pub mod chunk;
