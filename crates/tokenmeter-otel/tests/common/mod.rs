//! Shared test helpers: an owned snapshot of exported metrics (from the SDK's in-memory exporter
//! or from decoded OTLP requests), real OTLP receivers on loopback, and scripted workloads.
#![allow(dead_code)]

pub(crate) mod checks;
pub(crate) mod receiver;
pub(crate) mod sdk;
pub(crate) mod snapshot;
pub(crate) mod workload;
