//! Tenant attributes: a few request-level labels that say whose request it was (a tenant, a
//! user), under a fixed or validated key, bounded like every other label.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::conventions::attr;

/// Most tenant attributes one series carries.
pub const MAX_TENANTS: usize = 4;

/// Longest tenant key, in bytes.
pub const MAX_TENANT_KEY_LEN: usize = 64;

/// Label names a tenant key may not take, in their Prometheus spelling: vLLM's own labels, the
/// histogram and summary labels, and the target labels Prometheus adds at scrape time.
const RESERVED: [&str; 6] = ["model_name", "engine", "le", "quantile", "job", "instance"];

/// The key of a tenant attribute ([`Labels::tenant`](crate::Labels::tenant)): the
/// OpenTelemetry attribute key; Prometheus gets it with dots as underscores
/// ([`TenantKey::prometheus_name`]).
///
/// Either one of the documented keys ([`TenantKey::TENANT_ID`], [`TenantKey::USER_ID`]) or a
/// custom key checked by [`TenantKey::custom`]: lower-case ASCII letters, digits, `_` and `.`,
/// starting with a letter, at most [`MAX_TENANT_KEY_LEN`] bytes, and not one of the keys
/// tokenmeter already writes (`gen_ai.*` and the others of
/// [`conventions::attr`](crate::conventions::attr), vLLM's `model_name` and `engine`, `le`,
/// `quantile`, `job`, `instance`).
///
/// Cheap to clone (a reference count at most).
///
/// # Examples
///
/// ```
/// use tokenmeter::series::TenantKey;
///
/// assert_eq!(TenantKey::USER_ID.as_str(), "user.id");
/// let team = TenantKey::custom("acme.team")?;
/// assert_eq!(team.prometheus_name(), "acme_team");
/// assert!(TenantKey::custom("gen_ai.request.model").is_err()); // tokenmeter's own
/// assert!(TenantKey::custom("Team Name").is_err());
/// # Ok::<(), tokenmeter::series::TenantKeyError>(())
/// ```
#[derive(Clone)]
pub struct TenantKey(Name);

#[derive(Clone)]
enum Name {
    Known(&'static str),
    Custom(Arc<str>),
}

impl TenantKey {
    /// `tenant.id`: the tenant (organisation, project, team, API key alias) a request is
    /// billed to. tokenmeter's own key: no OpenTelemetry semantic convention names a tenant.
    pub const TENANT_ID: TenantKey = TenantKey(Name::Known("tenant.id"));

    /// `user.id`: the end user, as in the OpenTelemetry `user` attribute registry (it replaced
    /// `enduser.id`). An OpenAI request body's `user` field goes here.
    pub const USER_ID: TenantKey = TenantKey(Name::Known("user.id"));

    /// A custom key, validated (see the type docs).
    ///
    /// # Errors
    ///
    /// [`TenantKeyError`] naming the key and what is wrong with it.
    pub fn custom(key: &str) -> Result<TenantKey, TenantKeyError> {
        for known in [Self::TENANT_ID, Self::USER_ID] {
            if known.as_str() == key {
                return Ok(known);
            }
        }
        check(key).map_err(|reason| TenantKeyError {
            key: key.chars().take(MAX_TENANT_KEY_LEN).collect(),
            reason,
        })?;
        Ok(TenantKey(Name::Custom(Arc::from(key))))
    }

    /// The OpenTelemetry attribute key.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Name::Known(name) => name,
            Name::Custom(name) => name,
        }
    }

    /// The Prometheus label name: the key with dots as underscores.
    pub fn prometheus_name(&self) -> String {
        self.as_str().replace('.', "_")
    }

    /// True when the two keys have the same Prometheus label name (`team.id` and `team_id`):
    /// one series holds at most one of them.
    pub(crate) fn same_label(&self, other: &TenantKey) -> bool {
        let dots = |c: u8| if c == b'.' { b'_' } else { c };
        let (a, b) = (self.as_str().as_bytes(), other.as_str().as_bytes());
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| dots(*x) == dots(*y))
    }
}

/// Why `key` cannot be a tenant key.
fn check(key: &str) -> Result<(), &'static str> {
    if key.is_empty() {
        return Err("it is empty");
    }
    if key.len() > MAX_TENANT_KEY_LEN {
        return Err("it is longer than 64 bytes");
    }
    if !key.as_bytes()[0].is_ascii_lowercase() {
        return Err("it does not start with a lower-case ASCII letter");
    }
    let allowed = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'.';
    if !key.as_bytes().iter().all(allowed) {
        return Err("only lower-case ASCII letters, digits, `_` and `.` are allowed");
    }
    if key.contains("..") || key.ends_with('.') {
        return Err("a dot must separate two names");
    }
    let prometheus = key.replace('.', "_");
    let taken = attr::ALL
        .iter()
        .any(|own| own.replace(['.', '-'], "_") == prometheus)
        || RESERVED.contains(&prometheus.as_str());
    if taken {
        return Err("tokenmeter or Prometheus already uses this label name");
    }
    Ok(())
}

