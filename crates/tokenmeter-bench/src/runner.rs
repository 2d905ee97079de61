//! Runs one load: sends the request specs at their arrival times (or at a fixed concurrency)
//! and hands every request's measurement to a [`Collector`] as it ends.

use std::sync::Arc;

use rand::Rng;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::client::Client;
use crate::clock::BenchClock;
use crate::collect::{Collected, Collector};
use crate::interrupt::{Interrupt, Stage as Step};
use crate::measured::Measured;
use crate::progress::Progress;
use crate::saturation::Watch;
use crate::schedule;

pub(crate) use crate::load::Load;
use crate::workload::{Arrivals, RequestSpec, Span};

/// Sends every spec and returns the measurements, ordered by request id (no trace).
pub(crate) async fn run(
    client: Arc<Client>,
    specs: Vec<RequestSpec>,
    load: Load,
    rng: &mut impl Rng,
    progress: &mut Progress,
) -> Collected {
    let mut into = Collector::new(None);
    run_until(
        client,
        specs,
        load,
        rng,
        progress,
        &Interrupt::never(),
        &mut into,
        &mut Watch::off(),
    )
    .await;
    into.finish().0
}

/// [`run`] until `stop`: once [`Step::Draining`], no request is sent any more and the ones
/// in flight finish; at [`Step::Cancelling`] those are cancelled too (their outcome is
/// `cancelled`). What was sent goes `into` the collector, ordered by id; `watch` sees every
/// request as it ends and stops the sending when it trips (see [`Watch`]).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_until(
    client: Arc<Client>,
    specs: Vec<RequestSpec>,
    load: Load,
    rng: &mut impl Rng,
    progress: &mut Progress,
    stop: &Interrupt,
    into: &mut Collector,
    watch: &mut Watch,
) {
    let stage = schedule::Stage::requests(load, specs.len());
    run_stages(
        client,
        specs.into_iter(),
        &[stage],
        rng,
        progress,
        stop,
        into,
        watch,
    )
    .await;
}

/// Sends `specs` through `stages` in order, until the specs run out or `stop` (see
/// [`run_until`]). A stage ends after its requests, or when its duration is over (requests in
/// flight then go on: the next stage starts at once, with a lower concurrency cap waiting for
/// them). Each measurement carries its stage's index, and goes `into` the collector as its
/// request ends; those of this run are then ordered by id. Once `watch` trips, nothing more
/// is sent and what is in flight finishes.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_stages(
    client: Arc<Client>,
    specs: impl Iterator<Item = RequestSpec>,
    stages: &[schedule::Stage],
    rng: &mut impl Rng,
    progress: &mut Progress,
    stop: &Interrupt,
    traces: &mut Collector,
    watch: &mut Watch,
) {
    let first = traces.len();
    let busy = dispatch_delay();
    let mut specs = specs.peekable();
    let mut tasks = JoinSet::new();
    let mut stage_start = Instant::now();
    'run: for (index, stage) in stages.iter().enumerate() {
        let end = stage.duration.map(|d| stage_start + d);
        let (mut arrivals, cap) = match stage.load {
            Load::Rate {
                rate,
                kind,
                max_concurrency,
                burstiness,
                ramp,
            } => {
                let span = match (stage.requests, stage.duration) {
                    (Some(n), None) => Span::Requests(n),
                    (_, Some(d)) => Span::Time(d),
                    (None, None) => Span::Requests(0),
                };
                let arrivals = Arrivals::new(kind, rate, burstiness, ramp, span);
                (Some(arrivals), max_concurrency)
            }
            Load::Concurrency(c) => (None, Some(c.max(1))),
            Load::Replay { .. } => (None, None),
        };
        let replay = match stage.load {
            Load::Replay { speed } => Some(speed),
            _ => None,
        };
        let mut sent = 0_usize;
        let ended_by_time = 'stage: loop {
            if stage.requests.is_some_and(|n| sent >= n) {
                break false;
            }
            let due = match (&mut arrivals, replay) {
                (Some(a), _) => Some(stage_start + a.next_offset(rng)),
                (None, Some(speed)) => specs
                    .peek()
                    .and_then(|s| s.at)
                    .map(|at| stage_start + at.div_f64(speed)),
                (None, None) => None,
            };
            if let (Some(due), Some(end)) = (due, end)
                && due >= end
            {
                break true;
            }
            // Another shard's request: its arrival was drawn; this process does not send it.
            if specs.next_if(|s| s.skip).is_some() {
                sent += 1;
                continue;
            }
            // Collect finished requests while waiting for the arrival and for a slot. A closed
            // loop's request is due when its slot opens (now, when one is free).
            let mut due = due.unwrap_or_else(Instant::now);
            let mut slot_opened = None;
            loop {
                let waiting_for_time = Instant::now() < due;
                let waiting_for_slot = cap.is_some_and(|c| tasks.len() >= c);
                if !waiting_for_time && !waiting_for_slot {
                    break;
                }
                let due = Some(due);
                // The runtime's timer fires up to a millisecond late: wake that much early and
                // yield until the due instant itself.
                let wake = if waiting_for_time {
                    due.map(|due| due.checked_sub(TIMER_SLACK).unwrap_or(due))
                } else {
                    end
                };
                tokio::select! {
                    () = sleep_until_some(wake) => {
                        if !waiting_for_time {
                            break 'stage true;
                        }
                        if let Some(due) = due {
                            while Instant::now() < due {
                                tokio::task::yield_now().await;
                            }
                        }
                    }
                    () = stop.reached(Step::Draining) => break 'run,
                    Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                        collect(done, traces, progress, watch);
                        if watch.stopped().is_some() {
                            break 'run;
                        }
                        if waiting_for_slot {
                            slot_opened = Some(Instant::now());
                        }
                    }
                }
            }
            if arrivals.is_none() && replay.is_none() {
                due = slot_opened.unwrap_or(due);
            }
            let ready = slot_opened.map_or(due, |opened| opened.max(due));
            let at = Schedule {
                due: on_clock(client.clock(), due),
                ready: on_clock(client.clock(), ready),
            };
            if end.is_some_and(|end| Instant::now() >= end) {
                break true;
            }
            if stop.interrupted() || watch.stopped().is_some() {
                break 'run;
            }
            let Some(spec) = specs.next() else {
                break 'run;
            };
            if let Some(busy) = busy {
                // The test hook: a dispatcher too busy to keep its schedule.
                std::thread::sleep(busy);
            }
            let client = client.clone();
            let stop = stop.clone();
            tasks.spawn(async move { (index, conversation(&client, spec, &stop, at).await) });
            sent += 1;
        };
        stage_start = match (ended_by_time, end) {
            (true, Some(end)) => end,
            _ => Instant::now(),
        };
    }
    while let Some(done) = tasks.join_next().await {
        collect(done, traces, progress, watch);
    }
    traces.sort_from(first);
}

