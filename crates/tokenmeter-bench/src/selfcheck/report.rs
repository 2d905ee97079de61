//! [`SelfCheck`]: what the client self-check measured, its goals and its text form.

use std::fmt::Write as _;

use serde::Serialize;

use tokenmeter::report::Summary;

use crate::summary::stat;

/// Goal: the client's CPU per streamed token, at most this many times the raw-socket floor
/// measured in the same run. A ratio, not CPU-seconds: this machine's floor alone moved
/// between 3.7 and 12.6 CPU-s per 1M tokens from one day to another.
pub(crate) const MAX_FLOOR_RATIO: f64 = 1.25;
/// Goal: TTFT and ITL p50 within this of the truth (seconds).
pub(crate) const MAX_P50_ERROR_S: f64 = 1e-3;

/// CPU time of one client over the same load.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct Cpu {
    /// Token events read.
    pub(crate) tokens: u64,
    /// Thread CPU time (s).
    pub(crate) total_s: f64,
    /// Of which in user space (s), from 10 ms clock ticks.
    pub(crate) user_s: f64,
    /// Of which in the kernel (s): receiving, and on loopback also delivering this thread's ACKs
    /// to the server's socket.
    pub(crate) kernel_s: f64,
    /// CPU-seconds per million tokens.
    pub(crate) per_million_tokens: f64,
}

/// What the check measured.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SelfCheck {
    /// Concurrent streams.
    pub(crate) streams: usize,
    /// Requests the bench client completed, over every round.
    pub(crate) requests: usize,
    /// Rounds of the floor and the client, alternated; CPU figures are the median round.
    pub(crate) rounds: usize,
    /// Requests that did not succeed.
    pub(crate) failed: usize,
    /// TCP connections the bench client opened.
    pub(crate) connections: u64,
    /// Wall time of the bench client's load (s).
    pub(crate) wall_s: f64,
    /// Tokens per second per stream, as the server wrote them.
    pub(crate) tokens_per_s_per_stream: f64,
    /// The bench client (median round).
    pub(crate) client_cpu: Cpu,
    /// Raw sockets, same load: the floor of this machine (median round).
    pub(crate) baseline_cpu: Cpu,
    /// The client's HTTP stack alone, same load: bodies read to their end, nothing parsed or
    /// metered (median round). Not a goal: the part of the client's cost that is the HTTP
    /// stack's.
    pub(crate) http_cpu: Cpu,
    /// Each round's client CPU per token over the floor's measured just before it, in round
    /// order: the goal is on their median.
    pub(crate) round_ratios: Vec<f64>,
    /// Each round's HTTP-stack CPU per token over the same round's floor, in round order.
    pub(crate) http_round_ratios: Vec<f64>,
    /// TTFT the client measured: first token parsed − send (s).
    #[serde(serialize_with = "stat")]
    pub(crate) client_ttft: Summary,
    /// TTFT as sent: the server's write of the first token − the client's send (s).
    #[serde(serialize_with = "stat")]
    pub(crate) true_ttft: Summary,
    /// The server's own TTFT: its first write − its read of the request (s).
    #[serde(serialize_with = "stat")]
    pub(crate) server_ttft: Summary,
    /// ITL the client measured (s).
    #[serde(serialize_with = "stat")]
    pub(crate) client_itl: Summary,
    /// ITL as sent: gaps between the server's writes (s).
    #[serde(serialize_with = "stat")]
    pub(crate) true_itl: Summary,
    /// Client parse time − server write time, per token (s).
    #[serde(serialize_with = "stat")]
    pub(crate) delivery_lag: Summary,
}

impl SelfCheck {
    /// The client's CPU per token over the floor's: the median of the rounds' ratios (each
    /// round's client over the floor measured right before it, so that a change in the
    /// machine's load between rounds moves both sides of a ratio). `None` when no round's
    /// floor measured CPU time.
    pub(crate) fn floor_ratio(&self) -> Option<f64> {
        median_ratio(&self.round_ratios)
    }

    /// The HTTP stack alone over the floor, the same way: the median of the rounds' ratios.
    pub(crate) fn http_ratio(&self) -> Option<f64> {
        median_ratio(&self.http_round_ratios)
    }

    /// Goals missed, in words; empty when all are met.
    pub(crate) fn misses(&self) -> Vec<String> {
        let mut misses = Vec::new();
        match self.floor_ratio() {
            Some(ratio) if ratio > MAX_FLOOR_RATIO => misses.push(format!(
                "{ratio:.2} × the raw-socket floor's CPU per token (goal ≤ {MAX_FLOOR_RATIO})"
            )),
            Some(_) => {}
            None => misses.push("the raw-socket floor measured no CPU time: no ratio".to_owned()),
        }
        let ttft_error = (self.client_ttft.p50 - self.true_ttft.p50).abs();
        if ttft_error > MAX_P50_ERROR_S {
            misses.push(format!(
                "TTFT p50 off by {:.3} ms (goal ≤ 1 ms)",
                ttft_error * 1e3
            ));
        }
        let itl_error = (self.client_itl.p50 - self.true_itl.p50).abs();
        if itl_error > MAX_P50_ERROR_S {
            misses.push(format!(
                "ITL p50 off by {:.3} ms (goal ≤ 1 ms)",
                itl_error * 1e3
            ));
        }
        if self.failed > 0 {
            misses.push(format!("{} requests failed", self.failed));
        }
        misses
    }

