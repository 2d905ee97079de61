//! The standard `OTEL_*` environment variables configure the pipeline: protocol, endpoint,
//! headers, export interval, timeout and `service.name`. Environment variables are process-wide,
//! so each case runs this binary again as a child with its own environment; the parent runs a
//! real receiver and checks what arrives. The child is the `child` test of this binary, selected
//! with `--exact child` and told what to do by an environment variable; run normally it does
//! nothing.

mod common;

use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use tokenmeter::{Labels, Meter};
use tokenmeter_otel::OtlpError;
use tokenmeter_otel::names;

use common::receiver::{Receiver, bind};

const CHILD: &str = "TOKENMETER_OTEL_ENV_CHILD";
const CHILD_RAN: &str = "tokenmeter-otel env child ran:";
const REQUESTS: u64 = 3;

/// The child side: does what the parent asked through [`CHILD`], or nothing in a normal run.
#[test]
fn child() {
    let mode = std::env::var(CHILD);
    match mode.as_deref() {
        Ok("export") => child_exports(),
        Ok("bad-protocol") => child_refuses_protocol(),
        Ok(other) => panic!("unknown child mode {other}"),
        Err(_) => return,
    }
    // The parent checks this line: a child that ran nothing must not pass.
    println!("{CHILD_RAN} {}", mode.unwrap_or_default());
}

/// Installs from the environment alone, waits for one periodic export, then shuts down.
fn child_exports() {
    let otlp = common::otlp_config()
        .install()
        .expect("install from the environment");
    let meter = Meter::builder().sink(otlp.sink()).build();
    let series = meter.series(&Labels::server("chat").request_model("env"));
    for _ in 0..REQUESTS {
        let mut request = series.start();
        request.record_tokens(1);
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
    match common::otlp_config().install() {
        Err(OtlpError::UnsupportedProtocol { value, variable }) => {
            assert_eq!(value, "http/json");
            assert_eq!(variable, "OTEL_EXPORTER_OTLP_PROTOCOL");
        }
        other => panic!("expected UnsupportedProtocol, got {other:?}"),
    }
}

fn run_child(mode: &str, vars: &[(&str, String)]) -> ExitStatus {
    let mut command = Command::new(std::env::current_exe().expect("current exe"));
    command
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, mode);
    for name in [
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
        "OTEL_RESOURCE_ATTRIBUTES",
    ] {
        command.env_remove(name);
    }
    command.envs(vars.iter().map(|(k, v)| (k, v)));
    command.stdout(std::process::Stdio::piped());
    let mut child = command.spawn().expect("spawn the child");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut out = String::new();
            if let Some(mut stdout) = child.stdout.take() {
                let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
            }
            assert!(
                out.contains(&format!("{CHILD_RAN} {mode}")),
                "the `{mode}` child did not run its case:\n{out}"
            );
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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

#[test]
fn grpc_configured_by_environment() {
    let runtime = runtime();
    let _enter = runtime.enter();
    exports_configured_by_environment("grpc", &runtime);
}

#[test]
fn http_configured_by_environment() {
    let runtime = runtime();
    let _enter = runtime.enter();
    exports_configured_by_environment("http/protobuf", &runtime);
}

#[test]
fn unsupported_protocol_in_environment_is_refused() {
    let vars = [("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".to_owned())];
    let status = run_child("bad-protocol", &vars);
    assert!(
        status.success(),
        "the child did not get UnsupportedProtocol: {status}"
    );
}