/// When a request was due and when it could have left at the earliest, on the bench clock
/// (see [`Measured::due`] and [`Measured::ready`]).
#[derive(Clone, Copy, Debug)]
struct Schedule {
    due: std::time::Duration,
    ready: std::time::Duration,
}

/// `at`, a runtime instant now past, as an offset on the bench clock.
fn on_clock(clock: &BenchClock, at: Instant) -> std::time::Duration {
    clock
        .now()
        .saturating_sub(Instant::now().saturating_duration_since(at))
}

/// Sends `spec` (due `at`), then the later turns of its conversation one after another, each
/// its think time after the answer before (and due then); a turn that does not succeed ends
/// the conversation (the turns after it are not sent).
async fn conversation(
    client: &Client,
    mut spec: RequestSpec,
    stop: &Interrupt,
    mut at: Schedule,
) -> Vec<Measured> {
    let later = std::mem::take(&mut spec.next);
    let mut done: Vec<Measured> = Vec::with_capacity(1 + later.len());
    for turn in std::iter::once(spec).chain(later) {
        if turn.turn > 0 {
            tokio::select! {
                () = tokio::time::sleep(turn.think) => {}
                () = stop.reached(Step::Draining) => break,
            }
            let answered = done.last().and_then(|m| m.record()).map(|r| r.end());
            let due = answered.map_or_else(|| client.clock().now(), |end| end + turn.think);
            at = Schedule { due, ready: due };
        }
        // A second interrupt ends the request as cancelled, keeping what it received.
        let mut measured = client
            .send_until(&turn, stop.reached(Step::Cancelling))
            .await;
        measured.due = at.due.into();
        measured.ready = at.ready.into();
        let go_on = measured.succeeded();
        done.push(measured);
        if !go_on {
            break;
        }
    }
    done
}

/// The environment variable of the test hook that makes the dispatcher slow: each request's
/// send is preceded by this many milliseconds of blocking work on the dispatching thread, as
/// a client starved of CPU would lose them. For the tests of the client's own dispatch lag
/// (`load_check`); not a user setting.
pub(crate) const DISPATCH_DELAY_ENV: &str = "TOKENMETER_TEST_DISPATCH_DELAY_MS";

fn dispatch_delay() -> Option<std::time::Duration> {
    let ms: u64 = std::env::var(DISPATCH_DELAY_ENV).ok()?.parse().ok()?;
    (ms > 0).then(|| std::time::Duration::from_millis(ms.min(1_000)))
}

/// How early the runner wakes before a request is due, to yield until the instant itself
/// (tokio's timer has a resolution of 1 ms).
const TIMER_SLACK: std::time::Duration = std::time::Duration::from_micros(1_500);

/// Sleeps until `at`, or forever.
async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn collect(
    done: Result<(usize, Vec<Measured>), tokio::task::JoinError>,
    traces: &mut Collector,
    progress: &mut Progress,
    watch: &mut Watch,
) {
    let measured = match done {
        Ok((stage, turns)) => {
            for mut measured in turns {
                measured.stage = u32::try_from(stage).unwrap_or(u32::MAX);
                progress.finished(&measured);
                watch.ended(&measured);
                traces.add(measured);
            }
            return;
        }
        // Lost with its task: no record (an error of class `_OTHER`).
        Err(error) => Measured {
            // Not the panic's message: it could quote what the server sent.
            rare: crate::rare::RareFields {
                error: Some(
                    crate::sanitize::Sanitizer::default().clean(if error.is_panic() {
                        "the request task panicked; please report this"
                    } else {
                        "the request task was cancelled"
                    }),
                ),
                ..Default::default()
            }
            .into(),
            ..Measured::default()
        },
    };
    progress.finished(&measured);
    watch.ended(&measured);
    traces.add(measured);
}
