//! Real OTLP receivers on loopback: gRPC from `opentelemetry-proto`'s generated tonic service,
//! HTTP/protobuf from axum + prost. Both decode every request the exporter sends.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use prost::Message as _;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::snapshot::Snapshot;

/// One received export: its decoded metrics and the request headers (lowercase names).
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub(crate) snapshot: Snapshot,
    pub(crate) headers: Vec<(String, String)>,
}

#[derive(Debug, Default)]
struct Store {
    received: Mutex<Vec<Received>>,
}

impl Store {
    fn push(&self, request: &ExportMetricsServiceRequest, headers: Vec<(String, String)>) {
        let snapshot = Snapshot::from_proto(request);
        self.received
            .lock()
            .unwrap()
            .push(Received { snapshot, headers });
    }
}

/// A running receiver.
pub(crate) struct Receiver {
    pub(crate) addr: SocketAddr,
    store: Arc<Store>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

struct Grpc(Arc<Store>);

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let headers = request
            .metadata()
            .clone()
            .into_headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        self.0.push(request.get_ref(), headers);
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

async fn http_export(
    State(store): State<Arc<Store>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let protobuf = [(header::CONTENT_TYPE, "application/x-protobuf")];
    let request = match ExportMetricsServiceRequest::decode(body) {
        Ok(request) => request,
        Err(error) => {
            return (
                StatusCode::BAD_REQUEST,
                protobuf,
                error.to_string().into_bytes(),
            );
        }
    };
    let headers = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    store.push(&request, headers);
    (
        StatusCode::OK,
        protobuf,
        ExportMetricsServiceResponse::default().encode_to_vec(),
    )
}

impl Receiver {
    /// An OTLP/gRPC receiver on `listener`.
    pub(crate) fn grpc(listener: TcpListener) -> Self {
        let addr = listener.local_addr().unwrap();
        let store = Arc::new(Store::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let service = MetricsServiceServer::new(Grpc(store.clone()));
        let task = tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(
                    tonic::transport::server::TcpIncoming::from(listener),
                    async {
                        let _ = stopped.await;
                    },
                )
                .await
                .expect("the gRPC receiver failed");
        });
        Self {
            addr,
            store,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// An OTLP/HTTP (protobuf) receiver on `listener`, at `/v1/metrics`.
    pub(crate) fn http(listener: TcpListener) -> Self {
        let addr = listener.local_addr().unwrap();
        let store = Arc::new(Store::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let app = axum::Router::new()
            .route("/v1/metrics", axum::routing::post(http_export))
            .with_state(store.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .expect("the HTTP receiver failed");
        });
        Self {
            addr,
            store,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// `http://127.0.0.1:port`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Everything received so far.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.store.received.lock().unwrap().clone()
    }

    /// Polls until an export satisfies `ready`, and returns it; panics with `what` after
    /// `deadline`.
    pub(crate) async fn wait_for(
        &self,
        what: &str,
        deadline: Duration,
        ready: impl Fn(&Snapshot) -> bool,
    ) -> Received {
        let start = Instant::now();
        loop {
            if let Some(found) = self
                .received()
                .into_iter()
                .rev()
                .find(|r| ready(&r.snapshot))
            {
                return found;
            }
            let received = self.received().len();
            assert!(
                start.elapsed() < deadline,
                "timed out after {deadline:?} waiting for {what}: {received} exports received"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops serving and closes the listener.
    pub(crate) async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

/// A listener that accepts connections and never reads nor answers.
pub(crate) struct BlackHole {
    pub(crate) addr: SocketAddr,
    task: JoinHandle<()>,
}

impl BlackHole {
    /// Accepts every connection and holds it open without a byte in answer.
    pub(crate) fn start(listener: TcpListener) -> Self {
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        Self { addr, task }
    }

    /// Accepts every connection and closes it at once (a collector restarting, a proxy
    /// refusing): the client sees its connection end before any answer.
    pub(crate) fn closing(listener: TcpListener) -> Self {
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                drop(stream);
            }
        });
        Self { addr, task }
    }

    /// Closes the listener and every held connection.
    pub(crate) async fn stop(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// A loopback listener on an ephemeral port.
pub(crate) async fn bind() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").await.unwrap()
}

/// A loopback socket bound to a port the kernel picked and not listening: connections to it
/// are refused, and the port stays ours until the socket listens (`TcpSocket::listen`) or is
/// dropped, so no other process can take it meanwhile. `SO_REUSEADDR` as
/// `TcpListener::bind` sets it, so the port can be bound again once it is closed.
pub(crate) fn reserved_port() -> tokio::net::TcpSocket {
    let socket = tokio::net::TcpSocket::new_v4().expect("a TCP socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket
        .bind(([127, 0, 0, 1], 0).into())
        .expect("bind 127.0.0.1:0");
    socket
}
