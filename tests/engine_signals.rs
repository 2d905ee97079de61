//! The simulator's cache, preemption, speculation and reasoning signals, in paused time,
//! read back from a real Prometheus exposition in both profiles and from the OpenTelemetry
//! SDK's export, each checked against the engine's own count (its ground truth).

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use opentelemetry::metrics::MeterProvider;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Clock, Meter, RequestRecord};
use tokenmeter_otel::OtelSink;
use tokenmeter_prometheus::{Builder, Handle, Profile};
use tokenmeter_sim::{
    BLOCK_TOKENS, Engine, EngineTotals, GenerateRequest, SimConfig, Speculation, prompt_blocks,
};

/// An engine whose meter feeds both Prometheus profiles, the OTel SDK and memory.
struct Rig {
    engine: Engine,
    semconv: Handle,
    vllm: Handle,
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
    memory: InMemorySink,
}

impl Rig {
    fn new(config: SimConfig) -> Self {
        let (semconv_sink, semconv) = Builder::new(Profile::Semconv)
            .build_recorder()
            .expect("local recorder");
        let (vllm_sink, vllm) = Builder::new(Profile::Vllm)
            .build_recorder()
            .expect("local recorder");
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let memory = InMemorySink::new();
        let meter = Meter::builder()
            .clock(Clock::tokio())
            .sink(semconv_sink)
            .sink(vllm_sink)
            .sink(OtelSink::new(&provider.meter("tokenmeter")))
            .sink(memory.clone())
            .build();
        let engine = Engine::builder()
            .meter(meter)
            .config(config)
            .build()
            .expect("engine");
        Self {
            engine,
            semconv,
            vllm,
            provider,
            exporter,
            memory,
        }
    }

    fn totals(&self) -> EngineTotals {
        self.engine.snapshot().totals
    }

    /// Runs `requests` at once and waits for every stream to end.
    async fn run(&self, requests: Vec<GenerateRequest>) {
        let streams: Vec<_> = requests
            .into_iter()
            .map(|r| self.engine.submit(r).expect("accepted"))
            .collect();
        join_all(streams.into_iter().map(StreamExt::count)).await;
    }

    /// The sum of every sample of `name` whose labels contain `matcher` in one exposition.
    fn prom(handle: &Handle, name: &str, matcher: &str) -> f64 {
        handle
            .render()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| l.split([' ', '{']).next() == Some(name) && l.contains(matcher))
            .map(|l| {
                l.rsplit(' ')
                    .next()
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(0.0)
            })
            .sum()
    }

    /// The same value in both profiles (`name` semconv, `vllm` vLLM) and OTel (`otel`).
    fn everywhere(&self, semconv: &str, vllm: &str, otel: &str, matcher: &str) -> f64 {
        let a = Self::prom(&self.semconv, semconv, matcher);
        let b = Self::prom(&self.vllm, vllm, matcher);
        let c = self.otel(otel, matcher);
        assert_eq!((a, b), (a, a), "{semconv} and {vllm} differ");
        assert_eq!(c, a, "{otel} against {semconv}");
        a
    }

    /// The sum over the points of the OTel metric `name` whose attributes contain the
    /// `key="value"` of `matcher` (all when empty): sums and histogram sums.
    fn otel(&self, name: &str, matcher: &str) -> f64 {
        self.provider.force_flush().expect("flush");
        let exported = self.exporter.get_finished_metrics().expect("metrics");
        let Some(last) = exported.last() else {
            return 0.0;
        };
        let want: Option<(&str, &str)> = matcher
            .split_once('=')
            .map(|(k, v)| (k, v.trim_matches('"')));
        let keep = |attrs: BTreeMap<String, String>| {
            want.is_none_or(|(k, v)| {
                attrs
                    .get(&k.replace('_', "."))
                    .or(attrs.get(k))
                    .map(String::as_str)
                    == Some(v)
            })
        };
        let mut total = 0.0;
        for scope in last.scope_metrics() {
            for metric in scope.metrics().filter(|m| m.name() == name) {
                total += match metric.data() {
                    AggregatedMetrics::U64(MetricData::Sum(s)) => s
                        .data_points()
                        .filter(|p| keep(attrs(p.attributes())))
                        .map(|p| p.value() as f64)
                        .sum::<f64>(),
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => h
                        .data_points()
                        .filter(|p| keep(attrs(p.attributes())))
                        .map(|p| p.sum())
                        .sum::<f64>(),
                    AggregatedMetrics::U64(MetricData::Histogram(h)) => h
                        .data_points()
                        .filter(|p| keep(attrs(p.attributes())))
                        .map(|p| p.sum() as f64)
                        .sum::<f64>(),
                    _ => 0.0,
                };
            }
        }
        total
    }
}

