//! [`ServerMetrics`]: the per-request `metrics` object a server may put next to `usage`
//! (vLLM's `--enable-per-request-metrics`), read leniently.

use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The largest value kept (milliseconds, or tokens per second): 10⁹, about 11.6 days in
/// milliseconds. A larger one is not a latency of one request.
pub const MAX_METRIC: f64 = 1e9;

/// The server's own measurement of one request, from the `metrics` object vLLM adds (with
/// `--enable-per-request-metrics`) to the final usage chunk of a stream, or to a whole answer,
/// next to `usage`.
///
/// Read leniently: a field that is not a finite number from 0 to [`MAX_METRIC`] (a string, a
/// negative or huge number, an object, ...) is `None`, as if absent, and
/// [`unusable`](Self::unusable) says the server sent one; a `metrics` value that is not an
/// object is all `None` and unusable. Unknown fields are skipped. Nothing in it fails the
/// stream. (A value nested deeper than the JSON parser's recursion limit, 128 levels, makes the
/// whole event malformed, as it does in any field.)
///
/// vLLM's fields: `queue_time_ms` (arrival to scheduling), `time_to_first_token_ms` (from
/// scheduling to the first token: vLLM's TTFT here excludes the queue), `generation_time_ms`
/// (first to last token), `mean_itl_ms`, `tokens_per_second`.
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_openai::chunk;
///
/// let data = r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7},
///     "metrics":{"time_to_first_token_ms":40.5,"queue_time_ms":2,"mean_itl_ms":"fast"}}"#;
/// let metrics = chunk::parse(data)?.metrics.unwrap();
/// assert_eq!(metrics.time_to_first_token_ms, Some(40.5));
/// assert_eq!(metrics.mean_itl_ms, None); // a string: ignored
/// assert!(metrics.unusable);
/// assert_eq!(metrics.ttft_since_arrival(), Some(Duration::from_micros(42_500)));
/// # Ok::<(), chunk::ChunkError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ServerMetrics {
    /// `time_to_first_token_ms`: from scheduling to the first token (vLLM's definition).
    pub time_to_first_token_ms: Option<f64>,
    /// `queue_time_ms`: from arrival to scheduling.
    pub queue_time_ms: Option<f64>,
    /// `generation_time_ms`: from the first token to the last.
    pub generation_time_ms: Option<f64>,
    /// `mean_itl_ms`: the mean gap between tokens.
    pub mean_itl_ms: Option<f64>,
    /// `tokens_per_second`.
    pub tokens_per_second: Option<f64>,
    /// The server sent a field (or a `metrics` value) that is not usable; it was ignored.
    pub unusable: bool,
}

/// Milliseconds as a [`Duration`]; `None` for a value [`ServerMetrics`] would not keep.
fn millis(ms: Option<f64>) -> Option<Duration> {
    let ms = ms.filter(|v| usable(*v))?;
    Duration::try_from_secs_f64(ms / 1e3).ok()
}

fn usable(value: f64) -> bool {
    value.is_finite() && (0.0..=MAX_METRIC).contains(&value)
}

impl ServerMetrics {
    /// The `metrics` of a whole (non-streaming) JSON answer: `None` when absent or null, else
    /// read as [`ServerMetrics`] reads it (never an error).
    ///
    /// ```
    /// let answer = serde_json::json!({"choices": [], "metrics": {"queue_time_ms": 1.5}});
    /// let metrics = tokenmeter_openai::chunk::ServerMetrics::from_answer(&answer).unwrap();
    /// assert_eq!(metrics.queue_time_ms, Some(1.5));
    /// ```
    pub fn from_answer(answer: &serde_json::Value) -> Option<Self> {
        let value = answer.get("metrics").filter(|m| !m.is_null())?;
        Some(Self::deserialize(value).unwrap_or(Self {
            unusable: true,
            ..Self::default()
        }))
    }