    /// The report as text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "client self-check: {} streams, {} requests in {} rounds, {:.2} s ({:.0} tok/s per stream, {} connections)",
            self.streams,
            self.requests,
            self.rounds,
            self.wall_s,
            self.tokens_per_s_per_stream,
            self.connections
        );
        let cpu = |out: &mut String, name: &str, c: &Cpu| {
            let _ = writeln!(
                out,
                "  {name:<16}{:>6.2} CPU-s per 1M tokens ({} tokens, {:.3} s: user {:.2} s, kernel {:.2} s; median round)",
                c.per_million_tokens, c.tokens, c.total_s, c.user_s, c.kernel_s
            );
        };
        cpu(&mut out, "bench client", &self.client_cpu);
        cpu(&mut out, "raw sockets", &self.baseline_cpu);
        cpu(&mut out, "HTTP stack only", &self.http_cpu);
        if let Some(ratio) = self.floor_ratio() {
            let (low, high) = ratio_range(&self.round_ratios);
            let _ = writeln!(
                out,
                "  {:<16}{ratio:>6.2} × the raw-socket floor (goal ≤ {MAX_FLOOR_RATIO}; median of the {} rounds' ratios, {low:.2}–{high:.2})",
                "ratio",
                self.round_ratios.len(),
            );
        }
        if let Some(ratio) = self.http_ratio() {
            let (low, high) = ratio_range(&self.http_round_ratios);
            let _ = writeln!(
                out,
                "  {:<16}{ratio:>6.2} × the raw-socket floor for the HTTP stack alone (not a goal; {low:.2}–{high:.2}): the rest is SSE, JSON and metering",
                "of which",
            );
        }
        let row = |out: &mut String, name: &str, client: &Summary, truth: &Summary| {
            let _ = writeln!(
                out,
                "  {name:<5} client p50 {:>8.3} ms  p99 {:>8.3} ms   truth p50 {:>8.3} ms  p99 {:>8.3} ms   p50 error {:+.3} ms",
                client.p50 * 1e3,
                client.p99 * 1e3,
                truth.p50 * 1e3,
                truth.p99 * 1e3,
                (client.p50 - truth.p50) * 1e3
            );
        };
        row(&mut out, "TTFT", &self.client_ttft, &self.true_ttft);
        row(&mut out, "ITL", &self.client_itl, &self.true_itl);
        let _ = writeln!(
            out,
            "  server-side TTFT p50 {:.3} ms (its first write − its read); delivery lag p50 {:.3} ms, p99 {:.3} ms",
            self.server_ttft.p50 * 1e3,
            self.delivery_lag.p50 * 1e3,
            self.delivery_lag.p99 * 1e3
        );
        let misses = self.misses();
        if misses.is_empty() {
            let _ = writeln!(
                out,
                "  goals met: ≤ {MAX_FLOOR_RATIO} × the raw-socket floor, TTFT and ITL p50 within 1 ms"
            );
        } else {
            let _ = writeln!(out, "  goals missed: {}", misses.join("; "));
        }
        out
    }
}

/// The median of the finite ratios; `None` when there is none.
fn median_ratio(ratios: &[f64]) -> Option<f64> {
    let mut finite: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
    finite.sort_by(f64::total_cmp);
    finite.get(finite.len() / 2).copied()
}

/// The lowest and highest finite ratio.
fn ratio_range(ratios: &[f64]) -> (f64, f64) {
    let finite = || ratios.iter().copied().filter(|r| r.is_finite());
    (
        finite().fold(f64::INFINITY, f64::min),
        finite().fold(f64::NEG_INFINITY, f64::max),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(round_ratios: Vec<f64>) -> SelfCheck {
        SelfCheck {
            streams: 1,
            requests: 1,
            rounds: round_ratios.len(),
            failed: 0,
            connections: 1,
            wall_s: 1.0,
            tokens_per_s_per_stream: 1.0,
            client_cpu: Cpu::default(),
            baseline_cpu: Cpu::default(),
            http_cpu: Cpu::default(),
            http_round_ratios: vec![1.1, 1.05, f64::NAN],
            round_ratios,
            client_ttft: Summary::of(vec![0.02]),
            true_ttft: Summary::of(vec![0.02]),
            server_ttft: Summary::of(vec![0.02]),
            client_itl: Summary::of(vec![0.002]),
            true_itl: Summary::of(vec![0.002]),
            delivery_lag: Summary::of(vec![0.0]),
        }
    }

    #[test]
    fn the_ratio_is_the_median_round_and_a_round_without_a_floor_is_left_out() {
        let check = check(vec![1.31, f64::INFINITY, 1.12, 1.24, 1.19, f64::NAN]);
        assert_eq!(check.floor_ratio(), Some(1.24));
        assert!(check.misses().is_empty(), "{:?}", check.misses());
        let text = check.render();
        assert!(text.contains("1.24 × the raw-socket floor"), "{text}");
        assert!(
            text.contains("median of the 6 rounds' ratios, 1.12–1.31"),
            "{text}"
        );
        assert_eq!(check.http_ratio(), Some(1.1));
        assert!(
            text.contains(
                "1.10 × the raw-socket floor for the HTTP stack alone (not a goal; 1.05–1.10)"
            ),
            "{text}"
        );

        let over = super::tests::check(vec![1.20, 1.30, 1.27]);
        assert_eq!(over.floor_ratio(), Some(1.27));
        assert_eq!(
            over.misses(),
            ["1.27 × the raw-socket floor's CPU per token (goal ≤ 1.25)"]
        );
        assert_eq!(super::tests::check(vec![f64::INFINITY]).floor_ratio(), None);
    }
}
