//! `--url` as users write it, over real HTTP on loopback: the host alone, the OpenAI base URL
//! (`…/v1`, with or without the trailing slash) and the endpoint's full URL all reach the
//! endpoint `--endpoint` names, the model list is read next to it, and the URL printed is the
//! one requested. The server answers only at the real paths (404 elsewhere, as a real one
//! does), so a doubled `/v1/v1/…` cannot succeed.
#[path = "bench_support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use support::routes::openai_routes;
use support::{bench, serve, text};

/// The OpenAI routes on 127.0.0.1, and the paths they were asked for.
fn server() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let paths = Arc::new(Mutex::new(Vec::new()));
    let seen = paths.clone();
    let addr = serve(move |request| openai_routes(request, &seen));
    (addr, paths)
}

/// Runs two requests against `url` (`ADDR` replaced by the server's address) with `extra`
/// flags; returns stdout, the paths asked and the server's address.
fn run(url: &str, extra: &[&str]) -> (String, Vec<String>, SocketAddr) {
    let (addr, paths) = server();
    let url = url.replace("ADDR", &addr.to_string());
    let mut args = vec![
        "--url",
        url.as_str(),
        "-n",
        "2",
        "--rate",
        "inf",
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    let output = bench(&args);
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "{args:?} failed:\n{stdout}\n{stderr}"
    );
    let asked = paths.lock().unwrap().clone();
    (stdout, asked, addr)
}

#[test]
fn the_host_a_base_url_and_the_full_endpoint_reach_chat_completions() {
    for form in [
        "http://ADDR",
        "http://ADDR/",
        "http://ADDR/v1",
        "http://ADDR/v1/",
        "http://ADDR/v1/chat/completions",
    ] {
        let (stdout, asked, addr) = run(form, &["--model", "m"]);
        assert_eq!(asked, ["/v1/chat/completions"; 2], "--url {form}");
        assert!(
            stdout.contains(&format!("http://{addr}/v1/chat/completions · model m")),
            "--url {form}: the printed URL is not the one requested:\n{stdout}"
        );
    }
}

#[test]
fn the_endpoint_flag_is_joined_onto_a_base_url() {
    for form in ["http://ADDR", "http://ADDR/v1", "http://ADDR/v1/"] {
        let (stdout, asked, _) = run(form, &["--model", "m", "--endpoint", "/v1/completions"]);
        assert_eq!(asked, ["/v1/completions"; 2], "--url {form}");
        assert!(stdout.contains("/v1/completions · model m"), "{stdout}");
    }
}

#[test]
fn the_model_list_is_read_next_to_the_endpoint() {
    for form in ["http://ADDR/v1", "http://ADDR/v1/", "http://ADDR"] {
        let (stdout, asked, _) = run(form, &[]);
        assert_eq!(
            asked,
            ["/v1/models", "/v1/chat/completions", "/v1/chat/completions"],
            "--url {form}"
        );
        assert!(stdout.contains("model listed-model"), "{stdout}");
    }
}
