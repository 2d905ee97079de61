//! The fields of an OpenAI-compatible request body that label a series: `model` and `user`,
//! read in one pass.

use std::borrow::Cow;

/// The label-worthy fields of an OpenAI request body: its `model`, and its `user` (the end
/// user's id, which [`TenantLabels::body_user`](crate::TenantLabels::body_user) puts on the
/// series as `user.id`). A field that is missing or not a string is `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fields<'a> {
    /// `model`.
    pub model: Option<Cow<'a, str>>,
    /// `user`.
    pub user: Option<Cow<'a, str>>,
}

impl Fields<'_> {
    /// An owned copy.
    pub fn into_owned(self) -> Fields<'static> {
        Fields {
            model: self.model.map(|m| Cow::Owned(m.into_owned())),
            user: self.user.map(|u| Cow::Owned(u.into_owned())),
        }
    }
}

/// The `model` and `user` of a JSON object `body`, in one pass that keeps nothing else (values
/// without escapes are borrowed). Anything that is not a JSON object gives no field.
///
/// # Examples
///
/// ```
/// use tokenmeter_openai::request_body::fields;
///
/// let body = br#"{"model":"llama","messages":[{"role":"user","content":"hi"}],"user":"u-1"}"#;
/// let found = fields(body);
/// assert_eq!((found.model.as_deref(), found.user.as_deref()), (Some("llama"), Some("u-1")));
/// assert_eq!(fields(br#"{"model":7}"#).model, None);
/// assert_eq!(fields(br#"["model"]"#).model, None);
/// ```
pub fn fields(body: &[u8]) -> Fields<'_> {
    #[derive(serde::Deserialize)]
    struct Wire<'a> {
        #[serde(borrow, default)]
        model: Text<'a>,
        #[serde(borrow, default)]
        user: Text<'a>,
    }
    // serde would also read a struct from an array: only an object has fields.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Fields::default();
    }
    match serde_json::from_slice::<Wire<'_>>(body) {
        Ok(wire) => Fields {
            model: wire.model.0,
            user: wire.user.0,
        },
        Err(_) => Fields::default(),
    }
}

/// A field's value when it is a string; any other JSON value is skipped, so that a `user`
/// that is not a string does not hide the `model`.
#[derive(Default)]
struct Text<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextVisitor(std::marker::PhantomData))
    }
}

struct TextVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> serde::de::Visitor<'de> for TextVisitor<'a> {
    type Value = Text<'a>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'a>, E> {
        Ok(Text(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E>(self, v: &str) -> Result<Text<'a>, E> {
        Ok(Text(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Text<'a>, E> {
        Ok(Text(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Text<'a>, E> {
        Ok(Text(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Text<'a>, E> {
        Ok(Text(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Text<'a>, E> {
        Ok(Text(None))
    }
    fn visit_unit<E>(self) -> Result<Text<'a>, E> {
        Ok(Text(None))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'a>, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Text<'a>, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Text(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_that_is_not_a_string_hides_nothing_else() {
        for body in [
            r#"{"model":"m","user":7}"#,
            r#"{"user":{"id":"u"},"model":"m"}"#,
            r#"{"user":["u"],"model":"m","n":null}"#,
            r#"{"user":null,"model":"m"}"#,
        ] {
            let found = fields(body.as_bytes());
            assert_eq!(found.model.as_deref(), Some("m"), "{body}");
            assert_eq!(found.user, None, "{body}");
        }
        let escaped = fields(br#"{"user":"a\nb"}"#).into_owned();
        assert_eq!(escaped.user.as_deref(), Some("a\nb"));
        assert_eq!(fields(br#"{"model":"m""#), Fields::default());
    }
}
