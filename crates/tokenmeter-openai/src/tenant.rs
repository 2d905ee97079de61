//! [`TenantLabels`]: the allow-list of request headers (and the body's `user`, opt-in) that
//! become tenant attributes of a request's series.

use std::fmt;

use http::{HeaderMap, HeaderName};
use tokenmeter::series::{MAX_TENANTS, TenantKeyError};
use tokenmeter::{Labels, TenantKey};

/// Parts of a header name that mark a credential: such a header never becomes a label.
const CREDENTIAL_PARTS: [&str; 9] = [
    "auth",
    "cookie",
    "secret",
    "password",
    "token",
    "credential",
    "api-key",
    "apikey",
    "api_key",
];

/// Which request headers, and whether the OpenAI body's `user`, label a request's series, and
/// under which tenant attribute keys ([`TenantKey`]): the same allow-list for the server layer
/// (`tokenmeter-axum`) and the client helper (`send_labelled`, feature `reqwest`).
///
/// - Only the headers on the list are read; at most [`MAX_TENANTS`] entries in all.
/// - A header that names a credential (any name containing `auth`, `cookie`, `secret`,
///   `password`, `token`, `credential`, `api-key`, `apikey` or `api_key`, or ending in `key`:
///   `authorization`, `x-api-key`, `api-key`, `cookie`, ...) is refused when the list is built:
///   a secret never goes on a label.
/// - Values are never rejected: bytes that are not UTF-8 become U+FFFD, and
///   [`Labels`] cuts every value to [`MAX_LABEL_LEN`](tokenmeter::series::MAX_LABEL_LEN) bytes
///   and replaces control characters. A missing or empty header sets nothing.
/// - Each distinct set of values is one series under the meter's cap: past it, requests fold
///   into `_OTHER` (which carries no tenant attribute) and `tokenmeter.series.folded` counts
///   them. A million tenants cost the cap's series and no more.
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, TenantKey};
/// use tokenmeter_openai::TenantLabels;
///
/// let tenants = TenantLabels::new()
///     .header("x-tenant-id", "tenant.id")?
///     .body_user()?; // the body's `user` as `user.id`
/// assert!(TenantLabels::new().header("authorization", "tenant.id").is_err());
///
/// let mut headers = http::HeaderMap::new();
/// headers.insert("x-tenant-id", "acme".parse()?);
/// headers.insert("x-other", "never read".parse()?);
/// let labels = tenants.apply(Labels::server("chat"), &headers, Some("user-42"));
/// let pairs: Vec<_> = labels.tenants().map(|(k, v)| (k.as_str(), v)).collect();
/// assert_eq!(pairs, [("tenant.id", "acme"), ("user.id", "user-42")]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct TenantLabels {
    headers: Vec<(HeaderName, TenantKey)>,
    body_user: Option<TenantKey>,
}

impl TenantLabels {
    /// An empty allow-list: no tenant attribute.
    pub fn new() -> Self {
        Self::default()
    }

    /// Labels requests with the value of header `name` as the tenant attribute `key`
    /// (`tenant.id`, `user.id`, or a custom key: see [`TenantKey::custom`]).
    ///
    /// # Errors
    ///
    /// [`TenantError`]: `name` is not a header name or names a credential, `key` is not a valid
    /// key, either is already on the list, or the list is full ([`MAX_TENANTS`]).
    pub fn header(mut self, name: &str, key: &str) -> Result<Self, TenantError> {
        let header = HeaderName::try_from(name).map_err(|_| TenantError::HeaderName {
            name: name.chars().take(64).collect(),
        })?;
        if looks_like_a_credential(header.as_str()) {
            return Err(TenantError::Credential {
                name: header.as_str().to_owned(),
            });
        }
        if self.headers.iter().any(|(h, _)| *h == header) {
            return Err(TenantError::DuplicateHeader {
                name: header.as_str().to_owned(),
            });
        }
        let key = self.new_key(key)?;
        self.headers.push((header, key));
        Ok(self)
    }

