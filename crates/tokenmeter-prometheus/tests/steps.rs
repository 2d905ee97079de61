//! Engine steps in the exposition of both profiles: a decode step of batch 8 taking 8 ms lands
//! in the right buckets with the engine's labels, the counters add up over a mix of steps, and
//! bucket settings apply to the step histograms. Rendered by a local recorder (no global state).

mod support;

use std::time::Duration;

use tokenmeter::sink::{Step, StepKind};
use tokenmeter::{Labels, Meter};
use tokenmeter_prometheus::{Builder, Metric, Profile};

use support::sample;

fn engine() -> Labels<'static> {
    Labels::server("")
        .provider("vllm")
        .request_model("llama-3-8b")
}

/// The labels the engine's step metrics carry in `profile`, before `kind`.
fn engine_labels(profile: Profile) -> &'static str {
    match profile {
        Profile::Vllm => r#"model_name="llama-3-8b",engine="0""#,
        _ => r#"gen_ai_provider_name="vllm",gen_ai_request_model="llama-3-8b""#,
    }
}

/// Records `steps` on a local exporter built by `builder` and renders the exposition.
fn render(builder: Builder, steps: &[Step]) -> String {
    let (sink, handle) = builder.build_recorder().expect("a local exporter");
    let meter = Meter::builder().sink(sink).build();
    let recorder = meter.engine(&engine());
    for step in steps {
        recorder.record(step);
    }
    handle.render()
}

/// Every `(le, cumulative count)` of the histogram `name` with exactly `labels` (before `le`).
fn buckets(text: &str, name: &str, labels: &str) -> Vec<(f64, u64)> {
    let prefix = format!("{name}_bucket{{{labels},le=\"");
    let found: Vec<(f64, u64)> = text
        .lines()
        .filter_map(|line| {
            let (le, count) = line.strip_prefix(&prefix)?.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, count.parse().ok()?))
        })
        .collect();
    assert!(!found.is_empty(), "no buckets {prefix}… in:\n{text}");
    found
}

/// Checks that a single sample of `value` was recorded: 0 below `value`, 1 from it up.
fn one_sample_at(text: &str, name: &str, labels: &str, value: f64) {
    for (le, count) in buckets(text, name, labels) {
        let expected = u64::from(value <= le);
        assert_eq!(count, expected, "{name}{{{labels}}} le={le}");
    }
}

const DECODE_8: Step = Step::new(StepKind::Decode, 8, 8, Duration::from_millis(8));

