//! SVG charts for the HTML report, drawn with plotters' SVG backend (no font files needed: the
//! browser renders the text).

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::reqs::Reqs;
use crate::slo::Judge;
use crate::sweep::SweepStep;
use crate::trace::ns;

/// Series colours; the screenshot test looks for them.
pub(crate) mod colour {
    use plotters::style::RGBColor;
    /// TTFT CDF.
    pub(crate) const TTFT: RGBColor = RGBColor(31, 119, 180);
    /// TPOT CDF.
    pub(crate) const TPOT: RGBColor = RGBColor(255, 127, 14);
    /// E2E CDF.
    pub(crate) const E2E: RGBColor = RGBColor(44, 160, 44);
    /// ITL histogram.
    pub(crate) const ITL: RGBColor = RGBColor(148, 103, 189);
    /// Requests in flight.
    pub(crate) const IN_FLIGHT: RGBColor = RGBColor(214, 39, 40);
    /// Good requests per second.
    pub(crate) const GOODPUT: RGBColor = RGBColor(140, 86, 75);
    /// Successful requests per second.
    pub(crate) const THROUGHPUT: RGBColor = RGBColor(23, 190, 207);
    /// Sweep: attainment.
    pub(crate) const ATTAINMENT: RGBColor = RGBColor(227, 119, 194);
    /// Sweep: goodput.
    pub(crate) const SWEEP_GOODPUT: RGBColor = RGBColor(188, 189, 34);
}

const SIZE: (u32, u32) = (560, 300);
const MAX_POINTS: usize = 400;

type Result<T> = std::result::Result<T, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    format!("drawing a chart failed: {e}")
}

fn style(colour: RGBColor) -> ShapeStyle {
    ShapeStyle {
        color: colour.to_rgba(),
        filled: false,
        stroke_width: 2,
    }
}

fn upper(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.05
    } else {
        1.0
    }
}

/// The empirical CDF of `values` (converted by `scale`), at most `MAX_POINTS` points.
pub(crate) fn cdf_points(values: &[f64], scale: f64) -> Vec<(f64, f64)> {
    let mut sorted: Vec<f64> = values
        .iter()
        .map(|v| v * scale)
        .filter(|v| v.is_finite())
        .collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(MAX_POINTS).max(1);
    let mut points: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (sorted[i], (i + 1) as f64 / n as f64))
        .collect();
    points.push((sorted[n - 1], 1.0));
    points
}

/// An error bar on a CDF: the interval `lo..=hi` (seconds) of the percentile at the
/// cumulative fraction `at`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ErrorBar {
    /// The percentile as a fraction (0.95 for p95).
    pub(crate) at: f64,
    /// Lower end, seconds.
    pub(crate) lo: f64,
    /// Upper end, seconds.
    pub(crate) hi: f64,
}

/// Colour of the error bars.
pub(crate) const BAR: RGBColor = RGBColor(90, 90, 90);

/// A CDF chart of latencies given in seconds, drawn in milliseconds, with an error bar at
/// each percentile of `bars` (a horizontal segment from its interval's lower to its upper
/// end, with a tick at each end).
pub(crate) fn cdf(
    title: &str,
    seconds: &[f64],
    colour: RGBColor,
    bars: &[ErrorBar],
) -> Result<String> {
    let points = cdf_points(seconds, 1e3);
    let widest = bars.iter().map(|b| b.hi * 1e3).fold(0.0, f64::max);
    let x_max = upper(points.last().map_or(0.0, |p| p.0).max(widest));
    let frame = Frame {
        caption: title,
        x_max,
        y_max: 1.0,
        x_desc: "ms",
        y_desc: "fraction of requests",
        y_area: 50,
        empty: points.is_empty(),
        legend: false,
    };
    let bar_style = ShapeStyle {
        color: BAR.to_rgba(),
        filled: false,
        stroke_width: 2,
    };
    let tick = 0.02;
    plot(&frame, |chart| {
        chart
            .draw_series(LineSeries::new(points, style(colour)))
            .map_err(err)?;
        for bar in bars {
            let (lo, hi, y) = (bar.lo * 1e3, bar.hi * 1e3, bar.at);
            let segments = [
                vec![(lo, y), (hi, y)],
                vec![(lo, y - tick), (lo, y + tick)],
                vec![(hi, y - tick), (hi, y + tick)],
            ];
            for segment in segments {
                chart
                    .draw_series(std::iter::once(PathElement::new(segment, bar_style)))
                    .map_err(err)?;
            }
        }
        Ok(())
    })
}

