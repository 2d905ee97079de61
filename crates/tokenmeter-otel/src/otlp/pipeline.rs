//! [`OtlpPipeline`]: the running export path, and its bounded flush and shutdown.

use std::fmt;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader;
use opentelemetry_sdk::runtime;

use super::report::{Counters, Reporting};
use super::{ExportStats, OtlpConfig, OtlpError, transport};
use crate::OtelSink;

/// How long dropping a pipeline that was not shut down waits for its final export.
pub const DEFAULT_SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// A running OTLP export path: the sink to give a [`Meter`](tokenmeter::Meter), the SDK meter
/// provider, and a dedicated export thread.
///
/// Recording never waits for the network: measurements are aggregated in memory (bounded by
/// the number of series) and the export thread sends the cumulative totals every interval.
/// When the receiver is down or does not answer, each export gives up after the timeout, is
/// logged through `tracing` (target `tokenmeter_otel`) and counted in [`ExportStats`]; the
/// next one sends the totals again. Exports are not retried within an interval: with
/// cumulative temporality a retried batch would only arrive after a fresher one.
///
/// Call [`shutdown`](Self::shutdown) before exiting to send the last interval; dropping the
/// pipeline does the same with a wait of [`DEFAULT_SHUTDOWN_WAIT`].
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use tokenmeter::{Labels, Meter};
/// use tokenmeter_otel::{OtlpConfig, Protocol};
///
/// # fn main() -> Result<(), tokenmeter_otel::OtlpError> {
/// let otlp = OtlpConfig::new()
///     .protocol(Protocol::Grpc)
///     .endpoint("http://127.0.0.1:4317")
///     .service_name("chat-gateway")
///     .install()?;
/// let meter = Meter::builder().sink(otlp.sink()).build();
/// let series = meter.series(&Labels::client("chat").provider("openai").request_model("gpt-4o"));
///
/// let mut request = series.start();
/// request.record_tokens(1);
/// request.succeed();
///
/// otlp.shutdown(Duration::from_secs(5))?; // sends what is left, waits at most 5 s
/// # Ok(())
/// # }
/// ```
pub struct OtlpPipeline {
    provider: SdkMeterProvider,
    sink: OtelSink,
    counters: Arc<Counters>,
    worker: Option<Worker>,
}

impl OtlpPipeline {
    pub(crate) fn start(config: OtlpConfig) -> Result<Self, OtlpError> {
        let protocol = config.resolved_protocol()?;
        let timeout = config.resolved_timeout();
        let interval = config.resolved_interval();
        let exporter = transport::Settings::new(&config, protocol, timeout)?;
        let counters = Arc::new(Counters::default());
        let resource = resource(&config);
        let views = crate::view::views(config.histograms.clone(), config.cardinality_limit);

        let reporting = counters.clone();
        let (worker, provider) = Worker::spawn(move || {
            let exporter = Reporting::new(exporter.build()?, timeout, reporting);
            // The wrapper cuts each export off at `timeout`; the reader's own limit is a backstop.
            let reader = PeriodicReader::builder(exporter, runtime::Tokio)
                .with_interval(interval)
                .with_timeout(timeout + Duration::from_secs(1))
                .build();
            Ok(SdkMeterProvider::builder()
                .with_resource(resource)
                .with_reader(reader)
                .with_view(views)
                .build())
        })?;

        let scope = InstrumentationScope::builder("tokenmeter")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let sink = config.sink.build(&provider.meter_with_scope(scope));
        Ok(Self {
            provider,
            sink,
            counters,
            worker: Some(worker),
        })
    }

    /// The sink to add to a [`Meter`](tokenmeter::Meter) (cheap to clone).
    pub fn sink(&self) -> OtelSink {
        self.sink.clone()
    }

