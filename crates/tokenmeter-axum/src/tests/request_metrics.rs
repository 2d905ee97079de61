//! `MeterLayer::per_request_metrics`: the final usage chunk of each stream carries vLLM's
//! `metrics` object from the layer's own measurement, and over a bounded run of streams the
//! sum of each field equals the `_sum` of the exporter's histogram of the same interval
//! (`time_to_first_token_ms` from the arrival ↔ `vllm:time_to_first_token_seconds`,
//! `generation_time_ms` ↔ `vllm:request_decode_time_seconds`, `mean_itl_ms` ↔
//! `vllm:request_time_per_output_token_seconds`), to 1 µs (floating-point sums in two units).

use serde_json::Value;
use tokenmeter::Clock;
use tokenmeter_prometheus::{Builder, Profile};

use super::*;

const USAGE: &[u8] =
    b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3}}\n\n";

fn sum(text: &str, name: &str) -> (f64, f64) {
    let value = |suffix: &str| -> f64 {
        let prefix = format!("{name}_{suffix}{{");
        text.lines()
            .filter(|l| l.starts_with(&prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    (value("sum"), value("count"))
}

#[tokio::test]
async fn the_layers_metrics_sum_to_its_exporters_histograms() {
    let time = ManualClock::new();
    let memory = InMemorySink::new();
    let (sink, handle) = Builder::new(Profile::Vllm).build_recorder().unwrap();
    let meter = Meter::builder()
        .clock(Clock::manual(&time))
        .sink(sink)
        .sink(memory.clone())
        .build();
    let h = Harness {
        time,
        memory,
        meter,
    };
    let series = h.meter.series(&Labels::server("chat").request_model("m"));
    let mut objects = Vec::new();
    for k in 0..12u64 {
        let layer = MeterLayer::new({
            let series = series.clone();
            move |_| series.clone()
        })
        .per_request_metrics(true);
        let script = h.script(vec![
            (ms(1), Ok(ROLE)),
            (ms(20 + 7 * k), Ok(A)),
            (ms(3 + k % 4), Ok(B)),
            (ms(5 + 2 * (k % 3)), Ok(STOP)),
            (ms(1), Ok(USAGE)),
            (ms(1), Ok(DONE)),
        ]);
        let mut body = h.respond(layer, StatusCode::OK, SSE, script).await;
        let (bytes, error) = drain(&mut body).await;
        assert!(error.is_none());
        let text = String::from_utf8(bytes).unwrap();
        let usage = text
            .split("\n\n")
            .find(|e| e.contains("\"usage\""))
            .and_then(|e| e.strip_prefix("data: "))
            .expect("the usage chunk");
        let chunk: Value = serde_json::from_str(usage).expect("still JSON");
        assert_eq!(chunk["usage"]["completion_tokens"], 3, "the rest unchanged");
        let metrics = chunk["metrics"].clone();
        assert!(
            metrics.get("queue_time_ms").is_none(),
            "no queue at the layer"
        );
        let read = tokenmeter_openai::chunk::ServerMetrics::from_answer(&chunk).unwrap();
        assert!(!read.unusable, "{metrics}");
        objects.push(metrics);
    }
    assert_eq!(h.memory.records().len(), 12);
    let field = |name: &str| -> f64 {
        objects
            .iter()
            .map(|m| m[name].as_f64().unwrap())
            .sum::<f64>()
            / 1e3
    };
    let text = handle.render();
    for (histogram, expected) in [
        (
            "vllm:time_to_first_token_seconds",
            field("time_to_first_token_ms"),
        ),
        (
            "vllm:request_decode_time_seconds",
            field("generation_time_ms"),
        ),
        (
            "vllm:request_time_per_output_token_seconds",
            field("mean_itl_ms"),
        ),
    ] {
        let (got, count) = sum(&text, histogram);
        assert_eq!(count, 12.0, "{histogram}");
        assert!(
            (got - expected).abs() < 1e-6,
            "{histogram}: _sum {got} s, the objects sum to {expected} s"
        );
    }
    // The first object, by hand: TTFT 1 + 20 ms, then 3 and 5 ms between the 3 tokens.
    assert_eq!(objects[0]["time_to_first_token_ms"], 21.0);
    assert_eq!(objects[0]["generation_time_ms"], 8.0);
    assert_eq!(objects[0]["mean_itl_ms"], 4.0);
}

#[tokio::test]
async fn off_by_default_and_never_on_a_chunk_that_has_its_own() {
    let h = Harness::new();
    let body = h.script(vec![(ms(1), Ok(A)), (ms(1), Ok(USAGE)), (ms(1), Ok(DONE))]);
    let mut body = h.respond(h.layer(), StatusCode::OK, SSE, body).await;
    let (bytes, _) = drain(&mut body).await;
    assert!(!String::from_utf8(bytes).unwrap().contains("metrics"));

    const THEIRS: &[u8] = b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":1},\"metrics\":{\"queue_time_ms\":2}}\n\n";
    let body = h.script(vec![(ms(1), Ok(A)), (ms(1), Ok(THEIRS)), (ms(1), Ok(DONE))]);
    let layer = h.layer().per_request_metrics(true);
    let mut body = h.respond(layer, StatusCode::OK, SSE, body).await;
    let (bytes, _) = drain(&mut body).await;
    let text = String::from_utf8(bytes).unwrap();
    assert_eq!(text.matches("\"metrics\"").count(), 1, "{text}");
    assert!(text.contains(std::str::from_utf8(THEIRS).unwrap()));
}
