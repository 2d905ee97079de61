//! Latency by token class: TTFT by input-length class (prefill grows with the prompt) and E2E
//! by input × output class (decode grows with the output), over the successful requests, with
//! the core's [`LengthClasses`]. Classes come from `--input-classes`/`--output-classes`, else
//! from the run's own quantiles. Input lengths are the server's `usage.prompt_tokens`, else the
//! bench's; E2E is vLLM's (to the last token).

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use tokenmeter::report::{ClassSummary, LengthClasses, by_class, by_two_classes};

use crate::measured::Measured;
use crate::reqs::{Picked, Reqs};

/// Input classes chosen from the run when none are given.
const AUTO_INPUT_CLASSES: usize = 4;
/// Output classes chosen from the run when none are given.
const AUTO_OUTPUT_CLASSES: usize = 3;

/// One class's figures, in milliseconds.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ClassFigures {
    /// The class's range of tokens (`≤512`, `513–2048`, `>2048`, or `A × B` for two).
    pub(crate) class: String,
    /// Requests in the class.
    pub(crate) count: u64,
    /// Median, ms.
    pub(crate) p50_ms: f64,
    /// 95th percentile, ms.
    pub(crate) p95_ms: f64,
    /// 99th percentile, ms.
    pub(crate) p99_ms: f64,
}

impl From<ClassSummary> for ClassFigures {
    fn from(
        ClassSummary {
            label, summary: s, ..
        }: ClassSummary,
    ) -> Self {
        Self {
            class: label,
            count: s.count,
            p50_ms: s.p50 * 1e3,
            p95_ms: s.p95 * 1e3,
            p99_ms: s.p99 * 1e3,
        }
    }
}

/// The breakdown.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ByClass {
    /// The input edges used.
    pub(crate) input_edges: Vec<u64>,
    /// The output edges used.
    pub(crate) output_edges: Vec<u64>,
    /// Whether the edges were chosen from the run (no flag).
    pub(crate) automatic: bool,
    /// TTFT by input class.
    pub(crate) ttft_by_input: Vec<ClassFigures>,
    /// E2E by input × output class, rows by input class.
    pub(crate) e2e_by_input_output: Vec<Vec<ClassFigures>>,
    /// TTFT by input class of the requests the server served partly from its prompt cache
    /// (`usage.prompt_tokens_details.cached_tokens` > 0), and of the others: empty when no
    /// request was a hit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) ttft_by_input_cache_hit: Vec<ClassFigures>,
    /// TTFT by input class of the requests that were not cache hits (when some were).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) ttft_by_input_cache_miss: Vec<ClassFigures>,
}

/// The successful requests that have a record: the core's breakdowns run over their indexes
/// (4 bytes a request; each is read again when a figure needs it, no copy is kept).
fn succeeded(measured: Reqs<'_>) -> Picked<'_> {
    measured.filter(|m| m.succeeded() && m.record.is_some())
}

/// The input length the summary uses: `usage.prompt_tokens`, else what was sent.
fn input_of(m: &Measured) -> Option<u64> {
    Some(m.prompt_tokens())
}

/// The output tokens of the record.
fn output_of(m: &Measured) -> Option<u64> {
    m.record().map(|r| r.output_tokens)
}

/// The time to first token.
fn ttft(m: &Measured) -> Option<Duration> {
    m.record()?.ttft
}

/// vLLM's E2E: to the last token.
fn e2e(m: &Measured) -> Option<Duration> {
    m.record()?.time_to_last_token()
}

/// A request read from its index in `ok`, for the core's breakdowns.
fn read<'a, T: 'a>(ok: &'a Picked<'_>, f: fn(&Measured) -> T) -> impl Fn(&u32) -> T + 'a {
    move |&i| f(&ok.at(i))
}

/// The breakdown of `measured`, with the given edges or edges chosen from the run.
pub(crate) fn breakdown<'r>(
    measured: impl Into<Reqs<'r>>,
    input_edges: Option<&LengthClasses>,
    output_edges: Option<&LengthClasses>,
) -> ByClass {
    let measured: Reqs<'r> = measured.into();
    let ok = succeeded(measured);
    let input = input_edges.cloned().unwrap_or_else(|| {
        LengthClasses::automatic(
            ok.reqs().iter().filter_map(|m| input_of(&m)),
            AUTO_INPUT_CLASSES,
        )
    });
    let output = output_edges.cloned().unwrap_or_else(|| {
        LengthClasses::automatic(
            ok.reqs().iter().filter_map(|m| output_of(&m)),
            AUTO_OUTPUT_CLASSES,
        )
    });
    let figures = |rows: Vec<ClassSummary>| -> Vec<ClassFigures> {
        rows.into_iter().map(ClassFigures::from).collect()
    };
    let by_input = |part: &Picked<'_>| {
        let (key, value) = (read(part, input_of), read(part, ttft));
        figures(by_class(part.indices(), &input, key, value))
    };
    let ttft_by_input = by_input(&ok);
    let (input_key, output_key) = (read(&ok, input_of), read(&ok, output_of));
    let e2e = by_two_classes(
        ok.indices(),
        (&input, &input_key),
        (&output, &output_key),
        read(&ok, e2e),
    );
    let hit = |m: &Measured| {
        m.record()
            .and_then(|r| r.cached_input_tokens)
            .is_some_and(|n| n > 0)
    };
    let hits = ok.reqs().filter(hit);
    let (cache_hit, cache_miss) = if hits.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        let misses = ok.reqs().filter(|m| !hit(m));
        (by_input(&hits), by_input(&misses))
    };
    ByClass {
        ttft_by_input_cache_hit: cache_hit,
        ttft_by_input_cache_miss: cache_miss,
        input_edges: input.edges().to_vec(),
        output_edges: output.edges().to_vec(),
        automatic: input_edges.is_none() && output_edges.is_none(),
        ttft_by_input,
        e2e_by_input_output: e2e.into_iter().map(figures).collect(),
    }
}

