//! [`compare`]: two sides compared figure by figure — the point figures, a bootstrap of their
//! differences, each difference's interval and verdict.

use anyhow::bail;
use tokenmeter::report::{Bounds, Confidence, quantile_sample_needed};

use super::bootstrap::{Draws, bootstrap, percentile_interval};
use super::comparison::{CompareSettings, Comparison, FigureComparison, Verdict};
use super::figures::{Figure, Stat, figures};
use super::pooled::Pooled;
use super::rule::{gating_level, verdict};
use super::side::Side;

/// The fewest resamples [`compare`] accepts: fewer leave the tails of a 95% interval to a
/// handful of draws.
///
/// ```
/// use tokenmeter_bench::compare::{CompareSettings, MIN_RESAMPLES, Side, compare};
///
/// let mut settings = CompareSettings::default();
/// settings.resamples = MIN_RESAMPLES - 1;
/// let err = compare(&Side::default(), &Side::default(), &settings).unwrap_err();
/// assert!(err.to_string().contains("at least 100"));
/// ```
pub const MIN_RESAMPLES: u32 = 100;

/// Compares `new` against `base`: each figure's value on both sides, the difference new − base
/// and the relative difference with their bootstrap percentile intervals, and a verdict (see
/// the guide's "How the verdict is reached"). Deterministic: the same sides and settings give
/// the same comparison.
///
/// Fails when a side has no request, when the settings are out of range (fewer than
/// [`MIN_RESAMPLES`] resamples, a threshold that is not a finite fraction ≥ 0), or when the
/// sides' shapes differ and [`CompareSettings::allow_different_shapes`] is not set (the error
/// says what differs).
///
/// # Examples
///
/// ```
/// use tokenmeter_bench::compare::{compare, CompareSettings, RequestFigures, RunRequests, Side};
///
/// // A side of 400 requests whose TTFT is `scale` × 100..500 ms.
/// let side = |scale: f64| {
///     let mut run = RunRequests::default();
///     run.duration_s = 40.0;
///     for i in 0..400 {
///         let mut r = RequestFigures::default();
///         let ttft = scale * (0.1 + 0.001 * f64::from(i));
///         (r.ok, r.good, r.ttft, r.tpot) = (true, true, Some(ttft), Some(0.02));
///         (r.e2e, r.output_tokens) = (Some(ttft + 2.0), 100);
///         run.requests.push(r);
///     }
///     let mut side = Side::default();
///     side.runs.push(run);
///     side
/// };
/// let mut settings = CompareSettings::default();
/// settings.resamples = 200;
/// let same = compare(&side(1.0), &side(1.0), &settings)?;
/// assert!(!same.regressed());
/// let slower = compare(&side(1.0), &side(1.3), &settings)?;
/// assert!(slower.regressed());
/// let ttft = slower.figures.iter().find(|f| f.name == "ttft_p95_ms").unwrap();
/// assert!((ttft.relative.unwrap() - 0.3).abs() < 1e-9);
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn compare(base: &Side, new: &Side, settings: &CompareSettings) -> anyhow::Result<Comparison> {
    check_settings(settings)?;
    let shape_differences = base.shape.differences(&new.shape);
    if !shape_differences.is_empty() && !settings.allow_different_shapes {
        bail!(
            "the two runs have different shapes, so their figures measure different things: {}; \
             compare runs of one shape, or allow it (--allow-different-shapes) to compare anyway",
            shape_differences.join("; ")
        );
    }
    let (b, n) = (Pooled::of(base), Pooled::of(new));
    for (pooled, side, which) in [(&b, base, "base"), (&n, new, "new")] {
        if pooled.requests() == 0 {
            bail!(
                "the {which} side ({}) has no request: compare runs that sent requests",
                side.source
            );
        }
    }
    let itl = base.itl_known && new.itl_known;
    let figures = figures(itl);
    let gating = figures.iter().filter(|f| f.gates).count();
    let level = settings.confidence.level();
    let gate_level = gating_level(level, gating);
    let (mut base_point, mut new_point) = (Vec::new(), Vec::new());
    b.point(&figures, &mut base_point);
    n.point(&figures, &mut new_point);
    let draws = bootstrap(&b, &n, &figures, settings.resamples, settings.seed);
    let fewest_runs = base.runs.len().min(new.runs.len()) as u64;
    let mut out = Vec::with_capacity(figures.len());
    for (i, figure) in figures.iter().enumerate() {
        let level = if figure.gates { gate_level } else { level };
        let sizes = (b.sample_size(figure), n.sample_size(figure));
        let points = (base_point[i], new_point[i]);
        let sizes = if figure.measure.is_rate() && fewest_runs < MIN_RUNS_FOR_RATES {
            // One run's rate is its count over its duration: resampling its requests cannot
            // move it, and an interval of zero width would look exact.
            (fewest_runs, fewest_runs)
        } else {
            sizes
        };
        out.push(one_figure(
            figure, i, level, sizes, points, &draws, settings,
        ));
    }
    Ok(Comparison {
        settings: settings.clone(),
        base: (base.source.clone(), base.runs.len()),
        new: (new.source.clone(), new.runs.len()),
        figures: out,
        shape_differences,
        notes: notes(itl, base, new, settings, gating, gate_level),
    })
}