fn attrs<'a>(kvs: impl Iterator<Item = &'a opentelemetry::KeyValue>) -> BTreeMap<String, String> {
    kvs.map(|kv| (kv.key.to_string(), kv.value.to_string()))
        .collect()
}

/// A prompt of `shared` tokens every request has, then `own` tokens of its own, at 4 bytes a
/// token, with its block hashes.
fn shared_prompt(shared: u32, own: u32, tag: char) -> GenerateRequest {
    let text = format!(
        "{}{}",
        "abcd".repeat(shared as usize),
        tag.to_string().repeat(4 * own as usize)
    );
    GenerateRequest::chat(shared + own, 8).prompt_blocks(prompt_blocks(&text, shared + own))
}

fn records_in_order(memory: &InMemorySink) -> Vec<RequestRecord> {
    let mut records = memory.records();
    records.sort_by_key(|r| r.arrival);
    records
}

#[tokio::test(start_paused = true)]
async fn prefix_cache_hits_equal_the_shared_tokens_and_shorten_the_prefill() {
    let rig = Rig::new(SimConfig::default().seed(1));
    let shared = 32 * BLOCK_TOKENS; // 512 tokens, whole blocks
    for tag in ['p', 'q', 'r', 's'] {
        rig.run(vec![shared_prompt(shared, 256, tag)]).await;
    }
    let totals = rig.totals();
    // the first prompt misses; each later one hits exactly the shared prefix
    assert_eq!(totals.prefix_hits, 3 * u64::from(shared));
    assert_eq!(totals.prefix_queries, 4 * u64::from(shared + 256));
    let hits = rig.everywhere(
        "tokenmeter_prefix_cache_hits_total",
        "vllm:prefix_cache_hits_total",
        "tokenmeter.prefix_cache.hits",
        "",
    );
    let queries = rig.everywhere(
        "tokenmeter_prefix_cache_queries_total",
        "vllm:prefix_cache_queries_total",
        "tokenmeter.prefix_cache.queries",
        "",
    );
    assert_eq!(
        (hits, queries),
        (totals.prefix_hits as f64, totals.prefix_queries as f64)
    );
    let cached = rig.everywhere(
        "tokenmeter_input_tokens_by_source_total",
        "vllm:prompt_tokens_by_source_total",
        "tokenmeter.input_tokens.by_source",
        r#"source="local_cache_hit""#,
    );
    let computed = rig.everywhere(
        "tokenmeter_input_tokens_by_source_total",
        "vllm:prompt_tokens_by_source_total",
        "tokenmeter.input_tokens.by_source",
        r#"source="local_compute""#,
    );
    assert_eq!(cached, totals.prefix_hits as f64);
    assert_eq!(
        computed,
        (totals.prefix_queries - totals.prefix_hits) as f64
    );
    let kv_computed = rig.everywhere(
        "tokenmeter_request_computed_input_tokens_sum",
        "vllm:request_prefill_kv_computed_tokens_sum",
        "tokenmeter.request.computed_input_tokens",
        "",
    );
    assert_eq!(kv_computed, computed);
    // a hit prefills 256 tokens instead of 768: a shorter TTFT at the same prompt length
    let records = records_in_order(&rig.memory);
    let ttft: Vec<Duration> = records.iter().map(|r| r.ttft.expect("a token")).collect();
    assert!(ttft[1..].iter().all(|t| *t < ttft[0]), "{ttft:?}");
    assert_eq!(records[1].cached_input_tokens, Some(u64::from(shared)));
}

