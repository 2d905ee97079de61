//! Shared test helpers: an owned snapshot of exported metrics (from the SDK's in-memory exporter
//! or from decoded OTLP requests), real OTLP receivers on loopback, and scripted workloads.
#![allow(dead_code)]

pub(crate) mod checks;
pub(crate) mod receiver;
pub(crate) mod sdk;
pub(crate) mod snapshot;
pub(crate) mod workload;

/// `OtlpConfig::new()`, safe to install in any build of the workspace. The `tokenmeter` CLI
/// turns on reqwest's rustls without a crypto provider of its own (it installs `ring` itself);
/// when a workspace-wide build unifies that feature into this crate's tests, the OTLP/HTTP
/// exporter's reqwest client cannot be built until a provider is installed, so one is here.
#[cfg(any(feature = "grpc", feature = "http"))]
pub(crate) fn otlp_config() -> tokenmeter_otel::OtlpConfig {
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokenmeter_otel::OtlpConfig::new()
}
