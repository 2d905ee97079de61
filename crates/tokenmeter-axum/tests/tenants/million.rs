//! A million distinct tenant header values: a few thousand over real HTTP, the rest through the
//! layer's own label extraction and the meter. Both exporters stay within the series cap, and
//! the folded counter counts the overflow.
//!
//! Every label set is resolved; one in [`REQUEST_EVERY`] past HTTP also gets a request (a
//! request on the folded series costs the same whatever its tenant, and a million of them take
//! half a minute in a debug build).

use std::time::Instant;

use http::HeaderValue;
use tokenmeter::series::OTHER;

use crate::support::{self, Exporters, TENANT_HEADER};

/// Distinct tenant header values.
const TENANTS: usize = 1_000_000;
/// How many of them come over real HTTP.
const OVER_HTTP: usize = 2_000;
/// Past HTTP, one label set in this many gets a request (start and success).
const REQUEST_EVERY: usize = 16;
/// Requests in flight at once over HTTP.
const CONCURRENCY: usize = 8;
/// The meter's series cap: below the HTTP requests, so that they fold too, and small enough
/// that reading both exports back takes a moment in a debug build.
const CAP: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_tenants_stay_within_the_series_cap_in_both_exporters() {
    use futures_util::StreamExt as _;

    let exporters = Exporters::new(CAP);
    let choose = support::chooser(&exporters.meter);
    let addr = support::serve(choose.clone()).await;
    let http = support::http_client();

    let started = Instant::now();
    futures_util::stream::iter(0..OVER_HTTP)
        .for_each_concurrent(CONCURRENCY, |i| {
            let http = &http;
            async move {
                let tenant = HeaderValue::try_from(format!("tenant-{i}")).expect("a header value");
                support::post_chat(
                    http,
                    addr,
                    &[(TENANT_HEADER, tenant)],
                    &format!("u-{}", i % 7),
                )
                .await;
            }
        })
        .await;
    let over_http = started.elapsed();

    // The rest: the layer's label extraction on a request head, then the meter.
    let started = Instant::now();
    let (mut parts, ()) = http::Request::post("/v1/chat/completions")
        .body(())
        .expect("a request")
        .into_parts();
    for i in OVER_HTTP..TENANTS {
        let tenant = HeaderValue::try_from(format!("tenant-{i}")).expect("a header value");
        parts.headers.insert(TENANT_HEADER, tenant);
        let series = exporters.meter.series(&choose.labels(&parts));
        if i % REQUEST_EVERY == 0 {
            series.start().succeed();
        }
    }
    let direct = started.elapsed();

    let started = Instant::now();
    let (text, samples) = exporters.prometheus();
    let points = exporters.otel();
    let exported = started.elapsed();
    let started = Instant::now();
    println!(
        "{TENANTS} tenants, cap {CAP}: {OVER_HTTP} over HTTP in {over_http:?}, {} through the \
         layer's labels (one in {REQUEST_EVERY} with a request) in {direct:?}; Prometheus {} \
         lines / {} bytes and OTel {} points in {exported:?}",
        TENANTS - OVER_HTTP,
        text.lines().count(),
        text.len(),
        points.len()
    );

    // The registry: the cap, and every other tenant folded.
    let overflow = (TENANTS - CAP) as u64;
    assert_eq!(exporters.meter.series_count(), CAP);
    assert_eq!(exporters.meter.folded_count(), overflow);

    // Prometheus: at most cap + 1 series per metric, the cap's tenants, the folds counted.
    for (metric, count) in support::series_per_metric(&samples) {
        assert!(
            count <= CAP + 1,
            "{metric}: {count} series; the cap is {CAP}"
        );
    }
    assert_eq!(support::values(&samples, "tenant_id").len(), CAP);
    assert!(support::values(&samples, "gen_ai_request_model").contains(OTHER));
    let folded = format!("tokenmeter_series_folded_total{{role=\"server\"}} {overflow}\n");
    assert!(text.contains(&folded), "{folded} is not in the exposition");

    // OpenTelemetry: at most cap + 1 attribute sets per metric, the cap's tenants, and the
    // SDK's own cardinality limit never reached.
    for (metric, count) in support::series_per_metric(&points) {
        assert!(
            count <= CAP + 1,
            "{metric}: {count} attribute sets; the cap is {CAP}"
        );
    }
    assert_eq!(support::values(&points, "tenant.id").len(), CAP);
    assert!(
        points
            .iter()
            .all(|(_, attrs)| !attrs.contains_key("otel.metric.overflow"))
    );
    assert_eq!(
        exporters.otel_counter("tokenmeter.series.folded", "server"),
        Some(overflow),
        "tokenmeter.series.folded"
    );
    println!("checks in {:?}", started.elapsed());
}
