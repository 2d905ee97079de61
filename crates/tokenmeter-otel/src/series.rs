//! [`OtelSeries`]: one series' instruments and attribute sets; what the hot path touches.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;
use tokenmeter::sink::{FirstToken, Gauge, Items, SeriesSink};
use tokenmeter::{Labels, RequestRecord, Role};

use crate::attrs::SeriesAttributes;
use crate::instruments::Instruments;

/// Which prepared set an instrument records with.
#[derive(Clone, Copy, Debug)]
enum On {
    /// `gen_ai.*` attributes.
    Semconv,
    /// `gen_ai.*` + `role`, for `tokenmeter.*` instruments.
    Own,
}

/// The handles of one series: the role's instruments and every attribute set, prepared once.
pub(crate) struct OtelSeries {
    instruments: Arc<Instruments>,
    attrs: SeriesAttributes,
    server: bool,
    ttft: Histogram<f64>,
    itl: Histogram<f64>,
    itl_on: On,
    tpot: Histogram<f64>,
    tpot_on: On,
    e2e: Histogram<f64>,
    #[cfg(feature = "bound-instruments")]
    itl_bound: Option<opentelemetry::metrics::BoundHistogram<f64>>,
}

impl OtelSeries {
    pub(crate) fn new(instruments: Arc<Instruments>, labels: &Labels<'_>, bound: bool) -> Self {
        let attrs = SeriesAttributes::new(labels);
        let server = labels.role() == Role::Server;
        let i = &*instruments;
        let (ttft, itl, itl_on, tpot, tpot_on, e2e) = if server {
            let (ttft, itl, tpot) = (&i.server_ttft, &i.itl, &i.server_tpot);
            (ttft, itl, On::Own, tpot, On::Semconv, &i.server_duration)
        } else {
            let (ttft, itl, tpot) = (&i.client_ttfc, &i.client_tpoc, &i.client_tpot);
            (ttft, itl, On::Semconv, tpot, On::Own, &i.client_duration)
        };
        let _ = bound;
        Self {
            #[cfg(feature = "bound-instruments")]
            itl_bound: bound.then(|| itl.bind(set(&attrs, itl_on))),
            ttft: ttft.clone(),
            itl: itl.clone(),
            itl_on,
            tpot: tpot.clone(),
            tpot_on,
            e2e: e2e.clone(),
            server,
            attrs,
            instruments,
        }
    }

    fn set(&self, on: On) -> &[KeyValue] {
        set(&self.attrs, on)
    }

    /// Records ITL samples: the one recording path of `item` and `items`, which picks the
    /// bound instrument or the attribute set once per call.
    #[inline]
    fn record_itl(&self, gaps: impl Iterator<Item = Duration>) {
        #[cfg(feature = "bound-instruments")]
        if let Some(bound) = &self.itl_bound {
            gaps.for_each(|gap| bound.record(secs(gap)));
            return;
        }
        let attributes = self.set(self.itl_on);
        gaps.for_each(|gap| self.itl.record(secs(gap), attributes));
    }
}

fn set(attrs: &SeriesAttributes, on: On) -> &[KeyValue] {
    match on {
        On::Semconv => &attrs.semconv,
        On::Own => &attrs.own,
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl SeriesSink for OtelSeries {
    fn first_token(&self, event: &FirstToken) {
        self.ttft.record(secs(event.ttft), &self.attrs.semconv);
    }

    fn item(&self, gap: Duration, _tokens: u32) {
        self.record_itl(std::iter::once(gap));
    }

    #[inline]
    fn items(&self, items: Items<'_>) {
        self.record_itl(items.gaps());
    }

    fn end(&self, record: &RequestRecord) {
        let i = &*self.instruments;
        let own = &*self.attrs.own;
        self.e2e
            .record(secs(record.e2e), self.attrs.semconv_for(record.outcome));
        if let Some(tpot) = record.tpot() {
            self.tpot.record(secs(tpot), self.set(self.tpot_on));
        }
        if self.server {
            for (histogram, value) in [
                (&i.queue, record.queue),
                (&i.prefill, record.prefill),
                (&i.inference, record.inference),
            ] {
                if let Some(value) = value {
                    histogram.record(secs(value), own);
                }
            }
        }
        if let Some(decode) = record.decode {
            i.decode.record(secs(decode), own);
        }
        if let Some(input) = record.input_tokens {
            if !self.server {
                i.token_usage.record(input, &self.attrs.input);
            }
            i.input_tokens.add(input, own);
        }
        if record.output_tokens > 0 {
            if !self.server {
                i.token_usage
                    .record(record.output_tokens, &self.attrs.output);
            }
            i.output_tokens.add(record.output_tokens, own);
        }
        i.requests.add(1, self.attrs.outcome_for(record.outcome));
    }

    fn gauge(&self, gauge: Gauge, delta: i64) {
        let counter = match gauge {
            Gauge::Waiting => &self.instruments.waiting,
            Gauge::Running => &self.instruments.running,
            _ => return,
        };
        counter.add(delta, &self.attrs.own);
    }
}

impl fmt::Debug for OtelSeries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelSeries")
            .field("attributes", &self.attrs.semconv)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}
