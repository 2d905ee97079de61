//! What each request carries besides the prompt: `--header`, `--extra-body`,
//! `--max-tokens-field`, `--no-stream`, `--no-stream-options` (and `--ignore-eos`, kept in the
//! target).
//!
//! Header values may hold secrets (Azure's `api-key`, tenant tokens): they are sent marked
//! sensitive, their [`Debug`](std::fmt::Debug) form hides them, the run's sanitiser redacts
//! them in whatever the server sends back ([`RequestShape::secrets`]), and the command line of
//! `--json`'s `run` block drops them ([`redact_command_line`]). The extra body is treated the
//! same way on the command line: its keys may be printed, never its values.

use std::fmt;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::api::Api;

/// One `--header 'Name: value'`.
#[derive(Clone, PartialEq)]
pub(crate) struct Header {
    name: HeaderName,
    value: HeaderValue,
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Header({}: [redacted])", self.name)
    }
}

/// A `--header` as given (`Name: value`): parsed, or why not. Reading one never fails (a
/// command-line parser's error would repeat the whole argument, value included); the run
/// reports the problem, without the value, before it starts. Its [`Debug`](std::fmt::Debug)
/// form hides the value.
///
/// ```
/// use tokenmeter_bench::parse::header_arg;
///
/// let header = header_arg("api-key: secret-value").unwrap();
/// assert!(!format!("{header:?}").contains("secret-value"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HeaderArg(Result<Header, String>);

/// Reads `Name: value` into a [`HeaderArg`]: never an error here (see [`HeaderArg`]).
///
/// ```
/// use tokenmeter_bench::{ShapeArgs, parse::header_arg};
///
/// let mut shape = ShapeArgs::default();
/// shape.headers.push(header_arg("x-tenant: team-a").unwrap());
/// // A malformed header is read too, and reported when the run starts.
/// assert!(header_arg("no colon").is_ok());
/// ```
pub fn header_arg(text: &str) -> Result<HeaderArg, String> {
    Ok(HeaderArg(parse_header(text)))
}

/// The header carrying the request's index in the run, so servers can match their records.
pub(crate) const REQUEST_ID_HEADER: &str = "x-tokenmeter-request";

/// Headers the bench sets itself: a `--header` cannot replace them.
const RESERVED: [&str; 4] = [
    "content-type",
    "content-length",
    "accept",
    REQUEST_ID_HEADER,
];

/// Parses `Name: value` (the error never repeats the value).
pub(crate) fn parse_header(text: &str) -> Result<Header, String> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(
            "a --header is `Name: value`, e.g. --header 'api-key: ...' (no `:` found)".to_owned(),
        );
    };
    let name = name.trim();
    let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
        format!("--header name `{name}` is not a valid HTTP header name (letters, digits, `-`)")
    })?;
    if RESERVED.contains(&name.as_str()) {
        return Err(format!(
            "--header `{name}` is set by the bench itself and cannot be replaced"
        ));
    }
    let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
        format!("the value of --header `{name}` holds characters an HTTP header cannot carry")
    })?;
    value.set_sensitive(true);
    Ok(Header { name, value })
}

/// `--extra-body`: a JSON object merged into every request body (read by
/// [`parse_extra_body`]). Its [`Debug`](std::fmt::Debug) form shows its keys only.
///
/// ```
/// use tokenmeter_bench::parse::parse_extra_body;
///
/// let body = parse_extra_body(r#"{"temperature": 0, "user": "someone@example.com"}"#).unwrap();
/// assert_eq!(format!("{body:?}"), r#"["temperature", "user"]"#);
/// ```
#[derive(Clone, Default, PartialEq)]
pub struct ExtraBody(Map<String, Value>);

