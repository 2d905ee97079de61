//! Over real HTTP: the allow-listed header and the body's `user` become `tenant.id` and
//! `user.id` in both exporters; other headers, credentials included, never do; values that are
//! not UTF-8 or too long are cleaned, not rejected.

use reqwest::header::HeaderValue;
use tokenmeter::series::MAX_LABEL_LEN;

use crate::support::{self, Exporters, TENANT_HEADER};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_and_the_body_user_label_the_series_in_both_exporters() {
    let exporters = Exporters::new(100);
    let addr = support::serve(support::chooser(&exporters.meter)).await;
    let http = support::http_client();

    let secret = HeaderValue::from_static("Bearer sk-do-not-label");
    support::post_chat(
        &http,
        addr,
        &[
            (TENANT_HEADER, HeaderValue::from_static("acme")),
            ("authorization", secret.clone()),
            ("x-other", HeaderValue::from_static("not-on-the-list")),
        ],
        "u-1",
    )
    .await;
    // Not UTF-8, and far too long: cleaned and cut, and the request is served all the same.
    let latin1 = HeaderValue::from_bytes(b"caf\xe9").expect("obs-text is a valid header value");
    support::post_chat(&http, addr, &[(TENANT_HEADER, latin1)], "").await;
    let long = HeaderValue::from_str(&"t".repeat(4096)).expect("a long header value");
    support::post_chat(&http, addr, &[(TENANT_HEADER, long)], "u-2").await;

    // Prometheus.
    let (text, samples) = exporters.prometheus();
    let duration = r#"gen_ai_server_request_duration_seconds_count{gen_ai_operation_name="chat",gen_ai_provider_name="test",gen_ai_request_model="m",tenant_id="acme",user_id="u-1"} 1"#;
    assert!(text.contains(duration), "{duration} is not in:\n{text}");
    let tenants = support::values(&samples, "tenant_id");
    let cut = "t".repeat(MAX_LABEL_LEN);
    let expected = ["acme", "caf\u{fffd}", cut.as_str()];
    assert_eq!(tenants, expected.into_iter().collect(), "tenant_id values");
    assert_eq!(
        support::values(&samples, "user_id"),
        ["u-1", "u-2"].into_iter().collect(),
        "user_id values (the second request had no user)"
    );
    assert!(!text.contains("sk-do-not-label") && !text.contains("not-on-the-list"));
    let folded = samples
        .iter()
        .filter(|(name, _)| name == "tokenmeter_series_folded_total")
        .all(|(_, labels)| !labels.contains_key("tenant_id"));
    assert!(folded, "the folded counter carries no tenant");

    // OpenTelemetry.
    let points = exporters.otel();
    let request_duration = points
        .iter()
        .find(|(name, attrs)| {
            name == "gen_ai.server.request.duration"
                && attrs.get("tenant.id").map(String::as_str) == Some("acme")
        })
        .map(|(_, attrs)| attrs)
        .expect("a gen_ai.server.request.duration point of tenant acme");
    assert_eq!(
        request_duration.get("user.id").map(String::as_str),
        Some("u-1")
    );
    assert_eq!(
        support::values(&points, "tenant.id"),
        expected.into_iter().collect(),
        "tenant.id values"
    );
    assert!(
        points
            .iter()
            .all(|(_, attrs)| attrs.values().all(|v| !v.contains("sk-do-not-label"))),
        "a credential reached the OTel export"
    );
}
