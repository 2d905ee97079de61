//! [`Measured`]: one request of a run, as the core recorded it, with what only the client knows.
//!
//! Every latency comes from the core's [`RequestRecord`]: TTFT, decode, the time of every
//! token-bearing chunk (the SSE reader's parse instants), the outcome. The client adds the HTTP
//! status, the server's `usage` and response id, and what went wrong, in words.
//!
//! Once the request has ended and its trace line is written, [`Measured::settle`] moves the
//! time of every chunk out of the record into the run's [`Gaps`] (4 bytes per gap), keeps the
//! longest, and makes the record compact; the response id is dropped once the trace line is
//! written. The run then keeps the request packed, each field in as few bytes as it needs
//! ([`crate::packed`]), and builds it again as it is read: a `Measured` is only held whole while
//! its request is in flight or being read.

use std::borrow::Cow;
use std::time::Duration;

use tokenmeter::{ErrorClass, Outcome, RequestRecord};

use crate::gaps::{GapSpan, Gaps};
use crate::kept_record::KeptRecord;
use crate::rare::Rare;
use crate::sanitize::ServerText;
pub(crate) use crate::usage::Usage;

/// The most input tokens a server may plausibly report for a prompt of `sent` tokens (the
/// workload's count, exact or estimated): 16 times it plus 65 536 (a chat template, a system
/// prompt, an estimate off by far), and never above 2^53, the largest count an `f64` (the
/// JSON reports' numbers) holds exactly.
pub(crate) fn input_usage_bound(sent: u64) -> u64 {
    sent.saturating_mul(16).saturating_add(65_536).min(1 << 53)
}

/// One request of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measured {
    /// Index in the run.
    pub(crate) id: u64,
    /// The sweep step's request rate, when sweeping ([`Measured::rate`]).
    pub(crate) rate: Option<f64>,
    /// The index of the stage that sent it (0 for a run of one stage).
    pub(crate) stage: u32,
    /// Its turn in a conversation (0: the first, or a request alone).
    pub(crate) turn: u32,
    /// Its `--slo-class` (index in the run's list), when it sent one's objectives.
    pub(crate) slo_class: Option<u16>,
    /// The output tokens are the streamed text counted with `--tokenizer` (no `usage` came).
    pub(crate) output_counted: bool,
    /// The core's record, compact once settled ([`KeptRecord`]); `None` only when the
    /// request's task was lost (it panicked).
    pub(crate) record: Option<KeptRecord>,
    /// Prompt tokens we sent (generated or estimated).
    pub(crate) input_tokens: u64,
    /// `input_tokens` is exact: counted with `--tokenizer`, or given by the dataset.
    pub(crate) input_exact: bool,
    /// `max_tokens` asked for.
    pub(crate) max_tokens: u64,
    /// The final `usage`, when the server sent one ([`Measured::usage`]).
    pub(crate) usage: Option<Usage>,
    /// The HTTP status, when a response arrived.
    pub(crate) status: Option<u16>,
    /// What few requests have: the error's text, a `usage` that disagreed, skipped events,
    /// the server's own timings, the response id until the trace line is written ([`Rare`]).
    pub(crate) rare: Rare,
    /// Cancelled in flight by an interrupt with no record: only in traces of older versions,
    /// which wrote such a request as an empty line (a run now keeps the record of each).
    pub(crate) cancelled: bool,
    /// Its inter-token gaps in the run's [`Gaps`], once settled.
    pub(crate) gaps: GapSpan,
    /// The longest of its gaps, once settled (`None` before, or when it had none).
    pub(crate) max_gap: Option<Duration>,
    /// The answer came whole (`--no-stream`): its tokens arrived at one instant, so it has no
    /// TPOT, ITL or time to second token (not zeros).
    pub(crate) not_streamed: bool,
    /// When the load model said it was due, on the bench clock ([`crate::schedule`]):
    /// its arrival in an open loop, its timestamp in a replay, the moment its slot opened in a
    /// closed loop, the end of the previous answer plus the think time for a later turn.
    /// `None` for a request that never reached the runner (a lost task). Read through
    /// [`Measured::due`].
    pub(crate) due: Option<Duration>,
    /// When it could have left at the earliest: its due time, or later the moment a slot of
    /// the concurrency cap opened for it. The send − this is the client's own dispatch lag.
    /// Read through [`Measured::ready`].
    pub(crate) ready: Option<Duration>,
}

