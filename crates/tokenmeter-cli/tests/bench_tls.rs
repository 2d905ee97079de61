//! HTTPS in the default build, over real TLS on loopback: a CA and a server certificate made by
//! the test, the OpenAI routes behind rustls. The CA is trusted through `--ca-cert` or
//! `SSL_CERT_FILE`; unknown, it fails before any request with the fix; `--insecure` skips
//! verification and says so.
#[path = "bench_support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::process::Output;
use std::sync::{Arc, Mutex};

use support::routes::openai_routes;
use support::tls::{TestCa, serve_tls};
use support::{temp_dir, text, tokenmeter};

/// The OpenAI routes over TLS with `ca`'s server certificate, and the paths asked.
fn server(ca: &TestCa) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let paths = Arc::new(Mutex::new(Vec::new()));
    let seen = paths.clone();
    let addr = serve_tls(ca.server.clone(), move |request| {
        openai_routes(request, &seen)
    });
    (addr, paths)
}

/// `tokenmeter bench` of two requests at `url` (the model from the list), with `extra` flags
/// and environment, and without the system's CA settings.
fn bench(url: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = tokenmeter();
    command
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR")
        .envs(env.iter().copied())
        .args(["bench", "--url", url, "-n", "2", "--rate", "inf"])
        .args(["--no-progress", "--timeout", "10s"])
        .args(extra);
    command.output().expect("the tokenmeter binary runs")
}

/// The chat requests a run made.
fn chats(paths: &Mutex<Vec<String>>) -> usize {
    let paths = paths.lock().unwrap();
    paths
        .iter()
        .filter(|p| p.as_str() == "/v1/chat/completions")
        .count()
}

#[test]
fn a_test_ca_given_by_ca_cert_or_ssl_cert_file_is_trusted() {
    let ca = TestCa::new();
    let dir = temp_dir("bench-tls-trusted");
    let ca_file = ca.write_ca(&dir, "ca.pem");
    let ca_file = ca_file.to_str().unwrap();

    let (addr, paths) = server(&ca);
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("https://{host}:{}/v1", addr.port());
        let output = bench(&url, &["--ca-cert", ca_file], &[]);
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{url}:\n{stdout}\n{stderr}");
        assert!(
            stdout.contains(&format!(
                "https://{host}:{}/v1/chat/completions · model listed-model",
                addr.port()
            )),
            "{stdout}"
        );
    }
    assert_eq!(chats(&paths), 4, "{:?}", paths.lock().unwrap());

    let (addr, paths) = server(&ca);
    let url = format!("https://127.0.0.1:{}/v1/", addr.port());
    let output = bench(&url, &[], &[("SSL_CERT_FILE", ca_file)]);
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "SSL_CERT_FILE:\n{stdout}\n{stderr}"
    );
    assert_eq!(chats(&paths), 2);
}

#[test]
fn an_unknown_ca_fails_before_any_request_and_names_the_fix() {
    let ca = TestCa::new();
    let (addr, paths) = server(&ca);
    let url = format!("https://127.0.0.1:{}/v1", addr.port());
    // Trusting another CA is the same as trusting none of the server's.
    let other = TestCa::new();
    let dir = temp_dir("bench-tls-unknown");
    let other_file = other.write_ca(&dir, "other.pem");
    for extra in [vec![], vec!["--ca-cert", other_file.to_str().unwrap()]] {
        let output = bench(&url, &extra, &[]);
        let (stdout, stderr) = text(&output);
        assert!(!output.status.success(), "{extra:?} succeeded:\n{stdout}");
        assert!(
            stderr.contains("cannot open an HTTPS connection") && stderr.contains("--ca-cert"),
            "{extra:?}:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(chats(&paths), 0, "no request was measured");
}

#[test]
fn insecure_skips_verification_and_warns() {
    let ca = TestCa::new();
    let (addr, paths) = server(&ca);
    let url = format!("https://127.0.0.1:{}/v1", addr.port());
    let output = bench(&url, &["--insecure", "--model", "m"], &[]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("--insecure") && stderr.contains("not verified"),
        "{stderr}"
    );
    assert_eq!(chats(&paths), 2);
}

#[test]
fn a_bad_ca_file_is_named() {
    let dir = temp_dir("bench-tls-bad-file");
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    for (path, fragment) in [
        ("/nonexistent/ca.pem", "cannot read /nonexistent/ca.pem"),
        (empty.to_str().unwrap(), "BEGIN CERTIFICATE"),
    ] {
        let output = bench("https://127.0.0.1:1/v1", &["--ca-cert", path], &[]);
        let (_, stderr) = text(&output);
        assert!(!output.status.success());
        assert!(
            stderr.contains(fragment) && stderr.contains("--ca-cert"),
            "{path}:\n{stderr}"
        );
    }
}

/// The command of the README's "Benchmark a real server", word for word but for the host (the
/// test's TLS server, its CA in `SSL_CERT_FILE` as a system store would hold it), the request
/// count (3, not 300) and the rate: it must run over https as the README's install step builds
/// the binary, and write what it says it writes.
#[test]
fn the_readme_recipe_runs_over_https() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("the README");
    let recipe = readme
        .split("## Benchmark a real server")
        .nth(1)
        .and_then(|section| section.split("```sh\n").nth(1))
        .and_then(|block| block.split("```").next())
        .expect("the README's recipe block");
    let command = recipe
        .lines()
        .skip_while(|line| !line.starts_with("tokenmeter bench"))
        .map(|line| line.trim().trim_end_matches('\\'))
        .collect::<Vec<_>>()
        .join(" ");
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[..2], ["tokenmeter", "bench"], "{command}");
    assert!(
        command.contains("--url https://api.example.com/v1 "),
        "{command}"
    );

    let ca = TestCa::new();
    let dir = temp_dir("bench-tls-readme");
    let ca_file = ca.write_ca(&dir, "ca.pem");
    let (addr, paths) = server(&ca);
    let url = format!("https://localhost:{}/v1", addr.port());
    let args: Vec<String> = words[2..]
        .iter()
        .map(|word| match *word {
            "https://api.example.com/v1" => url.clone(),
            "300" => "3".to_owned(),
            "5" => "50".to_owned(),
            "examples/slo.toml" => {
                concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/slo.toml").to_owned()
            }
            other => other.to_owned(),
        })
        .collect();
    let output = tokenmeter()
        .current_dir(&dir)
        .env("OPENAI_API_KEY", "sk-readme-recipe-key")
        .env("SSL_CERT_FILE", &ca_file)
        .env_remove("SSL_CERT_DIR")
        .arg("bench")
        .args(&args)
        .arg("--no-progress")
        .output()
        .expect("the tokenmeter binary runs");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{args:?}:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("{url}/chat/completions · model my-model")),
        "{stdout}"
    );
    assert_eq!(chats(&paths), 3);
    for file in ["run.json", "trace.jsonl", "report.html"] {
        assert!(dir.join(file).is_file(), "{file} was not written");
    }
}
