//! `tokenmeter serve --profile vllm --max-loras 2 --lora-modules …` (the real process) under
//! load: requests on two adapters and the base model, more than its queue takes. Its
//! `/metrics` passes the model-server protocol's table (`tokenmeter_tests::gaie`) with vLLM's
//! names and label sets, and `vllm:lora_requests_info` names the adapters that ran.
#[path = "serve_support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::Serve;
use support::http::{request, scrape};
use tokenmeter_tests::gaie::{check, parse, signal};

#[test]
fn serve_with_max_loras_publishes_the_lora_info_under_load() {
    let serve = Serve::start(&[
        "--profile",
        "vllm",
        "--model",
        "base",
        "--max-loras",
        "2",
        "--lora-modules",
        "sql-lora=/adapters/sql",
        "chat-lora",
        "--max-batch",
        "2",
        "--queue-limit",
        "4",
    ]);
    let addr = serve.addr;
    let models = ["sql-lora", "chat-lora", "base"];
    let started = Instant::now();
    let load: Vec<_> = (0..9)
        .map(|i| {
            let body = serde_json::json!({
                "model": models[i % 3],
                "messages": [{"role": "user", "content": "Hello there"}],
                "max_tokens": 24,
                "stream": true,
            })
            .to_string();
            std::thread::spawn(move || {
                let headers = [("content-type", "application/json")];
                request(
                    addr,
                    "POST",
                    "/v1/chat/completions",
                    &headers,
                    body.as_bytes(),
                )
                .map(|r| r.status)
            })
        })
        .collect();
    let statuses: Vec<u16> = load
        .into_iter()
        .map(|t| t.join().expect("a request thread").expect("a response"))
        .collect();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the load took {:?}",
        started.elapsed()
    );
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(
        statuses.contains(&429),
        "the queue limit refused some: {statuses:?}"
    );

    let exposition = parse(&scrape(addr).expect("a scrape"));
    check(&exposition, true);
    let lora = exposition.of(signal("tokenmeter_engine_lora_requests_info"), true);
    assert!(
        lora.iter().all(|(labels, _)| labels["max_lora"] == "2"),
        "{lora:?}"
    );
    assert!(
        lora.iter().any(|(labels, _)| {
            let running = &labels["running_lora_adapters"];
            running.contains("sql-lora") || running.contains("chat-lora")
        }),
        "an adapter ran: {lora:?}"
    );
    assert!(
        lora.iter()
            .all(|(labels, _)| !labels["running_lora_adapters"].contains("base")),
        "the base model is no adapter: {lora:?}"
    );
}
