//! `--url` as users write it: the host alone (`https://api.example.com`), the OpenAI base URL
//! every SDK takes (`https://api.example.com/v1`, `OPENAI_BASE_URL`, with or without a trailing
//! slash), or the endpoint's full URL. The first two get `--endpoint` joined on without
//! repeating the segments they share (`/v1` + `/v1/chat/completions` is
//! `/v1/chat/completions`); the model list is `…/models` next to the endpoint, so both reach
//! the same server prefix. What is printed is the URL requested, without user info or query;
//! the password and the query's values are redacted from what the server sends back.

use crate::api::Api;

/// Parses --url: http or https, with a host.
pub(crate) fn parse_url(text: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(text.trim()).map_err(|e| {
        format!("`{text}` is not a URL ({e}); write it like http://127.0.0.1:8000/v1")
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{text}`: unsupported scheme `{}`; use http://HOST:PORT or https://HOST",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "`{text}` has no host; write it like http://127.0.0.1:8000/v1"
        ));
    }
    Ok(url)
}

/// The endpoint URL and its API. A URL whose path already ends in `completions` or
/// `/responses` is used as given (less a trailing slash); otherwise `endpoint`
/// (`/v1/chat/completions`, `/v1/completions` or `/v1/responses`) is joined onto its path,
/// leaving out the leading segments of `endpoint` that the path already ends with.
pub(crate) fn endpoint_url(base: &reqwest::Url, endpoint: &str) -> (reqwest::Url, Api) {
    let mut url = base.clone();
    let path = base.path().trim_end_matches('/');
    let path = if path.ends_with("completions") || path.ends_with("/responses") {
        path.to_owned()
    } else {
        join(path, endpoint)
    };
    url.set_path(&path);
    let api = Api::of_path(url.path());
    (url, api)
}

/// `path` (no trailing slash) followed by `endpoint` (with a leading one), where the longest run
/// of `endpoint`'s first segments that `path` ends with is written once.
fn join(path: &str, endpoint: &str) -> String {
    let segments: Vec<&str> = endpoint
        .trim_start_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    for shared in (1..segments.len()).rev() {
        let head = segments[..shared].join("/");
        if path.ends_with(&format!("/{head}")) {
            return format!("{path}/{}", segments[shared..].join("/"));
        }
    }
    format!("{path}/{}", segments.join("/"))
}

/// The `/models` URL next to an endpoint URL (its query kept: some gateways need it on every
/// call).
pub(crate) fn models_url(endpoint: &reqwest::Url) -> reqwest::Url {
    let mut url = endpoint.clone();
    let path = url.path().trim_end_matches('/');
    let prefix = path
        .strip_suffix("/chat/completions")
        .or_else(|| path.strip_suffix("/completions"))
        .or_else(|| path.strip_suffix("/responses"))
        .unwrap_or(path)
        .to_owned();
    url.set_path(&format!("{prefix}/models"));
    url
}

/// The URL as printed: no user info, no query (they may hold secrets).
pub(crate) fn display_url(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

/// What `url` carries that may be a secret, for the sanitiser to redact when a server echoes
/// it: its password and the values of its query (`?api-key=…`, a signature).
pub(crate) fn url_secrets(url: &reqwest::Url) -> Vec<String> {
    let password = url.password().map(str::to_owned);
    let values = url.query_pairs().map(|(_, value)| value.into_owned());
    password.into_iter().chain(values).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: &str = "/v1/chat/completions";
    const COMPLETIONS: &str = "/v1/completions";

    fn joined(url: &str, endpoint: &str) -> (String, Api) {
        let (url, api) = endpoint_url(&parse_url(url).unwrap(), endpoint);
        (url.to_string(), api)
    }

    #[test]
    fn urls_are_checked_with_a_fix() {
        assert!(parse_url("http://127.0.0.1:8000").is_ok());
        assert!(parse_url("https://api.example.com/v1").is_ok());
        assert!(parse_url("localhost:8000").unwrap_err().contains("scheme"));
        assert!(
            parse_url("not a url")
                .unwrap_err()
                .contains("http://127.0.0.1:8000")
        );
        assert!(
            parse_url("ftp://x")
                .unwrap_err()
                .contains("unsupported scheme")
        );
    }

    #[test]
    fn every_form_of_the_base_reaches_the_endpoint() {
        for base in [
            "https://api.example.com",
            "https://api.example.com/",
            "https://api.example.com/v1",
            "https://api.example.com/v1/",
            "https://api.example.com/v1/chat/completions",
            "https://api.example.com/v1/chat/completions/",
        ] {
            assert_eq!(
                joined(base, CHAT),
                (
                    "https://api.example.com/v1/chat/completions".to_owned(),
                    Api::Chat
                ),
                "{base}"
            );
        }
        for base in ["http://h:1", "http://h:1/v1/", "http://h:1/v1"] {
            assert_eq!(
                joined(base, COMPLETIONS),
                ("http://h:1/v1/completions".to_owned(), Api::Completions),
                "{base}"
            );
        }
    }

    #[test]
    fn prefixes_are_kept_and_shared_segments_written_once() {
        assert_eq!(
            joined("http://h:1/openai/v1", CHAT).0,
            "http://h:1/openai/v1/chat/completions"
        );
        assert_eq!(
            joined("http://h:1/openai", CHAT).0,
            "http://h:1/openai/v1/chat/completions"
        );
        assert_eq!(
            joined("http://h:1/v1/chat", CHAT).0,
            "http://h:1/v1/chat/completions"
        );
        // A full endpoint URL wins over --endpoint, and its API is what it names.
        let (url, api) = joined("http://h:1/openai/v1/completions", CHAT);
        assert_eq!(
            (url.as_str(), api),
            ("http://h:1/openai/v1/completions", Api::Completions)
        );
        // The query (an api-version, say) stays on the request.
        assert_eq!(
            joined("http://h:1/v1?api-version=2", CHAT).0,
            "http://h:1/v1/chat/completions?api-version=2"
        );
    }

    #[test]
    fn the_responses_endpoint_is_its_own_api() {
        for base in ["http://h:1", "http://h:1/v1", "http://h:1/v1/responses/"] {
            assert_eq!(
                joined(base, "/v1/responses"),
                ("http://h:1/v1/responses".to_owned(), Api::Responses),
                "{base}"
            );
        }
        let (endpoint, _) = endpoint_url(&parse_url("http://h:1/v1").unwrap(), "/v1/responses");
        assert_eq!(models_url(&endpoint).as_str(), "http://h:1/v1/models");
    }

    #[test]
    fn models_are_listed_next_to_the_endpoint() {
        for (base, models) in [
            ("http://h:1", "http://h:1/v1/models"),
            ("http://h:1/v1/", "http://h:1/v1/models"),
            ("http://h:1/openai/v1", "http://h:1/openai/v1/models"),
            (
                "http://h:1/openai/v1/completions",
                "http://h:1/openai/v1/models",
            ),
        ] {
            let (endpoint, _) = endpoint_url(&parse_url(base).unwrap(), CHAT);
            assert_eq!(models_url(&endpoint).as_str(), models, "{base}");
        }
    }

    #[test]
    fn the_printed_url_has_no_secrets() {
        let secret = parse_url("http://u:p@h:1/v1/chat/completions?api-key=s").unwrap();
        assert_eq!(display_url(&secret), "http://h:1/v1/chat/completions");
        assert_eq!(url_secrets(&secret), ["p", "s"]);
    }
}
