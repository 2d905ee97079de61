//! vLLM 0.33's finish reasons `error` and `repetition` reach `vllm:request_success_total`
//! under their own `finished_reason`, not folded into `stop`.

use tokenmeter::{FinishReason, Labels, Meter};
use tokenmeter_prometheus::{Builder, Profile};

#[test]
fn error_and_repetition_have_their_own_finished_reason() {
    let (sink, handle) = Builder::new(Profile::Vllm).build_recorder().unwrap();
    let meter = Meter::builder().sink(sink).build();
    let series = meter.series(&Labels::server("chat").request_model("m"));
    for reason in ["repetition", "repetition", "error", "stop", "something_new"] {
        let mut request = series.start();
        request.record_tokens(1);
        request.set_finish_reason(FinishReason::parse(reason));
        request.succeed();
    }
    let text = handle.render();
    let count = |reason: &str| {
        let line = format!(
            r#"vllm:request_success_total{{model_name="m",engine="0",finished_reason="{reason}"}} "#
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&line))
            .unwrap_or_else(|| panic!("no {reason} line in\n{text}"))
            .to_owned()
    };
    assert_eq!(count("repetition"), "2");
    assert_eq!(count("error"), "1");
    // `stop` and an unknown reason (vLLM counts every other success as `stop`).
    assert_eq!(count("stop"), "2");
    assert_eq!(count("length"), "0");
}
