//! Before a run: check that the server is reachable, and find a model to ask for.

use std::time::Duration;

use anyhow::{Context as _, bail};
use tokenmeter_openai::describe_error;

use crate::bench::args::{display_url, models_url};
use crate::bench::client::ApiKey;

/// How long the pre-flight checks wait.
const PREFLIGHT: Duration = Duration::from_secs(10);

/// Fails with a clear message when nothing listens at the URL's host and port.
pub(crate) async fn reachable(url: &reqwest::Url) -> anyhow::Result<()> {
    let host = url
        .host_str()
        .unwrap_or("127.0.0.1")
        .trim_matches(['[', ']']);
    let port = url.port_or_known_default().unwrap_or(80);
    match tokio::time::timeout(PREFLIGHT, tokio::net::TcpStream::connect((host, port))).await {
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

/// The first model of `GET …/models`.
pub(crate) async fn model(endpoint: &reqwest::Url, key: Option<&ApiKey>) -> anyhow::Result<String> {
    let url = models_url(endpoint);
    let hint = || {
        format!(
            "cannot list models at {}; pass --model NAME",
            display_url(&url)
        )
    };
    let redact = |text: String| key.map_or(text.clone(), |k| k.redact(text.clone()));
    let client = reqwest::Client::builder()
        .timeout(PREFLIGHT)
        .build()
        .map_err(|e| anyhow::anyhow!(describe_error(&e)))
        .with_context(hint)?;
    let mut request = client.get(url.clone());
    if let Some(key) = key {
        request = request.bearer_auth(key.secret());
    }
    let response = request
        .send()
        .await
        .map_err(|e| anyhow::anyhow!(redact(describe_error(&e.without_url()))))
        .with_context(hint)?;
    let status = response.status();
    if !status.is_success() {
        return Err(anyhow::anyhow!("HTTP {status}")).with_context(hint);
    }
    let text = response
        .text()
        .await
        .map_err(|e| anyhow::anyhow!(redact(describe_error(&e.without_url()))))
        .with_context(hint)?;
    let body: serde_json::Value = serde_json::from_str(&text).with_context(hint)?;
    body.get("data")
        .and_then(|d| d.get(0))
        .and_then(|m| m.get("id"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("the model list is empty or not OpenAI-shaped"))
        .with_context(hint)
}
