//! `tokenmeter bench --slo-class` against `serve --slo-spec` (in process, real HTTP on
//! loopback): two classes send different objective headers; the server counts each request
//! under the declared class holding its targets, and its per-class good/eligible counters equal
//! the bench's per-class attainment exactly.
//!
//! The classes are chosen so that both sides must reach the same verdicts: `relaxed` asks for
//! TTFT ≤ 60 s and TPOT ≤ 10 s (every request meets it on both sides), `tight` for TTFT ≤ 1 ms
//! with a server whose prefill takes 20 ms (no request meets it on either side: the client's
//! TTFT is never below the server's).

#[path = "serve_support/mod.rs"]
mod support;

use std::time::Duration;

use serde_json::Value;
use support::{Hosted, Target, bench};
use tokenmeter_server::Config;
use tokenmeter_slo::SloSpec;

const SPEC: &str = r#"
[[class]]
name = "tight"
from_headers = true
[[class.objective]]
latency = "ttft"
percentile = 90
threshold = "1ms"

[[class]]
name = "relaxed"
from_headers = true
[[class.objective]]
latency = "ttft"
percentile = 90
threshold = "60s"
[[class.objective]]
latency = "tpot"
percentile = 90
threshold = "10s"

[[objective]]
success_rate = 0.99
"#;

const REQUESTS: u64 = 30;

#[test]
fn the_servers_class_counters_equal_the_benchs_attainment_by_class() {
    let spec = SloSpec::from_toml(SPEC).expect("valid spec");
    let server = Hosted::start(
        Config::default()
            .prefill_base(Duration::from_millis(20))
            .slo_spec(spec),
    );
    let run = bench(
        &server.url(),
        &[
            "-n",
            &REQUESTS.to_string(),
            "--concurrency",
            "6",
            "--input-tokens",
            "8",
            "--output-tokens",
            "4",
            "--no-preflight",
            "--slo-class",
            "relaxed:ttft=60s,tpot=10s:2",
            "--slo-class",
            "tight:ttft=1ms",
            "--server-metrics",
            "auto",
        ],
    );
    let classes = run.json["slo_classes"]
        .as_array()
        .unwrap_or_else(|| panic!("no slo_classes in {:#}", run.json));
    let client = |name: &str| -> (u64, u64) {
        let row: &Value = classes
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no class {name} in {classes:#?}"));
        (
            row["good"].as_u64().expect("good"),
            row["requests"].as_u64().expect("requests"),
        )
    };
    // Weights 2:1 taken in turn: 20 relaxed, 10 tight.
    assert_eq!(client("relaxed"), (20, 20), "{classes:#?}");
    assert_eq!(client("tight"), (0, 10), "{classes:#?}");

    // The server ends a request's record as its last byte goes out: wait (bounded) for all.
    let total = |s: &Hosted| s.metric("tokenmeter_slo_requests_total", &[]);
    server.wait_for(
        "SLO requests",
        REQUESTS as f64,
        Duration::from_secs(10),
        total,
    );
    for name in ["relaxed", "tight"] {
        let labels = [("slo_class", name)];
        let server_side = (
            server.metric("tokenmeter_slo_requests_good_total", &labels) as u64,
            server.metric("tokenmeter_slo_requests_total", &labels) as u64,
        );
        assert_eq!(server_side, client(name), "class {name}");
    }
    assert_eq!(
        server.metric("tokenmeter_slo_requests_unclassified_total", &[]),
        0.0
    );
    // The report puts the server's counters beside the client's.
    let beside = &classes.iter().find(|c| c["name"] == "relaxed").unwrap()["server"];
    assert!(beside["requests"].as_f64().is_some(), "{classes:#?}");
    assert!(
        run.stdout.contains("by SLO class") && run.stdout.contains("relaxed"),
        "{}",
        run.stdout
    );
}
