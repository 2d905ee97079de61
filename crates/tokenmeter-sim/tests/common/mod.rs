//! Helpers shared by the simulator's integration tests.
#![allow(dead_code)]

use std::time::Duration;

use tokenmeter::sink::InMemorySink;
use tokenmeter::{Clock, Meter};
use tokenmeter_sim::{EngineBuilder, SimConfig};

/// Milliseconds.
pub(crate) fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// An engine builder measured into a fresh in-memory sink on tokio's clock (paused time works).
pub(crate) fn measured(config: SimConfig) -> (EngineBuilder, InMemorySink) {
    let memory = InMemorySink::new();
    let meter = Meter::builder()
        .clock(Clock::tokio())
        .sink(memory.clone())
        .build();
    let builder = tokenmeter_sim::Engine::builder()
        .meter(meter)
        .config(config);
    (builder, memory)
}

/// [`measured`], built.
pub(crate) fn engine(config: SimConfig) -> (tokenmeter_sim::Engine, InMemorySink) {
    let (builder, memory) = measured(config);
    (builder.build().expect("valid config"), memory)
}
