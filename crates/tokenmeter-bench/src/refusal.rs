//! An HTTP error answer, classified: whether it shows that no request of the run can succeed
//! ([`aborts`]), and what to fix ([`remedy`]).

use crate::url::display_url;

/// The remedy for an HTTP error `status` of a request to `url`.
pub(crate) fn remedy(status: u16, url: &reqwest::Url) -> String {
    match status {
        401 | 403 => "check the API key: it is read from the variable named by --api-key-env \
                     (default OPENAI_API_KEY) and sent as a bearer token"
            .to_owned(),
        404 | 405 => format!(
            "check --url and --endpoint (requested {}) and --model",
            display_url(url)
        ),
        400 | 422 => "the server rejected the request: check --model, --endpoint and the \
                      request's options (e.g. --output-tokens)"
            .to_owned(),
        _ => "check the server".to_owned(),
    }
}

/// Whether the answer to the test request ends the run before it starts.
pub(crate) fn aborts(status: u16) -> bool {
    matches!(status, 400 | 401 | 403 | 404 | 405 | 422)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remedies_name_the_flag_to_fix() {
        let url = reqwest::Url::parse("http://127.0.0.1:9/v1/chat/completions").unwrap();
        assert!(remedy(401, &url).contains("--api-key-env"));
        assert!(remedy(403, &url).contains("API key"));
        assert!(remedy(404, &url).contains("/v1/chat/completions"));
        assert!(remedy(422, &url).contains("--model"));
        assert!(aborts(401) && aborts(422) && !aborts(429) && !aborts(503));
    }
}