#[tokio::test(start_paused = true)]
async fn preemptions_equal_the_requeues_and_every_request_still_completes() {
    // Four requests of 200 + 300 tokens fit at admission (201 each) but not as they grow.
    let rig = Rig::new(
        SimConfig::default()
            .kv_capacity_tokens(1_000)
            .preemption(true)
            .seed(2),
    );
    rig.run(vec![GenerateRequest::chat(200, 300); 4]).await;
    let totals = rig.totals();
    assert!(totals.preemptions > 0, "{totals:?}");
    println!("{totals:?}");
    let counted = rig.everywhere(
        "tokenmeter_preemptions_total",
        "vllm:num_preemptions_total",
        "tokenmeter.preemptions",
        "",
    );
    assert_eq!(counted, totals.preemptions as f64);
    let records = rig.memory.records();
    assert_eq!(records.len(), 4);
    assert!(
        records.iter().all(|r| r.output_tokens == 300),
        "every token delivered"
    );
    // without preemption the same load never preempts
    let reserved = Rig::new(SimConfig::default().kv_capacity_tokens(1_000).seed(2));
    reserved.run(vec![GenerateRequest::chat(200, 300); 4]).await;
    assert_eq!(reserved.totals().preemptions, 0);
}

#[tokio::test(start_paused = true)]
async fn accepted_draft_tokens_never_exceed_the_drafts_and_match_the_engine() {
    let rig = Rig::new(
        SimConfig::default()
            .speculation(Speculation::new(4, 0.7))
            .seed(3),
    );
    rig.run(vec![GenerateRequest::chat(32, 100); 3]).await;
    let totals = rig.totals();
    assert!(
        totals.drafts > 0 && totals.accepted_tokens > 0,
        "{totals:?}"
    );
    println!("{totals:?}");
    assert!(totals.accepted_tokens <= totals.draft_tokens);
    assert_eq!(totals.draft_tokens, 4 * totals.drafts);
    for (semconv, vllm, otel, want) in [
        (
            "tokenmeter_spec_decode_drafts_total",
            "vllm:spec_decode_num_drafts_total",
            "tokenmeter.spec_decode.drafts",
            totals.drafts,
        ),
        (
            "tokenmeter_spec_decode_draft_tokens_total",
            "vllm:spec_decode_num_draft_tokens_total",
            "tokenmeter.spec_decode.draft_tokens",
            totals.draft_tokens,
        ),
        (
            "tokenmeter_spec_decode_accepted_tokens_total",
            "vllm:spec_decode_num_accepted_tokens_total",
            "tokenmeter.spec_decode.accepted_tokens",
            totals.accepted_tokens,
        ),
    ] {
        assert_eq!(
            rig.everywhere(semconv, vllm, otel, ""),
            want as f64,
            "{semconv}"
        );
    }
    // speculation changes the steps, not the output: every request gets its 100 tokens in
    // fewer than 100 decode steps
    let records = rig.memory.records();
    assert!(records.iter().all(|r| r.output_tokens == 100));
    assert!(
        rig.engine.snapshot().steps < 100,
        "{}",
        rig.engine.snapshot().steps
    );
}

#[tokio::test(start_paused = true)]
async fn reasoning_delays_the_first_output_token_by_the_reasoning_time() {
    let rig = Rig::new(SimConfig::default().seed(4));
    rig.run(vec![GenerateRequest::chat(16, 20).reasoning_tokens(8)])
        .await;
    let record = rig.memory.records().remove(0);
    let (ttft, first_output) = (
        record.ttft.expect("ttft"),
        record.first_output.expect("output"),
    );
    // 8 reasoning tokens: the first at the TTFT, then 8 decode steps of 7 ms (batch of one)
    // until the first answer token
    assert_eq!(first_output - ttft, Duration::from_millis(56));
    let published = rig.everywhere(
        "tokenmeter_request_time_to_first_output_token_seconds_sum",
        "tokenmeter_request_time_to_first_output_token_seconds_sum",
        "tokenmeter.request.time_to_first_output_token",
        "",
    );
    assert!(
        (published - first_output.as_secs_f64()).abs() < 1e-9,
        "{published}"
    );
}