impl fmt::Debug for ExtraBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl ExtraBody {
    /// The value the extra body gives `key`, if any.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// Its string values of [`SHORTEST_EXTRA_SECRET`] or more characters, at any depth, but
    /// the top-level `model` (shown as the model asked for): a server that echoes the request
    /// (a tenant id, a user, a token in `metadata`) has them redacted like the key.
    pub(crate) fn secrets(&self) -> Vec<&str> {
        fn strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
            match value {
                Value::String(s) if s.trim().chars().count() >= SHORTEST_EXTRA_SECRET => {
                    out.push(s);
                }
                Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
                Value::Object(map) => map.values().for_each(|v| strings(v, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (key, value) in &self.0 {
            if key != "model" {
                strings(value, &mut out);
            }
        }
        out
    }
}

/// The shortest `--extra-body` string value redacted from server text, in characters (shorter
/// ones are words such as `auto` or `low` a server's messages use).
pub(crate) const SHORTEST_EXTRA_SECRET: usize = 8;

/// Keys the bench must own for its measurement to mean anything.
const OWNED_KEYS: [&str; 2] = ["stream", "stream_options"];

/// Parses `--extra-body`: a JSON object that sets neither `stream` nor `stream_options` (the
/// error names the problem, never the values).
///
/// ```
/// use tokenmeter_bench::parse::parse_extra_body;
///
/// assert!(parse_extra_body(r#"{"temperature": 0}"#).is_ok());
/// assert!(parse_extra_body("[1, 2]").unwrap_err().contains("JSON object"));
/// assert!(parse_extra_body(r#"{"stream": false}"#).unwrap_err().contains("--no-stream"));
/// ```
pub fn parse_extra_body(text: &str) -> Result<ExtraBody, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "--extra-body is not valid JSON (line {}, column {}); give an object, e.g. \
             --extra-body '{{\"temperature\": 0}}'",
            e.line(),
            e.column()
        )
    })?;
    let Value::Object(map) = value else {
        return Err(
            "--extra-body must be a JSON object, e.g. --extra-body '{\"temperature\": 0}'"
                .to_owned(),
        );
    };
    if let Some(key) = OWNED_KEYS.iter().find(|k| map.contains_key(**k)) {
        return Err(format!(
            "--extra-body may not set `{key}`; use --no-stream or --no-stream-options"
        ));
    }
    Ok(ExtraBody(map))
}

/// The field that carries the output length.
///
/// ```
/// use tokenmeter_bench::{MaxTokensField, ShapeArgs};
///
/// let mut shape = ShapeArgs::default();
/// assert_eq!(shape.max_tokens_field, MaxTokensField::MaxTokens);
/// shape.max_tokens_field = MaxTokensField::MaxCompletionTokens;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaxTokensField {
    /// `max_tokens` (most servers, vLLM).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI's reasoning models reject `max_tokens`).
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The JSON key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// What every request carries besides its prompt: part of [`BenchArgs`](crate::BenchArgs).
///
/// ```
/// use tokenmeter_bench::{BenchArgs, parse::parse_extra_body};
///
/// let mut args = BenchArgs::default();
/// args.shape.extra_body = Some(parse_extra_body(r#"{"temperature": 0}"#).unwrap());
/// args.shape.no_stream_options = true;
/// assert!(!args.shape.no_stream);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ShapeArgs {
    /// HTTP headers sent with every request, values never printed; empty (default).
    pub headers: Vec<HeaderArg>,
    /// A JSON object merged into every request body, its keys replacing the bench's; `None` (default).
    pub extra_body: Option<ExtraBody>,
    /// The body field carrying the output length; default [`MaxTokensField::MaxTokens`].
    pub max_tokens_field: MaxTokensField,
    /// Send `stream: false` and read one JSON answer; default false.
    pub no_stream: bool,
    /// Do not send `stream_options: {"include_usage": true}`; default false.
    pub no_stream_options: bool,
}

impl ShapeArgs {
    /// The shape these flags describe, or what is wrong with a `--header`.
    pub(crate) fn shape(&self) -> anyhow::Result<RequestShape> {
        let mut headers = HeaderMap::new();
        for HeaderArg(header) in &self.headers {
            let header = header.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
            headers.append(header.name.clone(), header.value.clone());
        }
        Ok(RequestShape {
            headers,
            extra: self.extra_body.clone().unwrap_or_default(),
            max_tokens_field: self.max_tokens_field,
            stream: !self.no_stream,
            stream_options: !self.no_stream_options,
        })
    }
}

