//! The human-readable form of a [`Report`].

use std::fmt;

use super::{Report, Summary};

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} requests in {:.3} s: {:.2} req/s, {:.1} output tok/s",
            self.requests,
            self.duration.as_secs_f64(),
            self.requests_per_second,
            self.output_tokens_per_second
        )?;
        write!(
            f,
            "outcomes: success {}, degraded {}, cancelled {}, errors {}",
            self.outcomes.success,
            self.outcomes.degraded,
            self.outcomes.cancelled,
            self.outcomes.errors_total()
        )?;
        if !self.outcomes.errors.is_empty() {
            let classes: Vec<String> = self
                .outcomes
                .errors
                .iter()
                .map(|(class, n)| format!("{class} {n}"))
                .collect();
            write!(f, " ({})", classes.join(", "))?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:<22}{:>8}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}",
            "", "count", "mean", "p50", "p90", "p95", "p99", "max"
        )?;
        let ms = 1e3;
        for (name, summary, scale) in [
            ("TTFT (ms)", &self.ttft, ms),
            ("TPOT (ms)", &self.tpot, ms),
            ("ITL (ms)", &self.itl, ms),
            ("ITL per token (ms)", &self.itl_token_weighted, ms),
            ("E2E (ms)", &self.e2e, ms),
            ("queue (ms)", &self.queue, ms),
            ("prefill (ms)", &self.prefill, ms),
            ("decode (ms)", &self.decode, ms),
            ("inference (ms)", &self.inference, ms),
            ("input tokens", &self.input_tokens, 1.0),
            ("output tokens", &self.output_tokens, 1.0),
        ] {
            row(f, name, summary, scale)?;
        }
        write!(
            f,
            "measured at input tokens p50 {:.0} / p95 {:.0}, output tokens p50 {:.0} / p95 {:.0}",
            self.input_tokens.p50,
            self.input_tokens.p95,
            self.output_tokens.p50,
            self.output_tokens.p95
        )
    }
}

fn row(f: &mut fmt::Formatter<'_>, name: &str, s: &Summary, scale: f64) -> fmt::Result {
    if s.count == 0 {
        return writeln!(f, "{name:<22}{:>8}{:>11}", 0, "-");
    }
    writeln!(
        f,
        "{name:<22}{:>8}{:>11.3}{:>11.3}{:>11.3}{:>11.3}{:>11.3}{:>11.3}",
        s.count,
        s.mean * scale,
        s.p50 * scale,
        s.p90 * scale,
        s.p95 * scale,
        s.p99 * scale,
        s.max * scale
    )
}
