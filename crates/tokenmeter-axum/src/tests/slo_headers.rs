//! `MeterLayer::slo_headers`: the two objective headers onto the record, opt-in, strictly.

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use tokenmeter::request::SloTargets;

use super::*;

async fn answer() -> &'static str {
    "ok"
}

#[tokio::test]
async fn the_objective_headers_reach_the_record_only_when_asked() {
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Headers<'_>, Option<SloTargets>); 6] = [
        (&[], None),
        (
            &[("x-slo-ttft-ms", "250"), ("x-slo-tpot-ms", "40")],
            Some(SloTargets::new(Some(ms(250)), Some(ms(40)))),
        ),
        (&[("x-slo-tpot-ms", "12ms")], Some(SloTargets::malformed())),
        (&[("x-slo-ttft-ms", "")], Some(SloTargets::malformed())),
        (
            &[("x-slo-ttft-ms", "5"), ("x-slo-ttft-ms", "5")],
            Some(SloTargets::malformed()),
        ),
        // Other headers are never read, whatever they are called.
        (&[("x-slo-e2e-ms", "100"), ("x-slo", "1")], None),
    ];
    for (headers, expected) in cases {
        for opt_in in [false, true] {
            let h = Harness::new();
            let layer = if opt_in {
                h.layer().slo_headers()
            } else {
                h.layer()
            };
            let app = Router::new().route("/", get(answer)).layer(layer);
            let mut request = http::Request::get("/");
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            let response = app
                .oneshot(request.body(Body::empty()).unwrap())
                .await
                .unwrap();
            let _ = response.into_body().collect().await.unwrap();
            let want = if opt_in { expected } else { None };
            assert_eq!(h.record().slo_targets, want, "{headers:?}, opt-in {opt_in}");
        }
    }
}