/// What every request carries besides its prompt.
#[derive(Clone)]
pub(crate) struct RequestShape {
    /// `--header`s, values marked sensitive.
    pub(crate) headers: HeaderMap,
    /// `--extra-body`.
    pub(crate) extra: ExtraBody,
    /// `--max-tokens-field`.
    pub(crate) max_tokens_field: MaxTokensField,
    /// Stream the answer (not `--no-stream`).
    pub(crate) stream: bool,
    /// Send `stream_options.include_usage` (not `--no-stream-options`).
    pub(crate) stream_options: bool,
}

/// Streaming with `stream_options`, `max_tokens`, no header or extra body.
impl Default for RequestShape {
    fn default() -> Self {
        Self {
            headers: HeaderMap::new(),
            extra: ExtraBody::default(),
            max_tokens_field: MaxTokensField::MaxTokens,
            stream: true,
            stream_options: true,
        }
    }
}

impl fmt::Debug for RequestShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestShape")
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("extra", &self.extra)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("stream", &self.stream)
            .field("stream_options", &self.stream_options)
            .finish()
    }
}

impl RequestShape {
    /// Completes `body` (model and prompt set): the length field, streaming, `ignore_eos`,
    /// then the extra body on top.
    pub(crate) fn complete(
        &self,
        body: &mut Map<String, Value>,
        api: Api,
        max_tokens: u64,
        ignore_eos: bool,
    ) {
        let length = api.length_field().unwrap_or(self.max_tokens_field.key());
        body.insert(length.to_owned(), max_tokens.into());
        body.insert("stream".to_owned(), self.stream.into());
        // The Responses API always ends its stream with the usage.
        if self.stream && self.stream_options && api != Api::Responses {
            body.insert(
                "stream_options".to_owned(),
                serde_json::json!({"include_usage": true}),
            );
        }
        if ignore_eos {
            body.insert("ignore_eos".to_owned(), true.into());
        }
        for (key, value) in &self.extra.0 {
            body.insert(key.clone(), value.clone());
        }
    }

    /// The output length `--extra-body` sends in place of the workload's, if it sets the
    /// length field to a whole number.
    pub(crate) fn sent_max_tokens(&self) -> Option<u64> {
        self.extra
            .get(self.max_tokens_field.key())
            .and_then(Value::as_u64)
    }

    /// Whether `--extra-body` sends a prompt of its own (`messages`, `prompt` or `input`): the tokens
    /// sent are then not the workload's.
    pub(crate) fn replaces_prompt(&self) -> bool {
        ["messages", "prompt", "input"]
            .iter()
            .any(|key| self.extra.get(key).is_some())
    }

    /// The model `--extra-body` asks for, if it sets `model` to a string.
    pub(crate) fn sent_model(&self) -> Option<&str> {
        self.extra.get("model").and_then(Value::as_str)
    }

