//! The `samples` section of `--json`: every request sent, one column per figure, computed as
//! the summary computes it (the same methods of [`Measured`] and the same SLO judge), so that
//! `tokenmeter bench compare` can bootstrap a run from its JSON alone.
//!
//! ```json
//! "samples": {"duration_s": 2.5, "ok": [true, false], "good": [true, false],
//!             "ttft_ms": [41.2, null], "tpot_ms": [9.8, null], "e2e_ms": [140.0, null],
//!             "output_tokens": [11, 0]}
//! ```
//!
//! Latencies are written for successful requests only (the summary's latencies are over
//! them) and `null` where a request has none (a one-token answer has no TPOT). Inter-token
//! gaps are not written (one per token: too large); a `--trace` holds them.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::measured::Measured;
use crate::reqs::Reqs;
use crate::slo::{Judge, Slo};
use crate::summary::duration;

/// The `samples` object of `measured` (every request of the run, in the run's order), with
/// `good` judged by `slo` as the summary's goodput is.
pub(crate) fn of<'r>(measured: impl Into<Reqs<'r>>, slo: &Slo) -> Value {
    let measured = measured.into();
    serde_json::to_value(Samples { measured, slo }).unwrap_or_default()
}

/// The `samples` object, written column by column as it is serialized: nothing per request
/// is held on the way (as a `Value`, each figure of each request took 32 bytes, and the
/// columns about 200 bytes a request at the end of a run).
pub(crate) struct Samples<'a> {
    measured: Reqs<'a>,
    slo: &'a Slo,
}

/// One column: the values of an iterator made anew each time it is written.
struct Column<F>(F);

impl<F, I> Serialize for Column<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

impl Serialize for Samples<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let judge = Judge::new(self.slo);
        let all = || self.measured.iter();
        // Milliseconds of a successful request's latency in seconds, or `null`.
        let ms = |m: &Measured, seconds: Option<f64>| {
            seconds
                .filter(|s| m.succeeded() && s.is_finite())
                .map(|s| s * 1e3)
        };
        let ttft = |m: &Measured| m.record()?.ttft.map(|d| d.as_secs_f64());
        let mut map = serializer.serialize_map(Some(7))?;
        // In the order of the keys, as a JSON object's are written.
        map.serialize_entry("duration_s", &duration(self.measured).as_secs_f64())?;
        map.serialize_entry(
            "e2e_ms",
            &Column(|| all().map(|m| ms(&m, m.latency().map(|d| d.as_secs_f64())))),
        )?;
        map.serialize_entry("good", &Column(|| all().map(|m| judge.is_good(&m))))?;
        map.serialize_entry("ok", &Column(|| all().map(|m| m.succeeded())))?;
        map.serialize_entry(
            "output_tokens",
            &Column(|| all().map(|m| m.output_tokens())),
        )?;
        map.serialize_entry(
            "tpot_ms",
            &Column(|| all().map(|m| ms(&m, m.tpot_seconds()))),
        )?;
        map.serialize_entry("ttft_ms", &Column(|| all().map(|m| ms(&m, ttft(&m)))))?;
        map.end()
    }
}

/// A `--json` document with its `samples` written as they are serialized: `head`, an object
/// without them, and the samples in their place among its keys (in key order, as every
/// object of the document is written), so the text is the one of [`of`] inserted in `head`.
pub(crate) struct Document<'a> {
    head: &'a Value,
    samples: Samples<'a>,
}

impl<'a> Document<'a> {
    /// `head` with the samples of `measured` judged by `slo`.
    pub(crate) fn new(head: &'a Value, measured: impl Into<Reqs<'a>>, slo: &'a Slo) -> Self {
        Self {
            head,
            samples: Samples {
                measured: measured.into(),
                slo,
            },
        }
    }
}

impl Serialize for Document<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(object) = self.head.as_object() else {
            return self.head.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(object.len() + 1))?;
        let mut pending = true;
        for (key, value) in object {
            if pending && key.as_str() > "samples" {
                map.serialize_entry("samples", &self.samples)?;
                pending = false;
            }
            if key != "samples" {
                map.serialize_entry(key, value)?;
            }
        }
        if pending {
            map.serialize_entry("samples", &self.samples)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests;
