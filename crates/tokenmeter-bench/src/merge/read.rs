//! Reading the `--trace` files of several processes onto one time line.
//!
//! Each line carries its run's wall-clock origin (`run_start_unix_ns`); the earliest origin
//! of all files becomes offset 0, and every offset of a file moves by its origin's distance
//! from it, in integer nanoseconds. A request id (with its sweep rate) may appear once over
//! all files: the same shard given twice is refused, not counted twice.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::trace::Trace;

/// One trace file, read.
#[derive(Debug)]
pub(crate) struct TraceFile {
    /// Where it was read from.
    pub(crate) path: PathBuf,
    /// Its lines, with their 1-based line numbers.
    pub(crate) lines: Vec<(usize, Trace)>,
    /// The run's wall-clock origin, when the trace has one.
    pub(crate) start: Option<u64>,
    /// The `--shard` that wrote it, if any.
    pub(crate) shard: Option<String>,
    /// The run's `--seed`, when the trace has one.
    pub(crate) seed: Option<u64>,
}

/// Reads `path`: one JSON object a line (blank lines skipped); all lines of one run.
pub(crate) fn read(path: &Path) -> anyhow::Result<TraceFile> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read trace {}; give the files written by --trace",
            path.display()
        )
    })?;
    let mut lines = Vec::new();
    let mut first: Option<(Option<u64>, Option<String>, Option<u64>)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let trace: Trace = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{number}: not a line of a tokenmeter --trace file",
                path.display()
            )
        })?;
        let run = (trace.run_start_unix_ns, trace.shard.clone(), trace.seed);
        match &first {
            None => first = Some(run),
            Some(seen) if *seen != run => bail!(
                "{}:{number}: run_start_unix_ns, seed or shard differs from the first line's: a trace \
                 file holds one run; give each process's file separately",
                path.display()
            ),
            Some(_) => {}
        }
        lines.push((number, trace));
    }
    let (start, shard, seed) =
        first.with_context(|| format!("{} holds no request", path.display()))?;
    Ok(TraceFile {
        path: path.to_owned(),
        lines,
        start,
        shard,
        seed,
    })
}

/// The lines of all `files` on one time line, ordered by request id; errors name the file and
/// line of a duplicate request, and a mix of files with and without a wall-clock origin.
pub(crate) fn align(files: &[TraceFile]) -> anyhow::Result<Vec<Trace>> {
    let with_start = files.iter().filter(|f| f.start.is_some()).count();
    if with_start != 0 && with_start != files.len() {
        let old = files
            .iter()
            .find(|f| f.start.is_none())
            .map(|f| f.path.display());
        bail!(
            "{} has no run_start_unix_ns (written by an older tokenmeter): its times cannot be \
             put on the others' time line; run it again with this version",
            old.expect("one file without a start")
        );
    }
    let base = files.iter().filter_map(|f| f.start).min().unwrap_or(0);
    let mut seen: HashMap<(u64, Option<u64>), (&Path, usize)> = HashMap::new();
    let mut out = Vec::new();
    for file in files {
        let shift = file.start.map_or(0, |s| s - base);
        for (number, trace) in &file.lines {
            let key = (trace.id, trace.rate.map(f64::to_bits));
            if let Some((path, line)) = seen.insert(key, (&file.path, *number)) {
                bail!(
                    "request {} is in {}:{line} and in {}:{number}: the same shard's trace was \
                     given twice (each request must come from one process); drop one of them",
                    trace.id,
                    path.display(),
                    file.path.display()
                );
            }
            out.push(shifted(trace, shift));
        }
    }
    out.sort_by(|a, b| (a.rate.map(f64::to_bits), a.id).cmp(&(b.rate.map(f64::to_bits), b.id)));
    Ok(out)
}

/// `trace` with every offset `by` nanoseconds later (none for a line without times).
fn shifted(trace: &Trace, by: u64) -> Trace {
    let mut t = trace.clone();
    // Due and ready times are kept for a request lost in flight too.
    t.due_ns = t.due_ns.map(|d| d + by);
    t.ready_ns = t.ready_ns.map(|r| r + by);
    let timeless = t.send_ns == 0 && t.end_ns == 0 && t.chunks.is_empty();
    if by == 0 || timeless {
        return t;
    }
    t.send_ns += by;
    t.end_ns += by;
    t.first_token_ns = t.first_token_ns.map(|f| f + by);
    for chunk in &mut t.chunks {
        chunk.0 += by;
    }
    t
}

/// Warnings about the shards of `files`: counts that differ, shards missing.
pub(crate) fn shard_warnings(files: &[TraceFile]) -> Vec<String> {
    let shards: BTreeSet<(u64, u64)> = files
        .iter()
        .filter_map(|f| f.shard.as_deref())
        .filter_map(|s| crate::shard::parse_shard(s).ok())
        .map(|s| (s.count, s.index))
        .collect();
    let counts: BTreeSet<u64> = shards.iter().map(|s| s.0).collect();
    let mut warnings = Vec::new();
    if counts.len() > 1 {
        warnings.push(format!(
            "the traces come from runs split {} ways: merge the shards of one run",
            counts
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    } else if let Some(&count) = counts.first() {
        let missing: Vec<String> = (0..count)
            .filter(|i| !shards.contains(&(count, *i)))
            .map(|i| format!("{i}/{count}"))
            .collect();
        if !missing.is_empty() {
            warnings.push(format!(
                "shard {} missing: the summary is of part of the run",
                missing.join(", ")
            ));
        }
    }
    warnings
}

/// The seed of the merged run: the one all `files` carry. When they disagree (or some carry
/// none), the first file's seed, and a warning naming each file's.
pub(crate) fn seed(files: &[TraceFile]) -> (Option<u64>, Option<String>) {
    let first = files.first().and_then(|f| f.seed);
    if files.iter().all(|f| f.seed == first) {
        let warning = (first.is_none() && !files.is_empty()).then(|| {
            "the traces carry no seed (written by an older tokenmeter): the seed shown is 0, \
             not the runs'"
                .to_owned()
        });
        return (first, warning);
    }
    let each: Vec<String> = files
        .iter()
        .map(|f| {
            let seed = f.seed.map_or_else(|| "none".to_owned(), |s| s.to_string());
            format!("{} seed {seed}", f.path.display())
        })
        .collect();
    let warning = format!(
        "the traces come from runs with different seeds ({}): the shards of one run share \
         --seed, so these are not one run's; the seed shown is the first file's",
        each.join(", ")
    );
    (first, Some(warning))
}
