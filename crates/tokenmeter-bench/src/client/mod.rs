//! The bench client: sends one streaming request to an OpenAI-compatible endpoint, meters the
//! response with tokenmeter and returns the request's core record with what only the client
//! knows ([`Measured`]).
//!
//! The response goes through `tokenmeter_openai`'s `SseChunks::meter`, what the library's
//! `meter_response_with` calls (with the event size limit of `--max-event-size`): SSE events
//! are parsed and timestamped on the bench clock as they arrive, and the core records each
//! token at that instant: the first token, the time of every token-bearing chunk (the bench's
//! [`Records`] sink asks for them), the `usage` token counts and the outcome. What a request
//! keeps of its chunks is bounded ([`Kept`]); the request ends at `[DONE]`. Every failure (connection refused, HTTP 4xx/5xx, reset, malformed or truncated
//! stream, timeout) ends the request with a classified outcome; nothing here panics on what a
//! server sends.
//!
//! Every string the server sends that a request keeps (the response id, error messages and
//! excerpts, a redirect's target) goes through the run's [`Sanitizer`] first: those fields are
//! [`ServerText`](crate::sanitize::ServerText), which only it makes. A
//! redirect is not followed unless [`Target::follow_redirects`] is set: it ends the request
//! with an error that names its target.

use std::future::Future as _;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::StreamExt as _;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, LOCATION};
use serde_json::json;
use tokenmeter::request::{TPOT_HEADER, TTFT_HEADER};
use tokenmeter::{ErrorClass, Labels, MeterBuilder, Outcome, Request, Series};
use tokenmeter_openai::{SseChunks, StreamError, TransportError as _, describe_error};

use crate::api::Api;
use crate::api_key::ApiKey;
use crate::clock::BenchClock;
use crate::format::{format_duration, format_size};
use crate::kept_record::KeptRecord;
use crate::measured::Measured;
use crate::rare::Discrepancy;
use crate::records::Records;
use crate::redirect::{redirect_policy, redirected};
use crate::request_shape::{REQUEST_ID_HEADER, RequestShape};
use crate::sanitize::Sanitizer;
use crate::tls::Tls;
use crate::url::url_secrets;
use crate::workload::{CancelAt, Prompt, PromptTokenizer, RequestSpec};

mod kept;
mod media;
mod plain;
use kept::{DRAIN_AFTER_DONE, Kept, drain};

/// While a stream's items are ready at once, the deadline is read on the clock before every
/// this many of them (the timer is polled before each).
const CLOCK_EVERY: u32 = 16;

/// Where and what to send.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The endpoint's full URL.
    pub(crate) url: reqwest::Url,
    /// Its API.
    pub(crate) api: Api,
    /// The model to ask for.
    pub(crate) model: String,
    /// Send vLLM's `ignore_eos` so that outputs have the requested length.
    pub(crate) ignore_eos: bool,
    /// The deadline of each request, from its send to its last byte.
    pub(crate) timeout: Duration,
    /// Follow redirects (`--follow-redirects`); by default a 3xx answer is an error.
    pub(crate) follow_redirects: bool,
    /// The largest SSE event or line a response may send (`--max-event-size`).
    pub(crate) max_event_size: usize,
    /// How HTTPS servers are verified (`--ca-cert`, `--insecure`).
    pub(crate) tls: Tls,
    /// Headers, extra body, length field, streaming (`--header`, `--extra-body`, ...).
    pub(crate) shape: RequestShape,
    /// Counts output tokens from the streamed text when the server sends no `usage`
    /// (`--tokenizer`).
    pub(crate) tokenizer: Option<Arc<PromptTokenizer>>,
}

/// Sends requests and measures them.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    http: reqwest::Client,
    target: Target,
    sanitizer: Sanitizer,
    clock: BenchClock,
    series: Series,
    records: Records,
}

