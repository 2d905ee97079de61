//! The model-server protocol through OpenTelemetry: an engine reporting through
//! `Meter::engine` into the OTel exporter, read back from the SDK's in-memory export and
//! checked against the protocol's one table (`tokenmeter_tests::gaie::PROTOCOL`), and LoRA
//! adapter sets that are replaced read 0, as in the Prometheus exporter.

use opentelemetry::metrics::MeterProvider;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tokenmeter::sink::{AdmissionReason, CacheConfig, WaitingReason};
use tokenmeter::{Labels, Meter};
use tokenmeter_otel::OtelSink;
use tokenmeter_tests::gaie::{check_otel, otel_points, signal};

fn sdk() -> (SdkMeterProvider, InMemoryMetricExporter) {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    (provider, exporter)
}

fn export(
    provider: &SdkMeterProvider,
    exporter: &InMemoryMetricExporter,
) -> std::collections::HashMap<String, Vec<tokenmeter_tests::gaie::Point>> {
    provider.force_flush().expect("flush");
    let exported = exporter.get_finished_metrics().expect("metrics");
    otel_points(exported.last().expect("one export"))
}

#[test]
fn the_otel_exporter_exports_every_gaie_signal_of_the_protocols_table() {
    let (provider, exporter) = sdk();
    let meter = Meter::builder()
        .sink(OtelSink::new(&provider.meter("tokenmeter")))
        .build();
    let engine = meter.engine(&Labels::server("").request_model("llama"));
    engine.set_cache_config(CacheConfig::new(16, 1000));
    engine.set_kv_cache_usage(0.25);
    engine.set_waiting_by_reason(WaitingReason::Capacity, 1);
    engine.set_waiting_by_reason(WaitingReason::Deferred, 0);
    engine.add_admission_rejections(AdmissionReason::QueueFull, 2);
    engine.set_lora_adapters(4, ["sql-lora"], ["chat-lora"]);
    let labels = Labels::server("chat").request_model("llama");
    let waiting = meter.series(&labels).start();
    let mut running = meter.series(&labels).start();
    running.mark_scheduled();

    let points = export(&provider, &exporter);
    check_otel(&points);
    let cache = &points[signal("tokenmeter_engine_cache_config_info").otel];
    assert_eq!(cache.len(), 1);
    assert_eq!(cache[0].1["num_gpu_blocks"], "1000");
    assert_eq!(cache[0].2, 1.0);
    let rejected = &points[signal("tokenmeter_engine_admission_rejections_total").otel];
    assert!(
        rejected
            .iter()
            .any(|(_, attrs, v)| attrs["reason"] == "queue_full" && *v == 2.0),
        "{rejected:?}"
    );
    drop((waiting, running));
}

#[test]
fn a_replaced_lora_adapter_set_reads_0_in_otel() {
    let (provider, exporter) = sdk();
    let meter = Meter::builder()
        .sink(OtelSink::new(&provider.meter("tokenmeter")))
        .build();
    let engine = meter.engine(&Labels::server("").request_model("llama"));
    engine.set_lora_adapters(2, ["a"], []);
    engine.set_lora_adapters(2, ["b"], ["a"]);
    let points = export(&provider, &exporter);
    let lora = &points[signal("tokenmeter_engine_lora_requests_info").otel];
    assert_eq!(lora.len(), 2, "{lora:?}");
    let value = |running: &str| {
        lora.iter()
            .find(|(_, attrs, _)| attrs["running_lora_adapters"] == running)
            .map(|(_, _, v)| *v)
            .unwrap_or_else(|| panic!("no set running {running}: {lora:?}"))
    };
    assert_eq!(value("a"), 0.0, "the replaced set reads 0");
    assert!(value("b") > 1.0e9, "the current set carries the Unix time");
}
