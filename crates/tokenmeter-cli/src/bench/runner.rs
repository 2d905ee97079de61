//! Runs one load: sends the request specs at their arrival times (or at a fixed concurrency)
//! and collects every request's measurement.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::bench::client::Client;
use crate::bench::interrupt::{Interrupt, Stage};
use crate::bench::measured::Measured;
use crate::bench::progress::Progress;
use crate::bench::workload::{ArrivalKind, RequestSpec, open_loop};

/// How requests are released.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Load {
    /// Open loop at `rate` requests per second, with at most `max_concurrency` in flight
    /// (arrivals wait for a slot) when given.
    Rate {
        /// Requests per second (may be infinite: all at once).
        rate: f64,
        /// Poisson or constant gaps.
        kind: ArrivalKind,
        /// Cap on requests in flight.
        max_concurrency: Option<usize>,
    },
    /// Closed loop: `n` requests always in flight.
    Concurrency(usize),
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Load::Rate {
                rate,
                kind,
                max_concurrency,
            } => {
                let kind = match kind {
                    ArrivalKind::Poisson => "Poisson",
                    ArrivalKind::Constant => "constant",
                };
                if rate.is_finite() {
                    write!(f, "{kind} arrivals at {rate} req/s")?;
                } else {
                    write!(f, "all requests at once")?;
                }
                if let Some(n) = max_concurrency {
                    write!(f, ", at most {n} in flight")?;
                }
                Ok(())
            }
            Load::Concurrency(n) => write!(f, "{n} concurrent requests (closed loop)"),
        }
    }
}

/// Sends every spec and returns the measurements, ordered by request id.
pub(crate) async fn run(
    client: Arc<Client>,
    specs: Vec<RequestSpec>,
    load: Load,
    rng: &mut impl Rng,
    progress: &mut Progress,
) -> Vec<Measured> {
    run_until(client, specs, load, rng, progress, &Interrupt::never()).await
}

/// [`run`] until `stop`: once [`Stage::Draining`], no request is sent any more and the ones
/// in flight finish; at [`Stage::Cancelling`] those are cancelled too (their outcome is
/// `cancelled`). Returns what was sent.
pub(crate) async fn run_until(
    client: Arc<Client>,
    specs: Vec<RequestSpec>,
    load: Load,
    rng: &mut impl Rng,
    progress: &mut Progress,
    stop: &Interrupt,
) -> Vec<Measured> {
    let n = specs.len();
    let (offsets, slots) = match load {
        Load::Rate {
            rate,
            kind,
            max_concurrency,
        } => (open_loop(kind, rate, n, rng), max_concurrency),
        Load::Concurrency(c) => (vec![Duration::ZERO; n], Some(c)),
    };
    let slots = slots.map(|c| Arc::new(Semaphore::new(c.max(1))));
    let start = tokio::time::Instant::now();
    let mut tasks = JoinSet::new();
    let mut traces = Vec::with_capacity(n);
    'release: for (spec, offset) in specs.into_iter().zip(offsets) {
        let due = start + offset;
        // Collect finished requests while waiting for the next arrival.
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(due) => break,
                () = stop.reached(Stage::Draining) => break 'release,
                Some(done) = tasks.join_next(), if !tasks.is_empty() => collect(done, &mut traces, progress),
            }
        }
        let permit = match &slots {
            Some(slots) => loop {
                tokio::select! {
                    permit = slots.clone().acquire_owned() => break permit.ok(),
                    () = stop.reached(Stage::Draining) => break 'release,
                    Some(done) = tasks.join_next(), if !tasks.is_empty() => collect(done, &mut traces, progress),
                }
            },
            None => None,
        };
        if stop.interrupted() {
            break;
        }
        let client = client.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let measured = tokio::select! {
                measured = client.send(&spec) => measured,
                () = stop.reached(Stage::Cancelling) => Measured::cancelled(&spec),
            };
            drop(permit);
            (spec.id, measured)
        });
    }
    while let Some(done) = tasks.join_next().await {
        collect(done, &mut traces, progress);
    }
    traces.sort_by_key(|t| t.id);
    traces
}

fn collect(
    done: Result<(u64, Measured), tokio::task::JoinError>,
    traces: &mut Vec<Measured>,
    progress: &mut Progress,
) {
    let measured = match done {
        Ok((_, measured)) => measured,
        // Lost with its task: no record (an error of class `_OTHER`).
        Err(error) => Measured {
            // Not the panic's message: it could quote what the server sent.
            error: Some(
                crate::bench::sanitize::Sanitizer::default().clean(if error.is_panic() {
                    "the request task panicked; please report this"
                } else {
                    "the request task was cancelled"
                }),
            ),
            ..Measured::default()
        },
    };
    progress.finished(&measured);
    traces.push(measured);
}
