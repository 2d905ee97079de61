//! The core's [`by_class`](tokenmeter::report::by_class) and
//! [`by_two_classes`](tokenmeter::report::by_two_classes) over the run's requests themselves:
//! the same grouping, labels and [`Summary`] per class, with no copy of each request's record
//! (the core's functions take a slice of records, and the breakdown reads the input length from
//! the request, not from its record: a copy of every record, twice, at the end of a long run).

use std::time::Duration;

use tokenmeter::report::{LengthClasses, Summary};

use crate::bench::measured::Measured;

/// How a request is read: a length, or a latency.
pub(super) type Read<'a, T> = &'a dyn Fn(&Measured) -> Option<T>;

/// `value` of the requests whose `key` length falls in each class, summarised, with each
/// class's label (requests without a key or a value are left out).
pub(super) fn by_class(
    requests: &[&Measured],
    classes: &LengthClasses,
    key: Read<'_, u64>,
    value: Read<'_, Duration>,
) -> Vec<(String, Summary)> {
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); classes.len()];
    for &m in requests {
        if let (Some(k), Some(v)) = (key(m), value(m)) {
            values[classes.class_of(k)].push(v.as_secs_f64());
        }
    }
    values
        .into_iter()
        .enumerate()
        .map(|(class, values)| (classes.label(class), Summary::of(values)))
        .collect()
}

/// The same over two lengths: one summary per (row class, column class), rows first.
pub(super) fn by_two_classes(
    requests: &[&Measured],
    rows: (&LengthClasses, Read<'_, u64>),
    columns: (&LengthClasses, Read<'_, u64>),
    value: Read<'_, Duration>,
) -> Vec<Vec<(String, Summary)>> {
    let ((row_classes, row_key), (column_classes, column_key)) = (rows, columns);
    let mut values = vec![vec![Vec::new(); column_classes.len()]; row_classes.len()];
    for &m in requests {
        if let (Some(r), Some(c), Some(v)) = (row_key(m), column_key(m), value(m)) {
            values[row_classes.class_of(r)][column_classes.class_of(c)].push(v.as_secs_f64());
        }
    }
    values
        .into_iter()
        .enumerate()
        .map(|(row, cells)| {
            cells
                .into_iter()
                .enumerate()
                .map(|(column, values)| {
                    let label = format!(
                        "{} × {}",
                        row_classes.label(row),
                        column_classes.label(column)
                    );
                    (label, Summary::of(values))
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use tokenmeter::report;
    use tokenmeter::{ErrorClass, RequestRecord};

    use super::*;
    use crate::bench::tests::manual_run::{MS, Run};

    /// Requests of various lengths and latencies, some failed (no TTFT).
    fn requests() -> Vec<Measured> {
        let mut run = Run::new();
        for k in 0..300_u32 {
            let send = MS * 20 * k;
            if k % 7 == 0 {
                run.error(send, send + MS, ErrorClass::Timeout);
            } else {
                run.ok(send, MS * (1 + k % 13), MS * (1 + k % 3), 1 + k * 37 % 40);
            }
        }
        for (k, m) in run.measured.iter_mut().enumerate() {
            m.input_tokens = (k as u64 * 53) % 3000;
        }
        run.measured
    }

    /// The core's functions on copies of the records with the request's input length give
    /// the same labels and summaries, bit for bit.
    #[test]
    fn the_summaries_are_the_cores_without_copies() {
        let run = requests();
        let refs: Vec<&Measured> = run.iter().collect();
        let copies: Vec<RequestRecord> = run
            .iter()
            .filter_map(|m| {
                let mut record = m.record.clone()?;
                record.input_tokens = Some(m.input_tokens);
                Some(record)
            })
            .collect();
        let input = LengthClasses::new(vec![500, 1500]).unwrap();
        let output = LengthClasses::new(vec![300]).unwrap();
        let ttft = |m: &Measured| m.record.as_ref()?.ttft;
        let input_of = |m: &Measured| Some(m.input_tokens);
        let output_of = |m: &Measured| Some(m.output_tokens());
        let ours = by_class(&refs, &input, &input_of, &ttft);
        let core = report::by_class(&copies, &input, |r| r.input_tokens, |r| r.ttft);
        let core: Vec<(String, Summary)> = core.into_iter().map(|c| (c.label, c.summary)).collect();
        assert_eq!(ours, core);
        let ours = by_two_classes(&refs, (&input, &input_of), (&output, &output_of), &ttft);
        let core = report::by_two_classes(
            &copies,
            (&input, &|r: &RequestRecord| r.input_tokens),
            (&output, &|r: &RequestRecord| Some(r.output_tokens)),
            |r| r.ttft,
        );
        let core: Vec<Vec<(String, Summary)>> = core
            .into_iter()
            .map(|row| row.into_iter().map(|c| (c.label, c.summary)).collect())
            .collect();
        assert_eq!(ours, core);
    }
}
