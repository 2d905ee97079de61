//! Scripted requests on a manual clock, with the exact counts they must produce.

use std::time::Duration;

use tokenmeter::{ErrorClass, Labels, ManualClock, Meter};

/// What a [`Script`] produced, to compare with what was exported.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Expect {
    /// Requests ended (every outcome).
    pub(crate) requests: u64,
    pub(crate) succeeded: u64,
    pub(crate) failed: u64,
    pub(crate) cancelled: u64,
    /// Requests that got a first token.
    pub(crate) first_tokens: u64,
    /// Items after the first: ITL samples.
    pub(crate) later_items: u64,
    /// Requests with a TPOT (at least two output tokens).
    pub(crate) with_tpot: u64,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
}

impl std::ops::AddAssign for Expect {
    fn add_assign(&mut self, o: Self) {
        self.requests += o.requests;
        self.succeeded += o.succeeded;
        self.failed += o.failed;
        self.cancelled += o.cancelled;
        self.first_tokens += o.first_tokens;
        self.later_items += o.later_items;
        self.with_tpot += o.with_tpot;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
    }
}

/// A scripted mix: `ok` successes, one failure per entry of `errors`, `cancelled` drops after
/// the first token; each request has `tokens` single-token items, a TTFT of `ttft`, a gap of
/// `gap` between items, and `input` prompt tokens. Servers mark `scheduled` after `queue`.
#[derive(Clone, Debug)]
pub(crate) struct Script {
    pub(crate) ok: u64,
    pub(crate) errors: Vec<ErrorClass>,
    pub(crate) cancelled: u64,
    pub(crate) tokens: u32,
    pub(crate) queue: Duration,
    pub(crate) ttft: Duration,
    pub(crate) gap: Duration,
    pub(crate) input: u64,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            ok: 3,
            errors: vec![ErrorClass::RateLimited],
            cancelled: 1,
            tokens: 4,
            queue: Duration::from_millis(50),
            ttft: Duration::from_millis(200),
            gap: Duration::from_millis(20),
            input: 12,
        }
    }
}

impl Script {
    /// Runs the script on `labels` of `meter`, advancing `clock`.
    pub(crate) fn run(&self, meter: &Meter, clock: &ManualClock, labels: &Labels<'_>) -> Expect {
        let series = meter.series(labels);
        let server = labels.role() == tokenmeter::Role::Server;
        let mut expect = Expect::default();
        let body = |request: &mut tokenmeter::Request, tokens: u32| {
            request.set_input_tokens(self.input);
            if server {
                clock.advance(self.queue);
                request.mark_scheduled();
                clock.advance(self.ttft - self.queue);
            } else {
                clock.advance(self.ttft);
            }
            for i in 0..tokens {
                if i > 0 {
                    clock.advance(self.gap);
                }
                request.record_tokens(1);
            }
        };
        let tokens = u64::from(self.tokens);
        let per_request = Expect {
            requests: 1,
            first_tokens: u64::from(tokens > 0),
            later_items: tokens.saturating_sub(1),
            with_tpot: u64::from(tokens > 1),
            input_tokens: self.input,
            output_tokens: tokens,
            ..Expect::default()
        };
        for _ in 0..self.ok {
            let mut request = series.start();
            body(&mut request, self.tokens);
            request.succeed();
            expect += Expect {
                succeeded: 1,
                ..per_request
            };
        }
        for &class in &self.errors {
            let mut request = series.start();
            body(&mut request, self.tokens);
            request.fail(class);
            expect += Expect {
                failed: 1,
                ..per_request
            };
        }
        for _ in 0..self.cancelled {
            let mut request = series.start();
            body(&mut request, 1);
            drop(request);
            expect += Expect {
                cancelled: 1,
                later_items: 0,
                with_tpot: 0,
                output_tokens: 1,
                ..per_request
            };
        }
        expect
    }
}