fn check_settings(settings: &CompareSettings) -> anyhow::Result<()> {
    if settings.resamples < MIN_RESAMPLES {
        bail!(
            "{} bootstrap resamples are too few for an interval's tails: ask for at least {MIN_RESAMPLES} (default 2000)",
            settings.resamples
        );
    }
    if !(settings.threshold.is_finite() && settings.threshold >= 0.0) {
        bail!(
            "the threshold {} is not a relative difference: give a fraction ≥ 0 such as 0.05 (5%)",
            settings.threshold
        );
    }
    Ok(())
}

/// Runs a side needs for an interval of a rate (requests/s, output tokens/s, goodput).
const MIN_RUNS_FOR_RATES: u64 = 2;

/// The sample a figure needs on each side for an interval at `level`: a percentile's order
/// statistics must reach it (p99 needs 368 values at 95%), a mean 2 values, a fraction 1
/// request, a rate [`MIN_RUNS_FOR_RATES`] runs (its sample size is then the runs).
fn sample_needed(figure: &Figure, level: f64) -> u64 {
    match figure.stat {
        Some(Stat::Percentile(p)) => {
            Confidence::new(level).map_or(u64::MAX, |c| quantile_sample_needed(p, c))
        }
        Some(Stat::Mean) => 2,
        None if figure.measure.is_rate() => MIN_RUNS_FOR_RATES,
        None => 1,
    }
}

fn one_figure(
    figure: &Figure,
    i: usize,
    level: f64,
    (base_n, new_n): (u64, u64),
    (base, new): (f64, f64),
    draws: &Draws,
    settings: &CompareSettings,
) -> FigureComparison {
    let need = sample_needed(figure, level);
    let have = base_n.min(new_n);
    let bounds = |draws: &[f64]| match percentile_interval(draws, level) {
        Some((lo, hi)) if have >= need => Bounds::Within { lo, hi },
        _ => Bounds::TooFew { have, need },
    };
    let difference_bounds = bounds(&draws.difference[i]);
    let relative = (base != 0.0 && base.is_finite()).then(|| new / base - 1.0);
    let relative_bounds = relative.map(|_| bounds(&draws.relative[i]));
    let verdict = match (relative, relative_bounds.and_then(Bounds::interval)) {
        (Some(r), Some(interval)) => {
            verdict(r, interval, figure.higher_is_worse(), settings.threshold)
        }
        // A base of 0: the absolute difference's interval decides.
        (None, _) => match difference_bounds.interval() {
            Some(interval) => verdict(new - base, interval, figure.higher_is_worse(), 0.0),
            None => Verdict::TooFew,
        },
        (Some(_), None) => Verdict::TooFew,
    };
    FigureComparison {
        name: figure.name(),
        label: figure.label(),
        higher_is_worse: figure.higher_is_worse(),
        base,
        new,
        difference: new - base,
        difference_bounds,
        relative,
        relative_bounds,
        verdict,
        gates: figure.gates,
        level,
    }
}

fn notes(
    itl: bool,
    base: &Side,
    new: &Side,
    settings: &CompareSettings,
    gating: usize,
    gate_level: f64,
) -> Vec<String> {
    let mut notes = vec![format!(
        "intervals: percentile bootstrap of new − base, {} resamples (seed {}), requests resampled within each side{}",
        settings.resamples,
        settings.seed,
        if base.runs.len() > 1 || new.runs.len() > 1 {
            "; runs resampled first, then requests within each run (run-to-run variation counts)"
        } else {
            ""
        }
    )];
    notes.push(format!(
        "the {gating} gating figures' intervals are at {:.2}% (Bonferroni: {:.0}% shared among them), so the whole comparison's false alarm rate stays within {:.0}%",
        gate_level * 100.0,
        (1.0 - settings.confidence.level()) * 100.0,
        (1.0 - settings.confidence.level()) * 100.0
    ));
    if base.runs.len().min(new.runs.len()) < MIN_RUNS_FOR_RATES as usize {
        notes.push(
            "rates (requests/s, output tok/s, goodput) have no interval with one run on a side: \
             a run's rate is its count over its duration, which resampling its requests cannot \
             vary; compare --repeat runs (2 or more a side) to judge them"
                .to_owned(),
        );
    }
    if !itl {
        let missing: Vec<&str> = [(base, "base"), (new, "new")]
            .iter()
            .filter(|(s, _)| !s.itl_known)
            .map(|(_, w)| *w)
            .collect();
        notes.push(format!(
            "ITL not compared: the {} side's input holds no inter-token gaps (a trace does; --json does not)",
            missing.join(" and ")
        ));
    }
    notes
}
