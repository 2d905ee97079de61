//! [`Fields`]: typed reads of a request body's fields, each refusal a 400 that names the field.
//!
//! A value of the wrong type is described by its JSON type only, never quoted: a client that
//! puts an API key or a prompt in the wrong field must not find it echoed in an error (and in
//! the logs of whatever relays it). Out-of-range numbers are quoted, as vLLM does.

use serde_json::{Map, Value};

use super::api_error::ApiError;

/// The fields of a JSON object body. A field set to `null` reads as absent, as in vLLM (whose
/// optional fields accept `null`) and OpenAI's SDKs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields<'a>(&'a Map<String, Value>);

impl<'a> Fields<'a> {
    /// The fields of `body`, which must be a JSON object.
    pub(crate) fn of(body: &'a Value) -> Result<Self, ApiError> {
        match body {
            Value::Object(map) => Ok(Self(map)),
            other => Err(ApiError::bad_request(
                None,
                format!(
                    "the request body must be a JSON object, not {}",
                    type_name(other)
                ),
            )),
        }
    }

    /// The value of `name`, unless absent or `null`.
    pub(crate) fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// A required field.
    pub(crate) fn required(&self, name: &'static str) -> Result<&'a Value, ApiError> {
        self.get(name)
            .ok_or_else(|| ApiError::bad_request(Some(name), format!("`{name}` is required")))
    }

    /// A boolean.
    pub(crate) fn bool(&self, name: &'static str) -> Result<Option<bool>, ApiError> {
        self.get(name)
            .map(|value| {
                value
                    .as_bool()
                    .ok_or_else(|| wrong(name, "a boolean", value))
            })
            .transpose()
    }

    /// A string.
    pub(crate) fn str(&self, name: &'static str) -> Result<Option<&'a str>, ApiError> {
        self.get(name)
            .map(|value| value.as_str().ok_or_else(|| wrong(name, "a string", value)))
            .transpose()
    }

    /// An object's fields.
    pub(crate) fn object(&self, name: &'static str) -> Result<Option<Fields<'a>>, ApiError> {
        self.get(name)
            .map(|value| match value {
                Value::Object(map) => Ok(Fields(map)),
                other => Err(wrong(name, "an object", other)),
            })
            .transpose()
    }

    /// A number, within `allowed` (whose description, e.g. `in [-2, 2]`, goes in the
    /// refusal).
    pub(crate) fn number(
        &self,
        name: &'static str,
        allowed: impl Fn(f64) -> bool,
        range: &str,
    ) -> Result<Option<f64>, ApiError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let number = value
            .as_f64()
            .ok_or_else(|| wrong(name, "a number", value))?;
        if allowed(number) {
            Ok(Some(number))
        } else {
            Err(ApiError::bad_request(
                Some(name),
                format!("`{name}` must be {range}, got {number}"),
            ))
        }
    }

    /// A whole number from `min` to `max`.
    pub(crate) fn integer(
        &self,
        name: &'static str,
        min: i64,
        max: i64,
    ) -> Result<Option<i64>, ApiError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let whole = match value {
            Value::Number(number) => number.as_i64().or_else(|| {
                // 3.0 is 3, as Python's pydantic takes it; 3.5 is not a whole number.
                number
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            }),
            _ => None,
        };
        let Some(whole) = whole else {
            return Err(if value.is_number() {
                ApiError::bad_request(
                    Some(name),
                    format!("`{name}` must be a whole number from {min} to {max}"),
                )
            } else {
                wrong(name, "a whole number", value)
            });
        };
        if (min..=max).contains(&whole) {
            Ok(Some(whole))
        } else {
            Err(ApiError::bad_request(
                Some(name),
                format!("`{name}` must be from {min} to {max}, got {whole}"),
            ))
        }
    }
}

/// The refusal of `value`, of the wrong type for `name`, which expects `expected`.
pub(crate) fn wrong(name: &'static str, expected: &str, value: &Value) -> ApiError {
    ApiError::bad_request(
        Some(name),
        format!("`{name}` must be {expected}, not {}", type_name(value)),
    )
}

/// The JSON type of `value`, with an article.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_name_the_field_and_never_quote_a_wrong_value() {
        let body = json!({"t": "sk-secret", "n": 2.0, "x": 2.5, "big": 9, "b": null});
        let fields = Fields::of(&body).expect("an object");
        let error = fields.number("t", |_| true, "any").expect_err("a string");
        assert_eq!(error.param(), Some("t"));
        assert!(
            error
                .message()
                .contains("`t` must be a number, not a string")
        );
        assert!(!error.message().contains("sk-secret"));
        assert_eq!(fields.integer("n", 1, 4).expect("2.0 is 2"), Some(2));
        assert!(fields.integer("x", 1, 4).is_err());
        let error = fields.integer("big", 1, 4).expect_err("out of range");
        assert!(error.message().contains("from 1 to 4, got 9"), "{error}");
        assert_eq!(fields.bool("b").expect("null is absent"), None);
        assert!(fields.required("b").is_err());
        assert!(Fields::of(&json!([1])).is_err());
    }
}