/// The terminal's lines: TTFT by input class, E2E p95 by input × output class.
pub(crate) fn render(by: &ByClass) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nTTFT by input tokens{}:",
        if by.automatic {
            " (classes from the run's quartiles; --input-classes to choose)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "  {:>14}{:>8}{:>12}{:>12}{:>12}",
        "input tok", "count", "p50", "p95", "p99"
    );
    for c in &by.ttft_by_input {
        let _ = writeln!(
            out,
            "  {:>14}{:>8}{:>10.1}ms{:>10.1}ms{:>10.1}ms",
            c.class, c.count, c.p50_ms, c.p95_ms, c.p99_ms
        );
    }
    if !by.ttft_by_input_cache_hit.is_empty() {
        let _ = writeln!(
            out,
            "TTFT p50 by input tokens, prompt-cache hits (cached_tokens > 0) and misses:"
        );
        for (hit, miss) in by
            .ttft_by_input_cache_hit
            .iter()
            .zip(&by.ttft_by_input_cache_miss)
        {
            let cell = |c: &ClassFigures| {
                if c.count == 0 {
                    "—".to_owned()
                } else {
                    format!("{:.1}ms ({})", c.p50_ms, c.count)
                }
            };
            let _ = writeln!(
                out,
                "  {:>14}  hit {:>16}  miss {:>16}",
                hit.class,
                cell(hit),
                cell(miss)
            );
        }
    }
    let columns: Vec<String> = by
        .e2e_by_input_output
        .first()
        .map(|row| {
            row.iter()
                .map(|c| c.class.rsplit(" × ").next().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
    let _ = writeln!(out, "E2E p95 by input × output tokens (count):");
    let mut head = format!("  {:>14}", "input \\ output");
    for column in &columns {
        let _ = write!(head, "{column:>18}");
    }
    let _ = writeln!(out, "{head}");
    for (row, input) in by.e2e_by_input_output.iter().zip(&by.ttft_by_input) {
        let mut line = format!("  {:>14}", input.class);
        for cell in row {
            let text = if cell.count == 0 {
                "—".to_owned()
            } else {
                format!("{:.0}ms ({})", cell.p95_ms, cell.count)
            };
            let _ = write!(line, "{text:>18}");
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// (tokens, seconds) points of a scatter chart.
type Points = Vec<(f64, f64)>;

/// Points for the HTML's scatter charts: (input tokens, TTFT s) and (output tokens, E2E s).
pub(crate) fn points<'r>(measured: impl Into<Reqs<'r>>) -> (Points, Points) {
    let measured: Reqs<'r> = measured.into();
    let ok = succeeded(measured);
    let point = |length: u64, latency: Duration| (length as f64, latency.as_secs_f64());
    let ttft = (ok.reqs().iter())
        .filter_map(|m| Some(point(input_of(&m)?, ttft(&m)?)))
        .collect();
    let e2e = (ok.reqs().iter())
        .filter_map(|m| Some(point(output_of(&m)?, e2e(&m)?)))
        .collect();
    (ttft, e2e)
}

/// Parses class edges in tokens, increasing (`--input-classes 512,2048`).
///
/// ```
/// use tokenmeter_bench::parse::parse_edges;
///
/// assert!(parse_edges("512,2048").is_ok());
/// assert!(parse_edges("512,many").unwrap_err().contains("token counts"));
/// ```
pub fn parse_edges(text: &str) -> Result<LengthClasses, String> {
    let edges: Result<Vec<u64>, _> = text.split(',').map(|e| e.trim().parse::<u64>()).collect();
    let edges = edges.map_err(|_| {
        format!("`{text}` is not a list of token counts; give increasing numbers, e.g. 512,2048")
    })?;
    LengthClasses::new(edges).map_err(|e| e.to_string())
}

/// The HTML section: both tables and the two scatter charts (escaped by `esc`).
pub(crate) fn html<'r>(
    by: &ByClass,
    measured: impl Into<Reqs<'r>>,
    esc: impl Fn(&str) -> String,
) -> Result<String, String> {
    let measured: Reqs<'r> = measured.into();
    use crate::output::charts::{colour, scatter};
    let mut out = String::from("<h2>Latency by token class</h2>\n<pre class=\"classes\">");
    out.push_str(&esc(render(by).trim()));
    out.push_str("</pre>\n<div class=\"charts\">\n");
    let (ttft, e2e) = points(measured);
    out.push_str(&scatter(
        "TTFT against input tokens",
        &ttft,
        "input tokens",
        colour::TTFT,
    )?);
    out.push('\n');
    out.push_str(&scatter(
        "E2E against output tokens",
        &e2e,
        "output tokens",
        colour::E2E,
    )?);
    out.push_str("\n</div>\n");
    Ok(out)
}

/// Inserts `section` into `html` before its end (`</body>`).
pub(crate) fn insert_html(html: String, section: &str) -> String {
    match html.rfind("</body>") {
        Some(at) => format!("{}{section}{}", &html[..at], &html[at..]),
        None => html + section,
    }
}
