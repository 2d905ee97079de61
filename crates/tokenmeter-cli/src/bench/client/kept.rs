//! What one request keeps of its stream, bounded ([`Kept`]), and what happens after `[DONE]`.

use std::time::Duration;

use futures_util::StreamExt as _;
use tokenmeter_openai::Chunk;

use crate::bench::sanitize::Sanitizer;
use crate::bench::trace::Trace;

/// Token-bearing chunks a request may send per requested output token (`max_tokens`), with a
/// floor of [`MIN_CHUNK_BOUND`]: a server streaming more is stopped with a `transport` error
/// rather than growing the request's trace without bound (one token per chunk is the norm; a
/// server splitting tokens into characters stays well under 4).
pub(crate) const CHUNKS_PER_TOKEN: u64 = 4;
/// The least bound on token-bearing chunks, whatever `max_tokens` is.
pub(crate) const MIN_CHUNK_BOUND: u64 = 1024;
/// Zero-token frames (role frame, usage, empty deltas) kept in the trace one by one; past
/// these, consecutive ones share one entry holding the latest's time (the E2E end), since
/// they carry no token and no gap.
pub(crate) const KEPT_EMPTY_FRAMES: usize = 16;
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

/// `bytes` in the largest binary unit that divides it (`4MiB`, `1536KiB`, `100B`).
pub(crate) fn format_size(bytes: usize) -> String {
    for (unit, size) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes}B")
}

/// What one request keeps of its chunks, bounded: at most [`CHUNKS_PER_TOKEN`] ×
/// `max_tokens` (at least [`MIN_CHUNK_BOUND`]) token-bearing chunks, each followed by at most
/// one entry for the zero-token frames after it once [`KEPT_EMPTY_FRAMES`] have been kept.
#[derive(Debug)]
pub(crate) struct Kept {
    /// Token-bearing chunks allowed.
    bound: u64,
    /// Token-bearing chunks seen.
    token_chunks: u64,
    /// Zero-token frames kept one by one.
    empty_frames: usize,
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
            empty_frames: 0,
            done: false,
        }
    }

    /// Records `chunk` into `trace` (its id through `sanitizer`); an error past the bound.
    pub(crate) fn record(
        &mut self,
        trace: &mut Trace,
        chunk: Chunk,
        sanitizer: &Sanitizer,
    ) -> Result<(), String> {
        if chunk.done {
            self.done = true;
            return Ok(());
        }
        let at = Trace::offset(chunk.at);
        let tokens = chunk.parsed.tokens;
        if tokens > 0 {
            self.token_chunks += 1;
            if self.token_chunks > self.bound {
                return Err(format!(
                    "the server sent more than {} token-bearing chunks for max_tokens {} (at \
                     most {CHUNKS_PER_TOKEN} per requested token, {MIN_CHUNK_BOUND} at least); \
                     the stream was stopped",
                    self.bound, trace.max_tokens
                ));
            }
            if trace.first_token_ns.is_none() {
                trace.first_token_ns = Some(at);
            }
        }
        if let Some(reason) = chunk.parsed.finish {
            trace.finish_reason = Some(reason.as_str().to_owned());
        }
        if trace.response_id.is_none()
            && let Some(id) = &chunk.parsed.id
        {
            trace.response_id = Some(sanitizer.clean(id));
        }
        if tokens == 0 {
            if self.empty_frames >= KEPT_EMPTY_FRAMES
                && let Some(last) = trace.chunks.last_mut().filter(|c| c.1 == 0)
            {
                last.0 = at;
                return Ok(());
            }
            self.empty_frames += 1;
        }
        trace.chunks.push((at, tokens));
        Ok(())
    }
}
