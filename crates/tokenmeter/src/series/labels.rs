//! The bounded label set that names a series.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};

use super::tenant::{TenantKey, Tenants};

/// Longest label value kept, in bytes; longer values are cut at a character boundary.
pub const MAX_LABEL_LEN: usize = 128;

/// The label value every label of a folded series carries.
pub const OTHER: &str = "_OTHER";

/// Which side of the wire this process measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// An inference server: a request starts when it arrives.
    Server,
    /// A client of a provider: a request starts when it is sent.
    Client,
}

impl Role {
    /// `server` or `client`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

/// The labels of one series: which side measures, and the OpenTelemetry GenAI attributes
/// `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
/// `gen_ai.response.model`, `server.address` and `server.port`; and up to
/// [`MAX_TENANTS`](super::MAX_TENANTS) tenant attributes ([`Labels::tenant`]).
///
/// Values are length-limited to [`MAX_LABEL_LEN`] bytes and control characters are replaced by
/// `_` when the series is resolved, so a value taken from a request can never make a label
/// unbounded. Empty values mean "not known" and exporters leave them out.
///
/// Borrowed values cost nothing: looking up an existing series with borrowed labels does not
/// allocate.
///
/// # Examples
///
/// ```
/// use tokenmeter::{Labels, Role};
///
/// let labels = Labels::server("chat").provider("vllm").request_model("llama-3-8b");
/// assert_eq!(labels.role(), Role::Server);
/// assert_eq!(labels.response_model_or_request(), "llama-3-8b");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Labels<'a> {
    role: Role,
    operation: Cow<'a, str>,
    provider: Cow<'a, str>,
    request_model: Cow<'a, str>,
    response_model: Cow<'a, str>,
    server_address: Cow<'a, str>,
    server_port: Option<u16>,
    tenants: Tenants<'a>,
}

impl<'a> Labels<'a> {
    /// Labels for `role` and `operation` (`chat`, `text_completion`, `embeddings`, ...).
    pub fn new(role: Role, operation: impl Into<Cow<'a, str>>) -> Self {
        Self {
            role,
            operation: operation.into(),
            provider: Cow::Borrowed(""),
            request_model: Cow::Borrowed(""),
            response_model: Cow::Borrowed(""),
            server_address: Cow::Borrowed(""),
            server_port: None,
            tenants: Tenants::default(),
        }
    }

    /// Server-side labels for `operation`.
    pub fn server(operation: impl Into<Cow<'a, str>>) -> Self {
        Self::new(Role::Server, operation)
    }

    /// Client-side labels for `operation`.
    pub fn client(operation: impl Into<Cow<'a, str>>) -> Self {
        Self::new(Role::Client, operation)
    }

    /// Sets `gen_ai.provider.name`.
    pub fn provider(mut self, value: impl Into<Cow<'a, str>>) -> Self {
        self.provider = value.into();
        self
    }

    /// Sets `gen_ai.request.model`.
    pub fn request_model(mut self, value: impl Into<Cow<'a, str>>) -> Self {
        self.request_model = value.into();
        self
    }

    /// Sets `gen_ai.response.model`.
    pub fn response_model(mut self, value: impl Into<Cow<'a, str>>) -> Self {
        self.response_model = value.into();
        self
    }

    /// Sets `server.address`.
    pub fn server_address(mut self, value: impl Into<Cow<'a, str>>) -> Self {
        self.server_address = value.into();
        self
    }

    /// Sets `server.port`.
    pub fn server_port(mut self, port: u16) -> Self {
        self.server_port = Some(port);
        self
    }

