//! The page and the verdict of a comparison made by hand (the statistics are tested on their
//! own): both sides' CDFs, each figure's bar in its verdict's colour, sources escaped; the
//! exit code follows the gating figures only.

use tokenmeter::report::Bounds;

use super::render;
use crate::compare::command::verdict;
use crate::compare::comparison::{CompareSettings, Comparison, FigureComparison, Verdict};
use crate::compare::side::{RequestFigures, RunRequests, Side};
use crate::exit_code;

fn side(source: &str, scale: f64, itl_known: bool) -> Side {
    let requests = (1..=50)
        .map(|i| RequestFigures {
            ok: true,
            good: true,
            ttft: Some(0.010 * scale * f64::from(i)),
            tpot: Some(0.002 * scale),
            e2e: Some(0.1 * scale + 0.001 * f64::from(i)),
            output_tokens: 20,
            itl: if itl_known {
                vec![0.002 * scale; 3]
            } else {
                Vec::new()
            },
        })
        .collect();
    Side {
        source: source.to_owned(),
        runs: vec![RunRequests {
            requests,
            duration_s: 2.0,
        }],
        itl_known,
        ..Side::default()
    }
}

fn figure(name: &str, relative: f64, verdict: Verdict, gates: bool) -> FigureComparison {
    FigureComparison {
        name: name.to_owned(),
        label: format!("{name} (ms)"),
        higher_is_worse: true,
        base: 100.0,
        new: 100.0 * (1.0 + relative),
        difference: 100.0 * relative,
        difference_bounds: Bounds::Within {
            lo: 100.0 * (relative - 0.02),
            hi: 100.0 * (relative + 0.02),
        },
        relative: Some(relative),
        relative_bounds: Some(Bounds::Within {
            lo: relative - 0.02,
            hi: relative + 0.02,
        }),
        verdict,
        gates,
        level: 0.95,
    }
}

fn comparison(figures: Vec<FigureComparison>) -> Comparison {
    Comparison {
        settings: CompareSettings::default(),
        base: ("base <b>.json".to_owned(), 1),
        new: ("new.json".to_owned(), 1),
        figures,
        shape_differences: Vec::new(),
        notes: vec!["a note".to_owned()],
    }
}

#[test]
fn the_page_overlays_both_sides_and_colours_each_difference() {
    let c = comparison(vec![
        figure("ttft_p95", 0.30, Verdict::Regressed, true),
        figure("tpot_p95", -0.20, Verdict::Improved, true),
        figure("e2e_p95", 0.01, Verdict::NoSignificantDifference, true),
    ]);
    let page = render(
        &c,
        &side("base <b>.json", 1.0, true),
        &side("new.json", 1.3, true),
    )
    .unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</body></html>\n"));
    assert!(
        !page.contains("<b>") && page.contains("base &lt;b&gt;.json"),
        "escaped"
    );
    assert!(
        !page.contains("<script") && !page.contains("src=\"http"),
        "self-contained"
    );
    assert_eq!(
        page.matches("<svg").count(),
        1 + 4,
        "the differences and four CDFs (ITL known)"
    );
    for colour in ["#d62728", "#2ca02c", "#7f7f7f"] {
        assert!(
            page.contains(&format!("stroke=\"{colour}\"")),
            "a bar in {colour}"
        );
    }
    assert!(page.contains("threshold 5%") && page.contains("confidence 95%"));
    assert!(page.contains("a gating figure regressed (exit code 1)") && page.contains("a note"));
    // Without the gaps on one side, no ITL chart.
    let page = render(&c, &side("a", 1.0, true), &side("b", 1.0, false)).unwrap();
    assert_eq!(page.matches("<svg").count(), 1 + 3);
}

#[test]
fn only_a_gating_regression_fails() {
    let quiet = comparison(vec![
        figure("ttft_p99", 0.30, Verdict::Regressed, false),
        figure("tpot_p95", 0.01, Verdict::NoSignificantDifference, true),
    ]);
    assert!(verdict(&quiet).is_ok());
    let failing = comparison(vec![figure("ttft_p95", 0.30, Verdict::Regressed, true)]);
    let error = verdict(&failing).unwrap_err();
    assert_eq!(exit_code(&error), 1);
    let text = format!("{error:#}");
    assert!(
        text.contains("ttft_p95 (ms) +30.0%") && text.contains("5% threshold"),
        "{text}"
    );
}
