//! The progress bar: on stderr, hidden when stderr is not a terminal.

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::measured::Measured;

/// Counts finished requests while a run goes.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: ProgressBar,
    ok: u64,
    failed: u64,
}

impl Progress {
    /// A bar for `total` requests; `label` names the run (e.g. the sweep step).
    pub(crate) fn new(total: u64, label: &str, enabled: bool) -> Self {
        let target = if enabled && std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        let style = ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(label.to_owned());
        Self {
            bar,
            ok: 0,
            failed: 0,
        }
    }

    /// One request finished.
    pub(crate) fn finished(&mut self, measured: &Measured) {
        if measured.succeeded() {
            self.ok += 1;
        } else {
            self.failed += 1;
        }
        self.bar
            .set_message(format!("ok {} · failed {}", self.ok, self.failed));
        self.bar.inc(1);
    }

    /// Removes the bar.
    pub(crate) fn done(self) {
        self.bar.finish_and_clear();
    }
}
