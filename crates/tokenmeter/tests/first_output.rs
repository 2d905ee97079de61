//! Time to first output token (after reasoning), time to second token, normalised TPOT and the
//! reuse a request reports, on a manual clock.

use std::time::Duration;

use tokenmeter::{Labels, ManualClock, Meter, Observation, RequestRecord};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs `script` on one server request and returns its record.
fn record(script: impl FnOnce(&mut tokenmeter::Request, &ManualClock)) -> RequestRecord {
    let time = ManualClock::new();
    let (meter, memory) = Meter::manual(&time);
    let mut request = meter.series(&Labels::server("chat")).start();
    script(&mut request, &time);
    request.succeed();
    memory.records().remove(0)
}

#[test]
fn without_reasoning_the_first_output_token_is_the_first_token() {
    let r = record(|req, time| {
        time.advance(ms(40));
        req.record_tokens(1);
        time.advance(ms(10));
        req.record_tokens(1);
        time.advance(ms(10));
        req.record_tokens(1);
    });
    assert_eq!(r.ttft, Some(ms(40)));
    assert_eq!(r.first_output, Some(ms(40)));
    assert_eq!(r.second_token, Some(ms(50)));
    assert_eq!(r.normalized_tpot(), Some(ms(20)));
}

#[test]
fn reasoning_delays_the_first_output_token_by_the_reasoning_time() {
    let r = record(|req, time| {
        time.advance(ms(30));
        req.record_reasoning_tokens(1);
        for _ in 0..4 {
            time.advance(ms(20));
            req.record_reasoning_tokens(1);
        }
        time.advance(ms(20));
        req.record_tokens(1);
        time.advance(ms(20));
        req.record_reasoning_tokens(1); // interleaved later: changes nothing
        req.record_tokens(1);
    });
    assert_eq!(r.ttft, Some(ms(30)));
    assert_eq!(r.second_token, Some(ms(50)));
    // 30 ms to the first reasoning token, 5 × 20 ms of reasoning after it
    assert_eq!(r.first_output, Some(ms(130)));
    assert_eq!(r.output_tokens, 8);
}

#[test]
fn a_stream_of_only_reasoning_has_no_first_output_token() {
    let r = record(|req, time| {
        time.advance(ms(30));
        req.record_reasoning_tokens(2);
    });
    assert_eq!(r.ttft, Some(ms(30)));
    assert_eq!(r.second_token, Some(ms(30)), "one item of two tokens");
    assert_eq!(r.first_output, None);
}

#[test]
fn observations_mark_reasoning_items() {
    let r = record(|req, time| {
        time.advance(ms(10));
        req.observe(Observation::reasoning(1));
        time.advance(ms(25));
        req.observe(Observation::tokens(1));
    });
    assert_eq!((r.ttft, r.first_output), (Some(ms(10)), Some(ms(35))));
}

#[test]
fn no_token_means_no_ttft_no_second_token_and_no_normalised_tpot() {
    let r = record(|_, time| time.advance(ms(10)));
    assert_eq!((r.ttft, r.first_output, r.second_token), (None, None, None));
    assert_eq!(r.normalized_tpot(), None);
}

#[test]
fn reuse_and_parameters_reach_the_record() {
    let r = record(|req, _| {
        req.set_input_tokens(1000);
        req.set_cached_input_tokens(600);
        req.set_external_input_tokens(300);
        req.set_max_tokens(256);
        req.set_choices(2);
    });
    assert_eq!(r.computed_input_tokens(), Some(100));
    assert_eq!((r.max_tokens, r.choices), (Some(256), Some(2)));
    // more reuse than input never goes below zero
    let over = record(|req, _| {
        req.set_input_tokens(10);
        req.set_cached_input_tokens(64);
    });
    assert_eq!(over.computed_input_tokens(), Some(0));
    assert_eq!(record(|_, _| {}).computed_input_tokens(), None);
}
