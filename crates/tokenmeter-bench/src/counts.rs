//! Where the token counts come from, and whether the requests ran as asked: the source of
//! every count (the server's `usage`, or the bench's own count of token-bearing chunks for
//! output and of the prompt it generated for input), the finish reasons, the requests that
//! stopped before `max_tokens`, and the successes with no output token.
//!
//! A chunk count is an estimate: a server may put several tokens in one chunk (llama.cpp's
//! server merges byte tokens), so output tokens come out low and TPOT high. It is stated in
//! the terminal, `--json` (`counts`) and `--html`, and warned about.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::reqs::Reqs;
use crate::slo::{Judge, Slo};

/// The counts' sources and the finish reasons of the successful requests.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    /// Successful requests whose output tokens are the server's `usage.completion_tokens`.
    pub(crate) output_from_usage: u64,
    /// Successful requests whose output tokens are the streamed text counted with
    /// `--tokenizer` (the server sent no usable `usage`).
    pub(crate) output_from_tokenizer: u64,
    /// Successful requests whose output tokens are the token-bearing chunks counted (an
    /// estimate: the server sent no usable `usage`, and no `--tokenizer` was given).
    pub(crate) output_from_chunks: u64,
    /// Successful requests whose input tokens are the server's `usage.prompt_tokens`.
    pub(crate) input_from_usage: u64,
    /// Successful requests whose input tokens are the bench's own exact count (`--tokenizer`,
    /// or the dataset's `input_tokens`), the server sending no `usage.prompt_tokens`.
    pub(crate) input_exact: u64,
    /// Successful requests whose input tokens are the bench's estimate of its prompt (one token
    /// per word, without `--tokenizer`).
    pub(crate) input_estimated: u64,
    /// Requests sent whose prompt length is an estimate (no `--tokenizer`): what the run's
    /// input lengths and input-length classes are made of.
    pub(crate) prompts_estimated: u64,
    /// Finish reasons of the successful requests (`none` when the stream gave none).
    pub(crate) finish_reasons: BTreeMap<String, u64>,
    /// Successful requests that stopped (`stop`) with fewer output tokens than `max_tokens`.
    pub(crate) stopped_early: u64,
    /// Successful requests with no output token: successes in the outcomes and throughput,
    /// without a TTFT, TPOT or ITL sample.
    pub(crate) zero_output: u64,
    /// Of those, the ones the objectives judged good.
    pub(crate) zero_output_good: u64,
    /// Successful requests counted with `--tokenizer` whose count is above their `max_tokens`:
    /// implausible (no server goes past it), so the tokenizer is not the server's.
    pub(crate) tokenizer_above_max_tokens: u64,
    /// The largest such count, and the `max_tokens` it was asked with.
    pub(crate) tokenizer_worst: Option<(u64, u64)>,
    /// Successful requests counted from chunks that stopped for `length`, by whether the count
    /// came out at `max_tokens` (exact) or below it (low): the evidence of how good the chunk
    /// count is on this server.
    pub(crate) length_chunks_exact: u64,
    /// See [`length_chunks_exact`](Self::length_chunks_exact).
    pub(crate) length_chunks_low: u64,
}

