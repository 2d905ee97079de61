//! The global install helper: the recorder is installed once per process (this test binary),
//! the listener serves real buckets on loopback (read by a real Prometheus server too), and a
//! second install is refused with a fix.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokenmeter::{Labels, Meter};
use tokenmeter_prometheus::{Builder, DEFAULT_LISTEN, Error, Metric, Profile};

#[test]
fn install_serves_histograms_with_buckets_over_http_on_loopback() {
    assert_eq!(DEFAULT_LISTEN.to_string(), "127.0.0.1:9464");
    // A port that was free a moment ago may be taken before the exporter binds it (by another
    // test's server): then another one is tried. Nothing is installed when the bind fails.
    let mut attempts = 0;
    let (addr, (sink, handle)) = loop {
        attempts += 1;
        let addr: SocketAddr = ([127, 0, 0, 1], support::free_port()).into();
        let installed = Builder::new(Profile::Semconv)
            .listen(addr)
            .add_edges(Metric::Ttft, &[0.35])
            .and_then(Builder::install);
        match installed {
            Err(Error::Listen { .. }) if attempts < 5 => continue,
            installed => break (addr, installed.expect("install the exporter")),
        }
    };

    let again = Builder::new(Profile::Vllm).install_recorder();
    let err = again.expect_err("a second global recorder is refused");
    assert!(matches!(err, Error::AlreadyInstalled), "{err}");
    assert!(
        err.to_string().contains("build_recorder"),
        "the message says what to do: {err}"
    );

    let meter = Meter::builder().sink(sink).build();
    let mut request = meter
        .series(&Labels::server("chat").request_model("m"))
        .start();
    request.record_tokens(1);
    request.record_tokens(1);
    request.succeed();
    // The application's own histograms, through the macros, land in the same exposition and
    // are histograms too, never summaries.
    metrics::histogram!("my_app_handler_seconds").record(0.2);

    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        match support::http::get(addr, "/metrics") {
            Ok(r) if r.status == 200 && r.body.contains("my_app_handler_seconds_bucket") => {
                break r.body;
            }
            other => assert!(
                Instant::now() < deadline,
                "the listener on {addr} did not serve the metrics within 10 s: {other:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(body.contains("# TYPE gen_ai_server_time_to_first_token_seconds histogram"));
    assert!(body.contains(
        r#"gen_ai_server_time_to_first_token_seconds_bucket{gen_ai_operation_name="chat",gen_ai_request_model="m",le="0.35"} 1"#
    ));
    assert!(body.contains("# HELP gen_ai_server_request_duration_seconds "));
    assert!(body.contains("# TYPE my_app_handler_seconds histogram"));
    assert!(
        !body.contains("summary"),
        "no summary is ever rendered:\n{body}"
    );
    assert!(handle.render().contains("tokenmeter_requests_total"));

    // A real Prometheus server scrapes the listener (ours since issue 26, no longer the
    // exporter crate's): the target is up and the request is stored with its buckets.
    let prometheus = support::prometheus::Prometheus::start(&[support::prometheus::Job {
        name: "install",
        target: addr,
        path: "/metrics",
    }]);
    let limit = Duration::from_secs(15);
    prometheus.wait_for_value(r#"up{job="install"}"#, 1.0, limit);
    prometheus.wait_for_value(
        r#"sum(gen_ai_server_time_to_first_token_seconds_bucket{job="install",le="0.35"})"#,
        1.0,
        limit,
    );
    prometheus.wait_for_value(
        r#"sum(my_app_handler_seconds_count{job="install"})"#,
        1.0,
        limit,
    );
}

#[test]
fn a_busy_address_is_reported_with_a_fix() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr");
    let err = Builder::new(Profile::Semconv)
        .listen(addr)
        .install()
        .expect_err("the address is taken");
    assert!(matches!(err, Error::Listen { .. }), "{err}");
    assert!(err.to_string().contains("Builder::listen"), "{err}");
}
