//! [`HttpCounts`]: every HTTP answer the server gives, by route, method and status class, and
//! every connection it closes on its own, by reason, rendered on `/metrics`.
//!
//! | Profile | Answers | Closed connections |
//! |---|---|---|
//! | `semconv` | `tokenmeter_http_responses_total{http_route, http_request_method, http_response_status_class}` | `tokenmeter_http_connections_closed_total{reason}` |
//! | `vllm` | `http_requests_total{handler, method, status}` (prometheus-fastapi-instrumentator's, which vLLM's server exposes) | the same as `semconv` |
//!
//! Requests refused for a server-wide budget while their connection stays open are counted by
//! reason on `tokenmeter_http_requests_refused_total{reason}` ([`Refused`]), in both profiles.
//!
//! The labels are bounded: the route is one of the server's routes or `none` (every other path,
//! as the instrumentator groups untemplated paths), the method one of the standard ones or
//! `_OTHER` (OpenTelemetry's value for any other), the status class `1xx` to `5xx`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{Method, StatusCode};
use tokenmeter_listen::Expired;

use crate::profile::MetricsProfile;

/// The routes the server answers; every other path is [`ROUTES`]`[NONE]`.
pub(crate) const ROUTES: [&str; 7] = [
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/models",
    "/metrics",
    "/health",
    "/slo",
    "none",
];
const NONE: usize = ROUTES.len() - 1;
const METHODS: [&str; 8] = [
    "GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS", "_OTHER",
];
const OTHER_METHOD: usize = METHODS.len() - 1;
const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
const CELLS: usize = ROUTES.len() * METHODS.len() * CLASSES.len();

/// Why the server closed a connection on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// A request's line and headers did not arrive within `--header-timeout`.
    HeaderTimeout,
    /// Idle for `--keep-alive-timeout` between requests.
    KeepAlive,
    /// Idle, and closed to make room for a new connection at `--max-connections`.
    Evicted,
    /// Past `--max-connections` with no connection idle: answered by the overflow (a 503,
    /// counted on route `none`; or a `GET /metrics` / `GET /health` answered as usual), then
    /// closed.
    Full,
    /// Its request body did not fit `--max-body-memory`: answered 503 and closed.
    BodyBudget,
    /// Closed by a shutdown, before or after its grace.
    Shutdown,
    /// Its client read nothing for `--send-timeout` while the server had bytes to write.
    SendTimeout,
    /// Its request line or headers could not be parsed (malformed, too many, too large):
    /// hyper answered 400, 414 or 431 and closed it.
    Malformed,
    /// It opened with the HTTP/2 preface: hyper closed it without an answer (the server speaks
    /// HTTP/1 only).
    Http2Preface,
}

impl From<Expired> for Closed {
    fn from(expired: Expired) -> Self {
        match expired {
            Expired::HeaderTimeout => Closed::HeaderTimeout,
            Expired::IdleTimeout => Closed::KeepAlive,
            Expired::SendTimeout => Closed::SendTimeout,
        }
    }
}

impl Closed {
    const ALL: [Closed; 9] = [
        Closed::HeaderTimeout,
        Closed::KeepAlive,
        Closed::Evicted,
        Closed::Full,
        Closed::BodyBudget,
        Closed::Shutdown,
        Closed::SendTimeout,
        Closed::Malformed,
        Closed::Http2Preface,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Closed::HeaderTimeout => "header_timeout",
            Closed::KeepAlive => "keep_alive_timeout",
            Closed::Evicted => "evicted",
            Closed::Full => "refused_full",
            Closed::BodyBudget => "body_budget",
            Closed::Shutdown => "shutdown",
            Closed::SendTimeout => "send_timeout",
            Closed::Malformed => "malformed_request",
            Closed::Http2Preface => "http2_preface",
        }
    }
}

/// Why the server refused a request it had read, keeping the connection open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A non-streaming request whose worst-case answer did not fit `--max-answer-memory`
    /// with the whole answers in flight: answered 503 with `retry-after`.
    AnswerBudget,
}

impl Refused {
    const ALL: [Refused; 1] = [Refused::AnswerBudget];

