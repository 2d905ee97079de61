//! Header classes: requests carrying their own objectives are judged against them, counted
//! under the first declared class that holds them, and the rest are counted apart by reason.

use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use tokenmeter::request::SloTargets;
use tokenmeter::{Clock, Labels, ManualClock, Meter};
use tokenmeter_slo::{SloMonitor, SloSpec, names};

const SPEC: &str = r#"
[[class]]
name = "interactive"
from_headers = true
[[class.objective]]
latency = "ttft"
percentile = 90
threshold = "500ms"
[[class.objective]]
latency = "tpot"
percentile = 90
threshold = "50ms"

[[class]]
name = "batch"
from_headers = true
[[class.objective]]
latency = "ttft"
percentile = 90
threshold = "10s"

[[objective]]
success_rate = 0.99
"#;

fn counters(snapshotter: &Snapshotter) -> Vec<(String, String, u64)> {
    let mut out: Vec<(String, String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| match value {
            DebugValue::Counter(n) => Some((
                key.key().name().to_string(),
                key.key()
                    .labels()
                    .map(|l| format!("{}={}", l.key(), l.value()))
                    .collect::<Vec<_>>()
                    .join(","),
                n,
            )),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

fn get(all: &[(String, String, u64)], name: &str, labels: &str) -> u64 {
    all.iter()
        .find(|(n, l, _)| n == name && l == labels)
        .map(|(_, _, v)| *v)
        .unwrap_or_else(|| panic!("no {name}{{{labels}}} in {all:#?}"))
}

#[test]
fn each_request_is_judged_against_its_own_targets_and_counted_under_its_class() {
    let recorder = Arc::new(DebuggingRecorder::new());
    let snapshotter = recorder.snapshotter();
    let spec = SloSpec::from_toml(SPEC).expect("valid spec");
    let time = ManualClock::new();
    let clock = Clock::manual(&time);
    let monitor = SloMonitor::publish_to(spec, clock.clone(), recorder);
    let meter = Meter::builder().clock(clock).sink(monitor.clone()).build();
    let series = meter.series(&Labels::server("chat"));
    let ms = Duration::from_millis;
    // (targets, TTFT): TTFT 300 ms meets a 300 ms target (inclusive) and misses a 200 ms one,
    // though both are within the interactive class's 500 ms.
    let cases = [
        (SloTargets::new(Some(ms(300)), None), ms(300)), // interactive, good
        (SloTargets::new(Some(ms(200)), None), ms(300)), // interactive, bad
        (SloTargets::new(Some(ms(5_000)), None), ms(3_000)), // batch, good
        (SloTargets::new(None, Some(ms(40))), ms(100)),  // interactive (TPOT held), good
        (SloTargets::new(None, Some(ms(80))), ms(100)),  // batch has no TPOT: no class
        (SloTargets::new(Some(ms(60_000)), None), ms(100)), // looser than every class
        (SloTargets::malformed(), ms(100)),
        (SloTargets::default(), ms(100)), // no headers: the default class
    ];
    for (targets, ttft) in cases {
        let mut request = series.start();
        request.set_slo_targets(targets);
        time.advance(ttft);
        request.record_tokens(1);
        request.succeed();
    }
    let all = counters(&snapshotter);
    let class = |c: &str| format!("slo_class={c}");
    assert_eq!(get(&all, names::REQUESTS, &class("interactive")), 3);
    assert_eq!(get(&all, names::REQUESTS_GOOD, &class("interactive")), 2);
    assert_eq!(get(&all, names::REQUESTS, &class("batch")), 1);
    assert_eq!(get(&all, names::REQUESTS_GOOD, &class("batch")), 1);
    assert_eq!(get(&all, names::REQUESTS, &class("default")), 1);
    let ttft = "slo_class=interactive,objective=ttft_p90";
    assert_eq!(get(&all, names::OBJECTIVE_EVENTS, ttft), 3);
    assert_eq!(get(&all, names::OBJECTIVE_GOOD, ttft), 2);
    let unclassified = |r: &str| get(&all, names::REQUESTS_UNCLASSIFIED, &format!("reason={r}"));
    assert_eq!(
        (unclassified("no_class"), unclassified("malformed")),
        (2, 1)
    );

    let status = monitor.status();
    let good: Vec<(String, u64, u64)> = status
        .classes
        .iter()
        .map(|c| (c.name.clone(), c.windows[0].requests, c.windows[0].good))
        .collect();
    assert_eq!(
        good,
        [
            ("interactive".to_owned(), 3, 2),
            ("batch".to_owned(), 1, 1),
            ("default".to_owned(), 1, 1)
        ]
    );
    // The status says the same as the counters, in its JSON and its summary; so does the
    // run's.
    let counts = status.unclassified.expect("a spec with header classes");
    assert_eq!((counts.no_class, counts.malformed), (2, 1));
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["unclassified"]["no_class"], 2);
    assert_eq!(json["unclassified"]["malformed"], 1);
    assert!(
        status
            .summary()
            .contains("3 requests with objective headers fit no class (1 malformed"),
        "{}",
        status.summary()
    );
    let run = monitor.run_status();
    assert_eq!(run.unclassified, Some(counts));
    assert!(run.summary().contains("fit no class"), "{}", run.summary());
}

#[test]
fn a_spec_without_header_classes_reports_no_unclassified_count() {
    let spec = SloSpec::from_toml(
        "[[objective]]\nlatency = \"ttft\"\npercentile = 90\nthreshold = \"1s\"\n",
    )
    .unwrap();
    let time = ManualClock::new();
    let monitor = SloMonitor::new(spec, Clock::manual(&time));
    let status = monitor.status();
    assert_eq!(status.unclassified, None);
    assert!(serde_json::to_value(&status).unwrap()["unclassified"].is_null());
    assert!(!status.summary().contains("fit no class"));
}

#[test]
fn a_header_class_needs_a_ttft_or_tpot_objective() {
    let e = SloSpec::from_toml(
        "[[class]]\nname = \"h\"\nfrom_headers = true\n[[class.objective]]\nsuccess_rate = 0.9\n",
    )
    .expect_err("a header class with nothing to hold targets");
    assert_eq!(
        (e.field.as_str(), e.line),
        ("class[0].from_headers", Some(3))
    );
    assert!(e.message.contains("x-slo-ttft-ms"), "{e}");
}
