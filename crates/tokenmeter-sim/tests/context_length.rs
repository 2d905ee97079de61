//! The model's context length: a request whose prompt plus output exceed it is refused with
//! vLLM's 400 message and recorded as a client error.

mod common;

use futures_util::StreamExt;
use tokenmeter::{ErrorClass, Outcome};
use tokenmeter_sim::{DEFAULT_MAX_MODEL_LEN, GenerateRequest, SimConfig, SubmitError};

use common::engine;

#[tokio::test(start_paused = true)]
async fn a_request_past_the_context_length_is_refused_with_vllms_message() {
    let (engine, memory) = engine(SimConfig::default());
    assert_eq!(DEFAULT_MAX_MODEL_LEN, 8_192);
    let error = engine
        .submit(GenerateRequest::chat(9_000, 1_000))
        .expect_err("past the context length");
    assert_eq!(
        error.to_string(),
        "This model's maximum context length is 8192 tokens. However, you requested 10000 tokens \
         (9000 in the messages, 1000 in the completion). Please reduce the length of the messages \
         or completion."
    );
    assert_eq!(error.http_status(), 400);
    assert_eq!(error.error_class(), ErrorClass::ClientError);
    let records = memory.records();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Error(ErrorClass::ClientError));
    assert_eq!(records[0].input_tokens, Some(9_000));
}

#[tokio::test(start_paused = true)]
async fn a_request_of_exactly_the_context_length_runs() {
    let (engine, memory) = engine(SimConfig::default().max_model_len(100));
    let tokens = engine
        .submit(GenerateRequest::completion(96, 4))
        .expect("fits exactly");
    assert_eq!(tokens.collect::<Vec<_>>().await.len(), 4);
    let error = engine
        .submit(GenerateRequest::completion(97, 4))
        .expect_err("one past");
    assert!(matches!(
        error,
        SubmitError::ContextLength {
            prompt: 97,
            completion: 4,
            max_model_len: 100
        }
    ));
    assert_eq!(memory.report().outcomes.success, 1);
}

#[test]
fn a_zero_context_length_is_refused() {
    let error = SimConfig::default()
        .max_model_len(0)
        .validate()
        .expect_err("zero");
    assert!(error.to_string().contains("max_model_len is 0"), "{error}");
}