impl Measured {
    /// The core's record (built again from its compact form once settled).
    pub(crate) fn record(&self) -> Option<Cow<'_, RequestRecord>> {
        self.record.as_ref().map(KeptRecord::get)
    }

    /// The core's record, owned: what a reader of a run's requests keeps of one it read
    /// ([`crate::reqs::Reqs`] builds each request again as it is read).
    pub(crate) fn owned_record(&self) -> Option<RequestRecord> {
        self.record().map(Cow::into_owned)
    }

    /// The core's record while the request ends (`None` once settled).
    pub(crate) fn record_mut(&mut self) -> Option<&mut RequestRecord> {
        self.record.as_mut().and_then(KeptRecord::whole_mut)
    }

    /// The final `usage`, when the server sent one.
    pub(crate) fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// The sweep step's request rate, when sweeping.
    pub(crate) fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// When the load model said it was due ([`due`](Self::due)'s field).
    pub(crate) fn due(&self) -> Option<Duration> {
        self.due
    }

    /// When it could have left at the earliest ([`ready`](Self::ready)'s field).
    pub(crate) fn ready(&self) -> Option<Duration> {
        self.ready
    }

    /// The longest of its gaps once settled (`None` before, or when it had none).
    pub(crate) fn max_gap(&self) -> Option<Duration> {
        self.max_gap
    }

    /// The response's id (its `x-request-id` header, else the chunks' `id`), sanitised; `None`
    /// once the request was taken by a run and its trace line written.
    pub(crate) fn response_id(&self) -> Option<&ServerText> {
        self.rare.response_id.as_ref()
    }

    /// How the request ended; a lost task is an error of class `_OTHER`, one cancelled by an
    /// interrupt `cancelled`.
    pub(crate) fn outcome(&self) -> Outcome {
        match &self.record {
            Some(record) => record.outcome(),
            None if self.cancelled => Outcome::Cancelled,
            None => Outcome::Error(ErrorClass::Other),
        }
    }

    /// True for a full success (not degraded).
    pub(crate) fn succeeded(&self) -> bool {
        self.outcome() == Outcome::Success
    }

    /// Output tokens: `usage.completion_tokens`, else the tokens of the chunks (the core's
    /// count, which takes `usage` when the stream sent it).
    pub(crate) fn output_tokens(&self) -> u64 {
        self.record.as_ref().map_or(0, KeptRecord::output_tokens)
    }

    /// Input tokens: `usage.prompt_tokens`, else what we sent.
    pub(crate) fn prompt_tokens(&self) -> u64 {
        self.usage()
            .and_then(|u| u.prompt_tokens)
            .unwrap_or(self.input_tokens)
    }

    /// Keeps the latest `usage` of the stream, and whether any was unusable.
    pub(crate) fn note_usage(&mut self, usage: tokenmeter_openai::chunk::Usage) {
        let unusable = self.usage().is_some_and(|u| u.unusable);
        let mut usage = Usage::from(usage);
        usage.unusable |= unusable;
        self.usage = Some(usage);
    }

    /// Ignores input-side usage no server could mean: `usage.prompt_tokens` or the cached
    /// input tokens above [`input_usage_bound`] of the tokens sent (of 2^53 alone when
    /// `prompt_unknown`: `--extra-body` sent a prompt of its own). They are dropped (the input
    /// is then what was sent, and no cache hit is counted) and the request is flagged
    /// (`usage.implausible_input`), so that one count of `u64::MAX` neither reaches the sums
    /// nor widens the table's columns.
    pub(crate) fn check_input_usage(&mut self, prompt_unknown: bool) {
        let bound = if prompt_unknown {
            input_usage_bound(u64::MAX)
        } else {
            input_usage_bound(self.input_tokens)
        };
        let mut flagged = false;
        let mut usage = self.usage();
        if let Some(usage) = usage.as_mut()
            && usage.prompt_tokens.is_some_and(|p| p > bound)
        {
            usage.prompt_tokens = None;
            flagged = true;
        }
        if let Some(record) = self.record_mut()
            && record.cached_input_tokens.is_some_and(|c| c > bound)
        {
            record.cached_input_tokens = None;
            flagged = true;
        }
        if flagged {
            usage.get_or_insert_default().implausible_input = true;
        }
        self.usage = usage;
    }

    /// Keeps the server's own timings of the request from a `metrics` object (the latest
    /// one with a usable value wins).
    pub(crate) fn note_server_metrics(
        &mut self,
        metrics: &tokenmeter_openai::chunk::ServerMetrics,
    ) {
        if let Some(ttft) = metrics.ttft_since_arrival() {
            self.rare.server_ttft = Some(ttft);
        }
        if let Some(queue) = metrics.queue_time() {
            self.rare.server_queue = Some(queue);
        }
    }

    /// Client − server TTFT of this request in seconds: what the network, the server's
    /// frontend and the client add to the server's own TTFT. `None` unless both are known.
    pub(crate) fn client_minus_server_ttft(&self) -> Option<f64> {
        let client = self.record()?.ttft?;
        let server = self.rare.server_ttft?;
        Some(client.as_secs_f64() - server.as_secs_f64())
    }

    /// Moves the chunk times out of the record: its gaps go into `gaps` (see the module), the
    /// longest is kept here. Settling twice changes nothing.
    pub(crate) fn settle(&mut self, gaps: &mut Gaps) {
        if let Some(times) = self.record_mut().and_then(|r| r.item_times.take()) {
            let each = times
                .windows(2)
                .map(|w| w[1].offset.saturating_sub(w[0].offset));
            self.max_gap = each.clone().max();
            self.gaps = gaps.add(each);
        }
        self.record = self.record.take().map(|r| r.settle(&mut gaps.molds));
        self.rare.shrink();
    }

    /// The time of every token-bearing chunk since the send, rebuilt from the TTFT and the
    /// gaps once settled (exact: both are whole nanoseconds); from the record before.
    pub(crate) fn chunk_offsets<'a>(&'a self, gaps: &'a Gaps) -> Vec<Duration> {
        let Some(record) = self.record() else {
            return Vec::new();
        };
        if let Some(times) = &record.item_times {
            return times.iter().map(|t| t.offset).collect();
        }
        let Some(first) = record.ttft else {
            return Vec::new();
        };
        let mut at = first;
        std::iter::once(first)
            .chain(gaps.of(self.gaps).map(|gap| {
                at += gap;
                at
            }))
            .collect()
    }

    /// Bytes this request holds on the heap beyond its own size: the chunk times of a record
    /// not yet settled, the [`Rare`] box and its texts.
    #[cfg(test)]
    pub(crate) fn heap_bytes(&self) -> usize {
        let times = self
            .record()
            .and_then(|r| r.item_times.as_ref().map(Vec::capacity))
            .map_or(0, |capacity| {
                capacity * std::mem::size_of::<tokenmeter::ItemTime>()
            });
        let text = |t: &Option<ServerText>| t.as_ref().map_or(0, |t| t.as_str().len());
        times + self.rare.boxed_bytes() + text(&self.rare.error) + text(&self.rare.response_id)
    }

    /// Client queue time: send − due (vLLM 0.33's `client_queue_time`): the time it waited
    /// for a slot and for the client itself. `None` without a record or a due time.
    pub(crate) fn client_queue(&self) -> Option<Duration> {
        let sent = self.record()?.arrival;
        Some(sent.saturating_sub(self.due()?))
    }

    /// The client's own dispatch lag: send − ready (how late the client sent a request that
    /// was due and had a slot). `None` without a record or a ready time.
    pub(crate) fn dispatch_lag(&self) -> Option<Duration> {
        let sent = self.record()?.arrival;
        Some(sent.saturating_sub(self.ready()?))
    }

    /// TTFT from the schedule: client queue time + TTFT, what the user who was due then felt.
    pub(crate) fn ttft_from_schedule(&self) -> Option<Duration> {
        let ttft = self.record()?.ttft?;
        Some(ttft + self.client_queue().unwrap_or_default())
    }

    /// E2E from the schedule: client queue time + [`latency`](Self::latency) (vLLM 0.33's
    /// `e2el_including_client_queue`).
    pub(crate) fn latency_from_schedule(&self) -> Option<Duration> {
        Some(self.latency()? + self.client_queue().unwrap_or_default())
    }

    /// TPOT in seconds ([`RequestRecord::tpot_seconds`]); none for an answer that came whole
    /// ([`not_streamed`](Self::not_streamed)).
    pub(crate) fn tpot_seconds(&self) -> Option<f64> {
        self.record().filter(|_| !self.not_streamed)?.tpot_seconds()
    }

    /// The latency `vllm bench serve` reports as E2EL: the last token-bearing chunk − send
    /// ([`RequestRecord::time_to_last_token`]); the end of the stream when no token came.
    pub(crate) fn latency(&self) -> Option<Duration> {
        let record = self.record()?;
        Some(record.time_to_last_token().unwrap_or(record.e2e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oddities::Oddities;

    fn with_prompt_usage(sent: u64, reported: u64) -> Measured {
        Measured {
            input_tokens: sent,
            usage: Some(Usage {
                prompt_tokens: Some(reported),
                ..Usage::default()
            }),
            ..Measured::default()
        }
    }

    #[test]
    fn input_usage_far_above_what_was_sent_is_ignored_and_flagged() {
        let bound = input_usage_bound(100);
        assert_eq!(bound, 100 * 16 + 65_536);
        let mut plausible = with_prompt_usage(100, bound);
        plausible.check_input_usage(false);
        assert_eq!(plausible.prompt_tokens(), bound);
        assert!(!plausible.usage().unwrap().implausible_input);
        let mut implausible = with_prompt_usage(100, bound + 1);
        implausible.check_input_usage(false);
        assert_eq!(implausible.prompt_tokens(), 100, "what was sent");
        assert!(implausible.usage().unwrap().implausible_input);
        // A prompt of --extra-body's own: only counts beyond 2^53 are refused.
        let mut own = with_prompt_usage(100, bound + 1);
        own.check_input_usage(true);
        assert_eq!(own.prompt_tokens(), bound + 1);
        let mut huge = with_prompt_usage(100, u64::MAX);
        huge.check_input_usage(true);
        assert_eq!(huge.prompt_tokens(), 100);
    }

    #[test]
    fn settling_keeps_the_longest_gap_and_none_without_one() {
        use crate::tests::manual_run::{MS, Run};
        let mut run = Run::new();
        run.ok(MS, 10 * MS, 3 * MS, 4);
        run.ok(2 * MS, 10 * MS, 3 * MS, 1);
        let settled: Vec<Option<Duration>> = run.measured.iter().map(Measured::max_gap).collect();
        assert_eq!(settled, [Some(3 * MS), None]);
        assert!(
            Measured::default().max_gap().is_none(),
            "none before settling"
        );
    }

    #[test]
    fn the_oddities_warnings_read_each_request_s_oddities() {
        let odd = Measured {
            rare: crate::rare::RareFields {
                oddities: Oddities {
                    duplicate_key_chunks: 2,
                    ..Oddities::default()
                },
                ..Default::default()
            }
            .into(),
            ..Measured::default()
        };
        let got =
            crate::oddities::warnings([odd, Measured::default()].iter().map(|m| m.rare.oddities));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("1 of 2 requests' streams held 2 chunks"),
            "{}",
            got[0]
        );
    }
}
