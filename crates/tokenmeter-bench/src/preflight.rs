//! The test request before a run (`--no-preflight` skips it): one request of the run's shape,
//! outside the measurements, so that a wrong key, URL, model or body fails in a second with
//! the server's own message instead of after every request of the run.
//!
//! A 400, 401, 403, 404, 405 or 422 answer aborts the run with the server's message
//! (sanitised) and the remedy; a successful answer that is not an SSE stream is named by its
//! content type, one with a `Content-Encoding` the bench does not decode by that encoding.
//! Other answers (429, 5xx: possibly passing) are warnings, and the run goes on. A streamed
//! answer is read up to its `[DONE]`, not to the end of its body: a server that keeps the body
//! open after `[DONE]` does not delay the run.

use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE, LOCATION};
use tokenmeter_openai::{ERROR_BODY_LIMIT, StatusError, describe_error};

use crate::client::Client;
use crate::exit::Exit;
use crate::redirect::redirected;
use crate::refusal::{aborts, remedy};
use crate::url::display_url;
use crate::workload::RequestSpec;

/// Sends `spec` once through `client`, outside the measurements, and fails with an
/// [`Exit::CouldNotRun`] error naming the server's message and the remedy when the answer shows
/// that no request of the run can succeed. `expect_sse`: a streaming request, whose answer
/// must be `text/event-stream`.
pub(crate) async fn check(
    client: &Client,
    spec: &RequestSpec,
    expect_sse: bool,
) -> anyhow::Result<()> {
    let url = &client.target().url;
    let sanitizer = client.sanitizer();
    let shown = display_url(url);
    let response = client.probe(spec).await.map_err(|e| {
        Exit::CouldNotRun.error(format!(
            "the test request to {shown} failed: {} (skip it with --no-preflight)",
            sanitizer.clean(&describe_error(&e.without_url())).as_str()
        ))
    })?;
    let status = response.status();
    if status.is_redirection() {
        let location = response.headers().get(LOCATION).map(|l| l.as_bytes());
        return Err(Exit::CouldNotRun.error(format!(
            "the test request to {shown}: {}",
            redirected(status, location, sanitizer)
        )));
    }
    if !status.is_success() {
        let body = read_start(response).await;
        let error = StatusError::new(status.as_u16(), &body);
        let message = sanitizer.clean(&error.to_string());
        if aborts(status.as_u16()) {
            return Err(Exit::CouldNotRun.error(format!(
                "the test request to {shown} was refused: {message} — {}; skip the test \
                 request with --no-preflight",
                remedy(status.as_u16(), url)
            )));
        }
        crate::console::warn(format_args!(
            "the test request to {shown} got {message}; running anyway"
        ));
        return Ok(());
    }
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|v| sanitizer.clean_bytes(v.as_bytes()).to_string())
    };
    if let Some(encoding) = header(CONTENT_ENCODING)
        && !encoding.trim().eq_ignore_ascii_case("identity")
    {
        return Err(Exit::CouldNotRun.error(format!(
            "the test request to {shown} was answered with Content-Encoding `{encoding}`, which \
             the bench does not decode (it asks for none): configure the server or proxy not to \
             compress event streams"
        )));
    }
    let content_type = header(CONTENT_TYPE).unwrap_or_default();
    let media = content_type.split(';').next().unwrap_or("").trim();
    let expected = !expect_sse || media.eq_ignore_ascii_case("text/event-stream");
    if expected {
        // Read the short answer (a few tokens) so that the server sees the request complete,
        // up to `[DONE]`: a server that keeps the body open after it does not hold the run.
        read_until_done(response).await;
        return Ok(());
    }
    let media = if media.is_empty() { "none" } else { media };
    Err(Exit::CouldNotRun.error(format!(
        "the test request to {shown} was answered HTTP {} with Content-Type {media}, not an \
             SSE stream (text/event-stream): is --url the server's API, and does it stream? \
             (skip the test request with --no-preflight)",
        status.as_u16()
    )))
}

/// The end of an event stream.
const DONE: &[u8] = b"[DONE]";

/// An answer's body up to its end, the first `[DONE]` or `ERROR_BODY_LIMIT` bytes, whichever
/// comes first.
async fn read_until_done(mut response: reqwest::Response) {
    let mut read = 0;
    // The last bytes of the previous piece: a `[DONE]` split across two pieces is found.
    let mut tail: Vec<u8> = Vec::new();
    while let Ok(Some(bytes)) = response.chunk().await {
        read += bytes.len();
        tail.extend_from_slice(&bytes);
        if tail.windows(DONE.len()).any(|w| w == DONE) || read >= ERROR_BODY_LIMIT {
            return;
        }
        let keep = tail.len().min(DONE.len() - 1);
        tail.drain(..tail.len() - keep);
    }
}

/// The start of an answer's body (at most `ERROR_BODY_LIMIT` bytes).
async fn read_start(mut response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(bytes)) = response.chunk().await {
        let room = ERROR_BODY_LIMIT.saturating_sub(body.len());
        body.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if body.len() >= ERROR_BODY_LIMIT {
            break;
        }
    }
    body
}
