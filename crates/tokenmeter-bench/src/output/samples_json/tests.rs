use std::time::Duration;

use serde_json::{Value, json};
use tokenmeter::ErrorClass;

use super::*;
use crate::tests::manual_run::{MS, Run};

/// 41 requests: errors, one-token answers (no TPOT), and answers of up to 14 tokens.
fn run() -> Run {
    let mut run = Run::new();
    for i in 0..41_u32 {
        let send = MS * (i * 37);
        let ttft = MS * (20 + (i * 7919) % 113);
        let gap = Duration::from_micros(u64::from(3_000 + (i * 104_729) % 9_001));
        match i % 10 {
            3 => run.error(send, send + ttft, ErrorClass::ServerError),
            7 => run.ok(send, ttft, gap, 1),
            _ => run.ok(send, ttft, gap, 2 + i % 13),
        }
    }
    run
}

/// The columns built as `Value`s, request by request (how they were built before).
fn as_values(measured: &[Measured], slo: &Slo) -> Value {
    let judge = Judge::new(slo);
    let ms = |m: &Measured, s: Option<f64>| match s.filter(|_| m.succeeded()) {
        Some(s) => json!(s * 1e3),
        None => Value::Null,
    };
    let column = |f: &dyn Fn(&Measured) -> Value| measured.iter().map(f).collect::<Vec<_>>();
    json!({
        "duration_s": duration(measured).as_secs_f64(),
        "ok": column(&|m| json!(m.succeeded())),
        "good": column(&|m| json!(judge.is_good(m))),
        "ttft_ms": column(&|m| ms(m, m.record().and_then(|r| r.ttft).map(|d| d.as_secs_f64()))),
        "tpot_ms": column(&|m| ms(m, m.tpot_seconds())),
        "e2e_ms": column(&|m| ms(m, m.latency().map(|d| d.as_secs_f64()))),
        "output_tokens": column(&|m| json!(m.output_tokens())),
    })
}

/// Issue 30: `--json` wrote its samples from columns of `Value`s held for the whole run
/// (about 200 bytes a request, 6 a token of a 32-token answer, at the run's peak of memory).
/// Written as they are serialized, the document's text is the same, byte for byte.
#[test]
fn samples_written_as_serialized_are_the_same_text() {
    let run = run();
    let slo: Slo = "ttft=90ms,tpot=8ms".parse().unwrap();
    let values = as_values(&run.measured, &slo);
    assert_eq!(of(&run.measured, &slo), values);
    assert_eq!(values["ok"].as_array().map(Vec::len), Some(41));
    assert!(
        values["tpot_ms"]
            .as_array()
            .unwrap()
            .iter()
            .any(Value::is_null)
    );
    let head = json!({
        "run": {"seed": 0},
        "summary": {"requests": 41},
        "slices": [],
        "server_batching": null,
        "stopped_early": null,
    });
    let mut whole = head.clone();
    whole["samples"] = values;
    let streamed = serde_json::to_string_pretty(&Document::new(&head, &run.measured, &slo));
    assert_eq!(
        streamed.unwrap(),
        serde_json::to_string_pretty(&whole).unwrap()
    );
    // With no key after "samples", they come last.
    let short = json!({"run": 1});
    let text = serde_json::to_string(&Document::new(&short, &run.measured, &slo)).unwrap();
    assert!(
        text.starts_with(r#"{"run":1,"samples":{"duration_s":"#),
        "{text}"
    );
}
