//! `--slo-class NAME:ttft=200ms,tpot=50ms[:WEIGHT]`: workload classes that send their own
//! objectives in the `x-slo-ttft-ms` and `x-slo-tpot-ms` request headers (the ones llm-d's
//! endpoint picker and `tokenmeter serve --slo-spec` read). Requests take the classes in turn,
//! in proportion to their weights, or the class a dataset line names (`"slo_class"`); the
//! report gives each class's attainment beside the server's counters of the same class.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use tokenmeter::request::{MAX_TARGET_MS, SloTargets};
use tokenmeter_slo::spec::parse_duration;

use crate::format::format_duration;

/// The most classes a run declares: each is a row of the report and a label value.
///
/// ```
/// let mut plan = tokenmeter_bench::Plan::builder();
/// for i in 0..=tokenmeter_bench::MAX_SLO_CLASSES {
///     plan = plan.slo_class(&format!("c{i}:ttft=1s"));
/// }
/// assert!(plan.build().unwrap_err().to_string().contains("at most 16"));
/// ```
pub const MAX_SLO_CLASSES: usize = 16;

/// One `--slo-class`: a name, the objectives its requests send, and its share of the requests.
///
/// ```
/// use tokenmeter_bench::SloClassArg;
///
/// let class: SloClassArg = "interactive:ttft=200ms,tpot=50ms:3".parse()?;
/// assert_eq!(class.to_string(), "interactive:ttft=200ms,tpot=50ms:3");
/// assert!("batch:ttft=12.5ms".parse::<SloClassArg>().unwrap_err().contains("whole milliseconds"));
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SloClassArg {
    /// The class's name (letters, digits, `_`, `-`): the server's `slo_class` when its spec
    /// declares the same class.
    pub(crate) name: String,
    /// What its requests send.
    pub(crate) targets: SloTargets,
    /// Its share of the requests, against the other classes' weights (at least 1).
    pub(crate) weight: u32,
}

impl FromStr for SloClassArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let usage = "write NAME:ttft=200ms,tpot=50ms[:WEIGHT], e.g. --slo-class interactive:ttft=200ms,tpot=50ms:3";
        let mut parts = text.trim().splitn(3, ':');
        let name = parts.next().unwrap_or_default().trim();
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!(
                "`{name}` is not an SLO class name: use 1 to 64 letters, digits, `_` or `-`; {usage}"
            ));
        }
        let objectives = parts
            .next()
            .ok_or_else(|| format!("the class `{name}` has no objectives; {usage}"))?;
        let (mut ttft, mut tpot) = (None, None);
        for part in objectives.split(',').map(str::trim) {
            let (metric, value) = part.split_once('=').ok_or_else(|| {
                format!("`{part}` is not `ttft=DURATION` or `tpot=DURATION`; {usage}")
            })?;
            let slot = match metric.trim() {
                "ttft" => &mut ttft,
                "tpot" => &mut tpot,
                other => {
                    return Err(format!(
                        "`{other}` cannot be sent as a header objective: use ttft or tpot; {usage}"
                    ));
                }
            };
            if slot.is_some() {
                return Err(format!("`{}` is given twice in `{name}`", metric.trim()));
            }
            *slot = Some(whole_ms(value)?);
        }
        let weight = match parts.next() {
            None => 1,
            Some(w) => w
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|w| (1..=1_000).contains(w))
                .ok_or_else(|| {
                    format!("the weight `{w}` of `{name}` is not a whole number from 1 to 1000")
                })?,
        };
        Ok(Self {
            name: name.to_owned(),
            targets: SloTargets::new(ttft, tpot),
            weight,
        })
    }
}

/// A duration the headers can carry: whole milliseconds from 1 to [`MAX_TARGET_MS`].
fn whole_ms(value: &str) -> Result<Duration, String> {
    let duration = parse_duration(value)?;
    let ms = duration.as_millis();
    if duration.subsec_nanos() % 1_000_000 != 0 || ms == 0 || ms > u128::from(MAX_TARGET_MS) {
        return Err(format!(
            "`{}` cannot be sent: the headers carry whole milliseconds from 1ms to 1h",
            value.trim()
        ));
    }
    Ok(duration)
}

impl SloClassArg {
    /// The objectives its requests send, as the flag writes them: `ttft=200ms,tpot=50ms`.
    pub(crate) fn objectives(&self) -> String {
        let parts: Vec<String> = [("ttft", self.targets.ttft), ("tpot", self.targets.tpot)]
            .into_iter()
            .filter_map(|(n, d)| Some(format!("{n}={}", format_duration(d?))))
            .collect();
        parts.join(",")
    }
}

