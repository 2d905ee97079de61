//! The OpenAI routes a real server has, for the scripted server: `/v1/models`,
//! `/v1/chat/completions` and `/v1/completions`, 404 at any other path.

use std::sync::Mutex;

use super::{Reply, Seen};

/// A streamed text completion of `tokens` tokens (`/v1/completions`' shape).
pub fn completion_stream(tokens: usize) -> Reply {
    let mut body = String::new();
    for i in 0..tokens {
        body.push_str(&format!(
            "data: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"text\":\"w{i}\",\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str(&format!(
        "data: {{\"id\":\"c\",\"choices\":[],\"usage\":{{\"prompt_tokens\":3,\"completion_tokens\":{tokens}}}}}\n\ndata: [DONE]\n\n"
    ));
    Reply::new(200, "text/event-stream", body)
}

/// The OpenAI routes under `/v1` and nothing else; every path asked is recorded.
pub fn openai_routes(seen: &Seen, paths: &Mutex<Vec<String>>) -> Reply {
    // The test request before the run is not one of the run's requests.
    if seen.header("x-tokenmeter-request") != Some("preflight") {
        paths.lock().unwrap().push(seen.path.clone());
    }
    match seen.path.as_str() {
        "/v1/models" => Reply::json(200, r#"{"object":"list","data":[{"id":"listed-model"}]}"#),
        "/v1/chat/completions" => Reply::stream(3),
        "/v1/completions" => completion_stream(3),
        other => Reply::json(
            404,
            format!(r#"{{"error":{{"message":"no route {other}"}}}}"#),
        ),
    }
}