    /// The header values and the extra body's string values ([`ExtraBody::secrets`]), for the
    /// sanitiser to redact when a server echoes them.
    pub(crate) fn secrets(&self) -> impl Iterator<Item = &str> {
        self.headers
            .values()
            .filter_map(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .chain(self.extra.secrets())
    }
}

/// The command line with `--header` values and `--extra-body` values replaced by `[redacted]`
/// (a header keeps its name, the extra body its keys), and every http(s) URL in it (of
/// `--url` or any other flag) without user info, query or fragment, as
/// [`display_url`](crate::url::display_url) prints it.
pub(crate) fn redact_command_line(args: impl IntoIterator<Item = String>) -> Vec<String> {
    const REDACTED: &str = "[redacted]";
    let header = |value: &str| match value.split_once(':') {
        Some((name, _)) => format!("{}: {REDACTED}", name.trim()),
        None => REDACTED.to_owned(),
    };
    let extra = |value: &str| match serde_json::from_str::<Map<String, Value>>(value) {
        Ok(map) => {
            let keys: Map<String, Value> = map
                .keys()
                .map(|k| (k.clone(), Value::String(REDACTED.to_owned())))
                .collect();
            Value::Object(keys).to_string()
        }
        Err(_) => REDACTED.to_owned(),
    };
    // Any http(s) URL, whatever flag it follows: no user info, no query, no fragment.
    let url = |value: &str| match reqwest::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => crate::url::display_url(&url),
        _ => value.to_owned(),
    };
    let mut out = Vec::new();
    let mut pending: Option<&str> = None;
    for arg in args {
        if let Some(flag) = pending.take() {
            out.push(match flag {
                "header" => header(&arg),
                _ => extra(&arg),
            });
            continue;
        }
        let flag = match arg.as_str() {
            "--header" | "-H" => Some("header"),
            "--extra-body" => Some("extra"),
            _ => None,
        };
        if let Some(flag) = flag {
            pending = Some(flag);
            out.push(arg);
            continue;
        }
        let redacted = if let Some(v) = arg.strip_prefix("--header=") {
            format!("--header={}", header(v))
        } else if let Some(v) = arg.strip_prefix("-H").filter(|v| !v.is_empty()) {
            format!("-H{}", header(v))
        } else if let Some(v) = arg.strip_prefix("--extra-body=") {
            format!("--extra-body={}", extra(v))
        } else if let Some((flag, v)) = arg.split_once('=').filter(|(f, _)| f.starts_with("--")) {
            format!("{flag}={}", url(v))
        } else {
            url(&arg)
        };
        out.push(redacted);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_and_hide_their_values() {
        let header = parse_header("api-key:  s3cr3t-value ").unwrap();
        assert_eq!(header.name, "api-key");
        assert_eq!(header.value, "s3cr3t-value");
        assert!(header.value.is_sensitive());
        assert!(!format!("{header:?}").contains("s3cr3t"));
        assert!(
            parse_header("no colon")
                .unwrap_err()
                .contains("Name: value")
        );
        let bad = parse_header("x-a: bad\u{7}value").unwrap_err();
        assert!(bad.contains("x-a") && !bad.contains("bad"), "{bad}");
        assert!(
            parse_header("bad name: v")
                .unwrap_err()
                .contains("header name")
        );
        assert!(
            parse_header("Accept: x")
                .unwrap_err()
                .contains("set by the bench")
        );
    }

    #[test]
    fn the_extra_body_is_an_object_merged_last() {
        let extra = parse_extra_body(r#"{"temperature": 0, "max_tokens": 3}"#).unwrap();
        assert!(parse_extra_body("[1]").unwrap_err().contains("object"));
        assert!(
            parse_extra_body("{")
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert!(
            parse_extra_body(r#"{"stream": false}"#)
                .unwrap_err()
                .contains("--no-stream")
        );
        let shape = ShapeArgs {
            extra_body: Some(extra),
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            no_stream_options: true,
            ..ShapeArgs::default()
        }
        .shape()
        .unwrap();
        let mut body = Map::new();
        shape.complete(&mut body, Api::Chat, 7, true);
        assert_eq!(
            Value::Object(body),
            serde_json::json!({"max_completion_tokens": 7, "stream": true, "ignore_eos": true,
                "temperature": 0, "max_tokens": 3})
        );
    }

    #[test]
    fn the_command_line_loses_its_secrets() {
        let args = [
            "tokenmeter",
            "bench",
            "--header",
            "api-key: abc123",
            "-H",
            "x-t: t0k",
            "--header=x-u: u5er",
            "--extra-body",
            r#"{"user":"me@x"}"#,
            "--url",
            "http://u:pw@h/v1?api-key=qu3ry",
            "--server-metrics=http://h:2/metrics?token=t0ken2",
            "-n",
            "3",
        ]
        .map(str::to_owned);
        let line = redact_command_line(args).join(" ");
        for secret in ["abc123", "t0k", "u5er", "me@x", "pw", "qu3ry", "t0ken2"] {
            assert!(!line.contains(secret), "{secret} in {line}");
        }
        assert!(
            line.contains("api-key: [redacted]") && line.contains("\"user\""),
            "{line}"
        );
        assert!(line.contains("-n 3"), "{line}");
        assert!(
            line.contains("--url http://h/v1 ")
                && line.contains("--server-metrics=http://h:2/metrics "),
            "{line}"
        );
    }
}
