//! [`PromRow`]: a row of the conventions table as a profile publishes it: under its
//! instrument's exposition name and help text, with its default bucket layout. The semconv
//! profile publishes every row as it is; the vLLM profile renames rows to vLLM's instruments
//! (`vllm_rows`) and adds three of its own.

use std::borrow::Cow;

use tokenmeter::conventions::{Conventions, InstrumentKind, Metric, Row};

use crate::layout::Layout;
use crate::names;
use crate::profile::Profile;
use crate::vllm_rows as vllm;

/// A row as a profile publishes it: under the exposition name and help text of its instrument
/// ([`names::exposition_name`], [`names::help`]), with its default bucket layout.
#[derive(Clone, Debug)]
pub(crate) struct PromRow {
    /// The row (its instrument, as this profile names it, and its feed, roles and attributes
    /// as this profile records them).
    pub(crate) row: Row,
    /// The name in the exposition.
    pub(crate) name: Cow<'static, str>,
    /// The `# HELP` text.
    pub(crate) help: Cow<'static, str>,
    /// The default bucket layout (histograms).
    pub(crate) layout: Layout,
}

impl PromRow {
    /// `row` as its instrument is published, with `layout`.
    pub(crate) fn new(row: Row, layout: Layout) -> Self {
        Self {
            row,
            name: names::exposition_name(&row.instrument),
            help: names::help(&row.instrument),
            layout,
        }
    }

    /// `row` as the semconv profile publishes it: under its OTel→Prometheus name, with its
    /// default edges.
    fn semconv(row: &Row) -> Self {
        Self::new(*row, Layout::Fixed(row.edges))
    }

    /// Histogram, counter, up-down counter or gauge.
    pub(crate) fn kind(&self) -> InstrumentKind {
        self.row.instrument.kind
    }

    /// The `metrics` unit for `describe_*`: seconds for `s`, a count for `{…}`, none for `1`.
    pub(crate) fn metrics_unit(&self) -> Option<metrics::Unit> {
        match self.row.instrument.unit {
            "s" => Some(metrics::Unit::Seconds),
            u if u.starts_with('{') => Some(metrics::Unit::Count),
            _ => None,
        }
    }
}

impl Profile {
    /// Every row of `table` as this profile publishes it, in table order (vLLM's own rows
    /// last).
    pub(crate) fn rows(self, table: &Conventions) -> Vec<PromRow> {
        match self {
            Profile::Semconv => table.rows().iter().map(PromRow::semconv).collect(),
            Profile::Vllm | Profile::VllmLegacy => {
                let mut rows: Vec<PromRow> = table
                    .rows()
                    .iter()
                    .filter(|row| !vllm::left_out(row))
                    .map(|row| vllm::rename(row).unwrap_or_else(|| PromRow::semconv(row)))
                    .collect();
                rows.extend(vllm::own_rows());
                if self == Profile::VllmLegacy {
                    let aliases = vllm::legacy_rows(&rows);
                    rows.extend(aliases);
                }
                rows
            }
        }
    }

    /// Every histogram of `table` in this profile, once per name: its name, the metrics whose
    /// settings apply (those of all its rows) and its default layout (that of its first row).
    pub(crate) fn histograms(self, table: &Conventions) -> Vec<(String, Vec<Metric>, Layout)> {
        let mut out: Vec<(String, Vec<Metric>, Layout)> = Vec::new();
        for row in self.rows(table) {
            if !row.row.is_histogram() {
                continue;
            }
            match out.iter_mut().find(|(name, ..)| *name == row.name) {
                Some((_, metrics, _)) => {
                    for metric in row.row.metrics {
                        if !metrics.contains(metric) {
                            metrics.push(*metric);
                        }
                    }
                }
                None => out.push((row.name.into_owned(), row.row.metrics.to_vec(), row.layout)),
            }
        }
        out
    }
}

/// Describes every row of `rows` (help text and unit) on `recorder`, once per name.
pub(crate) fn describe(rows: &[PromRow], recorder: &dyn metrics::Recorder) {
    let mut done: Vec<&str> = Vec::new();
    for row in rows {
        if done.contains(&&*row.name) {
            continue;
        }
        done.push(&row.name);
        let key = metrics::KeyName::from(row.name.clone().into_owned());
        let unit = row.metrics_unit();
        let help = metrics::SharedString::from(row.help.clone().into_owned());
        match row.kind() {
            InstrumentKind::Histogram => recorder.describe_histogram(key, unit, help),
            InstrumentKind::Counter => recorder.describe_counter(key, unit, help),
            InstrumentKind::UpDownCounter | InstrumentKind::Gauge => {
                recorder.describe_gauge(key, unit, help)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokenmeter::conventions::Instrument;

    use super::*;
    use crate::names::semconv;

    /// [`Profile::metrics`] is a view of the table: the instruments the rows are published as,
    /// each under one name.
    #[test]
    fn the_metrics_of_a_profile_are_what_the_table_publishes() {
        let table = Conventions::default();
        for profile in [Profile::Semconv, Profile::Vllm, Profile::VllmLegacy] {
            let mut published: Vec<(String, Instrument)> = Vec::new();
            for row in profile.rows(&table) {
                let entry = (row.name.into_owned(), row.row.instrument);
                if !published.contains(&entry) {
                    published.push(entry);
                }
            }
            let mut listed: Vec<(String, Instrument)> = profile
                .metrics()
                .map(|m| (names::exposition_name(m).into_owned(), *m))
                .collect();
            published.sort_by(|a, b| a.0.cmp(&b.0));
            listed.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(published, listed, "{profile}");
        }
        let semconv_rows: Vec<_> = Profile::Semconv
            .rows(&table)
            .into_iter()
            .map(|r| r.row.instrument)
            .collect();
        assert!(semconv_rows.contains(&semconv::REQUESTS));
    }
}
