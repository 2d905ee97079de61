//! The instruments, created once per sink from an OpenTelemetry [`Meter`]: one per distinct
//! name of the conventions table, shared by the rows that have that name.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter, UpDownCounter};
use tokenmeter::conventions::{Conventions, InstrumentKind, Row, Value};

use crate::Buckets;

/// One instrument. Cloning it is one reference count.
#[derive(Clone, Debug)]
pub(crate) enum Instrument {
    /// A histogram of seconds.
    Seconds(Histogram<f64>),
    /// A histogram of counts (tokens, sequences).
    Counts(Histogram<u64>),
    Counter(Counter<u64>),
    UpDown(UpDownCounter<i64>),
    Gauge(Gauge<f64>),
}

impl Instrument {
    fn new(meter: &Meter, buckets: &Buckets, table: &Conventions, row: &Row) -> Self {
        let i = row.instrument;
        let edges = || buckets.edges_in(table, i.name);
        match i.kind {
            InstrumentKind::Histogram if row.is_seconds() => {
                let builder = meter
                    .f64_histogram(i.name)
                    .with_unit(i.unit)
                    .with_description(i.description);
                Instrument::Seconds(match edges() {
                    Some(edges) => builder.with_boundaries(edges).build(),
                    None => builder.build(),
                })
            }
            InstrumentKind::Histogram => {
                let builder = meter
                    .u64_histogram(i.name)
                    .with_unit(i.unit)
                    .with_description(i.description);
                Instrument::Counts(match edges() {
                    Some(edges) => builder.with_boundaries(edges).build(),
                    None => builder.build(),
                })
            }
            InstrumentKind::Counter => Instrument::Counter(
                meter
                    .u64_counter(i.name)
                    .with_unit(i.unit)
                    .with_description(i.description)
                    .build(),
            ),
            InstrumentKind::UpDownCounter => Instrument::UpDown(
                meter
                    .i64_up_down_counter(i.name)
                    .with_unit(i.unit)
                    .with_description(i.description)
                    .build(),
            ),
            InstrumentKind::Gauge => Instrument::Gauge(
                meter
                    .f64_gauge(i.name)
                    .with_unit(i.unit)
                    .with_description(i.description)
                    .build(),
            ),
        }
    }

    /// Records `value` with `attributes`.
    #[inline]
    pub(crate) fn record(&self, value: Value, attributes: &[KeyValue]) {
        match self {
            Instrument::Seconds(h) => h.record(value.as_f64(), attributes),
            Instrument::Counts(h) => h.record(value.as_u64(), attributes),
            Instrument::Counter(c) => c.add(value.as_u64(), attributes),
            Instrument::UpDown(c) => c.add(value.as_i64(), attributes),
            Instrument::Gauge(g) => g.record(value.as_f64(), attributes),
        }
    }
}

/// The table and its instruments, one per row (rows that share a name share the instrument).
#[derive(Debug)]
pub(crate) struct Instruments {
    pub(crate) rows: Box<[(Row, Instrument)]>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter, buckets: &Buckets, table: &Conventions) -> Self {
        let mut rows: Vec<(Row, Instrument)> = Vec::with_capacity(table.rows().len());
        for row in table.rows() {
            let shared = rows
                .iter()
                .find(|(r, _)| r.instrument.name == row.instrument.name)
                .map(|(_, instrument)| instrument.clone());
            let instrument = shared.unwrap_or_else(|| Instrument::new(meter, buckets, table, row));
            rows.push((*row, instrument));
        }
        Self { rows: rows.into() }
    }
}
