//! Shared helpers for the benchmarks: reading criterion's estimates back and printing the
//! ratio of each pair measured in the same run.

use std::path::PathBuf;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use futures_util::Stream;
use tokenmeter::Series;

/// The group every per-token exporter comparison runs in: 1 s warm-up, 4 s of measurement,
/// 50 samples, so the baseline and ours are measured alike in one run.
pub fn per_token_group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(50);
    group
}

/// The mean estimate, in nanoseconds, that criterion saved for `group/function` in this run.
/// `None` when criterion did not save one (for example under `cargo test --benches`).
pub fn mean_ns(group: &str, function: &str) -> Option<f64> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let path = dir
        .join("criterion")
        .join(group)
        .join(function)
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["mean"]["point_estimate"].as_f64()
}

/// True when this process measured (`cargo bench`), not when it only listed or smoke-tested
/// the benchmarks (`--list`, `cargo test --benches`, nextest): only then are this run's
/// estimates on disk, and only then may anything but the benchmark list be printed.
pub fn measured() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--list")
}

/// Prints `name = numerator ÷ denominator` for two functions of one group, from this run's
/// estimates, and returns the ratio. Prints nothing unless [`measured`].
pub fn print_ratio(group: &str, name: &str, numerator: &str, denominator: &str) -> Option<f64> {
    if !measured() {
        return None;
    }
    let ratio = mean_ns(group, numerator)? / mean_ns(group, denominator)?;
    println!("ratio {group}: {name} = {numerator} / {denominator} = {ratio:.3}");
    Some(ratio)
}

/// The ratio `ours ÷ baseline` per call, measured interleaved: `rounds` rounds, each timing
/// `calls` calls of `baseline` then `calls` calls of `ours` (alternating which goes first),
/// after one round of warm-up. Returns the median of the rounds' ratios with the lowest and
/// highest, or `None` unless [`measured`].
///
/// Criterion measures one function after the other, seconds apart, so a change in the
/// machine's speed between the two (another virtual machine on the host, a frequency step)
/// moves the ratio of its means; here both sides of each ratio are measured within the
/// same few milliseconds.
pub fn interleaved_ratio(
    rounds: usize,
    calls: u64,
    mut baseline: impl FnMut(),
    mut ours: impl FnMut(),
) -> Option<Interleaved> {
    if !measured() || rounds == 0 {
        return None;
    }
    let time = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        for _ in 0..calls {
            f();
        }
        start.elapsed().as_secs_f64()
    };
    time(&mut baseline);
    time(&mut ours);
    let mut ratios: Vec<f64> = (0..rounds)
        .map(|round| {
            let (b, o) = if round % 2 == 0 {
                let b = time(&mut baseline);
                (b, time(&mut ours))
            } else {
                let o = time(&mut ours);
                (time(&mut baseline), o)
            };
            o / b
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    Some(Interleaved {
        median: ratios[ratios.len() / 2],
        low: ratios[0],
        high: ratios[ratios.len() - 1],
        rounds,
    })
}

/// Rounds of [`interleaved_per_token`].
pub const INTERLEAVED_ROUNDS: usize = 41;

/// [`interleaved_ratio`] of a per-token `baseline` against one `record_tokens(1)` per call on a
/// request of `series` (started, with its first token, before the rounds; ended after them),
/// over [`INTERLEAVED_ROUNDS`] rounds of `calls` calls per side.
pub fn interleaved_per_token(
    series: &Series,
    calls: u64,
    baseline: impl FnMut(),
) -> Option<Interleaved> {
    let mut request = series.start();
    request.record_tokens(1);
    let interleaved = interleaved_ratio(INTERLEAVED_ROUNDS, calls, baseline, || {
        request.record_tokens(std::hint::black_box(1))
    });
    request.succeed();
    interleaved
}

/// What [`interleaved_ratio`] measured.
#[derive(Clone, Copy, Debug)]
pub struct Interleaved {
    /// The median of the rounds' ratios.
    pub median: f64,
    /// The lowest round's.
    pub low: f64,
    /// The highest round's.
    pub high: f64,
    /// How many rounds.
    pub rounds: usize,
}

impl Interleaved {
    /// Prints `ratio <group> (interleaved, median of N rounds): <name> = … (rounds low–high)`.
    pub fn print(&self, group: &str, name: &str) {
        println!(
            "ratio {group} (interleaved, median of {} rounds): {name} = {:.3} (rounds {:.3}–{:.3})",
            self.rounds, self.median, self.low, self.high
        );
    }
}

/// Polls `stream` to its end with a no-op waker, passing each item to `each`: how the
/// benchmarks read a stream that is always ready, without a runtime.
pub fn drain<S: Stream>(stream: S, mut each: impl FnMut(S::Item)) {
    let mut stream = pin!(stream);
    let mut cx = Context::from_waker(Waker::noop());
    while let Poll::Ready(Some(item)) = stream.as_mut().poll_next(&mut cx) {
        each(item);
    }
}