impl Counts {
    /// The counts of the successful requests of `measured`, judged against `slo`.
    pub(crate) fn of<'r>(measured: impl Into<Reqs<'r>>, slo: &Slo) -> Self {
        let measured: Reqs<'r> = measured.into();
        let judge = Judge::new(slo);
        let mut counts = Self {
            prompts_estimated: measured.iter().filter(|m| !m.input_exact).count() as u64,
            ..Self::default()
        };
        for one in measured.iter().filter(|m| m.succeeded()) {
            let usage = one.usage().filter(|u| !u.unusable);
            match (usage.and_then(|u| u.completion_tokens), one.output_counted) {
                (Some(_), _) => counts.output_from_usage += 1,
                (None, true) => counts.output_from_tokenizer += 1,
                (None, false) => counts.output_from_chunks += 1,
            }
            match (usage.and_then(|u| u.prompt_tokens), one.input_exact) {
                (Some(_), _) => counts.input_from_usage += 1,
                (None, true) => counts.input_exact += 1,
                (None, false) => counts.input_estimated += 1,
            }
            let reason = one.record().and_then(|r| r.finish_reason);
            let name = reason.map_or("none", |r| r.as_str());
            *counts.finish_reasons.entry(name.to_owned()).or_default() += 1;
            let output = one.output_tokens();
            if name == "stop" && one.max_tokens > 0 && output < one.max_tokens {
                counts.stopped_early += 1;
            }
            let counted_by = (usage.and_then(|u| u.completion_tokens), one.output_counted);
            if let (None, true) = counted_by
                && one.max_tokens > 0
                && output > one.max_tokens
            {
                counts.tokenizer_above_max_tokens += 1;
                let worst = counts.tokenizer_worst.map_or(0, |(n, _)| n);
                if output > worst {
                    counts.tokenizer_worst = Some((output, one.max_tokens));
                }
            }
            if let (None, false) = counted_by
                && name == "length"
                && one.max_tokens > 0
            {
                if output >= one.max_tokens {
                    counts.length_chunks_exact += 1;
                } else {
                    counts.length_chunks_low += 1;
                }
            }
            if output == 0 {
                counts.zero_output += 1;
                counts.zero_output_good += u64::from(judge.is_good(&one));
            }
        }
        counts
    }

    /// The terminal's lines: the sources and the finish reasons.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "  token counts  output: {} from the server's usage, {} counted with the tokenizer, {} from chunk counts (estimate) · input: {} from usage, {} counted by the bench, {} estimated by the bench (words)",
            self.output_from_usage,
            self.output_from_tokenizer,
            self.output_from_chunks,
            self.input_from_usage,
            self.input_exact,
            self.input_estimated
        );
        if self.prompts_estimated > 0 {
            let _ = writeln!(
                out,
                "  prompts       {} lengths asked are estimates (one token per word): give \
                 --tokenizer tokenizer.json for exact lengths",
                self.prompts_estimated
            );
        }
        let reasons: Vec<String> = self
            .finish_reasons
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        if !reasons.is_empty() {
            let _ = writeln!(out, "  finish        {}", reasons.join(" · "));
        }
        out
    }

    /// What makes the counts or the lengths differ from what was asked.
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let ok = self.output_from_usage + self.output_from_tokenizer + self.output_from_chunks;
        if self.output_from_chunks > 0 {
            let evidence = match (self.length_chunks_exact, self.length_chunks_low) {
                (exact, 0) if exact > 0 => format!(
                    "; on this server they look exact: all {exact} answers that stopped for \
                     length counted max_tokens"
                ),
                (_, low) if low > 0 && self.tokenizer_above_max_tokens == 0 => format!(
                    "; {low} answers that stopped for length counted fewer than max_tokens, so \
                     a chunk carried several tokens here: --tokenizer counts the streamed text \
                     instead"
                ),
                _ => "; a chunk can carry several tokens, so output tokens may be low and TPOT \
                      high"
                    .to_owned(),
            };
            warnings.push(format!(
                "output tokens of {} of {ok} successful requests are counted from token-bearing \
                 chunks, an estimate: the server sent no usable usage (it may ignore \
                 stream_options.include_usage){evidence}",
                self.output_from_chunks
            ));
        }
        if self.tokenizer_above_max_tokens > 0 {
            let worst = self.tokenizer_worst.map_or(String::new(), |(n, max)| {
                format!(" (up to {n} for max_tokens {max})")
            });
            warnings.push(format!(
                "output tokens of {} requests counted with --tokenizer are above their max_tokens{worst}, \
                 which no server exceeds: the tokenizer is not this server's. Its counts are \
                 implausible; the chunk counts (run without --tokenizer) or the server's usage \
                 (--no-stream) are more accurate here",
                self.tokenizer_above_max_tokens
            ));
        }
        if self.input_estimated > 0 {
            warnings.push(format!(
                "input tokens of {} successful requests are estimates (one token per word): the \
                 server sent no usage.prompt_tokens and no --tokenizer was given",
                self.input_estimated
            ));
        }
        if self.stopped_early > 0 {
            warnings.push(format!(
                "{} of {ok} successful requests stopped (finish_reason stop) before the requested \
                 output length (--output-tokens): the server did not honour it (--ignore-eos \
                 asks vLLM-compatible servers to)",
                self.stopped_early
            ));
        }
        if self.zero_output > 0 {
            warnings.push(format!(
                "{} successful requests had no output token: they count as successes (outcomes, \
                 throughput) with no TTFT, TPOT or ITL sample; {} of them met the objectives",
                self.zero_output, self.zero_output_good
            ));
        }
        warnings
    }

    /// An HTML paragraph of [`render`](Self::render) and the warnings (escaped by `esc`).
    pub(crate) fn html(&self, esc: impl Fn(&str) -> String) -> String {
        let mut out = String::from("<p class=\"counts\">");
        for line in self.render().lines().chain(
            self.warnings()
                .iter()
                .map(|w| format!("warning: {w}"))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        ) {
            let _ = write!(out, "{}<br>", esc(line.trim()));
        }
        out.push_str("</p>\n");
        out
    }
}

