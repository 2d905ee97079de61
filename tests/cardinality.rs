//! A cardinality attack: a million distinct model names taken from requests, against a meter
//! with both exporters attached (Prometheus and OpenTelemetry). The series stay at the cap plus
//! `_OTHER`, both exporters' outputs stay small, memory growth is bounded, and hostile label
//! values come out length-limited and free of control characters.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tokenmeter::series::{MAX_LABEL_LEN, OTHER};
use tokenmeter::{Labels, Meter, Series};
use tokenmeter_otel::OtelSink;
use tokenmeter_prometheus::{Builder, Handle, Profile};

/// Distinct model names sent by the attacker.
const ATTACK: usize = 1_000_000;
/// The meter's series cap: the default.
const CAP: usize = tokenmeter::series::DEFAULT_MAX_SERIES;
/// The first names get one short request each (a request on the folded series costs the same
/// whatever its name, and a million of them take over a minute in a debug build); every name is
/// resolved.
const REQUESTED: usize = 50_000;
/// Allowed growth of the resident set over the whole attack, the cap's series included: it
/// is mostly the 1,000 series at the cap, each with every instrument of the table in both
/// exporters (447 exposition lines each). Measured on 2026-12-03 at commits 7d8361e (twice)
/// and 6285b75 (debug build, a 2-core machine shared with other builds; `cargo nextest run -p
/// tokenmeter-tests --test cardinality --no-capture`): 71.7, 78.6 and 81.0 MiB, 53.6 MiB of
/// it by the cap each time. The bound is what this code meets here with about a sixth of
/// headroom over the largest. What must not grow is the second half ([`MAX_FLAT_GROWTH`]).
const MAX_RSS_GROWTH: u64 = 96 * 1024 * 1024;
/// Allowed growth over the second half of the names (resolutions only, all folded): measured
/// 0 KiB, 16 KiB and 4.6 MiB in the runs above. The resident set moves by several MiB on its own (allocator
/// arenas, the exporter's upkeep); a leak of even 50 bytes per name would add 24 MiB over
/// these 500,000 names.
const MAX_FLAT_GROWTH: u64 = 24 * 1024 * 1024;
/// Largest exposition at the cap: measured 52,552,934 to 52,552,983 bytes (382,447 lines)
/// in the runs above. A scrape at the default cap is this big.
const MAX_EXPOSITION_BYTES: usize = 64 * 1024 * 1024;

/// The OpenTelemetry side: a provider with the SDK's in-memory exporter.
struct Otel {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

impl Otel {
    fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        Self { provider, exporter }
    }

    fn sink(&self) -> OtelSink {
        OtelSink::new(&self.provider.meter("tokenmeter"))
    }

    /// Every exported data point of the last export, as (metric name, attributes).
    fn points(&self) -> Vec<(String, BTreeMap<String, String>)> {
        self.provider.force_flush().expect("flush the OTel SDK");
        let exported = self.exporter.get_finished_metrics().expect("metrics");
        exported
            .last()
            .map(tokenmeter_tests::otel::points)
            .unwrap_or_default()
    }
}

/// A meter with both exporters attached.
fn meter() -> (Meter, Handle, Otel) {
    let (prometheus, handle) = Builder::new(Profile::Semconv)
        .build_recorder()
        .expect("a local Prometheus recorder");
    let otel = Otel::new();
    let meter = Meter::builder()
        .sink(prometheus)
        .sink(otel.sink())
        .max_series(CAP)
        .build();
    (meter, handle, otel)
}

/// One short request: two tokens and success.
fn one_request(series: &Series) {
    let mut request = series.start();
    request.set_input_tokens(3);
    request.record_tokens(1);
    request.record_tokens(1);
    request.succeed();
}

/// The resident set of this process, from `/proc/self/status`.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line in /proc/self/status");
    kib * 1024
}

/// The distinct values of label `name` in a Prometheus exposition.
fn label_values<'a>(text: &'a str, name: &str) -> BTreeSet<&'a str> {
    let key = format!("{name}=\"");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = &l[l.find(&key)? + key.len()..];
            Some(&rest[..rest.find('"')?])
        })
        .collect()
}

/// Lines of the exposition for one series that received one request: the yardstick for
/// "small".
fn lines_of_one_series() -> usize {
    let (meter, handle, _otel) = meter();
    one_request(&meter.series(&Labels::server("chat").request_model("model-0")));
    handle.render().lines().count()
}

