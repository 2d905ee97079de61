//! TEMPORARY stand-ins for the statistics of `bench compare` (`compare`, `table`, `to_json`,
//! `Shape::differences`), written in parallel in `figures`, `bootstrap`, `verdict`, `run`,
//! `table`, `json` and `side`. This file is deleted when they are merged: nothing here is
//! the real thing.

use super::CompareSettings;
use super::comparison::Comparison;
use super::side::{Shape, Side};

/// Stand-in: fails until the statistics are merged.
///
/// ```
/// use tokenmeter_bench::compare::{CompareSettings, Side, compare};
///
/// assert!(compare(&Side::default(), &Side::default(), &CompareSettings::default()).is_err());
/// ```
pub fn compare(
    _base: &Side,
    _new: &Side,
    _settings: &CompareSettings,
) -> anyhow::Result<Comparison> {
    anyhow::bail!("the statistics of bench compare are not merged yet")
}

/// Stand-in: the sources only.
///
/// ```no_run
/// # fn f(c: &tokenmeter_bench::compare::Comparison) {
/// print!("{}", tokenmeter_bench::compare::table(c));
/// # }
/// ```
pub fn table(comparison: &Comparison) -> String {
    format!("{} vs {}\n", comparison.base.0, comparison.new.0)
}

/// Stand-in: the sources only.
///
/// ```no_run
/// # fn f(c: &tokenmeter_bench::compare::Comparison) {
/// let _ = tokenmeter_bench::compare::to_json(c);
/// # }
/// ```
pub fn to_json(comparison: &Comparison) -> serde_json::Value {
    serde_json::json!({"base": comparison.base.0, "new": comparison.new.0})
}

impl Shape {
    /// Stand-in: each facet both sides have with different values, as `name: a vs b`.
    ///
    /// ```
    /// use tokenmeter_bench::compare::Shape;
    ///
    /// assert!(Shape::default().differences(&Shape::default()).is_empty());
    /// ```
    pub fn differences(&self, other: &Shape) -> Vec<String> {
        self.facets
            .iter()
            .filter_map(|(name, a)| {
                let (_, b) = other.facets.iter().find(|(n, _)| n == name)?;
                (a != b).then(|| format!("{name}: {a} vs {b}"))
            })
            .collect()
    }
}
