//! The Prometheus text format, parsed strictly enough to check one scrape on its own (every
//! histogram's `_count` equals its `+Inf` bucket, buckets never fall as `le` grows) and two
//! scrapes against each other (counters, histogram counts and buckets never decrease).

use std::collections::BTreeMap;

/// Label names and values, in the order printed.
pub type Labels = Vec<(String, String)>;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Labels,
    pub value: f64,
}

impl Sample {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// `name{a="x",b="y"}` with the labels sorted and `le` left out when `without_le`: the same
    /// series gives the same key in every scrape, whatever order the exporter printed it in.
    fn key(&self, without_le: bool) -> String {
        let mut labels: Vec<&(String, String)> = self
            .labels
            .iter()
            .filter(|(n, _)| !(without_le && n == "le"))
            .collect();
        labels.sort();
        let inner: Vec<String> = labels.iter().map(|(n, v)| format!("{n}={v:?}")).collect();
        format!("{}{{{}}}", self.name, inner.join(","))
    }
}

/// A parsed exposition: the declared type of each family and every sample.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    pub types: BTreeMap<String, String>,
    pub samples: Vec<Sample>,
}

/// What [`Exposition::check`] found: histogram series checked and the observations they hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checked {
    pub histogram_series: usize,
    pub observations: u64,
}

impl Exposition {
    /// Parses `text`, or says which line is not the text format.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut words = rest.split_whitespace();
                match (words.next(), words.next()) {
                    (Some(name), Some(kind)) => {
                        out.types.insert(name.to_owned(), kind.to_owned());
                    }
                    _ => return Err(format!("line {}: bad TYPE line `{line}`", number + 1)),
                }
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let sample =
                parse_sample(line).map_err(|e| format!("line {}: {e}: `{line}`", number + 1))?;
            out.samples.push(sample);
        }
        Ok(out)
    }

    /// Names of the histogram families.
    pub fn histograms(&self) -> Vec<&str> {
        self.types
            .iter()
            .filter(|(_, kind)| kind.as_str() == "histogram")
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Checks every histogram on its own: each `_count` series has buckets, a `+Inf` bucket
    /// equal to the count, and bucket counts that never fall as `le` grows.
    pub fn check(&self) -> Result<Checked, String> {
        let mut checked = Checked::default();
        for family in self.histograms() {
            let bucket_name = format!("{family}_bucket");
            let count_name = format!("{family}_count");
            let mut buckets: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
            let mut counts: BTreeMap<String, f64> = BTreeMap::new();
            for sample in &self.samples {
                if sample.name == bucket_name {
                    let le = match sample.label("le") {
                        Some("+Inf") => f64::INFINITY,
                        Some(le) => le.parse().map_err(|_| format!("{family}: bad le `{le}`"))?,
                        None => return Err(format!("{family}: a bucket without le")),
                    };
                    let key = sample.key(true).replacen("_bucket{", "{", 1);
                    buckets.entry(key).or_default().push((le, sample.value));
                } else if sample.name == count_name {
                    let key = sample.key(true).replacen("_count{", "{", 1);
                    if counts.insert(key.clone(), sample.value).is_some() {
                        return Err(format!("{key}: two _count samples"));
                    }
                }
            }
            for (key, count) in &counts {
                let mut series = buckets
                    .remove(key)
                    .ok_or_else(|| format!("{key}: a _count of {count} without buckets"))?;
                series.sort_by(|a, b| a.0.total_cmp(&b.0));
                let infinite = series
                    .last()
                    .filter(|(le, _)| le.is_infinite())
                    .map(|(_, v)| *v)
                    .ok_or_else(|| format!("{key}: no +Inf bucket"))?;
                if infinite != *count {
                    return Err(format!(
                        "{key}: _count is {count} but the +Inf bucket is {infinite}"
                    ));
                }
                if let Some(pair) = series.windows(2).find(|w| w[1].1 < w[0].1) {
                    return Err(format!(
                        "{key}: bucket le={} holds {} but le={} holds {}",
                        pair[0].0, pair[0].1, pair[1].0, pair[1].1
                    ));
                }
                checked.histogram_series += 1;
                checked.observations += *count as u64;
            }
            if let Some(key) = buckets.keys().next() {
                return Err(format!("{key}: buckets without a _count"));
            }
        }
        Ok(checked)
    }

    /// Every value that may only grow: counters (`_total`), histogram counts and buckets, keyed
    /// by series.
    pub fn growing(&self) -> BTreeMap<String, f64> {
        let histograms = self.histograms();
        self.samples
            .iter()
            .filter(|s| {
                let counter = self.types.get(&s.name).is_some_and(|t| t == "counter")
                    || s.name.ends_with("_total");
                let histogram = histograms.iter().any(|h| {
                    s.name
                        .strip_prefix(h)
                        .is_some_and(|rest| rest == "_count" || rest == "_bucket")
                });
                counter || histogram
            })
            .map(|s| (s.key(false), s.value))
            .collect()
    }

    /// The sum of every sample named `name` whose labels include all of `labels`.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name && labels.iter().all(|(n, v)| s.label(n) == Some(*v)))
            .map(|s| s.value)
            .sum()
    }
}

/// Checks that nothing in `before` fell or disappeared in `after`.
pub fn never_decrease(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> Result<(), String> {
    for (key, old) in before {
        match after.get(key) {
            None => return Err(format!("{key} ({old}) disappeared")),
            Some(new) if new < old => return Err(format!("{key} fell from {old} to {new}")),
            Some(_) => {}
        }
    }
    Ok(())
}

/// Parses a whole scrape and checks it on its own; returns it and what was checked.
pub fn check_scrape(text: &str) -> Result<(Exposition, Checked), String> {
    let exposition = Exposition::parse(text)?;
    let checked = exposition.check()?;
    Ok((exposition, checked))
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(['{', ' '])
        .ok_or("no value after the metric name")?;
    let name = line[..name_end].to_owned();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner)?;
        labels = parsed;
        rest = after;
    }
    let value = rest
        .split_whitespace()
        .next()
        .ok_or("no value")?
        .parse::<f64>()
        .map_err(|e| format!("bad value ({e})"))?;
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Parses `a="x",b="y\"z"}` (after the `{`); returns the labels and the text after the `}`.
fn parse_labels(mut text: &str) -> Result<(Labels, &str), String> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start_matches([',', ' ']);
        if let Some(after) = text.strip_prefix('}') {
            return Ok((labels, after));
        }
        let (name, after) = text.split_once("=\"").ok_or("a label without =\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("an unterminated label value".to_owned()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("an unterminated escape".to_owned()),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.push((name.trim().to_owned(), value));
        text = &after[end + 1..];
    }
}
