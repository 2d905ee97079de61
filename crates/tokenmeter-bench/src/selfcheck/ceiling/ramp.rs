//! The ceiling's ramp: its steps, what one step measured, the rule that stops it and the
//! ceiling it finds. No timing here: [`Ceiling::of`] judges steps however they were measured.

use std::fmt::Write as _;

use serde::Serialize;

use super::super::report::MAX_P50_ERROR_S;

/// The line on the client's dispatch lag p99 (s): above it, the client sends late.
pub(crate) const MAX_DISPATCH_LAG_P99_S: f64 = 1e-3;

/// The concurrent streams of each step: from 8, ×√2 a step, to 2,048.
pub(crate) fn streams() -> impl Iterator<Item = usize> {
    (0..=16).map(|step| (8.0 * 2f64.powf(f64::from(step) / 2.0)).round() as usize)
}

/// What one step of the ramp measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Step {
    /// Concurrent streams offered.
    pub(crate) streams: usize,
    /// Requests sent.
    pub(crate) requests: usize,
    /// Requests that did not succeed.
    pub(crate) failed: usize,
    /// The step did not end before its deadline.
    pub(crate) timed_out: bool,
    /// Token events the client received.
    pub(crate) tokens: u64,
    /// Tokens per second the client received: `tokens` over the step's wall time.
    pub(crate) tokens_per_s: f64,
    /// The client's TTFT p50 − the server's (s).
    pub(crate) ttft_error_s: Option<f64>,
    /// The client's ITL p50 − the gaps between the server's writes, p50 (s).
    pub(crate) itl_error_s: Option<f64>,
    /// The client's dispatch lag p99: send − due (s).
    pub(crate) dispatch_lag_p99_s: Option<f64>,
    /// CPU time of the client (s), when it could be read.
    pub(crate) client_cpu_s: Option<f64>,
}

impl Step {
    /// The step as a row of [`Ceiling::render`]'s table.
    pub(crate) fn row(&self) -> String {
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{:+.3}", v * 1e3));
        format!(
            "  {:>7} {:>10.0} {:>12} {:>12} {:>12} {:>10}",
            self.streams,
            self.tokens_per_s,
            ms(self.ttft_error_s),
            ms(self.itl_error_s),
            ms(self.dispatch_lag_p99_s),
            self.client_cpu_s
                .map_or_else(|| "-".to_owned(), |s| format!("{s:.2}")),
        )
    }

    /// Why this step is past the line, in words; `None` when it is within it.
    pub(crate) fn breach(&self) -> Option<String> {
        if self.timed_out {
            return Some("the step did not end before its deadline".to_owned());
        }
        if self.failed > 0 {
            return Some(format!(
                "{} of {} requests failed",
                self.failed, self.requests
            ));
        }
        let lines = [
            ("TTFT p50 error", self.ttft_error_s, MAX_P50_ERROR_S, true),
            ("ITL p50 error", self.itl_error_s, MAX_P50_ERROR_S, true),
            (
                "dispatch lag p99",
                self.dispatch_lag_p99_s,
                MAX_DISPATCH_LAG_P99_S,
                false,
            ),
        ];
        for (name, value, line, signed) in lines {
            let Some(value) = value else {
                return Some(format!("no {name} measured"));
            };
            if value.abs() > line {
                let value = if signed {
                    format!("{:+.3}", value * 1e3)
                } else {
                    format!("{:.3}", value * 1e3)
                };
                return Some(format!("{name} {value} ms (line {} ms)", line * 1e3));
            }
        }
        None
    }
}

/// The ramp's result: the last step within the line, and what stopped it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Ceiling {
    /// The client runtime's worker threads: the cores it used.
    pub(crate) workers: usize,
    /// Every step run, in order; the last one is the one that stopped the ramp, if any did.
    pub(crate) steps: Vec<Step>,
    /// The last step within the line (an index into `steps`); `None` when the first was past it.
    pub(crate) ceiling: Option<usize>,
    /// Why the ramp stopped; `None` when every step was within the line.
    pub(crate) stopped_by: Option<String>,
}

