//! The outputs of `tokenmeter bench --sweep`: the sweep's table, the token counts and error
//! samples on stdout, `--json` and `--html`.

use serde_json::json;

use crate::args::BenchArgs;
use crate::collect::Collected;
use crate::counts::{self, Counts};
use crate::interrupt::{self, Interrupt};
use crate::output::{self, html, table};
use crate::pipeline::Swept;
use crate::samples;

/// Shows and writes the sweep's outputs, then closes its trace. Returns every request and the
/// trace file's end (an error if a line was not written).
pub(super) fn write(
    args: &BenchArgs,
    swept: Swept,
    stop: &Interrupt,
) -> anyhow::Result<(Collected, anyhow::Result<()>)> {
    let Swept {
        info,
        result: sweep,
        collector,
    } = swept;
    let done = collector.done();
    let traces = &done.measured;
    let quiet = args.stdout_taken();
    output::show(quiet, &table::render_sweep(&info, &sweep));
    let counts = Counts::of(traces, &args.slo);
    output::show(quiet, &counts.render());
    let samples = samples::error_samples(traces);
    output::show(quiet, &samples::render(&samples));
    let interrupted = stop.interrupted();
    if interrupted {
        output::show(quiet, "\ninterrupted: the sweep stopped early\n");
    }
    if let Some(path) = &args.json {
        let value =
            json!({"run": info, "sweep": sweep, "counts": counts, "interrupted": interrupted});
        output::write_json(path, &value)?;
    }
    if let Some(path) = &args.html {
        let report = html::render_sweep(&info, &sweep, traces, &done.gaps)
            .map(|h| counts::insert_html(h, &samples::html(&samples, html::esc)))
            .map(|h| counts::insert_html(h, &counts.html(html::esc)));
        let n = traces.len();
        let report = report.map(|h| match interrupted {
            true => interrupt::mark_html(h, n, n),
            false => h,
        });
        output::write_html(path, report)?;
    }
    Ok(collector.finish())
}
