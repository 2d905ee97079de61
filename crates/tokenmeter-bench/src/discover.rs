//! Before a run: check that the server is reachable, and find a model to ask for.
//!
//! The model list is read up to [`MODELS_LIMIT`] bytes, within [`PREFLIGHT`]; a redirect is not
//! followed unless asked (`--follow-redirects`); every string from the server in an error or in
//! the model shown goes through the run's [`Sanitizer`].

use std::time::Duration;

use anyhow::{Context as _, bail};
use reqwest::header::LOCATION;
use tokenmeter_openai::{ERROR_BODY_LIMIT, StatusError, describe_error};

use crate::api_key::ApiKey;
use crate::format::format_size;
use crate::redirect::{redirect_policy, redirected};
use crate::refusal::remedy;
use crate::request_shape::RequestShape;
use crate::sanitize::Sanitizer;
use crate::tls::Tls;
use crate::url::{display_url, models_url, url_secrets};

/// How long the pre-flight checks wait.
const PREFLIGHT: Duration = Duration::from_secs(10);

/// The most of a model list that is read: any real list is far smaller.
pub(crate) const MODELS_LIMIT: usize = 1024 * 1024;

/// The longest model id taken from a list (the id is sent back in every request).
const MODEL_ID_LIMIT: usize = 1024;

/// Fails with a clear message when nothing listens at the URL's host and port, or, for https,
/// when the TLS handshake fails (an unknown certificate authority, say): one request that
/// carries no key, whose answer does not matter.
pub(crate) async fn reachable(url: &reqwest::Url, tls: &Tls) -> anyhow::Result<()> {
    let host = url
        .host_str()
        .unwrap_or("127.0.0.1")
        .trim_matches(['[', ']']);
    let port = url.port_or_known_default().unwrap_or(80);
    match tokio::time::timeout(PREFLIGHT, tokio::net::TcpStream::connect((host, port))).await {
        Ok(Ok(_)) if url.scheme() == "https" => handshake(url, tls).await,
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => bail!(
            "cannot connect to {host}:{port} ({e}); is the server running? check --url {}",
            display_url(url)
        ),
        Err(_) => bail!(
            "connecting to {host}:{port} took more than {}s; check --url {}",
            PREFLIGHT.as_secs(),
            display_url(url)
        ),
    }
}

/// Whether a TLS connection to `url` can be made and verified: any HTTP answer will do.
async fn handshake(url: &reqwest::Url, tls: &Tls) -> anyhow::Result<()> {
    let client = tls
        .client_builder()
        .timeout(PREFLIGHT)
        .redirect(redirect_policy(false, false))
        .build()
        .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {}", describe_error(&e)))?;
    match client.head(url.clone()).send().await {
        Err(e) if e.is_connect() => bail!(
            "cannot open an HTTPS connection to {}: {}; {}",
            display_url(url),
            // A certificate's names are the server's text: shown only once cleaned.
            Sanitizer::new(None)
                .clean(&describe_error(&e.without_url()))
                .as_str(),
            tls.hint()
        ),
        _ => Ok(()),
    }
}

/// The first model of `GET …/models`, as the server spells it (to send back); show it only
/// through the sanitiser. The request carries what every measured request carries: the key
/// and the `--header`s of `shape` (a server that wants `api-key` on its requests wants it
/// here too), so a redirect to another origin is refused as theirs is; HTTPS is verified as
/// `tls` says.
pub(crate) async fn model(
    endpoint: &reqwest::Url,
    key: Option<&ApiKey>,
    shape: &RequestShape,
    follow_redirects: bool,
    tls: &Tls,
) -> anyhow::Result<String> {
    let url = models_url(endpoint);
    let sanitizer = Sanitizer::new(key)
        .with_secrets(shape.secrets())
        .with_secrets(url_secrets(endpoint).iter().map(String::as_str));
    let hint = || {
        format!(
            "cannot list models at {}; pass --model NAME",
            display_url(&url)
        )
    };
    let failed = |e: reqwest::Error| {
        let tls_failed = url.scheme() == "https" && e.is_connect();
        let shown = sanitizer.clean(&describe_error(&e.without_url()));
        if tls_failed {
            anyhow::anyhow!("{} ({})", shown.as_str(), tls.hint())
        } else {
            anyhow::anyhow!("{}", shown.as_str())
        }
    };
    let client = tls
        .client_builder()
        .timeout(PREFLIGHT)
        .redirect(redirect_policy(follow_redirects, !shape.headers.is_empty()))
        .build()
        .map_err(failed)
        .with_context(hint)?;
    let mut request = client.get(url.clone());
    if let Some(key) = key {
        request = request.bearer_auth(key.secret());
    }
    // A --header replaces the key's `Authorization`, as on the measured requests.
    for (name, value) in &shape.headers {
        request = request.header(name, value);
    }
    let response = request.send().await.map_err(failed).with_context(hint)?;
    let status = response.status();
    if status.is_redirection() {
        let location = response.headers().get(LOCATION).map(|l| l.as_bytes());
        return Err(anyhow::anyhow!(redirected(status, location, &sanitizer))).with_context(hint);
    }
    if !status.is_success() {
        let body = read_bounded(response, ERROR_BODY_LIMIT, true)
            .await
            .unwrap_or_default();
        let error = StatusError::new(status.as_u16(), &body);
        let shown = sanitizer.clean(&error.to_string());
        let remedy = match status.as_u16() {
            401 | 403 => remedy(status.as_u16(), &url),
            _ => "pass --model NAME, or check --url".to_owned(),
        };
        return Err(anyhow::anyhow!(
            "cannot list models at {}: the server answered {shown}; {remedy}",
            display_url(&url)
        ));
    }
    let text = read_bounded(response, MODELS_LIMIT, false)
        .await
        .map_err(|e| anyhow::anyhow!("{}", sanitizer.clean(&e).as_str()))
        .with_context(hint)?;
    let body: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| anyhow::anyhow!("the model list is not JSON: {e}"))
        .with_context(hint)?;
    let id = body
        .get("data")
        .and_then(|d| d.get(0))
        .and_then(|m| m.get("id"))
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| anyhow::anyhow!("the model list is empty or not OpenAI-shaped"))
        .with_context(hint)?;
    if id.trim().is_empty() {
        return Err(anyhow::anyhow!(
            "the first model of the list has an empty id, which no request can ask for"
        ))
        .with_context(hint);
    }
    if id.len() > MODEL_ID_LIMIT {
        return Err(anyhow::anyhow!(
            "the first model id is {} bytes long (more than {MODEL_ID_LIMIT})",
            id.len()
        ))
        .with_context(hint);
    }
    Ok(id.to_owned())
}

/// The body of `response`, at most `limit` bytes: an error beyond unless `truncate`.
async fn read_bounded(
    mut response: reqwest::Response,
    limit: usize,
    truncate: bool,
) -> Result<Vec<u8>, String> {
    let too_large = || {
        format!(
            "the answer is larger than {}, more than any model list; is --url right?",
            format_size(limit)
        )
    };
    if !truncate && response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(bytes) = response.chunk().await.map_err(|e| {
        format!(
            "reading the answer failed: {}",
            describe_error(&e.without_url())
        )
    })? {
        let room = limit - body.len();
        if bytes.len() > room {
            if truncate {
                body.extend_from_slice(&bytes[..room]);
                return Ok(body);
            }
            return Err(too_large());
        }
        body.extend_from_slice(&bytes);
    }
    Ok(body)
}
