//! Request bodies: [`read_body`] reads one whole, within `--max-body-size` and
//! `--body-timeout`, and within the server-wide [`BodyBudget`] (`--max-body-memory`), the bytes
//! of every body being read or held at once; a body that would take the total past it is
//! answered 503 before any more of it is read ([`BodyRefusal`]).

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use http_body::Body as _;

use super::api_error::error_body;

/// The bytes every request body being read or held may take together.
#[derive(Debug)]
pub(crate) struct BodyBudget {
    limit: usize,
    used: AtomicUsize,
}

impl BodyBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The budget in bytes.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes taken now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `bytes` when they fit.
    fn take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.limit)
            })
            .is_ok()
    }
}

/// Bytes of a [`BodyBudget`] held by one body; given back when dropped (with the body).
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<BodyBudget>,
    bytes: usize,
}

impl Reservation {
    fn new(budget: &Arc<BodyBudget>) -> Self {
        Self {
            budget: budget.clone(),
            bytes: 0,
        }
    }

    /// Holds `total` bytes (more than now), if they fit.
    fn grow_to(&mut self, total: usize) -> bool {
        let more = total.saturating_sub(self.bytes);
        let fits = self.budget.take(more);
        if fits {
            self.bytes += more;
        }
        fits
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Why a request body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyRefusal {
    /// Larger than `--max-body-size` (413).
    TooLarge,
    /// Not whole within `--body-timeout` (408).
    Slow,
    /// The client broke off or sent a malformed body (400).
    Broken,
    /// The bodies being read or held already take `--max-body-memory` (503).
    Budget,
}

impl BodyRefusal {
    /// The answer: vLLM's error body, and `connection: close` (the rest of the body is not
    /// read); the 503 has `retry-after: 1`.
    pub(crate) fn response(self, max_body: usize, timeout: Duration, budget: usize) -> Response {
        let (status, message) = match self {
            BodyRefusal::TooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is larger than this server's limit of {max_body} bytes: send a smaller body, or start serve with a larger --max-body-size"
                ),
            ),
            BodyRefusal::Slow => (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive whole within {timeout:?} of its headers: send it at once, or start serve with a longer --body-timeout"
                ),
            ),
            BodyRefusal::Broken => (
                StatusCode::BAD_REQUEST,
                "the request body could not be read: the connection broke off or the framing is invalid".to_owned(),
            ),
            BodyRefusal::Budget => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the request bodies this server is receiving already take its budget of {budget} bytes: retry shortly, or start serve with a larger --max-body-memory"
                ),
            ),
        };
        let mut response = Response::new(error_body(status, &message).to_string().into());
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        if self == BodyRefusal::Budget {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// The whole body of `request`, at most `max` bytes, within `timeout`, with its share of
/// `budget` (held until the [`Reservation`] is dropped). A `content-length` over the limit is
/// refused before any of the body is read, and one that does not fit the budget likewise; a
/// body of no stated length takes its share as its buffer grows.
pub(crate) async fn read_body(
    request: Request,
    max: usize,
    timeout: Duration,
    budget: &Arc<BodyBudget>,
) -> Result<(Bytes, Reservation), BodyRefusal> {
    let declared = declared_length(request.headers());
    if declared.is_some_and(|length| length > max as u64) {
        return Err(BodyRefusal::TooLarge);
    }
    let mut reservation = Reservation::new(budget);
    // A stated length (at most `max`) is held whole at once, and buffered in one allocation.
    let declared = declared.map_or(0, |length| usize::try_from(length).unwrap_or(max));
    if !reservation.grow_to(declared) {
        return Err(BodyRefusal::Budget);
    }
    let mut body = request.into_body();
    let read = async {
        let mut bytes: Vec<u8> = Vec::with_capacity(declared);
        while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            let frame = frame.map_err(|_| BodyRefusal::Broken)?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let needed = bytes.len() + data.len();
            if needed > max {
                return Err(BodyRefusal::TooLarge);
            }
            if needed > bytes.capacity() {
                // Double, within the limit, holding the new capacity before allocating it.
                let capacity = needed.max(bytes.capacity() * 2).min(max);
                if !reservation.grow_to(capacity) {
                    return Err(BodyRefusal::Budget);
                }
                bytes.reserve_exact(capacity - bytes.len());
            }
            bytes.extend_from_slice(&data);
        }
        Ok(Bytes::from(bytes))
    };
    let bytes = tokio::time::timeout(timeout, read)
        .await
        .unwrap_or(Err(BodyRefusal::Slow))?;
    Ok((bytes, reservation))
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: &'static [u8], length: Option<usize>) -> Request {
        let mut builder = Request::post("/v1/completions");
        if let Some(length) = length {
            builder = builder.header(header::CONTENT_LENGTH, length);
        }
        builder
            .body(axum::body::Body::from(body))
            .expect("a request")
    }

    const LONG: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn bodies_hold_their_bytes_of_the_budget_until_dropped() {
        let budget = BodyBudget::new(100);
        let (first, held) = read_body(request(&[b'x'; 60], Some(60)), 1000, LONG, &budget)
            .await
            .expect("fits");
        assert_eq!(first.len(), 60);
        assert_eq!(budget.used(), 60);
        // 60 + 60 > 100: refused before it is read.
        let refused = read_body(request(&[b'y'; 60], Some(60)), 1000, LONG, &budget).await;
        assert_eq!(refused.err(), Some(BodyRefusal::Budget));
        assert_eq!(budget.used(), 60, "a refused body holds nothing");
        drop(held);
        assert_eq!(budget.used(), 0);
        let (second, _held) = read_body(request(&[b'y'; 60], Some(60)), 1000, LONG, &budget)
            .await
            .expect("fits once the first is gone");
        assert_eq!(second.len(), 60);
    }

    #[tokio::test]
    async fn a_body_of_no_stated_length_takes_its_share_as_it_grows() {
        let budget = BodyBudget::new(50);
        let refused = read_body(request(&[b'x'; 80], None), 1000, LONG, &budget).await;
        assert_eq!(refused.err(), Some(BodyRefusal::Budget));
        assert_eq!(budget.used(), 0);
        let (body, held) = read_body(request(&[b'x'; 40], None), 1000, LONG, &budget)
            .await
            .expect("fits");
        assert_eq!(body.len(), 40);
        assert!((40..=50).contains(&budget.used()), "{}", budget.used());
        drop(held);
        let too_large = read_body(request(&[b'x'; 40], None), 30, LONG, &budget).await;
        assert_eq!(too_large.err(), Some(BodyRefusal::TooLarge));
    }

    #[test]
    fn the_budget_refusal_is_a_503_to_retry() {
        let response = BodyRefusal::Budget.response(10, LONG, 1234);
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        assert_eq!(response.headers()[header::CONNECTION], "close");
    }
}