/// Inserts `paragraph` into `html` after its first heading (or at the start).
pub(crate) fn insert_html(html: String, paragraph: &str) -> String {
    match html.find("</h1>") {
        Some(at) => {
            let at = at + "</h1>".len();
            format!("{}\n{paragraph}{}", &html[..at], &html[at..])
        }
        None => paragraph.to_owned() + &html,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measured::Measured;

    #[test]
    fn insert_after_the_heading() {
        let html = insert_html("<h1>t</h1><p>x</p>".to_owned(), "<p>c</p>");
        assert_eq!(html, "<h1>t</h1>\n<p>c</p><p>x</p>");
        let empty = Counts::default();
        assert!(empty.warnings().is_empty());
        assert!(empty.render().contains("0 from the server's usage"));
        let chunks = Counts {
            output_from_chunks: 2,
            stopped_early: 1,
            zero_output: 1,
            ..Counts::default()
        };
        let warnings = chunks.warnings().join("\n");
        assert!(warnings.contains("an estimate") && warnings.contains("--output-tokens"));
        assert!(warnings.contains("no output token"));
        assert!(
            chunks
                .html(str::to_owned)
                .contains("warning: output tokens of 2")
        );
    }

    /// Successes that stopped for `length` at `max_tokens` 8, their output counted as `counted`
    /// (`true`: with the tokenizer; `false`: from chunks).
    fn stopped_for_length(outputs: &[u64], counted: bool) -> Vec<Measured> {
        use crate::tests::manual_run::{MS, Run};
        let mut run = Run::new();
        for (k, _) in outputs.iter().enumerate() {
            run.ok(MS * (k as u32 * 100), 10 * MS, MS, 4);
        }
        for (m, &output) in run.measured.iter_mut().zip(outputs) {
            let mut record = m.record().unwrap().into_owned();
            record.output_tokens = output;
            record.finish_reason = Some(tokenmeter::FinishReason::Length);
            m.record = Some(record.into());
            m.max_tokens = 8;
            m.output_counted = counted;
        }
        run.measured
    }

    #[test]
    fn a_tokenizer_count_above_max_tokens_is_implausible() {
        let counts = Counts::of(&stopped_for_length(&[8, 9, 11], true), &Slo::default());
        assert_eq!(counts.tokenizer_above_max_tokens, 2);
        assert_eq!(counts.tokenizer_worst, Some((11, 8)));
        let warnings = counts.warnings().join("\n");
        assert!(warnings.contains("up to 11 for max_tokens 8"), "{warnings}");
        assert!(warnings.contains("not this server's"), "{warnings}");
    }

    #[test]
    fn the_chunk_warning_recommends_what_the_run_shows_is_better() {
        let exact = Counts::of(&stopped_for_length(&[8, 8], false), &Slo::default());
        assert_eq!((exact.length_chunks_exact, exact.length_chunks_low), (2, 0));
        let warnings = exact.warnings().join("\n");
        assert!(warnings.contains("look exact"), "{warnings}");
        assert!(!warnings.contains("--tokenizer counts"), "{warnings}");
        let low = Counts::of(&stopped_for_length(&[8, 5], false), &Slo::default());
        assert_eq!((low.length_chunks_exact, low.length_chunks_low), (1, 1));
        let warnings = low.warnings().join("\n");
        assert!(
            warnings.contains("--tokenizer counts the streamed text"),
            "{warnings}"
        );
    }
}