impl Client {
    /// A client for `target`, measuring on a meter built from `meter` (its other sinks, if any)
    /// with `clock` and the client's own [`Records`] sink.
    pub(crate) fn new(
        target: Target,
        key: Option<ApiKey>,
        clock: BenchClock,
        meter: MeterBuilder,
    ) -> anyhow::Result<Self> {
        let records = Records::default();
        let meter = meter
            .clock(clock.meter_clock())
            .sink(records.clone())
            .build();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let accept = if target.shape.stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if let Some(key) = &key {
            let mut value =
                HeaderValue::from_str(&format!("Bearer {}", key.secret())).map_err(|_| {
                    anyhow::anyhow!(
                        "the API key contains characters that cannot be sent in an HTTP header; \
                     check the variable named by --api-key-env"
                    )
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        // A --header replaces the bench's value of the same name (an `Authorization` the key's).
        headers.extend(target.shape.headers.clone());
        let http = target
            .tls
            .client_builder()
            .default_headers(headers)
            .tcp_nodelay(true)
            .pool_max_idle_per_host(usize::MAX)
            .redirect(redirect_policy(
                target.follow_redirects,
                !target.shape.headers.is_empty(),
            ))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {}", describe_error(&e)))?;
        let sanitizer = Sanitizer::new(key.as_ref())
            .with_secrets(target.shape.secrets())
            .with_secrets(url_secrets(&target.url).iter().map(String::as_str));
        // The model is sent as given; the labels hold it as any output would show it.
        let model = sanitizer.clean(&target.model).as_str().to_owned();
        let mut labels = Labels::client(target.api.operation()).request_model(model);
        if let Some(host) = target.url.host_str() {
            labels = labels.server_address(host.to_owned());
        }
        if let Some(port) = target.url.port_or_known_default() {
            labels = labels.server_port(port);
        }
        let series = meter.series(&labels);
        Ok(Self {
            http,
            target,
            sanitizer,
            clock,
            series,
            records,
        })
    }

    /// The target.
    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// The clock every record of this client is stamped on.
    pub(crate) fn clock(&self) -> &BenchClock {
        &self.clock
    }

    fn body(&self, spec: &RequestSpec) -> Vec<u8> {
        let mut body = match self.target.api {
            Api::Chat => {
                let messages = match &spec.prompt {
                    Prompt::Text(text) => vec![json!({"role": "user", "content": text})],
                    Prompt::Messages(messages) => messages.clone(),
                };
                json!({"model": self.target.model, "messages": messages})
            }
            Api::Completions => {
                json!({"model": self.target.model, "prompt": spec.prompt.as_text()})
            }
            Api::Responses => {
                let input = match &spec.prompt {
                    Prompt::Text(text) => json!(text),
                    Prompt::Messages(messages) => json!(messages),
                };
                json!({"model": self.target.model, "input": input})
            }
        };
        if let serde_json::Value::Object(body) = &mut body {
            let api = self.target.api;
            self.target
                .shape
                .complete(body, api, spec.max_tokens, self.target.ignore_eos);
        }
        serde_json::to_vec(&body).unwrap_or_default()
    }

    /// The sanitiser every server string of this client's traces goes through.
    pub(crate) fn sanitizer(&self) -> &Sanitizer {
        &self.sanitizer
    }

    /// Sends `spec` once, outside the measurements (the test request before a run): no
    /// meter, no record; the caller reads the answer.
    pub(crate) async fn probe(&self, spec: &RequestSpec) -> reqwest::Result<reqwest::Response> {
        self.post(HeaderValue::from_static("preflight"), spec)
            .timeout(self.target.timeout)
            .send()
            .await
    }

    /// The request for `spec` as every measured request sends it, with `id` in
    /// [`REQUEST_ID_HEADER`]: [`send_until`](Self::send_until) sends it and meters the answer; the
    /// self-check also sends it alone, to weigh the HTTP stack without the rest.
    pub(crate) fn post(&self, id: HeaderValue, spec: &RequestSpec) -> reqwest::RequestBuilder {
        let mut post = self
            .http
            .post(self.target.url.clone())
            .header(REQUEST_ID_HEADER, id);
        // Its --slo-class's objectives, in whole milliseconds (checked when the flag was read).
        let targets = spec.slo.map(|tag| tag.targets).unwrap_or_default();
        for (name, target) in [(TTFT_HEADER, targets.ttft), (TPOT_HEADER, targets.tpot)] {
            if let Some(target) = target {
                post = post.header(name, HeaderValue::from(target.as_millis() as u64));
            }
        }
        post.body(self.body(spec))
    }

    /// Sends `spec` and measures it until it ends. Never fails: errors are outcomes.
    #[cfg(test)]
    pub(crate) async fn send(&self, spec: &RequestSpec) -> Measured {
        self.send_until(spec, std::future::pending()).await
    }

    /// Sends `spec` and measures it until it ends or `cancel` resolves (a second interrupt):
    /// then the request ends as `cancelled` and keeps what it had received (its send, its
    /// chunks and their times, its usage). Never fails: errors are outcomes.
    pub(crate) async fn send_until(
        &self,
        spec: &RequestSpec,
        cancel: impl std::future::Future<Output = ()>,
    ) -> Measured {
        let mut cancel = std::pin::pin!(cancel);
        let post = self.post(HeaderValue::from(spec.id), spec);
        let sent_at = tokio::time::Instant::now();
        let deadline = sent_at + self.target.timeout;
        let mut request = self.series.start();
        request.set_input_tokens(spec.input_tokens);
        if let Some(tag) = spec.slo {
            request.set_slo_targets(tag.targets);
        }
        let mut measured = Measured {
            id: spec.id,
            input_tokens: spec.input_tokens,
            input_exact: spec.input_exact,
            turn: spec.turn,
            slo_class: spec.slo.map(|tag| tag.class),
            // What is sent: --extra-body may replace the workload's length.
            max_tokens: self
                .target
                .shape
                .sent_max_tokens()
                .unwrap_or(spec.max_tokens),
            ..Measured::default()
        };
        let sent = post.send();
        let sent = tokio::select! {
            biased;
            () = cancel.as_mut() => return self.interrupted(measured, request),
            sent = tokio::time::timeout_at(deadline, sent) => sent,
        };
        let response = match sent {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                let class = error.class();
                let message = format!("sending the request failed: {}", error.describe());
                return self.failed(measured, request, class, &message);
            }
            Err(_) => {
                let message = self.timeout_message("before the response headers");
                return self.failed(measured, request, ErrorClass::Timeout, &message);
            }
        };
        measured.status = Some(response.status().as_u16());
        if let Some(id) = response.headers().get("x-request-id") {
            measured.rare.response_id = Some(self.sanitizer.clean_bytes(id.as_bytes()));
        } else {
            measured.rare.drop_response_id();
        }
        if response.status().is_redirection() {
            let location = response.headers().get(LOCATION).map(HeaderValue::as_bytes);
            let message = redirected(response.status(), location, &self.sanitizer);
            return self.failed(measured, request, ErrorClass::Other, &message);
        }
        if !self.target.shape.stream {
            let mut measured = self
                .receive_plain(measured, request, response, deadline, cancel)
                .await;
            measured.check_input_usage(self.target.shape.replaces_prompt());
            return measured;
        }
        let status = response.status().as_u16();
        if let Some(message) = response
            .status()
            .is_success()
            .then(|| media::not_a_stream(status, response.headers(), &self.sanitizer))
            .flatten()
        {
            return self.failed(measured, request, ErrorClass::Transport, &message);
        }
        // The request keeps the workload's input tokens; `usage` is kept beside them.
        // (`meter_response_with`, with the event size limit of --max-event-size.)
        let id = request.id();
        let body = tokenmeter_openai::ResponseBody::new(response);
        let mut metered = SseChunks::with_status(status, body, self.clock.clone())
            .max_event_size(self.target.max_event_size)
            .meter(request)
            .input_tokens_from_usage(false);
        let mut kept = Kept::new(measured.max_tokens);
        // The text, kept only to count it with --tokenizer when no usage comes.
        let mut text = self.target.tokenizer.as_ref().map(|_| String::new());
        // One timer for the whole stream: a timeout per item would insert and remove a timer
        // entry for every token. The timer is polled before each item; the clock is read as
        // well before every CLOCK_EVERY-th item in a row that was ready at once: a stream that
        // is always ready (a flood of events) would otherwise starve the timer (the stream
        // itself yields every 256 KiB it decodes). A stream that waits between items, as
        // every paced one does, lets the runtime fire the timer while it waits.
        let expired = tokio::time::sleep_until(deadline);
        tokio::pin!(expired);
        // An injected cancellation after a time: its own timer, only when asked.
        let hang_up_at = match spec.cancel {
            Some(CancelAt::After(after)) => Some(sent_at + after),
            _ => None,
        };
        let mut hang_up = hang_up_at.map(|at| Box::pin(tokio::time::sleep_until(at)));
        let mut ready_in_a_row = 0u32;
        loop {
            let next = std::future::poll_fn(|cx| {
                ready_in_a_row += 1;
                if expired.as_mut().poll(cx).is_ready()
                    || (ready_in_a_row >= CLOCK_EVERY && {
                        ready_in_a_row = 0;
                        tokio::time::Instant::now() >= deadline
                    })
                {
                    return Poll::Ready(Err(Stop::Timeout));
                }
                if let Some(hang_up) = hang_up.as_mut()
                    && hang_up.as_mut().poll(cx).is_ready()
                {
                    return Poll::Ready(Err(Stop::HangUp));
                }
                if cancel.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(Stop::Interrupted));
                }
                let next = metered.poll_next_unpin(cx);
                if next.is_pending() {
                    ready_in_a_row = 0;
                }
                next.map(Ok)
            })
            .await;
            match next {
                Ok(None) => break,
                Ok(Some(Ok(chunk))) => {
                    if let Some(usage) = chunk.parsed.usage {
                        measured.note_usage(usage);
                    }
                    if let Some(metrics) = &chunk.parsed.metrics {
                        measured.note_server_metrics(metrics);
                    }
                    if let Some(text) = text.as_mut()
                        && text.len() < MAX_COUNTED_TEXT
                    {
                        text.push_str(&chunk.text());
                    }
                    if let Err(message) = kept.record(&mut measured, &chunk, &self.sanitizer) {
                        metered
                            .request_mut()
                            .end(Outcome::Error(ErrorClass::Transport));
                        measured.rare.error = Some(self.sanitizer.clean(&message));
                        break;
                    }
                    if let Some(CancelAt::Tokens(k)) = spec.cancel
                        && kept.tokens >= k
                        && !kept.done
                    {
                        // An injected cancellation: hang up as a user would.
                        metered.request_mut().cancel();
                        break;
                    }
                }
                Ok(Some(Err(error))) => {
                    measured.rare.error = Some(match error {
                        StreamError::EventTooLarge { limit } => self.sanitizer.clean(&format!(
                            "{error}: raise it with --max-event-size (now {})",
                            format_size(limit)
                        )),
                        error => self.sanitizer.clean(&error.to_string()),
                    });
                    break;
                }
                Err(Stop::HangUp) => {
                    metered.request_mut().cancel();
                    break;
                }
                Err(Stop::Interrupted) => {
                    metered.request_mut().cancel();
                    measured.rare.error = Some(self.sanitizer.clean(INTERRUPTED));
                    break;
                }
                Err(Stop::Timeout) => {
                    metered
                        .request_mut()
                        .end(Outcome::Error(ErrorClass::Timeout));
                    measured.rare.error = Some(
                        self.sanitizer
                            .clean(&self.timeout_message("while streaming")),
                    );
                    break;
                }
            }
        }
        let (chunks, request) = metered.into_parts();
        drop(request); // ended by now, or as cancelled here
        measured.rare.oddities.note_skipped(chunks.skipped());
        if kept.done {
            // Ended at [DONE]: read what is left (the end of the body, usually already there)
            // for a short while, so that the connection can serve the next request.
            let body = chunks.into_body();
            let until = deadline.min(tokio::time::Instant::now() + DRAIN_AFTER_DONE);
            let _ = tokio::time::timeout_at(until, drain(body)).await;
        }
        // Ended by now (at the stream's end, on an error, or as cancelled by the drop).
        measured.record = self.records.take(id).map(KeptRecord::from);
        if measured.rare.error.is_none()
            && measured.outcome() == Outcome::Error(ErrorClass::EmptyResponse)
        {
            measured.rare.error = Some(self.sanitizer.clean(
                "the stream ended without any token (only a role frame, a finish reason, usage \
                 or [DONE]); vLLM's bench counts such an answer failed too",
            ));
        }
        let no_usage = measured.usage().and_then(|u| u.completion_tokens).is_none();
        if let (Some(tokenizer), Some(text), Some(record), true) = (
            &self.target.tokenizer,
            text,
            measured.record_mut(),
            no_usage,
        ) && text.len() < MAX_COUNTED_TEXT
        {
            // The text re-tokenized: the count the server's own tokenizer gives for most text.
            record.output_tokens = tokenizer.count(&text);
            measured.output_counted = true;
        }
        // Each token-bearing chunk carries at least one token, and no server may go past
        // `max_tokens`: a count outside those bounds is kept (vLLM's rule) but reported.
        let chunk_tokens = kept.tokens;
        let max_tokens = measured.max_tokens;
        let implausible = |usage: u64| {
            usage < chunk_tokens || (max_tokens > 0 && usage > max_tokens.max(chunk_tokens))
        };
        measured.rare.usage_discrepancy = measured
            .usage()
            .and_then(|u| u.completion_tokens)
            .filter(|&usage| implausible(usage))
            .map(|usage| Discrepancy {
                completion_tokens: usage,
                token_chunks: chunk_tokens,
            });
        measured.check_input_usage(self.target.shape.replaces_prompt());
        measured
    }