impl Ceiling {
    /// Judges `steps` in order. A step past the line is run once more at the same streams (a
    /// moment's contention on a shared machine is not the client's ceiling); the ramp stops
    /// when that second run is past the line too, or when a step past it is the last (later
    /// steps are dropped). The ceiling is the last step within the line before the stop.
    pub(crate) fn of(workers: usize, steps: Vec<Step>) -> Self {
        let mut ceiling = None;
        let mut stop = None;
        for (i, step) in steps.iter().enumerate() {
            let Some(why) = step.breach() else {
                ceiling = Some(i);
                continue;
            };
            let retried = i
                .checked_sub(1)
                .and_then(|before| steps.get(before))
                .is_some_and(|before| before.streams == step.streams && before.breach().is_some());
            if retried || i + 1 == steps.len() {
                stop = Some((i, why));
                break;
            }
        }
        let mut steps = steps;
        let stopped_by = stop.map(|(i, why)| {
            steps.truncate(i + 1);
            why
        });
        Self {
            workers,
            steps,
            ceiling,
            stopped_by,
        }
    }

    /// What the ramp does after `steps`: `None` when it stops, else the streams of the next
    /// step (the same again after a first step past the line).
    pub(crate) fn next(steps: &[Step], mut ramp: impl Iterator<Item = usize>) -> Option<usize> {
        let last = steps.last()?;
        if last.breach().is_some() {
            let before = steps.len().checked_sub(2).and_then(|i| steps.get(i));
            let retried = before
                .is_some_and(|before| before.streams == last.streams && before.breach().is_some());
            return (!retried).then_some(last.streams);
        }
        ramp.find(|&streams| streams > last.streams)
    }

    /// The last step within the line.
    pub(crate) fn last_good(&self) -> Option<&Step> {
        self.steps.get(self.ceiling?)
    }

    /// The ceiling's tokens per second per core: the last good step's over the workers.
    pub(crate) fn tokens_per_s_per_core(&self) -> Option<f64> {
        Some(self.last_good()?.tokens_per_s / self.workers.max(1) as f64)
    }