    /// Also labels requests with the `user` field of their OpenAI JSON body, as `user.id`
    /// ([`TenantKey::USER_ID`]). Off unless asked: the value is the caller's end-user id.
    ///
    /// # Errors
    ///
    /// [`TenantError`]: `user.id` is already on the list, or the list is full.
    pub fn body_user(mut self) -> Result<Self, TenantError> {
        if self.body_user.is_some() {
            return Err(TenantError::DuplicateKey {
                key: TenantKey::USER_ID.to_string(),
            });
        }
        let key = self.new_key(TenantKey::USER_ID.as_str())?;
        self.body_user = Some(key);
        Ok(self)
    }

    /// True when the list is empty: [`TenantLabels::apply`] changes nothing.
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.body_user.is_none()
    }

    /// True when the body's `user` was asked for ([`TenantLabels::body_user`]): the caller
    /// reads it (with [`request_body::fields`](crate::request_body::fields)) and passes it to
    /// [`TenantLabels::apply`].
    pub fn reads_body_user(&self) -> bool {
        self.body_user.is_some()
    }

    /// `labels` with the tenant attributes of a request with `headers` and, when
    /// [`TenantLabels::body_user`] was asked for, the body's `user`. Values are borrowed: no
    /// allocation unless a header value is not UTF-8. Once per request, never per token.
    pub fn apply<'a>(
        &self,
        mut labels: Labels<'a>,
        headers: &'a HeaderMap,
        body_user: Option<&'a str>,
    ) -> Labels<'a> {
        for (name, key) in &self.headers {
            if let Some(value) = headers.get(name) {
                labels = labels.tenant(key.clone(), String::from_utf8_lossy(value.as_bytes()));
            }
        }
        if let (Some(key), Some(user)) = (&self.body_user, body_user) {
            labels = labels.tenant(key.clone(), user);
        }
        labels
    }

    /// `key` checked, new on the list, and room for it.
    fn new_key(&self, key: &str) -> Result<TenantKey, TenantError> {
        let key = TenantKey::custom(key).map_err(TenantError::Key)?;
        let mut taken = self.headers.iter().map(|(_, k)| k).chain(&self.body_user);
        if taken.any(|k| k.prometheus_name() == key.prometheus_name()) {
            return Err(TenantError::DuplicateKey {
                key: key.to_string(),
            });
        }
        if self.headers.len() + usize::from(self.body_user.is_some()) >= MAX_TENANTS {
            return Err(TenantError::TooMany);
        }
        Ok(key)
    }
}

/// Whether a header (lower-case) names a credential.
fn looks_like_a_credential(name: &str) -> bool {
    name.ends_with("key") || CREDENTIAL_PARTS.iter().any(|part| name.contains(part))
}

impl fmt::Debug for TenantLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<_> = self
            .headers
            .iter()
            .map(|(h, k)| (h.as_str(), k.as_str()))
            .collect();
        f.debug_struct("TenantLabels")
            .field("headers", &headers)
            .field("body_user", &self.body_user.as_ref().map(TenantKey::as_str))
            .finish()
    }
}

/// A [`TenantLabels`] entry that was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TenantError {
    /// Not a valid HTTP header name.
    HeaderName {
        /// The name given (its first 64 characters).
        name: String,
    },
    /// The header names a credential: its value would put a secret on a label.
    Credential {
        /// The header's name.
        name: String,
    },
    /// The header is already on the list.
    DuplicateHeader {
        /// The header's name.
        name: String,
    },
    /// The key (or one with the same Prometheus label name) is already on the list.
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// Not a valid tenant attribute key.
    Key(TenantKeyError),
    /// More than [`MAX_TENANTS`] entries.
    TooMany,
}