    fn as_str(self) -> &'static str {
        match self {
            Refused::AnswerBudget => "answer_budget",
        }
    }
}

/// The route label of `path`: its index in [`ROUTES`].
pub(crate) fn route(path: &str) -> usize {
    ROUTES[..NONE]
        .iter()
        .position(|r| *r == path)
        .unwrap_or(NONE)
}

fn method(method: &Method) -> usize {
    METHODS[..OTHER_METHOD]
        .iter()
        .position(|m| *m == method.as_str())
        .unwrap_or(OTHER_METHOD)
}

/// Counters of answers and closed connections; fixed in size, so any traffic costs the same
/// memory and the same number of series at most.
#[derive(Debug)]
pub(crate) struct HttpCounts {
    profile: MetricsProfile,
    answers: Box<[AtomicU64]>,
    closed: [AtomicU64; Closed::ALL.len()],
    refused: [AtomicU64; Refused::ALL.len()],
}

impl HttpCounts {
    /// Zero counts, rendered with `profile`'s names.
    pub(crate) fn new(profile: MetricsProfile) -> Self {
        Self {
            profile,
            answers: (0..CELLS).map(|_| AtomicU64::new(0)).collect(),
            closed: Default::default(),
            refused: Default::default(),
        }
    }

    /// Counts one answer with `status` to `method` on the route of index `route`.
    pub(crate) fn answered(&self, route: usize, verb: &Method, status: StatusCode) {
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        let cell = (route.min(NONE) * METHODS.len() + method(verb)) * CLASSES.len() + class;
        self.answers[cell].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a 503 to a connection refused at the connection limit (whatever its request, of
    /// which only the head was read): route `none`, method `_OTHER`, and a `refused_full`
    /// close.
    pub(crate) fn refused_full(&self) {
        self.answered(NONE, &Method::CONNECT, StatusCode::SERVICE_UNAVAILABLE);
        self.closed(Closed::Full);
    }

    /// Counts what hyper does on its own when a connection ends with `error`: a request it
    /// could not parse gets hyper's 400, 414 (URI too long) or 431 (headers too large or too
    /// many) before the close, counted on route `none`, method `_OTHER` (nothing of the request
    /// was read) and as a `malformed_request` close; an HTTP/2 preface is closed unanswered
    /// (`http2_preface`). Other errors (the client went away) are not the server's doing.
    pub(crate) fn connection_failed(&self, error: &hyper::Error) {
        if error.is_parse_version_h2() {
            self.closed(Closed::Http2Preface);
        } else if error.is_parse() {
            let status = if error.is_parse_too_large() {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            } else {
                StatusCode::BAD_REQUEST
            };
            self.answered(NONE, &Method::CONNECT, status);
            self.closed(Closed::Malformed);
        }
    }

    /// Counts a connection the server closed for `reason`.
    pub(crate) fn closed(&self, reason: Closed) {
        let index = Closed::ALL.iter().position(|r| *r == reason).unwrap_or(0);
        self.closed[index].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request refused for `reason`.
    pub(crate) fn refused(&self, reason: Refused) {
        let index = Refused::ALL.iter().position(|r| *r == reason).unwrap_or(0);
        self.refused[index].fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition of the three families (the series that are not zero).
    pub(crate) fn render(&self) -> String {
        let (name, help, labels) = match self.profile {
            MetricsProfile::Semconv => (
                "tokenmeter_http_responses_total",
                "HTTP responses the server gave, by route, method and status class.",
                [
                    "http_route",
                    "http_request_method",
                    "http_response_status_class",
                ],
            ),
            MetricsProfile::Vllm | MetricsProfile::VllmLegacy => (
                "http_requests_total",
                "Total number of requests by method, status and handler.",
                ["handler", "method", "status"],
            ),
        };
        let mut out = format!("# HELP {name} {help}\n# TYPE {name} counter\n");
        for (cell, count) in self.answers.iter().enumerate() {
            let count = count.load(Ordering::Relaxed);
            if count == 0 {
                continue;
            }
            let class = CLASSES[cell % CLASSES.len()];
            let verb = METHODS[cell / CLASSES.len() % METHODS.len()];
            let route = ROUTES[cell / CLASSES.len() / METHODS.len()];
            let [r, m, s] = labels;
            let _ = writeln!(
                out,
                r#"{name}{{{r}="{route}",{m}="{verb}",{s}="{class}"}} {count}"#
            );
        }
        let closed = "tokenmeter_http_connections_closed_total";
        let _ = write!(
            out,
            "# HELP {closed} Connections the server closed on its own, by reason.\n# TYPE {closed} counter\n"
        );
        for (reason, count) in Closed::ALL.iter().zip(&self.closed) {
            let count = count.load(Ordering::Relaxed);
            if count > 0 {
                let _ = writeln!(out, r#"{closed}{{reason="{}"}} {count}"#, reason.as_str());
            }
        }
        let refused = "tokenmeter_http_requests_refused_total";
        let _ = write!(
            out,
            "# HELP {refused} Requests the server refused for a server-wide budget, keeping the connection, by reason.\n# TYPE {refused} counter\n"
        );
        // Every reason from the start, 0 until it happens: a budget that never refused is a
        // series at 0, not a missing one (an alert on its rate sees it).
        for (reason, count) in Refused::ALL.iter().zip(&self.refused) {
            let count = count.load(Ordering::Relaxed);
            let _ = writeln!(out, r#"{refused}{{reason="{}"}} {count}"#, reason.as_str());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_counted_by_route_method_and_class() {
        let counts = HttpCounts::new(MetricsProfile::Semconv);
        counts.answered(route("/v1/chat/completions"), &Method::POST, StatusCode::OK);
        counts.answered(route("/v1/chat/completions"), &Method::POST, StatusCode::OK);
        counts.answered(route("/secret-path"), &Method::GET, StatusCode::NOT_FOUND);
        let weird = Method::from_bytes(b"BREW").expect("a method");
        counts.answered(route("/health"), &weird, StatusCode::METHOD_NOT_ALLOWED);
        counts.refused_full();
        counts.closed(Closed::HeaderTimeout);
        counts.refused(Refused::AnswerBudget);
        let text = counts.render();
        for line in [
            r#"tokenmeter_http_responses_total{http_route="/v1/chat/completions",http_request_method="POST",http_response_status_class="2xx"} 2"#,
            r#"tokenmeter_http_responses_total{http_route="none",http_request_method="GET",http_response_status_class="4xx"} 1"#,
            r#"tokenmeter_http_responses_total{http_route="/health",http_request_method="_OTHER",http_response_status_class="4xx"} 1"#,
            r#"tokenmeter_http_responses_total{http_route="none",http_request_method="_OTHER",http_response_status_class="5xx"} 1"#,
            r#"tokenmeter_http_connections_closed_total{reason="header_timeout"} 1"#,
            r#"tokenmeter_http_connections_closed_total{reason="refused_full"} 1"#,
            r#"tokenmeter_http_requests_refused_total{reason="answer_budget"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        assert!(
            !text.contains("secret-path") && !text.contains("BREW"),
            "{text}"
        );
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 7);
        // A reason that never happened is a series at 0, not a missing one.
        let fresh = HttpCounts::new(MetricsProfile::Semconv).render();
        assert!(
            fresh
                .lines()
                .any(|l| l == r#"tokenmeter_http_requests_refused_total{reason="answer_budget"} 0"#),
            "{fresh}"
        );
    }

    #[test]
    fn the_vllm_profile_uses_the_instrumentators_names() {
        let counts = HttpCounts::new(MetricsProfile::Vllm);
        counts.answered(route("/metrics"), &Method::GET, StatusCode::OK);
        let text = counts.render();
        assert!(
            text.contains("# TYPE http_requests_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains(r#"http_requests_total{handler="/metrics",method="GET",status="2xx"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn odd_statuses_fall_in_the_nearest_class() {
        let counts = HttpCounts::new(MetricsProfile::Vllm);
        let odd = StatusCode::from_u16(999).expect("a status");
        counts.answered(NONE, &Method::GET, odd);
        assert!(counts.render().contains(r#"status="5xx"} 1"#));
    }
}