    fn timeout_message(&self, when: &str) -> String {
        format!(
            "no complete response within --timeout {} ({when})",
            format_duration(self.target.timeout)
        )
    }

    /// Ends `request` as cancelled by a second interrupt, keeping its record.
    fn interrupted(&self, mut measured: Measured, mut request: Request) -> Measured {
        request.cancel();
        measured.record = self.records.end(request).map(KeptRecord::from);
        measured.rare.error = Some(self.sanitizer.clean(INTERRUPTED));
        measured
    }

    fn failed(
        &self,
        mut measured: Measured,
        mut request: Request,
        class: ErrorClass,
        message: &str,
    ) -> Measured {
        request.end(Outcome::Error(class));
        measured.record = self.records.end(request).map(KeptRecord::from);
        measured.rare.error = Some(self.sanitizer.clean(message));
        measured
    }
}

/// What a request cancelled by a second interrupt says.
const INTERRUPTED: &str = "cancelled in flight by a second interrupt; what it had received is kept";

/// Why the stream loop stopped before the stream ended.
enum Stop {
    /// A second interrupt: the requests in flight are cancelled.
    Interrupted,
    /// `--timeout` passed.
    Timeout,
    /// An injected cancellation's time came.
    HangUp,
}

/// The most streamed text kept per request to count with `--tokenizer` (beyond it, chunks are
/// counted instead).
const MAX_COUNTED_TEXT: usize = 4 << 20;