/// What every chart shares: caption, axes from 0 to their maxima, and their descriptions.
struct Frame<'a> {
    caption: &'a str,
    x_max: f64,
    y_max: f64,
    x_desc: &'a str,
    y_desc: &'a str,
    y_area: u32,
    /// Draw "no data" instead of calling the drawing function.
    empty: bool,
    /// Draw the series' labels.
    legend: bool,
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws `frame`, then the series `draw` adds, into a standalone SVG.
fn plot(frame: &Frame<'_>, draw: impl FnOnce(&mut Chart<'_, '_>) -> Result<()>) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(frame.caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(frame.y_area)
            .build_cartesian_2d(0f64..frame.x_max, 0f64..frame.y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(frame.x_desc)
            .y_desc(frame.y_desc)
            .draw()
            .map_err(err)?;
        if frame.empty {
            draw_no_data(&root)?;
        } else {
            draw(&mut chart)?;
            if frame.legend {
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK.mix(0.3))
                    .position(SeriesLabelPosition::LowerRight)
                    .draw()
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn draw_no_data(root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Result<()> {
    root.draw(&Text::new("no data", (250, 150), ("sans-serif", 16)))
        .map_err(err)
}

/// A histogram of inter-token latencies (seconds in, milliseconds drawn).
pub(crate) fn histogram(title: &str, seconds: &[f64], colour: RGBColor) -> Result<String> {
    const BINS: usize = 40;
    let mut ms: Vec<f64> = seconds
        .iter()
        .map(|s| s * 1e3)
        .filter(|v| v.is_finite())
        .collect();
    ms.sort_by(f64::total_cmp);
    let hi = tokenmeter::report::percentile(&ms, 99.5).map_or(1.0, |p| upper(p * 1.1));
    let width = hi / BINS as f64;
    let mut counts = [0u64; BINS];
    let mut beyond = 0u64;
    for v in &ms {
        let bin = (v / width) as usize;
        match counts.get_mut(bin) {
            Some(c) => *c += 1,
            None => beyond += 1,
        }
    }
    let y_max = counts.iter().copied().max().unwrap_or(0).max(1) as f64 * 1.05;
    let caption = if beyond > 0 {
        format!("{title} ({beyond} samples beyond {hi:.1} ms not shown)")
    } else {
        title.to_owned()
    };
    let frame = Frame {
        caption: &caption,
        x_max: hi,
        y_max,
        x_desc: "ms",
        y_desc: "chunks",
        y_area: 60,
        empty: ms.is_empty(),
        legend: false,
    };
    plot(&frame, |chart| {
        let bars = counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, &c)| {
                let x0 = i as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width, c as f64)], colour.filled())
            });
        chart.draw_series(bars).map(|_| ()).map_err(err)
    })
}

/// One line: its label, colour and points.
pub(crate) type Line<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// Lines over time.
pub(crate) fn lines(
    title: &str,
    y_desc: &str,
    x_desc: &str,
    series: Vec<Line<'_>>,
    markers: bool,
) -> Result<String> {
    let x_max = upper(
        series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.0))
            .fold(0.0, f64::max),
    );
    let y_max = upper(
        series
            .iter()
            .flat_map(|s| s.2.iter().map(|p| p.1))
            .fold(0.0, f64::max),
    );
    let frame = Frame {
        caption: title,
        x_max,
        y_max,
        x_desc,
        y_desc,
        y_area: 50,
        empty: series.iter().all(|s| s.2.is_empty()),
        legend: true,
    };
    plot(&frame, |chart| {
        for (label, colour, points) in series {
            if markers {
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled())))
                    .map_err(err)?;
            }
            chart
                .draw_series(LineSeries::new(points, style(colour)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style(colour)));
        }
        Ok(())
    })
}