impl fmt::Display for TenantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HeaderName { name } => write!(f, "`{name}` is not an HTTP header name"),
            Self::Credential { name } => write!(
                f,
                "the header `{name}` carries credentials: a secret never goes on a label"
            ),
            Self::DuplicateHeader { name } => {
                write!(f, "the header `{name}` is already a tenant label")
            }
            Self::DuplicateKey { key } => {
                write!(f, "the tenant attribute `{key}` is already taken")
            }
            Self::Key(error) => error.fmt(f),
            Self::TooMany => write!(f, "at most {MAX_TENANTS} tenant attributes per series"),
        }
    }
}

impl std::error::Error for TenantError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Key(error) => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use tokenmeter::Meter;
    use tokenmeter::series::MAX_LABEL_LEN;

    #[test]
    fn credential_headers_are_refused() {
        for name in [
            "authorization",
            "Proxy-Authorization",
            "cookie",
            "x-api-key",
            "api-key",
            "x-goog-api-key",
            "ocp-apim-subscription-key",
            "x-auth-token",
            "x-amz-security-token",
            "x-client-secret",
        ] {
            let error = TenantLabels::new()
                .header(name, "tenant.id")
                .expect_err(name);
            assert!(matches!(error, TenantError::Credential { .. }), "{name}");
            assert!(error.to_string().contains("a secret never goes on a label"));
        }
    }

    #[test]
    fn bad_names_keys_duplicates_and_a_full_list_are_refused() {
        let list = TenantLabels::new()
            .header("x-tenant-id", "tenant.id")
            .unwrap();
        let refused = |r: Result<TenantLabels, TenantError>| r.unwrap_err();
        assert!(matches!(
            refused(list.clone().header("bad header", "team")),
            TenantError::HeaderName { .. }
        ));
        assert!(matches!(
            refused(list.clone().header("x-team", "Team!")),
            TenantError::Key(_)
        ));
        assert!(matches!(
            refused(list.clone().header("X-Tenant-Id", "team")),
            TenantError::DuplicateHeader { .. }
        ));
        assert!(matches!(
            refused(list.clone().header("x-org", "tenant_id")),
            TenantError::DuplicateKey { .. }
        ));
        let user = list.clone().header("x-user", "user.id").unwrap();
        assert!(matches!(
            refused(user.body_user()),
            TenantError::DuplicateKey { .. }
        ));
        let full = list
            .header("x-a", "a")
            .and_then(|l| l.header("x-b", "b"))
            .and_then(TenantLabels::body_user)
            .unwrap();
        assert_eq!(refused(full.header("x-c", "c")), TenantError::TooMany);
    }

    #[test]
    fn only_listed_headers_are_read_and_values_are_sanitised_never_rejected() {
        let tenants = TenantLabels::new()
            .header("x-tenant-id", "tenant.id")
            .and_then(|l| l.header("x-team", "acme.team"))
            .unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-tenant-id",
            HeaderValue::from_bytes(b"caf\xe9\tbar").unwrap(),
        );
        headers.insert(
            "x-team",
            HeaderValue::from_str(&"t".repeat(10_000)).unwrap(),
        );
        headers.insert("x-unlisted", HeaderValue::from_static("secret-ish"));
        let labels = tenants.apply(Labels::server("chat"), &headers, Some("ignored"));
        let meter = Meter::builder().build();
        let series = meter.series(&labels);
        let got: Vec<_> = series
            .labels()
            .tenants()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], ("acme.team", "t".repeat(MAX_LABEL_LEN).as_str()));
        assert_eq!(got[1], ("tenant.id", "caf\u{fffd}_bar"));
    }

    #[test]
    fn an_empty_list_changes_nothing() {
        let mut headers = HeaderMap::new();
        headers.insert("x-tenant-id", HeaderValue::from_static("acme"));
        let tenants = TenantLabels::new();
        assert!(tenants.is_empty() && !tenants.reads_body_user());
        let labels = tenants.apply(Labels::server("chat"), &headers, Some("u"));
        assert_eq!(labels, Labels::server("chat"));
    }
}