/// Data points of the OTel export for one series that received one request.
fn points_of_one_series() -> usize {
    let (meter, _handle, otel) = meter();
    one_request(&meter.series(&Labels::server("chat").request_model("model-0")));
    otel.points().len()
}

#[test]
fn a_million_model_names_stay_at_the_cap_in_both_exporters() {
    let per_series_lines = lines_of_one_series();
    let per_series_points = points_of_one_series();

    let (meter, handle, otel) = meter();
    let rss_base = rss_bytes();
    let started = Instant::now();
    let attack = |range: std::ops::Range<usize>| {
        for i in range {
            let name = format!("model-{i}");
            let series = meter.series(&Labels::server("chat").request_model(name.as_str()));
            if i < REQUESTED {
                one_request(&series);
            }
        }
    };
    // The legitimate series up to the cap, then the attack proper.
    attack(0..CAP);
    let rss_capped = rss_bytes();
    attack(CAP..ATTACK / 2);
    let rss_half = rss_bytes();
    attack(ATTACK / 2..ATTACK);
    let rss_after = rss_bytes();
    let attack_time = started.elapsed();

    let rendered_at = Instant::now();
    let text = handle.render();
    let render_time = rendered_at.elapsed();
    let otel_points = otel.points();
    let lines = text.lines().count();
    let kib = |bytes: u64| bytes / 1024;
    println!(
        "cardinality attack: {ATTACK} model names ({REQUESTED} with a request), cap {CAP}: \
         {attack_time:?}; VmRSS {} KiB at start, {} KiB at the cap, {} KiB half-way, {} KiB \
         after (growth {} KiB in all, {} KiB past the cap, {} KiB over the second half); \
         Prometheus exposition {lines} lines / {} bytes ({per_series_lines} lines for one \
         series), rendered in {render_time:?}; OTel export {} data points ({per_series_points} \
         for one series)",
        kib(rss_base),
        kib(rss_capped),
        kib(rss_half),
        kib(rss_after),
        kib(rss_after.saturating_sub(rss_base)),
        kib(rss_after.saturating_sub(rss_capped)),
        kib(rss_after.saturating_sub(rss_half)),
        text.len(),
        otel_points.len()
    );

    // The registry: the cap, and every other resolution folded.
    assert_eq!(meter.series_count(), CAP);
    assert_eq!(meter.folded_count(), (ATTACK - CAP) as u64);

    // Prometheus: at most the cap's model names plus `_OTHER`, a bounded number of lines, the
    // folds counted, and no request lost.
    let models = label_values(&text, "gen_ai_request_model");
    assert_eq!(
        models.len(),
        CAP + 1,
        "distinct gen_ai_request_model values"
    );
    assert!(models.contains(OTHER), "the `_OTHER` series is exported");
    for i in [0, CAP - 1] {
        assert!(models.contains(format!("model-{i}").as_str()), "model-{i}");
    }
    assert!(!models.contains(format!("model-{CAP}").as_str()));
    let max_lines = (CAP + 1) * per_series_lines;
    assert!(
        lines <= max_lines,
        "{lines} exposition lines for {CAP} series plus `_OTHER`; expected at most {max_lines}"
    );
    assert!(
        text.len() <= MAX_EXPOSITION_BYTES,
        "a {}-byte exposition at the cap; the bound is {MAX_EXPOSITION_BYTES} bytes",
        text.len()
    );
    let folded =
        tokenmeter_tests::sample(&text, r#"tokenmeter_series_folded_total{role="server"}"#);
    assert_eq!(
        folded,
        Some((ATTACK - CAP) as f64),
        "tokenmeter_series_folded_total"
    );
    let requests = |model: &str| -> f64 {
        let label = format!(r#"gen_ai_request_model="{model}""#);
        text.lines()
            .filter(|l| l.starts_with("tokenmeter_requests_total{") && l.contains(&label))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    };
    assert_eq!(
        requests(OTHER),
        (REQUESTED - CAP) as f64,
        "requests of `_OTHER`"
    );
    assert_eq!(requests("model-7"), 1.0, "requests of model-7");

    // OpenTelemetry: at most the cap's model names plus `_OTHER`, and no more data points than
    // that many series make.
    let otel_models: BTreeSet<&str> = otel_points
        .iter()
        .filter_map(|(_, attrs)| attrs.get("gen_ai.request.model").map(String::as_str))
        .collect();
    assert_eq!(
        otel_models.len(),
        CAP + 1,
        "distinct gen_ai.request.model values"
    );
    assert!(otel_models.contains(OTHER));
    let max_points = (CAP + 1) * per_series_points + 1;
    assert!(
        otel_points.len() <= max_points,
        "{} OTel data points for {CAP} series plus `_OTHER`; expected at most {max_points}",
        otel_points.len()
    );
    assert!(
        otel_points
            .iter()
            .all(|(_, attrs)| !attrs.contains_key("otel.metric.overflow")),
        "the SDK's own cardinality limit was never reached: tokenmeter's cap came first"
    );

    // Memory: bounded in all, and the names past the cap left nothing behind.
    let growth = rss_after.saturating_sub(rss_base);
    assert!(
        growth < MAX_RSS_GROWTH,
        "VmRSS grew by {} KiB over the attack; the bound is {} KiB",
        kib(growth),
        kib(MAX_RSS_GROWTH)
    );
    let second_half = rss_after.saturating_sub(rss_half);
    assert!(
        second_half < MAX_FLAT_GROWTH,
        "VmRSS grew by {} KiB while {} more names were folded; the bound is {} KiB",
        kib(second_half),
        ATTACK / 2,
        kib(MAX_FLAT_GROWTH)
    );
}

/// 10 KB of hostile model name: control characters (C0, DEL, C1), an ANSI escape, a quote, a
/// backslash, and multi-byte characters straddling the length limit.
fn hostile_name() -> String {
    let mut name = String::from("evil\nmodel\r\n\u{0}\u{1b}[31m\t\u{7f}\u{85}\"\\x");
    while name.len() < 10 * 1024 {
        name.push('é');
    }
    name
}

/// What [`hostile_name`] must become: control characters replaced by `_`, cut to at most
/// [`MAX_LABEL_LEN`] bytes at a character boundary (the prefix is 25 bytes, so 51 two-byte `é`
/// fit in the remaining 103 bytes; the two-byte C1 character became a one-byte `_`).
fn expected_label() -> String {
    let mut expected = String::from("evil_model____[31m___\"\\x");
    expected.extend(std::iter::repeat_n('é', 51));
    expected
}

#[test]
fn hostile_label_values_are_cut_and_cleaned_in_both_exporters() {
    let expected = expected_label();
    assert!(expected.len() <= MAX_LABEL_LEN);
    assert!(
        expected.len() > MAX_LABEL_LEN - 4,
        "the cut is at the limit"
    );

    let (meter, handle, otel) = meter();
    let name = hostile_name();
    let series = meter.series(
        &Labels::server("chat")
            .provider(name.as_str())
            .request_model(name.as_str())
            .response_model(name.as_str()),
    );
    one_request(&series);

    // Prometheus: the cleaned value, escaped as the text format wants, and a document that
    // promtool accepts.
    let text = handle.render();
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "a control character reached the exposition"
    );
    let escaped = expected.replace('\\', r"\\").replace('"', r#"\""#);
    for label in [
        "gen_ai_provider_name",
        "gen_ai_request_model",
        "gen_ai_response_model",
    ] {
        let wanted = format!(r#"{label}="{escaped}""#);
        assert!(
            text.contains(&wanted),
            "{label} is not {wanted:?} in:\n{text}"
        );
    }
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(
        longest < 3 * MAX_LABEL_LEN + 512,
        "a {longest}-byte exposition line"
    );
    let output = tokenmeter_tests::promtool_check(&text);
    let report = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "promtool check metrics failed:\n{report}"
    );

    // OpenTelemetry: every point carries the cleaned values, none longer than the limit.
    let points = otel.points();
    assert!(!points.is_empty(), "the OTel SDK exported nothing");
    for (metric, attrs) in &points {
        for (key, value) in attrs {
            assert!(
                value.len() <= MAX_LABEL_LEN,
                "{metric}: {key} is {} bytes",
                value.len()
            );
            assert!(
                !value.chars().any(char::is_control),
                "{metric}: {key} = {value:?} holds a control character"
            );
        }
        let model = attrs.get("gen_ai.request.model");
        assert_eq!(model, Some(&expected), "{metric}: gen_ai.request.model");
        if metric.starts_with("gen_ai.") || metric.starts_with("tokenmeter.request") {
            assert_eq!(
                attrs.get("gen_ai.provider.name"),
                Some(&expected),
                "{metric}: gen_ai.provider.name"
            );
        }
    }
}
