//! The reasoning tokens a request counts (`RequestRecord::reasoning_output_tokens`), a part of
//! its output tokens, as the `gen_ai.client.inference.usage.reasoning.output_tokens` counter
//! reads them.

use tokenmeter::conventions::{RecordField, Value};
use tokenmeter::{Labels, ManualClock, Meter, Observation};

#[test]
fn reasoning_tokens_are_counted_apart_and_within_the_output() {
    let (meter, memory) = Meter::manual(&ManualClock::new());
    let mut request = meter.series(&Labels::client("chat")).start();
    request.record_reasoning_tokens(3);
    request.observe(Observation::reasoning(2));
    request.record_reasoning_tokens(0); // a frame without tokens
    request.record_tokens(4);
    request.succeed();
    request.record_reasoning_tokens(9); // after the end: ignored
    let record = &memory.records()[0];
    assert_eq!(record.reasoning_output_tokens, 5);
    assert_eq!(record.output_tokens, 9);
    assert_eq!(
        RecordField::ReasoningTokens.read(record),
        Some(Value::Count(5))
    );
}

#[test]
fn without_reasoning_nothing_is_read() {
    let (meter, memory) = Meter::manual(&ManualClock::new());
    let mut request = meter.series(&Labels::client("chat")).start();
    request.record_tokens(2);
    request.succeed();
    let record = &memory.records()[0];
    assert_eq!(record.reasoning_output_tokens, 0);
    assert_eq!(RecordField::ReasoningTokens.read(record), None);
}