    /// The `metrics` value of a chunk, read from its raw JSON text so that a number no `f64`
    /// holds (`1e400`) is an unusable field, not a malformed chunk; the flag is true when a
    /// field was given twice (the last value is read).
    pub(crate) fn from_raw(raw: &RawValue) -> (Self, bool) {
        const NAMES: &[&str; 5] = &[
            "time_to_first_token_ms",
            "queue_time_ms",
            "generation_time_ms",
            "mean_itl_ms",
            "tokens_per_second",
        ];
        let Some(fields) = super::fields::fields(raw, NAMES) else {
            return (
                Self {
                    unusable: true,
                    ..Self::default()
                },
                false,
            );
        };
        let mut metrics = Self::default();
        let [ttft, queue, generation, itl, tps] = fields.values.map(|value| {
            value.map_or(Lenient::Null, |raw| {
                let text = raw.get().trim();
                match text.parse::<f64>() {
                    _ if text == "null" => Lenient::Null,
                    // A JSON number: Rust reads `1e400` as infinity, which `keep` refuses.
                    Ok(v) if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) => {
                        Lenient::Number(v)
                    }
                    _ => Lenient::Other,
                }
            })
        });
        metrics.time_to_first_token_ms = metrics.keep(ttft);
        metrics.queue_time_ms = metrics.keep(queue);
        metrics.generation_time_ms = metrics.keep(generation);
        metrics.mean_itl_ms = metrics.keep(itl);
        metrics.tokens_per_second = metrics.keep(tps);
        (metrics, fields.duplicate)
    }

    /// `queue_time_ms` as a duration.
    pub fn queue_time(&self) -> Option<Duration> {
        millis(self.queue_time_ms)
    }

    /// `time_to_first_token_ms` as a duration (from scheduling, as vLLM counts it).
    pub fn time_to_first_token(&self) -> Option<Duration> {
        millis(self.time_to_first_token_ms)
    }

    /// The server's TTFT from the request's arrival, what its TTFT histogram observes:
    /// `queue_time_ms` + `time_to_first_token_ms`, or `time_to_first_token_ms` alone when the
    /// server sent no queue time. `None` without a usable `time_to_first_token_ms`.
    pub fn ttft_since_arrival(&self) -> Option<Duration> {
        let ttft = self.time_to_first_token()?;
        Some(ttft.saturating_add(self.queue_time().unwrap_or_default()))
    }

    /// The value of a field: a usable number, else `None` (marked unusable unless null).
    fn keep(&mut self, value: Lenient) -> Option<f64> {
        match value {
            Lenient::Null => None,
            Lenient::Number(v) if usable(v) => Some(v),
            Lenient::Number(_) | Lenient::Other => {
                self.unusable = true;
                None
            }
        }
    }
}

/// The fields read; any other is skipped.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Field {
    TimeToFirstTokenMs,
    QueueTimeMs,
    GenerationTimeMs,
    MeanItlMs,
    TokensPerSecond,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for ServerMetrics {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MetricsVisitor)
    }
}

/// Any JSON value, as a field's value: null, a number, or anything else (drained, never an
/// error).
enum Lenient {
    Null,
    Number(f64),
    Other,
}

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LenientVisitor)
    }
}

/// Reads every kind of JSON value.
struct LenientVisitor;

impl<'de> Visitor<'de> for LenientVisitor {
    type Value = Lenient;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Lenient::Other)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Lenient::Number(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Lenient::Number(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Lenient::Number(v))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Lenient::Other)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Lenient::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Lenient::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Lenient::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Lenient::Other)
    }
}

/// The `metrics` value: an object's fields, or unusable for any other value.
struct MetricsVisitor;

impl MetricsVisitor {
    fn unusable<E>(self) -> Result<ServerMetrics, E> {
        Ok(ServerMetrics {
            unusable: true,
            ..ServerMetrics::default()
        })
    }
}

