//! The reqwest helper: `send_labelled` labels the client's series from the outgoing request's
//! allow-listed headers and body `user`, against the server layer on loopback.

use futures_util::StreamExt;
use tokenmeter::sink::InMemorySink;
use tokenmeter::{Labels, Meter, Outcome, TenantKey};
use tokenmeter_openai::send_labelled;

use crate::support::{self, TENANT_HEADER};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_labelled_takes_the_tenant_from_the_outgoing_request() {
    let server = Meter::builder().build();
    let addr = support::serve(support::chooser(&server)).await;
    let memory = InMemorySink::new();
    let client = Meter::builder().sink(memory.clone()).build();
    let http = support::http_client();

    for (tenant, user) in [("acme", "u-1"), ("globex", "u-2")] {
        let post = http
            .post(format!("http://{addr}/v1/chat/completions"))
            .header(TENANT_HEADER, tenant)
            .header("authorization", "Bearer sk-do-not-label")
            .header("content-type", "application/json")
            .body(support::body(user));
        let labels = Labels::client("chat").request_model("m");
        let mut chunks = send_labelled(post, &client, labels, &support::tenants())
            .await
            .expect("sent");
        while let Some(chunk) = chunks.next().await {
            chunk.expect("a chunk");
        }
    }
    // A request that cannot be built ends on the series of the labels alone.
    let bad = http.post("http://[::1/").header(TENANT_HEADER, "initech");
    let error = send_labelled(bad, &client, Labels::client("chat"), &support::tenants()).await;
    assert!(error.is_err());

    let records = memory.records();
    let seen: Vec<_> = records
        .iter()
        .map(|r| {
            let labels = r.series.labels();
            (
                r.outcome,
                labels
                    .tenant_value(&TenantKey::TENANT_ID)
                    .map(str::to_owned),
                labels.tenant_value(&TenantKey::USER_ID).map(str::to_owned),
            )
        })
        .collect();
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        seen,
        [
            (Outcome::Success, some("acme"), some("u-1")),
            (Outcome::Success, some("globex"), some("u-2")),
            (
                Outcome::Error(tokenmeter::ErrorClass::Transport),
                None,
                None
            ),
        ]
    );
    // The server saw the same tenants.
    assert_eq!(server.series_count(), 2);
}
