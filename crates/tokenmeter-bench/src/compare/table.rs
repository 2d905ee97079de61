//! [`table`]: a comparison as the terminal shows it — one row per figure with both sides'
//! values, the relative difference, its interval and the verdict.

use std::fmt::Write as _;

use tokenmeter::report::Bounds;

use super::comparison::{Comparison, FigureComparison, Verdict};

/// The comparison as a terminal table (under 110 columns): a header with the sources, run
/// counts, level, resamples and threshold; one row per figure (gating figures marked `*`);
/// the shape differences, the notes, and the overall verdict.
///
/// # Examples
///
/// ```
/// use tokenmeter_bench::compare::{compare, table, CompareSettings, RequestFigures, RunRequests, Side};
///
/// let mut run = RunRequests::default();
/// run.duration_s = 10.0;
/// let mut r = RequestFigures::default();
/// (r.ok, r.good, r.ttft) = (true, true, Some(0.25));
/// run.requests = vec![r; 100];
/// let mut side = Side::default();
/// side.source = "base.json".into();
/// side.runs.push(run);
/// let text = table(&compare(&side, &side, &CompareSettings::default())?);
/// assert!(text.contains("base.json (1 run)"));
/// assert!(text.contains("TTFT p50 (ms)"));
/// assert!(text.lines().all(|l| l.chars().count() <= 110));
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn table(comparison: &Comparison) -> String {
    let c = comparison;
    let s = &c.settings;
    let mut out = String::new();
    let named = |source: &str| {
        if source.is_empty() {
            "(unnamed)".to_owned()
        } else {
            source.to_owned()
        }
    };
    let runs = |n: usize| {
        if n == 1 {
            "1 run".into()
        } else {
            format!("{n} runs")
        }
    };
    let _ = writeln!(
        out,
        "base: {} ({})\nnew:  {} ({})",
        named(&c.base.0),
        runs(c.base.1),
        named(&c.new.0),
        runs(c.new.1)
    );
    let gate_level = c.figures.iter().find(|f| f.gates).map(|f| f.level);
    let _ = writeln!(
        out,
        "{}% intervals{}, {} resamples, threshold {}%\n",
        percent(s.confidence.level()),
        gate_level.map_or(String::new(), |l| format!(
            " (gating figures *: {}%)",
            percent(l)
        )),
        s.resamples,
        percent(s.threshold)
    );
    let _ = writeln!(
        out,
        "  {:<22} {:>10} {:>10} {:>9}  {:<24} verdict",
        "figure", "base", "new", "change", "interval of the change"
    );
    for f in &c.figures {
        let _ = writeln!(out, "{}", row(f));
    }
    if !c.shape_differences.is_empty() {
        let _ = writeln!(out, "\nthe runs' shapes differ (compared anyway):");
        for d in &c.shape_differences {
            let _ = writeln!(out, "  {d}");
        }
    }
    let _ = writeln!(out);
    for note in &c.notes {
        let _ = writeln!(out, "{}", wrap(&format!("note: {note}"), 100));
    }
    let regressed: Vec<&str> = c
        .figures
        .iter()
        .filter(|f| f.gates && f.verdict == Verdict::Regressed)
        .map(|f| f.label.as_str())
        .collect();
    let _ = if regressed.is_empty() {
        writeln!(
            out,
            "result: no gating figure regressed beyond {}%",
            percent(s.threshold)
        )
    } else {
        writeln!(out, "result: REGRESSED: {}", regressed.join(", "))
    };
    out
}

/// One figure's row.
fn row(f: &FigureComparison) -> String {
    let fraction = is_fraction(&f.name);
    let value = |v: f64| {
        if fraction {
            format!("{}%", number(v * 100.0))
        } else {
            number(v)
        }
    };
    // The relative change where the base is not 0, else the absolute one.
    let (change, interval) = match (f.relative, f.relative_bounds) {
        (Some(r), Some(b)) => (signed_percent(r), bounds(b, signed_percent)),
        _ => {
            let abs = |v: f64| {
                let text = value(v);
                if v > 0.0 { format!("+{text}") } else { text }
            };
            (abs(f.difference), bounds(f.difference_bounds, abs))
        }
    };
    format!(
        "{} {:<22} {:>10} {:>10} {:>9}  {:<24} {}",
        if f.gates { '*' } else { ' ' },
        f.label,
        value(f.base),
        value(f.new),
        change,
        interval,
        f.verdict.as_str()
    )
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word stays
/// whole), each after the first indented by two spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ') {
        let len = word.chars().count();
        if line > 0 && line + 1 + len > width {
            out.push_str("\n  ");
            line = 2;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out
}

/// An interval as `[lo, hi]`, or the sample it lacks.
fn bounds(b: Bounds, show: impl Fn(f64) -> String) -> String {
    match b {
        Bounds::Within { lo, hi } => format!("[{}, {}]", show(lo), show(hi)),
        Bounds::TooFew { have, need } if need == u64::MAX => format!("(have {have})"),
        Bounds::TooFew { have, need } => format!("(have {have}, need {need})"),
    }
}

/// Success rate and attainment are fractions, shown as percentages.
fn is_fraction(name: &str) -> bool {
    matches!(name, "success_rate" | "attainment")
}

/// A value with about four significant digits; `-` for none.
fn number(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A fraction as a percentage without trailing zeros: 0.95 → `95`, 0.9917 → `99.17`.
fn percent(fraction: f64) -> String {
    let text = format!("{:.2}", fraction * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A relative change as `+10.2%` / `-3.1%`.
fn signed_percent(r: f64) -> String {
    if r.is_finite() {
        format!("{:+.1}%", r * 100.0)
    } else {
        "-".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_percentages_read_well() {
        assert_eq!(number(1234.56), "1235");
        assert_eq!(number(123.456), "123.5");
        assert_eq!(number(12.3456), "12.35");
        assert_eq!(number(0.123_456), "0.123");
        assert_eq!(number(f64::NAN), "-");
        assert_eq!(percent(0.95), "95");
        assert_eq!(percent(1.0 - 0.05 / 6.0), "99.17");
        assert_eq!(signed_percent(0.1023), "+10.2%");
        assert_eq!(signed_percent(-0.031), "-3.1%");
        assert_eq!(wrap("aa bb cc", 5), "aa bb\n  cc");
        let b = Bounds::TooFew {
            have: 50,
            need: 368,
        };
        assert_eq!(bounds(b, number), "(have 50, need 368)");
    }
}
