//! The standard `OTEL_*` environment variables configure the pipeline: protocol, endpoint,
//! headers, export interval, timeout and `service.name`. Environment variables are process-wide,
//! so each case runs this binary again as a child with its own environment; the parent runs a
//! real receiver and checks what arrives. (`harness = false`: prints its own summary line.)

mod common;

use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use tokenmeter::{Labels, Meter};
use tokenmeter_otel::names;
use tokenmeter_otel::{OtlpConfig, OtlpError};

use common::receiver::{Receiver, bind};

const CHILD: &str = "TOKENMETER_OTEL_ENV_CHILD";
const REQUESTS: u64 = 3;

fn main() {
    match std::env::var(CHILD).as_deref() {
        Ok("export") => child_exports(),
        Ok("bad-protocol") => child_refuses_protocol(),
        Ok(other) => panic!("unknown child mode {other}"),
        Err(_) => parent(),
    }
}

/// Installs from the environment alone, waits for one periodic export, then shuts down.
fn child_exports() {
    let otlp = OtlpConfig::new()
        .install()
        .expect("install from the environment");
    let meter = Meter::builder().sink(otlp.sink()).build();
    let series = meter.series(&Labels::server("chat").request_model("env"));
    for _ in 0..REQUESTS {
        let mut request = series.start();
        request.tokens(1);
        request.succeed();
    }
    let start = Instant::now();
    while otlp.stats().succeeded == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no periodic export within 10 s: OTEL_METRIC_EXPORT_INTERVAL was not honoured ({:?})",
            otlp.stats()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    otlp.shutdown(Duration::from_secs(5)).expect("shutdown");
}

fn child_refuses_protocol() {
    match OtlpConfig::new().install() {
        Err(OtlpError::UnsupportedProtocol { value, variable }) => {
            assert_eq!(value, "http/json");
            assert_eq!(variable, "OTEL_EXPORTER_OTLP_PROTOCOL");
        }
        other => panic!("expected UnsupportedProtocol, got {other:?}"),
    }
}

fn run_child(mode: &str, vars: &[(&str, String)]) -> ExitStatus {
    let mut command = Command::new(std::env::current_exe().expect("current exe"));
    command.env(CHILD, mode);
    for name in [
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
        "OTEL_RESOURCE_ATTRIBUTES",
    ] {
        command.env_remove(name);
    }
    command.envs(vars.iter().map(|(k, v)| (k, v)));
    let mut child = command.spawn().expect("spawn the child");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the `{mode}` child did not finish within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn exports_configured_by_environment(protocol: &str, runtime: &tokio::runtime::Runtime) {
    let listener = runtime.block_on(bind());
    let receiver = match protocol {
        "grpc" => Receiver::grpc(listener),
        _ => Receiver::http(listener),
    };
    let status = run_child(
        "export",
        &[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.to_owned()),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url()),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-api-key=env-key-456,x-tenant=acme".to_owned(),
            ),
            ("OTEL_SERVICE_NAME", format!("env-{protocol}")),
            ("OTEL_METRIC_EXPORT_INTERVAL", "100".to_owned()),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000".to_owned()),
        ],
    );
    assert!(status.success(), "the {protocol} child failed: {status}");
    let received = receiver.received();
    let last = received.last().expect("the receiver got no export");
    let header = |name: &str| {
        last.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-api-key").as_deref(), Some("env-key-456"));
    assert_eq!(header("x-tenant").as_deref(), Some("acme"));
    assert_eq!(
        last.snapshot.resource["service.name"],
        format!("env-{protocol}")
    );
    let requests = last.snapshot.total(names::REQUESTS.name, &[]) as u64;
    assert_eq!(requests, REQUESTS);
    runtime.block_on(receiver.stop());
}

/// A named case, run with the parent's runtime.
type Case = (&'static str, Box<dyn Fn(&tokio::runtime::Runtime)>);

fn main_cases() -> Vec<Case> {
    vec![
        (
            "grpc_configured_by_environment",
            Box::new(|rt| exports_configured_by_environment("grpc", rt)),
        ),
        (
            "http_configured_by_environment",
            Box::new(|rt| exports_configured_by_environment("http/protobuf", rt)),
        ),
        (
            "unsupported_protocol_in_environment_is_refused",
            Box::new(|_| {
                let vars = [("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".to_owned())];
                let status = run_child("bad-protocol", &vars);
                assert!(
                    status.success(),
                    "the child did not get UnsupportedProtocol: {status}"
                );
            }),
        ),
    ]
}

fn parent() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _enter = runtime.enter();
    let cases = main_cases();
    let mut failed = 0;
    for (name, case) in &cases {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&runtime)));
        match result {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    println!();
    println!(
        "test result: {}. {} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out",
        if failed == 0 { "ok" } else { "FAILED" },
        cases.len() - failed
    );
    if failed > 0 {
        std::process::exit(1);
    }
}
