//! Lenient reading of a small JSON object whose values may be anything a server sends: each
//! named field's value is kept as raw JSON text, so that a number no `f64` or `u64` holds
//! (`1e400`, `18446744073709551616`) is judged by the caller instead of failing the event, and
//! a name given twice is noted (the last value wins, as JavaScript's and Python's JSON parsers
//! read it).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The raw values of `N` named fields of one JSON object.
#[derive(Debug)]
pub(crate) struct Fields<'a, const N: usize> {
    /// Each name's last value, in the order of the names.
    pub(crate) values: [Option<&'a RawValue>; N],
    /// A name was given more than once.
    pub(crate) duplicate: bool,
}

/// Reads `raw` as an object holding `names`; `None` when it is not an object.
pub(crate) fn fields<'a, const N: usize>(
    raw: &'a RawValue,
    names: &'static [&'static str; N],
) -> Option<Fields<'a, N>> {
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    deserializer.deserialize_map(FieldsVisitor { names }).ok()
}

/// A count: a JSON integer from 0 to `u64::MAX`. `Ok(None)` for `null`, `Err(())` for any
/// other value (a float, a negative or larger number, a string, an object).
pub(crate) fn count(raw: &RawValue) -> Result<Option<u64>, ()> {
    let text = raw.get().trim();
    if text == "null" {
        return Ok(None);
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    text.parse().map(Some).map_err(|_| ())
}

struct FieldsVisitor<const N: usize> {
    names: &'static [&'static str; N],
}

impl<'de, const N: usize> Visitor<'de> for FieldsVisitor<N> {
    type Value = Fields<'de, N>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Fields {
            values: [None; N],
            duplicate: false,
        };
        let mut seen = [false; N];
        while let Some(index) = map.next_key_seed(Name { names: self.names })? {
            match index {
                Some(i) => {
                    fields.duplicate |= std::mem::replace(&mut seen[i], true);
                    fields.values[i] = Some(map.next_value::<&'de RawValue>()?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(fields)
    }
}

/// A key: the index of the name it is, if any.
struct Name<const N: usize> {
    names: &'static [&'static str; N],
}

impl<'de, const N: usize> DeserializeSeed<'de> for Name<N> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<const N: usize> Visitor<'_> for Name<N> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.names.iter().position(|name| *name == key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn counts_are_non_negative_integers_only() {
        for (text, want) in [
            ("7", Ok(Some(7))),
            ("null", Ok(None)),
            ("18446744073709551615", Ok(Some(u64::MAX))),
            ("18446744073709551616", Err(())),
            ("1e400", Err(())),
            ("-1", Err(())),
            ("5.0", Err(())),
            ("\"5\"", Err(())),
            ("{\"n\":5}", Err(())),
        ] {
            assert_eq!(count(raw(text)), want, "{text}");
        }
    }

    #[test]
    fn the_last_value_of_a_name_wins_and_the_duplicate_is_noted() {
        let names = &["a", "b"];
        let got = fields(raw(r#"{"a":1,"x":1e400,"a":2,"\u0062":3}"#), names).unwrap();
        assert_eq!(
            got.values.map(|v| v.map(RawValue::get)),
            [Some("2"), Some("3")]
        );
        assert!(got.duplicate);
        let once = fields(raw(r#"{"a":1}"#), names).unwrap();
        assert!(!once.duplicate);
        assert!(fields(raw("[1]"), names).is_none());
        assert!(fields(raw("1e400"), names).is_none());
    }
}