    /// Sets the tenant attribute `key` (who the request is for: a tenant, a user; see
    /// [`TenantKey`]). Tenant attributes are part of the series like every other label: their
    /// values are cut and cleaned the same way, each distinct set is one series under the
    /// meter's cap, and a folded series has none. Exporters put them on request-level
    /// instruments only, never on engine-wide ones.
    ///
    /// A key that was set (or one with the same Prometheus name) gets the new value; an empty
    /// value removes it. At most [`MAX_TENANTS`](super::MAX_TENANTS) keys: a further new key is
    /// ignored (the request-reading helpers refuse more when they are built). The order the
    /// keys are set in does not matter.
    ///
    /// # Examples
    ///
    /// ```
    /// use tokenmeter::series::TenantKey;
    /// use tokenmeter::{Labels, Meter};
    ///
    /// let meter = Meter::builder().max_series(1).build();
    /// let acme = Labels::server("chat").tenant(TenantKey::TENANT_ID, "acme");
    /// assert_eq!(meter.series(&acme).labels().tenant_value(&TenantKey::TENANT_ID), Some("acme"));
    ///
    /// let other = Labels::server("chat").tenant(TenantKey::TENANT_ID, "globex");
    /// let folded = meter.series(&other); // past the cap of 1
    /// assert!(folded.labels().is_folded());
    /// assert_eq!(folded.labels().tenants().count(), 0);
    /// ```
    pub fn tenant(mut self, key: TenantKey, value: impl Into<Cow<'a, str>>) -> Self {
        self.tenants.set(key, value.into());
        self
    }

    /// The tenant attributes, sorted by key, none empty.
    pub fn tenants(&self) -> impl Iterator<Item = (&TenantKey, &str)> {
        self.tenants.iter()
    }

    /// The value of the tenant attribute `key`, if set.
    pub fn tenant_value(&self, key: &TenantKey) -> Option<&str> {
        self.tenants().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.role
    }
    /// `gen_ai.operation.name`.
    pub fn operation(&self) -> &str {
        &self.operation
    }
    /// `gen_ai.provider.name` (empty when unknown).
    pub fn provider_name(&self) -> &str {
        &self.provider
    }
    /// `gen_ai.request.model` (empty when unknown).
    pub fn request_model_name(&self) -> &str {
        &self.request_model
    }
    /// `gen_ai.response.model` (empty when unknown).
    pub fn response_model_name(&self) -> &str {
        &self.response_model
    }
    /// The response model, or the request model when the response model is unknown: what
    /// vLLM's `model_name` label carries.
    pub fn response_model_or_request(&self) -> &str {
        if self.response_model.is_empty() {
            &self.request_model
        } else {
            &self.response_model
        }
    }
    /// `server.address` (empty when unknown).
    pub fn server_address_value(&self) -> &str {
        &self.server_address
    }
    /// `server.port`.
    pub fn server_port_value(&self) -> Option<u16> {
        self.server_port
    }

    /// True when this is the overflow series that label sets past the cap fold into.
    pub fn is_folded(&self) -> bool {
        self.operation == OTHER
            && self.provider == OTHER
            && self.request_model == OTHER
            && self.response_model == OTHER
    }

    /// The overflow label set for `role`: every value `_OTHER`.
    pub fn folded(role: Role) -> Labels<'static> {
        Labels {
            role,
            operation: Cow::Borrowed(OTHER),
            provider: Cow::Borrowed(OTHER),
            request_model: Cow::Borrowed(OTHER),
            response_model: Cow::Borrowed(OTHER),
            server_address: Cow::Borrowed(OTHER),
            server_port: None,
            tenants: Tenants::default(),
        }
    }

    /// The same labels with every value sanitised (see the type docs). Borrows where the value
    /// was already clean.
    pub fn sanitized(&self) -> Labels<'_> {
        Labels {
            role: self.role,
            operation: sanitize(&self.operation),
            provider: sanitize(&self.provider),
            request_model: sanitize(&self.request_model),
            response_model: sanitize(&self.response_model),
            server_address: sanitize(&self.server_address),
            server_port: self.server_port,
            tenants: self.tenants.map(sanitize),
        }
    }

    /// An owned copy.
    pub fn into_owned(self) -> Labels<'static> {
        Labels {
            role: self.role,
            operation: Cow::Owned(self.operation.into_owned()),
            provider: Cow::Owned(self.provider.into_owned()),
            request_model: Cow::Owned(self.request_model.into_owned()),
            response_model: Cow::Owned(self.response_model.into_owned()),
            server_address: Cow::Owned(self.server_address.into_owned()),
            server_port: self.server_port,
            tenants: self.tenants.into_owned(),
        }
    }

    /// A hash that is equal for equal labels whether borrowed or owned.
    pub(crate) fn key(&self) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