    /// The steps and the ceiling, as text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "client ceiling: {} runtime worker(s); the line: TTFT and ITL p50 within 1 ms of the server's, dispatch lag p99 within 1 ms",
            self.workers
        );
        let _ = writeln!(
            out,
            "  {:>7} {:>10} {:>12} {:>12} {:>12} {:>10}",
            "streams", "tok/s", "TTFT err ms", "ITL err ms", "lag p99 ms", "CPU s"
        );
        for step in &self.steps {
            let _ = writeln!(out, "{}", step.row());
        }
        match (self.last_good(), self.tokens_per_s_per_core()) {
            (Some(step), Some(per_core)) => {
                let _ = writeln!(
                    out,
                    "  ceiling: {:.0} tokens/s, {} streams, on {} core(s): {per_core:.0} tokens/s per core",
                    step.tokens_per_s, step.streams, self.workers
                );
            }
            _ => {
                let _ = writeln!(out, "  ceiling: none, the first step was past the line");
            }
        }
        let _ = writeln!(
            out,
            "  stopped by: {}",
            self.stopped_by
                .as_deref()
                .unwrap_or("nothing: every step was within the line")
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good(streams: usize) -> Step {
        Step {
            streams,
            requests: streams * 4,
            tokens: streams as u64 * 1024,
            tokens_per_s: streams as f64 * 480.0,
            ttft_error_s: Some(0.000_2),
            itl_error_s: Some(-0.000_01),
            dispatch_lag_p99_s: Some(0.000_3),
            client_cpu_s: Some(0.5),
            ..Step::default()
        }
    }

    #[test]
    fn the_ramp_steps_up_by_root_two_from_8_to_2048() {
        let streams: Vec<usize> = streams().collect();
        assert_eq!(streams.first(), Some(&8));
        assert_eq!(streams.last(), Some(&2048));
        assert_eq!(&streams[..6], [8, 11, 16, 23, 32, 45]);
        assert!(streams.windows(2).all(|w| w[1] > w[0]));
    }

    #[test]
    fn the_ramp_stops_at_the_first_step_past_any_line_and_the_ceiling_is_the_one_before() {
        let past = |change: fn(&mut Step)| {
            let mut step = good(64);
            change(&mut step);
            step
        };
        let cases: [(Step, &str); 7] = [
            (
                past(|s| s.ttft_error_s = Some(0.001_2)),
                "TTFT p50 error +1.200 ms (line 1 ms)",
            ),
            (
                past(|s| s.ttft_error_s = Some(-0.001_5)),
                "TTFT p50 error -1.500 ms (line 1 ms)",
            ),
            (
                past(|s| s.itl_error_s = Some(0.001_01)),
                "ITL p50 error +1.010 ms (line 1 ms)",
            ),
            (
                past(|s| s.dispatch_lag_p99_s = Some(0.004)),
                "dispatch lag p99 4.000 ms (line 1 ms)",
            ),
            (past(|s| s.failed = 3), "3 of 256 requests failed"),
            (
                past(|s| s.timed_out = true),
                "the step did not end before its deadline",
            ),
            (past(|s| s.itl_error_s = None), "no ITL p50 error measured"),
        ];
        for (stopper, why) in cases {
            // Past the line twice at 64 streams (the step and its second run): the ramp stops
            // there, and a later good step does not count.
            let steps = vec![good(16), good(32), stopper.clone(), stopper, good(128)];
            let ceiling = Ceiling::of(2, steps);
            assert_eq!(ceiling.stopped_by.as_deref(), Some(why));
            assert_eq!(
                ceiling.steps.len(),
                4,
                "the steps after the stop are dropped"
            );
            assert_eq!(ceiling.last_good().map(|s| s.streams), Some(32));
            assert_eq!(ceiling.tokens_per_s_per_core(), Some(32.0 * 480.0 / 2.0));
            let text = ceiling.render();
            assert!(
                text.contains(
                    "ceiling: 15360 tokens/s, 32 streams, on 2 core(s): 7680 tokens/s per core"
                ),
                "{text}"
            );
            assert!(text.contains(why), "{text}");
        }
    }

    #[test]
    fn a_step_past_the_line_is_run_again_and_a_second_run_within_it_goes_on() {
        let mut spike = good(64);
        spike.dispatch_lag_p99_s = Some(0.010);
        let ramp = || streams().skip(6);
        assert_eq!(Ceiling::next(&[good(45)], ramp()), Some(64));
        assert_eq!(Ceiling::next(&[good(45), spike.clone()], ramp()), Some(64));
        let steps = vec![good(45), spike.clone(), good(64)];
        assert_eq!(Ceiling::next(&steps, ramp()), Some(91));
        let ceiling = Ceiling::of(1, steps);
        assert_eq!((ceiling.ceiling, ceiling.stopped_by), (Some(2), None));
        // Past it twice at the same streams: stop; at other streams, each gets its second run.
        assert_eq!(
            Ceiling::next(&[good(45), spike.clone(), spike.clone()], ramp()),
            None
        );
        let mut other = good(91);
        other.ttft_error_s = Some(0.002);
        let steps = vec![spike.clone(), good(64), other.clone()];
        assert_eq!(Ceiling::next(&steps, ramp()), Some(91));
        assert_eq!(
            Ceiling::next(&[good(2048)], streams()),
            None,
            "the ramp's end"
        );
        // A step past the line that is the last one run stops the ramp too.
        let last = Ceiling::of(1, vec![good(45), spike]);
        assert_eq!(last.ceiling, Some(0));
        assert!(last.stopped_by.is_some());
    }

    #[test]
    fn exactly_on_the_line_is_within_it_and_a_first_step_past_it_leaves_no_ceiling() {
        let mut on_the_line = good(16);
        on_the_line.ttft_error_s = Some(MAX_P50_ERROR_S);
        on_the_line.dispatch_lag_p99_s = Some(MAX_DISPATCH_LAG_P99_S);
        let all = Ceiling::of(1, vec![good(8), on_the_line]);
        assert_eq!((all.ceiling, all.stopped_by.as_deref()), (Some(1), None));
        assert!(all.render().contains("every step was within the line"));

        let mut late = good(8);
        late.dispatch_lag_p99_s = Some(0.002);
        let none = Ceiling::of(1, vec![late.clone(), late, good(11)]);
        assert_eq!(
            (none.last_good(), none.tokens_per_s_per_core()),
            (None, None)
        );
        assert!(none.render().contains("ceiling: none"));
    }
}