impl PartialEq for TenantKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for TenantKey {}

impl Hash for TenantKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for TenantKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TenantKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for TenantKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TenantKey({:?})", self.as_str())
    }
}

impl fmt::Display for TenantKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A custom [`TenantKey`] that is not a valid key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantKeyError {
    key: String,
    reason: &'static str,
}

impl fmt::Display for TenantKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` cannot be a tenant attribute key: {}",
            self.key, self.reason
        )
    }
}

impl std::error::Error for TenantKeyError {}

/// The tenant attributes of one label set: at most [`MAX_TENANTS`], sorted by key, none empty,
/// so that equal sets compare and hash equal whatever order they were given in.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Tenants<'a> {
    items: [Option<(TenantKey, Cow<'a, str>)>; MAX_TENANTS],
}

impl<'a> Tenants<'a> {
    /// Sets `key` to `value`, replacing the value of a key with the same label name; an empty
    /// value removes it. A new key past [`MAX_TENANTS`] is ignored.
    pub(crate) fn set(&mut self, key: TenantKey, value: Cow<'a, str>) {
        for slot in &mut self.items {
            if slot.as_ref().is_some_and(|(k, _)| k.same_label(&key)) {
                *slot = None;
            }
        }
        let mut len = 0;
        for i in 0..MAX_TENANTS {
            if self.items[i].is_some() {
                self.items.swap(len, i);
                len += 1;
            }
        }
        if value.is_empty() || len == MAX_TENANTS {
            return;
        }
        self.items[len] = Some((key, value));
        // Insertion into the sorted prefix, in place: no allocation per request.
        while len > 0 && self.items[len - 1] > self.items[len] {
            self.items.swap(len - 1, len);
            len -= 1;
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&TenantKey, &str)> {
        self.items.iter().flatten().map(|(k, v)| (k, v.as_ref()))
    }

    /// The same set with each value mapped by `f` (sanitising keeps values non-empty, and the
    /// keys and their order are unchanged).
    pub(crate) fn map<'b>(&'b self, f: impl Fn(&'b str) -> Cow<'b, str>) -> Tenants<'b> {
        Tenants {
            items: self
                .items
                .each_ref()
                .map(|item| item.as_ref().map(|(k, v)| (k.clone(), f(v.as_ref())))),
        }
    }

    pub(crate) fn into_owned(self) -> Tenants<'static> {
        Tenants {
            items: self
                .items
                .map(|item| item.map(|(k, v)| (k, Cow::Owned(v.into_owned())))),
        }
    }
}

impl fmt::Debug for Tenants<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (k.as_str(), v)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_keys_are_checked() {
        for good in [
            "team",
            "acme.team_id",
            "a1",
            &"k".repeat(MAX_TENANT_KEY_LEN),
        ] {
            assert_eq!(TenantKey::custom(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "Team",
            "1team",
            "_team",
            "team id",
            "team-id",
            "team..id",
            "team.",
            "tëam",
            "gen_ai.request.model",
            "gen_ai_request_model",
            "server.port",
            "error_type",
            "role",
            "model_name",
            "le",
            "job",
            &"k".repeat(MAX_TENANT_KEY_LEN + 1),
        ] {
            let error = TenantKey::custom(bad).expect_err(bad);
            assert!(
                error
                    .to_string()
                    .contains("cannot be a tenant attribute key")
            );
        }
    }

    #[test]
    fn the_documented_keys_are_themselves() {
        assert_eq!(TenantKey::custom("user.id").unwrap(), TenantKey::USER_ID);
        assert_eq!(
            TenantKey::custom("tenant.id").unwrap(),
            TenantKey::TENANT_ID
        );
        assert_eq!(TenantKey::TENANT_ID.prometheus_name(), "tenant_id");
    }

    #[test]
    fn sets_are_sorted_bounded_and_one_per_label_name() {
        let key = |k: &str| TenantKey::custom(k).unwrap();
        let mut a = Tenants::default();
        a.set(key("b"), "1".into());
        a.set(key("a"), "2".into());
        let mut b = Tenants::default();
        b.set(key("a"), "2".into());
        b.set(key("b"), "1".into());
        assert_eq!(a, b, "order-insensitive");

        a.set(key("team.id"), "x".into());
        a.set(key("team_id"), "y".into()); // the same Prometheus label: replaces
        let pairs: Vec<_> = a.iter().map(|(k, v)| (k.as_str(), v)).collect();
        assert_eq!(pairs, [("a", "2"), ("b", "1"), ("team_id", "y")]);

        a.set(key("c"), "3".into());
        a.set(key("d"), "4".into()); // a fifth key: ignored
        assert_eq!(a.iter().count(), MAX_TENANTS);
        assert!(a.iter().all(|(k, _)| k.as_str() != "d"));

        a.set(key("a"), "".into()); // empty: removed
        assert_eq!(a.iter().count(), MAX_TENANTS - 1);
    }
}
