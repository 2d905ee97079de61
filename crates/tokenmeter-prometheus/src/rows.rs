//! [`PromRow`]: a row of the conventions table as a profile publishes it: its Prometheus name,
//! help text and default bucket layout. The semconv profile publishes every row under its
//! OTel→Prometheus name; the vLLM profile renames rows (`vllm_rows`) and adds two of its
//! own.

use std::borrow::Cow;

use tokenmeter::conventions::{Conventions, Metric, Row, attr};

use crate::layout::Layout;
use crate::names::{Kind, MetricName};
use crate::profile::Profile;
use crate::vllm_rows as vllm;

/// A row under a profile's name.
#[derive(Clone, Debug)]
pub(crate) struct PromRow {
    /// The row (its feed, roles and attributes as this profile records them).
    pub(crate) row: Row,
    /// The name in the exposition.
    pub(crate) name: Cow<'static, str>,
    /// The `# HELP` text.
    pub(crate) help: Cow<'static, str>,
    /// Histogram, counter or gauge.
    pub(crate) kind: Kind,
    /// The default bucket layout (histograms).
    pub(crate) layout: Layout,
}

impl PromRow {
    /// `row` under its OTel→Prometheus name, with the description's attribute keys spelled as
    /// labels.
    fn semconv(row: &Row) -> Self {
        let instrument = row.instrument;
        let help = attr::ALL
            .iter()
            .fold(instrument.description.to_owned(), |text, key| {
                text.replace(key, &key.replace('.', "_"))
            });
        Self {
            row: *row,
            name: Cow::Owned(instrument.prometheus_name()),
            help: Cow::Owned(help),
            kind: Kind::of(instrument.kind),
            layout: Layout::Fixed(row.edges),
        }
    }

    /// `row` published as vLLM's `metric`.
    pub(crate) fn named(row: Row, metric: &MetricName, layout: Layout) -> Self {
        Self {
            row,
            name: Cow::Borrowed(metric.prometheus),
            help: Cow::Borrowed(metric.help),
            kind: metric.kind,
            layout,
        }
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
            if row.kind != Kind::Histogram {
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
        match row.kind {
            Kind::Histogram => recorder.describe_histogram(key, unit, help),
            Kind::Counter => recorder.describe_counter(key, unit, help),
            Kind::Gauge => recorder.describe_gauge(key, unit, help),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::semconv;

    /// The constants of [`names`](crate::names) are a view of the table: the same names, kinds,
    /// units and help texts as the rows publish.
    #[test]
    fn the_named_constants_are_what_the_table_publishes() {
        let table = Conventions::default();
        for profile in [Profile::Semconv, Profile::Vllm, Profile::VllmLegacy] {
            let mut published: Vec<(String, Kind, String)> = Vec::new();
            for row in profile.rows(&table) {
                let entry = (row.name.to_string(), row.kind, row.help.to_string());
                if !published.contains(&entry) {
                    published.push(entry);
                }
            }
            let mut named: Vec<(String, Kind, String)> = profile
                .metrics()
                .map(|m| (m.prometheus.to_owned(), m.kind, m.help.to_owned()))
                .collect();
            published.sort_by(|a, b| a.0.cmp(&b.0));
            named.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(published, named, "{profile}");
        }
        let semconv_names: Vec<_> = Profile::Semconv
            .rows(&table)
            .into_iter()
            .map(|r| r.name.into_owned())
            .collect();
        assert!(semconv_names.contains(&semconv::REQUESTS.prometheus.to_owned()));
    }
}
