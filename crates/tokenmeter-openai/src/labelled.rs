//! [`send_labelled`] (feature `reqwest`): the series chosen from the outgoing request itself.

use tokenmeter::{Labels, Meter};

use crate::client::{MeteredResponse, sent};
use crate::error::StreamError;
use crate::request_body;
use crate::tenant::TenantLabels;

/// [`send`](crate::send) with the series resolved from the request being sent: `labels`
/// completed with the tenant attributes `tenants` takes from the outgoing request's headers
/// (and its JSON body's `user`, when [`TenantLabels::body_user`] was asked for and the body is
/// in memory), then `meter`'s series for them, started just before the send.
///
/// The labels are resolved once per request (one lock, one lookup): each distinct tenant is one
/// series under the meter's cap, past which requests fold into `_OTHER`. A request that cannot
/// be built (a bad URL or header) ends on the series of `labels` alone with the builder's error.
///
/// # Examples
///
/// ```no_run
/// use futures_util::StreamExt;
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_openai::TenantLabels;
///
/// async fn chat(http: &reqwest::Client, meter: &Meter) -> Result<(), Box<dyn std::error::Error>> {
///     let tenants = TenantLabels::new().header("x-tenant-id", "tenant.id")?.body_user()?;
///     let post = http
///         .post("http://127.0.0.1:8000/v1/chat/completions")
///         .header("x-tenant-id", "acme")
///         .header("content-type", "application/json")
///         .body(r#"{"model":"m","user":"u-1","messages":[{"role":"user","content":"Hi"}],"stream":true}"#);
///     let labels = Labels::client("chat").request_model("m");
///     let mut chunks = tokenmeter_openai::send_labelled(post, meter, labels, &tenants).await?;
///     while let Some(chunk) = chunks.next().await {
///         chunk?;
///     }
///     // The request was measured on the series {chat, m, tenant.id=acme, user.id=u-1}.
///     Ok(())
/// }
/// ```
pub async fn send_labelled(
    builder: reqwest::RequestBuilder,
    meter: &Meter,
    labels: Labels<'_>,
    tenants: &TenantLabels,
) -> Result<MeteredResponse, StreamError> {
    let (client, built) = builder.build_split();
    let built = match built {
        Ok(built) => built,
        Err(error) => return sent(Err(error), meter.series(&labels).start()),
    };
    let request = {
        let body = built.body().and_then(reqwest::Body::as_bytes);
        let user = match body {
            Some(body) if tenants.reads_body_user() => request_body::fields(body).user,
            _ => None,
        };
        let labels = tenants.apply(labels, built.headers(), user.as_deref());
        meter.series(&labels).start()
    };
    sent(client.execute(built).await, request)
}