impl Hash for Labels<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.role.hash(state);
        self.operation.as_ref().hash(state);
        self.provider.as_ref().hash(state);
        self.request_model.as_ref().hash(state);
        self.response_model.as_ref().hash(state);
        self.server_address.as_ref().hash(state);
        self.server_port.hash(state);
        self.tenants.hash(state);
    }
}

impl fmt::Debug for Labels<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Labels")
            .field("role", &self.role)
            .field("operation", &self.operation)
            .field("provider", &self.provider)
            .field("request_model", &self.request_model)
            .field("response_model", &self.response_model)
            .field("server_address", &self.server_address)
            .field("server_port", &self.server_port)
            .field("tenants", &self.tenants)
            .finish()
    }
}

/// Cuts `value` to [`MAX_LABEL_LEN`] bytes at a character boundary and replaces control
/// characters with `_`. Borrows when nothing needs to change.
///
/// # Examples
///
/// ```
/// use tokenmeter::series::sanitize;
/// assert_eq!(sanitize("llama"), "llama");
/// assert_eq!(sanitize("a\nb"), "a_b");
/// assert_eq!(sanitize(&"x".repeat(1000)).len(), tokenmeter::series::MAX_LABEL_LEN);
/// ```
pub fn sanitize(value: &str) -> Cow<'_, str> {
    let mut end = value.len().min(MAX_LABEL_LEN);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &value[..end];
    // Control characters are C0, DEL and C1 (U+0080 to U+009F, encoded 0xC2 0x80..=0x9F): a
    // byte scan rules them out before the character scan.
    let suspect = cut.bytes().any(|b| b < 0x20 || b == 0x7f || b == 0xc2);
    if suspect && cut.chars().any(char::is_control) {
        Cow::Owned(
            cut.chars()
                .map(|c| if c.is_control() { '_' } else { c })
                .collect(),
        )
    } else {
        Cow::Borrowed(cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_and_owned_labels_share_a_key() {
        let name = String::from("m");
        let borrowed = Labels::client("chat").request_model(name.as_str());
        let owned = borrowed.clone().into_owned();
        assert_eq!(borrowed.key(), owned.key());
        assert_eq!(borrowed, owned);
    }

    #[test]
    fn sanitize_cuts_at_a_char_boundary() {
        let long = "é".repeat(100); // 200 bytes
        let cut = sanitize(&long);
        assert!(cut.len() <= MAX_LABEL_LEN);
        assert!(cut.chars().all(|c| c == 'é'));
    }

    #[test]
    fn tenant_values_are_sanitised_and_part_of_the_identity() {
        let long = format!("a\u{1b}b{}", "x".repeat(1000));
        let labels = Labels::server("chat").tenant(TenantKey::USER_ID, long.as_str());
        let clean = labels.sanitized();
        let value = clean.tenant_value(&TenantKey::USER_ID).unwrap();
        assert_eq!(value.len(), MAX_LABEL_LEN);
        assert!(value.starts_with("a_b"));
        let other = Labels::server("chat").tenant(TenantKey::USER_ID, "b");
        assert_ne!(labels.key(), other.key());
        assert_ne!(labels, other);
        let owned = other.clone().into_owned();
        assert_eq!((owned.key(), &owned), (other.key(), &other));
        let none = Labels::server("chat").tenant(TenantKey::USER_ID, "");
        assert_eq!(none, Labels::server("chat"), "an empty value is no value");
    }

    #[test]
    fn folded_labels_are_recognised() {
        assert!(Labels::folded(Role::Server).is_folded());
        assert!(!Labels::server("chat").is_folded());
    }
}
