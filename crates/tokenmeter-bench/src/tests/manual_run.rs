//! Requests measured by the core on a manual clock, through the bench's own sink: the fixture
//! of the tests that check what is computed from [`Measured`] (the summary, the slices).

use std::time::Duration;

use tokenmeter::{Clock, ErrorClass, Labels, ManualClock, Meter};

use crate::gaps::Gaps;
use crate::measured::Measured;
use crate::records::Records;

/// One millisecond.
pub(crate) const MS: Duration = Duration::from_millis(1);

/// A run on a manual clock: add requests in the order they end (the clock only moves on).
pub(crate) struct Run {
    time: ManualClock,
    records: Records,
    meter: Meter,
    /// What was measured, in the order added (settled).
    pub(crate) measured: Vec<Measured>,
    /// Their gaps.
    pub(crate) gaps: Gaps,
}

impl Run {
    /// An empty run at time 0.
    pub(crate) fn new() -> Self {
        let time = ManualClock::new();
        let records = Records::default();
        let meter = Meter::builder()
            .clock(Clock::manual(&time))
            .sink(records.clone())
            .build();
        Self {
            time,
            records,
            meter,
            measured: Vec::new(),
            gaps: Gaps::new(),
        }
    }

    /// A success sent at `send`, first token after `ttft`, `tokens` tokens `gap` apart, the
    /// stream ending 5 ms after the last token.
    pub(crate) fn ok(&mut self, send: Duration, ttft: Duration, gap: Duration, tokens: u32) {
        let mut request = self.meter.series(&Labels::client("chat")).start_at(send);
        let id = request.id();
        let first = send + ttft;
        for i in 0..tokens {
            request.record_tokens_at(1, first + gap * i);
        }
        let end = first + gap * (tokens - 1) + 5 * MS;
        self.time.advance(end.saturating_sub(self.time.now()));
        request.succeed();
        self.push(id);
    }

    /// Marks the request added last as due at `due` and ready to leave at `ready` (see
    /// [`Measured::due`] and [`Measured::ready`]).
    pub(crate) fn due(&mut self, due: Duration, ready: Duration) {
        if let Some(last) = self.measured.last_mut() {
            last.due = due.into();
            last.ready = ready.into();
        }
    }

    /// An error of `class` sent at `send`, ending at `end`, with no token.
    pub(crate) fn error(&mut self, send: Duration, end: Duration, class: ErrorClass) {
        let mut request = self.meter.series(&Labels::client("chat")).start_at(send);
        let id = request.id();
        self.time.advance(end.saturating_sub(self.time.now()));
        request.fail(class);
        self.push(id);
    }

    fn push(&mut self, id: u64) {
        let mut measured = Measured {
            id: self.measured.len() as u64,
            record: self
                .records
                .take(id)
                .map(crate::kept_record::KeptRecord::from),
            input_tokens: 10,
            ..Measured::default()
        };
        measured.settle(&mut self.gaps);
        self.measured.push(measured);
    }
}