    /// The SDK meter provider, to create more instruments that export with these.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.provider
    }

    /// Counts of exports that succeeded and failed so far.
    pub fn stats(&self) -> ExportStats {
        self.counters.snapshot()
    }

    /// Exports now, waiting at most `wait`.
    ///
    /// # Errors
    ///
    /// [`OtlpError::FlushTimedOut`] when the export did not finish in time (it goes on in the
    /// background), [`OtlpError::Sdk`] when it failed.
    pub fn flush(&self, wait: Duration) -> Result<(), OtlpError> {
        let provider = self.provider.clone();
        bounded("flush", wait, move || provider.force_flush())
            .map_err(|e| e.unwrap_or(OtlpError::FlushTimedOut(wait)))
    }

    /// Sends what is left and stops the export thread, waiting at most `wait` for the final
    /// export. Measurements recorded afterwards are dropped.
    ///
    /// # Errors
    ///
    /// [`OtlpError::ShutdownTimedOut`] when the final export did not finish in time (it is
    /// abandoned), [`OtlpError::Sdk`] when it failed.
    pub fn shutdown(mut self, wait: Duration) -> Result<(), OtlpError> {
        self.stop(wait)
    }

    fn stop(&mut self, wait: Duration) -> Result<(), OtlpError> {
        let Some(worker) = self.worker.take() else {
            return Ok(());
        };
        let provider = self.provider.clone();
        let result = bounded("shutdown", wait, move || provider.shutdown())
            .map_err(|e| e.unwrap_or(OtlpError::ShutdownTimedOut(wait)));
        worker.stop();
        result
    }
}

impl Drop for OtlpPipeline {
    fn drop(&mut self) {
        if let Err(error) = self.stop(DEFAULT_SHUTDOWN_WAIT) {
            tracing::warn!(target: "tokenmeter_otel", %error, "OTLP pipeline dropped");
        }
    }
}

impl fmt::Debug for OtlpPipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtlpPipeline")
            .field("stats", &self.stats())
            .field("running", &self.worker.is_some())
            .finish_non_exhaustive()
    }
}

fn resource(config: &OtlpConfig) -> Resource {
    let mut builder = Resource::builder().with_attributes(config.resource.iter().cloned());
    if let Some(name) = &config.service_name {
        builder = builder.with_service_name(name.clone());
    }
    builder.build()
}

/// Runs `operation` on a helper thread and waits at most `wait` for it. `Err(None)` means it
/// did not finish in time.
fn bounded(
    operation: &'static str,
    wait: Duration,
    run: impl FnOnce() -> OTelSdkResult + Send + 'static,
) -> Result<(), Option<OtlpError>> {
    let (done, result) = mpsc::channel();
    thread::Builder::new()
        .name(format!("tokenmeter-otlp-{operation}"))
        .spawn(move || {
            let _ = done.send(run());
        })
        .map_err(|e| Some(OtlpError::Thread(e)))?;
    match result.recv_timeout(wait) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(Some(OtlpError::Sdk {
            operation,
            message: error.to_string(),
        })),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(None),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(Some(OtlpError::Sdk {
            operation,
            message: "the SDK call ended without a result".to_owned(),
        })),
    }
}

/// The export thread: a current-thread tokio runtime that runs the periodic reader and the
/// transport, so the pipeline works the same from `main`, a multi-thread runtime or a
/// current-thread one, and never competes with the application's tasks.
struct Worker {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Worker {
    fn spawn(
        build: impl FnOnce() -> Result<SdkMeterProvider, OtlpError> + Send + 'static,
    ) -> Result<(Self, SdkMeterProvider), OtlpError> {
        let (ready, built) = mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name("tokenmeter-otlp".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = ready.send(Err(OtlpError::Thread(error)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let result = build();
                    let ok = result.is_ok();
                    let _ = ready.send(result);
                    if ok {
                        let _ = stopped.await;
                    }
                });
                runtime.shutdown_background();
            })
            .map_err(OtlpError::Thread)?;
        let worker = Self {
            stop: Some(stop),
            thread: Some(thread),
        };
        match built.recv() {
            Ok(Ok(provider)) => Ok((worker, provider)),
            Ok(Err(error)) => {
                worker.stop();
                Err(error)
            }
            Err(_) => {
                worker.stop();
                Err(OtlpError::Thread(std::io::Error::other(
                    "the export thread ended before it was ready",
                )))
            }
        }
    }

    /// Stops the runtime (abandoning anything still in flight) and joins the thread.
    fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
