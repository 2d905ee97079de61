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

use std::borrow::Borrow;

use serde_json::{Value, json};

use crate::measured::Measured;
use crate::slo::{Judge, Slo};
use crate::summary::duration;

/// Milliseconds of a latency in seconds, or `null`.
fn ms(seconds: Option<f64>) -> Value {
    seconds.map_or(Value::Null, |s| json!(s * 1e3))
}

/// The `samples` object of `measured` (every request of the run, in the run's order), with
/// `good` judged by `slo` as the summary's goodput is.
pub(crate) fn of<M: Borrow<Measured>>(measured: &[M], slo: &Slo) -> Value {
    let judge = Judge::new(slo);
    let n = measured.len();
    let (mut ok, mut good) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut ttft, mut tpot, mut e2e) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let mut tokens = Vec::with_capacity(n);
    for one in measured {
        let m = one.borrow();
        let succeeded = m.succeeded();
        ok.push(succeeded);
        good.push(judge.is_good(m));
        let when_ok = |v: Option<f64>| ms(v.filter(|_| succeeded));
        ttft.push(when_ok(
            m.record
                .as_ref()
                .and_then(|r| r.ttft)
                .map(|d| d.as_secs_f64()),
        ));
        tpot.push(when_ok(m.tpot_seconds()));
        e2e.push(when_ok(m.latency().map(|d| d.as_secs_f64())));
        tokens.push(m.output_tokens());
    }
    json!({
        "duration_s": duration(measured).as_secs_f64(),
        "ok": ok,
        "good": good,
        "ttft_ms": ttft,
        "tpot_ms": tpot,
        "e2e_ms": e2e,
        "output_tokens": tokens,
    })
}