impl fmt::Display for SloClassArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name, self.objectives())?;
        if self.weight != 1 {
            write!(f, ":{}", self.weight)?;
        }
        Ok(())
    }
}

/// The class a request belongs to: its index among the run's classes and what it sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SloTag {
    /// Index in the run's `--slo-class` list.
    pub(crate) class: u16,
    /// The objectives its headers carry.
    pub(crate) targets: SloTargets,
}

/// The run's classes, checked: names distinct, at most [`MAX_SLO_CLASSES`].
#[derive(Clone, Debug, Default)]
pub(crate) struct SloClasses {
    classes: Vec<SloClassArg>,
    /// The classes' weights, summed (the length of one round of turns).
    round: u64,
}

impl SloClasses {
    /// Checks `classes`.
    pub(crate) fn new(classes: &[SloClassArg]) -> anyhow::Result<Self> {
        if classes.len() > MAX_SLO_CLASSES {
            anyhow::bail!(
                "{} --slo-class given; at most {MAX_SLO_CLASSES} (each is a row of the report)",
                classes.len()
            );
        }
        for (i, class) in classes.iter().enumerate() {
            if classes[..i].iter().any(|c| c.name == class.name) {
                anyhow::bail!("the SLO class `{}` is declared twice", class.name);
            }
        }
        Ok(Self {
            classes: classes.to_vec(),
            round: classes.iter().map(|c| u64::from(c.weight)).sum(),
        })
    }

    /// The class of the `index`-th request (a conversation counts once): the one `named` (a
    /// dataset line's `slo_class`), else the classes in turn by weight; `None` without classes.
    pub(crate) fn tag(&self, index: u64, named: Option<&str>) -> anyhow::Result<Option<SloTag>> {
        let position = match named {
            Some(name) => Some(self.position(name)?),
            None if self.round == 0 => None,
            None => {
                let mut slot = index % self.round;
                self.classes.iter().position(|c| {
                    let inside = slot < u64::from(c.weight);
                    slot = slot.saturating_sub(u64::from(c.weight));
                    inside
                })
            }
        };
        Ok(position.map(|i| SloTag {
            class: i as u16,
            targets: self.classes[i].targets,
        }))
    }

    /// The index of the class `name`, or an error saying how to declare it.
    pub(crate) fn position(&self, name: &str) -> anyhow::Result<usize> {
        self.classes.iter().position(|c| c.name == name).ok_or_else(|| {
            let shown: String = name.chars().take(64).collect();
            anyhow::anyhow!(
                "the dataset names the SLO class {shown:?}, which no --slo-class declares; declare \
                 it, e.g. --slo-class NAME:ttft=500ms"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> Result<SloClassArg, String> {
        text.parse()
    }

    #[test]
    fn the_flag_reads_names_objectives_and_weights() {
        let c = class("interactive:ttft=200ms,tpot=50ms:3").unwrap();
        assert_eq!(c.targets.ttft, Some(Duration::from_millis(200)));
        assert_eq!(c.targets.tpot, Some(Duration::from_millis(50)));
        assert_eq!(c.weight, 3);
        assert_eq!(
            class("batch:ttft=10s").unwrap().to_string(),
            "batch:ttft=10s"
        );
        for (bad, why) in [
            ("", "not an SLO class name"),
            ("a b:ttft=1s", "not an SLO class name"),
            ("x", "no objectives"),
            ("x:e2e=1s", "use ttft or tpot"),
            ("x:ttft=1s,ttft=2s", "twice"),
            ("x:ttft=0.5ms", "whole milliseconds"),
            ("x:ttft=2h", "whole milliseconds"),
            ("x:ttft=1s:0", "from 1 to 1000"),
            ("x:ttft", "not `ttft=DURATION`"),
        ] {
            let e = class(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn requests_take_the_classes_in_turn_by_weight() {
        let classes =
            SloClasses::new(&[class("a:ttft=1s:2").unwrap(), class("b:tpot=20ms").unwrap()])
                .unwrap();
        let order: Vec<u16> = (0..6)
            .map(|i| classes.tag(i, None).unwrap().unwrap().class)
            .collect();
        assert_eq!(order, [0, 0, 1, 0, 0, 1]);
        assert_eq!(classes.tag(0, Some("b")).unwrap().unwrap().class, 1);
        let e = classes.tag(0, Some("c")).unwrap_err().to_string();
        assert!(e.contains("no --slo-class declares"), "{e}");
        assert_eq!(SloClasses::default().tag(3, None).unwrap(), None);
        let twice = SloClasses::new(&[class("a:ttft=1s").unwrap(), class("a:ttft=2s").unwrap()]);
        assert!(twice.unwrap_err().to_string().contains("declared twice"));
    }
}
