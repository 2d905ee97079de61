//! [`ApiKey`]: the API key, read from the environment, that the bench sends and never shows.

use std::fmt;

/// An API key, read from the environment. Never printed: what the server sends back goes
/// through a [`Sanitizer`](crate::sanitize::Sanitizer) made from it, which redacts every piece
/// of it.
#[derive(Clone)]
pub(crate) struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub(crate) fn new(key: String) -> Self {
        Self(key)
    }

    /// The key itself, to put in a request header.
    pub(crate) fn secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::ApiKey;

    #[test]
    fn an_api_key_debugs_as_redacted() {
        let key = ApiKey::new("sk-debug-0123456789".to_owned());
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert_eq!(format!("{:?}", Some(key)), "Some(ApiKey([redacted]))");
    }
}