/// (send, end) of every recorded request, in nanoseconds of the run's clock.
fn spans(traces: Reqs<'_>) -> Vec<(u64, u64)> {
    traces
        .iter()
        .filter_map(|t| t.owned_record())
        .map(|r| (ns(r.arrival), ns(r.end())))
        .collect()
}

/// Requests in flight over time (seconds since the first send).
pub(crate) fn in_flight<'r>(traces: impl Into<Reqs<'r>>) -> Result<String> {
    let traces: Reqs<'r> = traces.into();
    let spans = spans(traces);
    let start = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let mut events: Vec<(u64, i64)> = spans
        .iter()
        .flat_map(|&(send, end)| [(send, 1), (end.max(send), -1)])
        .collect();
    events.sort_unstable();
    let mut level = 0i64;
    let mut points = Vec::with_capacity(events.len() * 2 + 1);
    points.push((0.0, 0.0));
    for (at, delta) in events {
        let x = (at - start) as f64 * 1e-9;
        points.push((x, level as f64));
        level += delta;
        points.push((x, level as f64));
    }
    lines(
        "Requests in flight",
        "requests",
        "seconds",
        vec![("in flight", colour::IN_FLIGHT, thin(points))],
        false,
    )
}

fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    const MAX: usize = 4_000;
    if points.len() <= MAX {
        return points;
    }
    let step = points.len().div_ceil(MAX);
    points.into_iter().step_by(step).collect()
}

/// Good and successful requests per second over time, by end time.
pub(crate) fn goodput<'r>(traces: impl Into<Reqs<'r>>, judge: &Judge) -> Result<String> {
    let traces: Reqs<'r> = traces.into();
    let spans = spans(traces);
    let start = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let end = spans.iter().map(|s| s.1).max().unwrap_or(start);
    let span = (end - start) as f64 * 1e-9;
    let bin = if span > 60.0 {
        (span / 60.0).ceil()
    } else {
        1.0
    };
    let bins = ((span / bin).ceil() as usize).max(1);
    let mut good = vec![0u64; bins];
    let mut ok = vec![0u64; bins];
    for t in traces.iter() {
        let Some(record) = t.record() else { continue };
        let end = ns(record.end()).saturating_sub(start);
        let i = (((end as f64 * 1e-9) / bin) as usize).min(bins - 1);
        if t.succeeded() {
            ok[i] += 1;
        }
        if judge.is_good(&t) {
            good[i] += 1;
        }
    }
    let rate = |counts: &[u64]| -> Vec<(f64, f64)> {
        counts
            .iter()
            .enumerate()
            .map(|(i, &c)| ((i as f64 + 0.5) * bin, c as f64 / bin))
            .collect()
    };
    lines(
        "Goodput and throughput over time",
        "requests / s",
        "seconds",
        vec![
            ("succeeded", colour::THROUGHPUT, rate(&ok)),
            ("good (met the SLO)", colour::GOODPUT, rate(&good)),
        ],
        false,
    )
}

/// The sweep's curves: attainment (%) and goodput against the offered rate.
pub(crate) fn sweep(steps: &[SweepStep], target: f64) -> Result<(String, String)> {
    // In rate order: a search runs its rates out of order, and the curve must not double back.
    let mut steps: Vec<&SweepStep> = steps.iter().collect();
    steps.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let attainment: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (s.rate, s.summary.attainment * 100.0))
        .collect();
    let x_max = upper(steps.iter().map(|s| s.rate).fold(0.0, f64::max));
    let target_line = vec![(0.0, target * 100.0), (x_max, target * 100.0)];
    let first = lines(
        "SLO attainment against request rate",
        "attainment %",
        "offered rate (req/s)",
        vec![
            ("attainment", colour::ATTAINMENT, attainment),
            ("target", RGBColor(0, 0, 0), target_line),
        ],
        true,
    )?;
    let goodput: Vec<(f64, f64)> = steps.iter().map(|s| (s.rate, s.summary.goodput)).collect();
    let served: Vec<(f64, f64)> = steps
        .iter()
        .filter_map(|s| Some((s.rate, s.served_rate?)))
        .collect();
    let second = lines(
        "Goodput and served rate against request rate",
        "requests / s",
        "offered rate (req/s)",
        vec![
            ("goodput", colour::SWEEP_GOODPUT, goodput),
            ("served", RGBColor(120, 120, 120), served),
        ],
        true,
    )?;
    Ok((first, second))
}

