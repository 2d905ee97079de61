//! What one request keeps of its stream, bounded ([`Kept`]), and what happens after `[DONE]`.

use std::time::Duration;

use futures_util::StreamExt as _;
use tokenmeter_openai::Chunk;

use crate::measured::Measured;
use crate::sanitize::Sanitizer;

/// Token-bearing chunks a request may send per requested output token (`max_tokens`), with a
/// floor of [`MIN_CHUNK_BOUND`]: a server streaming more is stopped with a `transport` error
/// rather than growing the request's trace without bound (one token per chunk is the norm; a
/// server splitting tokens into characters stays well under 4).
pub(crate) const CHUNKS_PER_TOKEN: u64 = 4;
/// The least bound on token-bearing chunks, whatever `max_tokens` is.
pub(crate) const MIN_CHUNK_BOUND: u64 = 1024;
/// After `[DONE]`, how long the rest of the body is read (at most [`DRAIN_BYTES`]) so that the
/// connection can be reused; the request has already ended.
pub(crate) const DRAIN_AFTER_DONE: Duration = Duration::from_millis(100);
/// The most bytes read after `[DONE]`.
const DRAIN_BYTES: usize = 64 * 1024;

/// Reads a body to its end, at most [`DRAIN_BYTES`] of it.
pub(crate) async fn drain(mut body: tokenmeter_openai::ResponseBody) {
    let mut read = 0;
    while let Some(Ok(bytes)) = body.next().await {
        read += bytes.len();
        if read > DRAIN_BYTES {
            return;
        }
    }
}

/// What one request keeps of its chunks, bounded: the core keeps the time of each
/// token-bearing chunk, and a stream may send at most [`CHUNKS_PER_TOKEN`] × `max_tokens` (at
/// least [`MIN_CHUNK_BOUND`]) of them. Zero-token frames (role, usage, empty deltas) keep
/// nothing.
#[derive(Debug)]
pub(crate) struct Kept {
    /// Token-bearing chunks allowed.
    bound: u64,
    /// Token-bearing chunks seen.
    pub(crate) token_chunks: u64,
    /// Tokens they carried.
    pub(crate) tokens: u64,
    /// `[DONE]` was seen.
    pub(crate) done: bool,
}

impl Kept {
    /// The bound of a request asking for `max_tokens`.
    pub(crate) fn new(max_tokens: u64) -> Self {
        Self {
            bound: max_tokens
                .saturating_mul(CHUNKS_PER_TOKEN)
                .max(MIN_CHUNK_BOUND),
            token_chunks: 0,
            tokens: 0,
            done: false,
        }
    }

    /// Notes `chunk` (its id through `sanitizer`, into `measured`); an error past the bound.
    pub(crate) fn record(
        &mut self,
        measured: &mut Measured,
        chunk: &Chunk,
        sanitizer: &Sanitizer,
    ) -> Result<(), String> {
        if chunk.done {
            self.done = true;
            return Ok(());
        }
        if chunk.parsed.duplicate_keys {
            measured.rare.oddities.duplicate_key_chunks += 1;
        }
        let tokens = chunk.parsed.tokens;
        if tokens > 0 {
            self.token_chunks += 1;
            self.tokens = self.tokens.saturating_add(u64::from(tokens));
            if self.token_chunks > self.bound {
                return Err(format!(
                    "the server sent more than {} token-bearing chunks for max_tokens {} (at \
                     most {CHUNKS_PER_TOKEN} per requested token, {MIN_CHUNK_BOUND} at least); \
                     the stream was stopped",
                    self.bound, measured.max_tokens
                ));
            }
        }
        if measured.rare.response_id.is_none()
            && let Some(id) = &chunk.parsed.id
        {
            measured.rare.response_id = Some(sanitizer.clean(id));
        }
        Ok(())
    }
}
