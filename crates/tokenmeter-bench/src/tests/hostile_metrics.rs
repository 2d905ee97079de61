//! A hostile `metrics` object (vLLM's per-request metrics) next to `usage`: strings, negative,
//! huge and nested values are ignored, the request succeeds with its usage, and no server
//! figure is reported for it; a sound one is kept. Over real HTTP on loopback.

use std::time::Duration;

use super::server::{self, Step};
use super::{client, spec};
use crate::gaps::Gaps;
use crate::summary::summarize;
use crate::trace::Trace;

const LONG: Duration = Duration::from_secs(30);

/// Three token chunks, then the usage chunk with `metrics`, then `[DONE]`.
fn stream_with_metrics(metrics: &str) -> Vec<Step> {
    let mut steps = vec![Step::StreamHead];
    for i in 0..3 {
        let finish = if i == 2 { "\"stop\"" } else { "null" };
        steps.push(Step::Data(format!(
            r#"{{"id":"r","choices":[{{"index":0,"delta":{{"content":"w"}},"finish_reason":{finish}}}]}}"#
        )));
    }
    steps.push(Step::Data(format!(
        r#"{{"choices":[],"usage":{{"prompt_tokens":7,"completion_tokens":3}},"metrics":{metrics}}}"#
    )));
    steps.push(Step::Data("[DONE]".into()));
    steps.push(Step::End);
    steps
}

#[tokio::test]
async fn a_hostile_metrics_object_is_ignored_cleanly() {
    let nested = format!("{}1{}", "[{\"a\":".repeat(40), "}]".repeat(40));
    let hostile = [
        r#"{"time_to_first_token_ms":"0.5","queue_time_ms":"1"}"#.to_owned(),
        r#"{"time_to_first_token_ms":-5,"queue_time_ms":-1e300}"#.to_owned(),
        r#"{"time_to_first_token_ms":1e308,"queue_time_ms":18446744073709551615}"#.to_owned(),
        format!(r#"{{"time_to_first_token_ms":{nested},"queue_time_ms":{{"x":[null,true]}}}}"#),
        r#""lots""#.to_owned(),
        "[1,2,3]".to_owned(),
        "-7".to_owned(),
    ];
    for metrics in hostile {
        let steps = stream_with_metrics(&metrics);
        let addr = server::start(move |_| steps.clone()).await;
        let (client, _) = client(addr, LONG, None);
        let measured = client.send(&spec(0)).await;
        assert!(measured.succeeded(), "{metrics}: {measured:?}");
        assert_eq!(measured.output_tokens(), 3, "{metrics}: usage still read");
        assert_eq!(measured.rare.server_ttft, None, "{metrics}");
        assert_eq!(measured.rare.server_queue, None, "{metrics}");
        let line = serde_json::to_string(&Trace::of(&measured)).unwrap();
        assert!(!line.contains("server_ttft_ns"), "{metrics}: {line}");
        let traces = [measured];
        let summary = summarize(&traces, &Gaps::new(), &"ttft=10s".parse().unwrap());
        assert_eq!(
            summary.client_minus_server_ttft_per_request, None,
            "{metrics}"
        );
    }
}

#[tokio::test]
async fn a_sound_metrics_object_is_kept() {
    let steps = stream_with_metrics(r#"{"time_to_first_token_ms":0.25,"queue_time_ms":0.5}"#);
    let addr = server::start(move |_| steps.clone()).await;
    let (client, _) = client(addr, LONG, None);
    let measured = client.send(&spec(0)).await;
    assert!(measured.succeeded(), "{measured:?}");
    assert_eq!(measured.rare.server_ttft, Some(Duration::from_micros(750)));
    assert_eq!(measured.rare.server_queue, Some(Duration::from_micros(500)));
    let line = serde_json::to_string(&Trace::of(&measured)).unwrap();
    assert!(line.contains(r#""server_ttft_ns":750000"#), "{line}");
}