/// A scatter of (tokens, seconds) points, drawn in milliseconds (at most `MAX_POINTS * 4`).
pub(crate) fn scatter(
    title: &str,
    points: &[(f64, f64)],
    x_desc: &str,
    colour: RGBColor,
) -> Result<String> {
    let step = points.len().div_ceil(MAX_POINTS * 4).max(1);
    let points: Vec<(f64, f64)> = points
        .iter()
        .step_by(step)
        .map(|&(x, s)| (x, s * 1e3))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let frame = Frame {
        caption: title,
        x_max: upper(points.iter().map(|p| p.0).fold(0.0, f64::max)),
        y_max: upper(points.iter().map(|p| p.1).fold(0.0, f64::max)),
        x_desc,
        y_desc: "ms",
        y_area: 60,
        empty: points.is_empty(),
        legend: false,
    };
    plot(&frame, |chart| {
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 2, colour.filled())),
            )
            .map(|_| ())
            .map_err(err)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_points_end_at_one_and_are_bounded() {
        let values: Vec<f64> = (0..10_000).map(|i| i as f64 * 1e-3).collect();
        let points = cdf_points(&values, 1e3);
        assert!(points.len() <= MAX_POINTS + 1);
        assert_eq!(points.last().copied(), Some((9_999.0, 1.0)));
        assert!(
            points
                .windows(2)
                .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1)
        );
    }

    #[test]
    fn charts_are_svg_with_the_series_colour() {
        let svg = cdf("TTFT", &[0.1, 0.2, 0.3], colour::TTFT, &[]).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("#1F77B4"), "line colour missing");
        assert!(!svg.contains("#5A5A5A"), "no error bar asked for");
        let empty = histogram("ITL", &[], colour::ITL).unwrap();
        assert!(empty.contains("no data"));
    }

    #[test]
    fn error_bars_are_drawn_at_their_percentile_and_widen_the_axis() {
        let bar = ErrorBar {
            at: 0.5,
            lo: 0.15,
            hi: 0.9,
        };
        let svg = cdf("TTFT", &[0.1, 0.2, 0.3], colour::TTFT, &[bar]).unwrap();
        // One segment and two ticks, in the bars' colour.
        assert_eq!(svg.matches("#5A5A5A").count(), 3, "{svg}");
        // The axis reaches the bar's upper end (900 ms, beyond the largest value, 300 ms):
        // the bar ends inside the 560-pixel chart, three times as far right as the CDF's
        // last point.
        let xs = |colour: &str| -> Vec<f64> {
            let at = svg
                .find(&format!("{colour}\" stroke-width=\"2\" points=\""))
                .unwrap();
            let points = svg[at..].split("points=\"").nth(1).unwrap();
            let points = points.split('"').next().unwrap();
            points
                .split_whitespace()
                .map(|p| p.split(',').next().unwrap().parse().unwrap())
                .collect()
        };
        let bar = xs("#5A5A5A");
        let line = xs("#1F77B4");
        let origin = line[0] - 100.0 * (line[line.len() - 1] - line[0]) / 200.0;
        assert!(bar[1] < 560.0, "{bar:?}");
        let ratio = (bar[1] - origin) / (line[line.len() - 1] - origin);
        assert!((ratio - 3.0).abs() < 0.1, "{ratio} {bar:?} {line:?}");
    }
}