impl<'de> Visitor<'de> for MetricsVisitor {
    type Value = ServerMetrics;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a metrics object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ServerMetrics, A::Error> {
        let mut m = ServerMetrics::default();
        while let Some(field) = map.next_key::<Field>()? {
            if let Field::Other = field {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = m.keep(map.next_value::<Lenient>()?);
            match field {
                Field::TimeToFirstTokenMs => m.time_to_first_token_ms = value,
                Field::QueueTimeMs => m.queue_time_ms = value,
                Field::GenerationTimeMs => m.generation_time_ms = value,
                Field::MeanItlMs => m.mean_itl_ms = value,
                Field::TokensPerSecond => m.tokens_per_second = value,
                Field::Other => {}
            }
        }
        Ok(m)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<ServerMetrics, E> {
        self.unusable()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<ServerMetrics, E> {
        self.unusable()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<ServerMetrics, E> {
        self.unusable()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<ServerMetrics, E> {
        self.unusable()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<ServerMetrics, E> {
        self.unusable()
    }
    fn visit_unit<E: de::Error>(self) -> Result<ServerMetrics, E> {
        self.unusable()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ServerMetrics, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        self.unusable()
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn metrics(value: &str) -> Option<ServerMetrics> {
        let data =
            format!(r#"{{"choices":[],"usage":{{"completion_tokens":3}},"metrics":{value}}}"#);
        let parsed = parse(&data).unwrap_or_else(|e| panic!("{value}: {e}"));
        assert_eq!(
            parsed.usage.and_then(|u| u.completion_tokens),
            Some(3),
            "the rest of the chunk is read: {value}"
        );
        parsed.metrics
    }

    #[test]
    fn vllm_fields_are_read() {
        let m = metrics(
            r#"{"time_to_first_token_ms":85.2,"generation_time_ms":1240.5,"queue_time_ms":12,
                "mean_itl_ms":9.1,"tokens_per_second":103.2,"extra":{"a":[1,2]}}"#,
        )
        .unwrap();
        assert_eq!(m.time_to_first_token_ms, Some(85.2));
        assert_eq!(m.generation_time_ms, Some(1240.5));
        assert_eq!(m.queue_time_ms, Some(12.0));
        assert_eq!(m.mean_itl_ms, Some(9.1));
        assert_eq!(m.tokens_per_second, Some(103.2));
        assert!(!m.unusable, "an unknown field is not unusable");
        assert_eq!(m.queue_time(), Some(Duration::from_millis(12)));
        let since = m.ttft_since_arrival().unwrap().as_secs_f64();
        assert!((since - 0.0972).abs() < 1e-9, "{since}");
        assert_eq!(metrics("null"), None);
        let none = parse(r#"{"choices":[]}"#).unwrap();
        assert_eq!(none.metrics, None);
    }

    #[test]
    fn hostile_values_are_ignored_never_an_error() {
        let nested = format!("{}1{}", "[".repeat(60), "]".repeat(60));
        let deep = format!("{}0{}", r#"{"a":"#.repeat(60), "}".repeat(60));
        let deep_object = format!(r#"{{"time_to_first_token_ms":{deep}}}"#);
        for bad in [
            r#"{"time_to_first_token_ms":"85"}"#.to_owned(),
            r#"{"time_to_first_token_ms":-1}"#.to_owned(),
            r#"{"time_to_first_token_ms":-1e-300}"#.to_owned(),
            r#"{"time_to_first_token_ms":1e308}"#.to_owned(),
            // No f64 holds these: the field is unusable, the chunk is still read.
            r#"{"time_to_first_token_ms":1e400}"#.to_owned(),
            r#"{"time_to_first_token_ms":-1e400}"#.to_owned(),
            r#"{"time_to_first_token_ms":18446744073709551615}"#.to_owned(),
            r#"{"time_to_first_token_ms":1000000001}"#.to_owned(),
            r#"{"time_to_first_token_ms":true}"#.to_owned(),
            r#"{"time_to_first_token_ms":{"ms":3}}"#.to_owned(),
            r#"{"time_to_first_token_ms":[1,2,{"x":null}]}"#.to_owned(),
            format!(r#"{{"time_to_first_token_ms":{nested}}}"#),
            deep_object,
        ] {
            let m = metrics(&bad).unwrap();
            assert_eq!(m.time_to_first_token_ms, None, "{bad}");
            assert_eq!(m.ttft_since_arrival(), None, "{bad}");
            assert!(m.unusable, "{bad}");
        }
        for whole in [r#""fast""#, "7", "-3", "[1,[2]]", "true", r#"[{"a":1}]"#] {
            let m = metrics(whole).unwrap();
            assert_eq!(
                m,
                ServerMetrics {
                    unusable: true,
                    ..ServerMetrics::default()
                },
                "{whole}"
            );
        }
        // a null field is absent, as in `usage`
        let m = metrics(r#"{"queue_time_ms":null,"time_to_first_token_ms":0}"#).unwrap();
        assert_eq!(
            (m.queue_time_ms, m.time_to_first_token_ms, m.unusable),
            (None, Some(0.0), false)
        );
        assert_eq!(m.ttft_since_arrival(), Some(Duration::ZERO));
        // A huge value beside good ones spoils only its own field.
        let m = metrics(r#"{"queue_time_ms":1e400,"time_to_first_token_ms":40}"#).unwrap();
        assert_eq!(
            (m.queue_time_ms, m.time_to_first_token_ms, m.unusable),
            (None, Some(40.0), true)
        );
    }

    #[test]
    fn a_field_given_twice_is_read_last_and_flagged() {
        let data = r#"{"choices":[],"metrics":{"queue_time_ms":1,"queue_time_ms":2}}"#;
        let parsed = parse(data).unwrap();
        assert_eq!(parsed.metrics.unwrap().queue_time_ms, Some(2.0));
        assert!(parsed.duplicate_keys);
        let once = parse(r#"{"choices":[],"metrics":{"queue_time_ms":1}}"#).unwrap();
        assert!(!once.duplicate_keys);
    }

    #[test]
    fn answers_are_read_the_same_way() {
        let answer = |v: serde_json::Value| ServerMetrics::from_answer(&v);
        assert_eq!(answer(serde_json::json!({"choices": []})), None);
        assert_eq!(answer(serde_json::json!({"metrics": null})), None);
        let m = answer(
            serde_json::json!({"metrics": {"time_to_first_token_ms": 2.0, "queue_time_ms": "x"}}),
        )
        .unwrap();
        assert_eq!((m.time_to_first_token_ms, m.unusable), (Some(2.0), true));
        let m = answer(serde_json::json!({"metrics": "lots"})).unwrap();
        assert!(m.unusable && m.time_to_first_token_ms.is_none());
    }
}