#[test]
fn a_decode_step_of_batch_8_in_8_ms_lands_in_its_buckets_in_both_profiles() {
    for profile in [Profile::Semconv, Profile::Vllm] {
        let text = render(Builder::new(profile), &[DECODE_8]);
        let base = engine_labels(profile);
        let decode = format!(r#"{base},kind="decode""#);
        let duration = "tokenmeter_engine_step_duration_seconds";
        let batch = "tokenmeter_engine_batch_size";
        one_sample_at(&text, duration, &decode, 0.008);
        one_sample_at(&text, batch, &decode, 8.0);
        // The edges either side of the sample, spelled out.
        let line = |name: &str, le: &str| format!(r#"{name}_bucket{{{decode},le="{le}"}}"#);
        assert_eq!(sample(&text, &line(duration, "0.004")), Some(0.0));
        assert_eq!(sample(&text, &line(duration, "0.008")), Some(1.0));
        assert_eq!(sample(&text, &line(batch, "4")), Some(0.0));
        assert_eq!(sample(&text, &line(batch, "8")), Some(1.0));
        assert_eq!(
            sample(&text, &format!("{duration}_sum{{{decode}}}")),
            Some(0.008)
        );
        assert_eq!(
            sample(
                &text,
                &format!("tokenmeter_engine_step_tokens_total{{{decode}}}")
            ),
            Some(8.0)
        );
        // The other kinds are registered up front, at zero.
        for kind in ["prefill", "mixed"] {
            let labels = format!(r#"{base},kind="{kind}""#);
            assert_eq!(
                sample(&text, &format!("{duration}_count{{{labels}}}")),
                Some(0.0),
                "{profile} {kind}"
            );
            assert_eq!(
                sample(
                    &text,
                    &format!("tokenmeter_engine_step_tokens_total{{{labels}}}")
                ),
                Some(0.0)
            );
        }
        match profile {
            Profile::Vllm => one_sample_at(&text, "vllm:iteration_tokens_total", base, 8.0),
            _ => assert!(!text.contains("vllm:"), "{text}"),
        }
    }
}

#[test]
fn step_counters_and_sums_add_up_per_kind() {
    let ms = Duration::from_millis;
    let steps = [
        Step::new(StepKind::Prefill, 2, 300, ms(40)),
        Step::new(StepKind::Decode, 8, 8, ms(8)),
        Step::new(StepKind::Decode, 32, 32, ms(12)),
        Step::new(StepKind::Decode, 64, 64, ms(18)),
        Step::new(StepKind::Mixed, 4, 131, ms(25)),
        Step::new(StepKind::Prefill, 1, 1000, ms(90)),
    ];
    for profile in [Profile::Semconv, Profile::Vllm] {
        let text = render(Builder::new(profile), &steps);
        let base = engine_labels(profile);
        let mut all_tokens = 0.0;
        for kind in [StepKind::Prefill, StepKind::Decode, StepKind::Mixed] {
            let of_kind: Vec<&Step> = steps.iter().filter(|s| s.kind == kind).collect();
            let tokens: f64 = of_kind.iter().map(|s| f64::from(s.tokens)).sum();
            let batch: f64 = of_kind.iter().map(|s| f64::from(s.batch_size)).sum();
            let seconds: f64 = of_kind.iter().map(|s| s.duration.as_secs_f64()).sum();
            all_tokens += tokens;
            let labels = format!(r#"{base},kind="{}""#, kind.as_str());
            let get = |series: String| {
                sample(&text, &series).unwrap_or_else(|| panic!("{series} missing:\n{text}"))
            };
            assert_eq!(
                get(format!("tokenmeter_engine_step_tokens_total{{{labels}}}")),
                tokens,
                "{profile} {kind:?}"
            );
            assert_eq!(
                get(format!("tokenmeter_engine_batch_size_sum{{{labels}}}")),
                batch
            );
            let count = of_kind.len() as f64;
            assert_eq!(
                get(format!("tokenmeter_engine_batch_size_count{{{labels}}}")),
                count
            );
            assert_eq!(
                get(format!(
                    "tokenmeter_engine_step_duration_seconds_count{{{labels}}}"
                )),
                count
            );
            let sum = get(format!(
                "tokenmeter_engine_step_duration_seconds_sum{{{labels}}}"
            ));
            assert!((sum - seconds).abs() < 1e-9, "{sum} != {seconds}");
        }
        if profile == Profile::Vllm {
            let count = sample(
                &text,
                &format!("vllm:iteration_tokens_total_count{{{base}}}"),
            );
            let sum = sample(&text, &format!("vllm:iteration_tokens_total_sum{{{base}}}"));
            assert_eq!(count, Some(steps.len() as f64));
            assert_eq!(sum, Some(all_tokens));
            // 300, 131 and 1000 tokens: above 256, 128 and 512.
            let buckets = buckets(&text, "vllm:iteration_tokens_total", base);
            let at = |le: f64| buckets.iter().find(|(e, _)| *e == le).map(|(_, n)| *n);
            assert_eq!(at(8.0), Some(1));
            assert_eq!(at(64.0), Some(3));
            assert_eq!(at(256.0), Some(4));
            assert_eq!(at(512.0), Some(5));
            assert_eq!(at(1024.0), Some(6));
        }
    }
}

#[test]
fn step_bucket_settings_apply_to_the_step_histograms() {
    // A 10 ms TPOT objective as an edge of the step duration; a batch layout of 1, 48, 96.
    let builder = Builder::new(Profile::Semconv)
        .add_edges(Metric::StepDuration, &[0.01])
        .and_then(|b| b.set_buckets(Metric::BatchSize, &[96.0, 48.0, 1.0]))
        .expect("valid edges");
    let text = render(builder, &[DECODE_8]);
    let decode = format!(r#"{},kind="decode""#, engine_labels(Profile::Semconv));
    let durations = buckets(&text, "tokenmeter_engine_step_duration_seconds", &decode);
    assert!(durations.contains(&(0.01, 1)) && durations.contains(&(0.008, 1)));
    let batch: Vec<f64> = buckets(&text, "tokenmeter_engine_batch_size", &decode)
        .into_iter()
        .map(|(le, _)| le)
        .collect();
    assert_eq!(batch, [1.0, 48.0, 96.0, f64::INFINITY]);
    assert!(
        Builder::new(Profile::Vllm)
            .set_buckets(Metric::StepTokens, &[f64::NAN])
            .is_err()
    );
}
