//! Items after the first token reach sinks in batches: when a batch is full, when its first
//! item has waited `Items::MAX_DELAY`, when the request ends (before the end, on every path),
//! or on `Request::flush`; each item with the gap taken when it arrived.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokenmeter::sink::{InMemorySink, Items, SeriesSink, Sink};
use tokenmeter::{ErrorClass, Labels, ManualClock, Meter, Observation, RequestRecord};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What a sink was called with, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Batch(Vec<(Duration, u32)>),
    End(u64),
}

/// A sink that keeps each call to `items` and `end` as it came.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<Vec<Call>>>);

impl Calls {
    fn taken(&self) -> Vec<Call> {
        self.0.lock().unwrap().clone()
    }

    fn batch_sizes(&self) -> Vec<usize> {
        self.taken()
            .iter()
            .filter_map(|call| match call {
                Call::Batch(items) => Some(items.len()),
                Call::End(_) => None,
            })
            .collect()
    }
}

impl Sink for Calls {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(self.clone())
    }
}

impl SeriesSink for Calls {
    fn items(&self, items: Items<'_>) {
        let items = items.iter().map(|i| (i.gap, i.tokens)).collect();
        self.0.lock().unwrap().push(Call::Batch(items));
    }

    fn end(&self, record: &RequestRecord) {
        self.0.lock().unwrap().push(Call::End(record.items));
    }
}

/// A sink that implements only `item`, as sinks written before batches did.
#[derive(Clone, Default)]
struct PerItem(Arc<Mutex<Vec<(Duration, u32)>>>);

impl Sink for PerItem {
    fn series(&self, _labels: &Labels<'_>) -> Box<dyn SeriesSink> {
        Box::new(self.clone())
    }
}

impl SeriesSink for PerItem {
    fn item(&self, gap: Duration, tokens: u32) {
        self.0.lock().unwrap().push((gap, tokens));
    }
}

fn meter(time: &ManualClock, calls: &Calls) -> Meter {
    Meter::builder()
        .clock(tokenmeter::Clock::manual(time))
        .sink(calls.clone())
        .build()
}

#[test]
fn a_full_batch_goes_at_once_and_the_rest_before_the_end() {
    let time = ManualClock::new();
    let calls = Calls::default();
    let mut request = meter(&time, &calls).series(&Labels::server("chat")).start();
    request.record_tokens(1); // the first token: not an item
    for i in 1..=Items::CAPACITY as u64 {
        time.advance(ms(i));
        request.record_tokens(2);
        let sent = calls.batch_sizes();
        if i < Items::CAPACITY as u64 {
            assert!(sent.is_empty(), "item {i} went before the batch was full");
        } else {
            assert_eq!(sent, [Items::CAPACITY]);
        }
    }
    time.advance(ms(100));
    request.record_tokens(1);
    time.advance(ms(200));
    request.record_tokens(3);
    request.succeed();

    let taken = calls.taken();
    assert_eq!(taken.len(), 3, "{taken:?}");
    let expected: Vec<(Duration, u32)> = (1..=Items::CAPACITY as u64).map(|i| (ms(i), 2)).collect();
    assert_eq!(taken[0], Call::Batch(expected));
    assert_eq!(taken[1], Call::Batch(vec![(ms(100), 1), (ms(200), 3)]));
    assert_eq!(taken[2], Call::End(Items::CAPACITY as u64 + 3));
}

#[test]
fn a_slow_stream_sends_its_batch_once_its_first_item_has_waited_the_maximum() {
    let time = ManualClock::new();
    let calls = Calls::default();
    let mut request = meter(&time, &calls).series(&Labels::server("chat")).start();
    request.record_tokens(1);
    time.advance(ms(600));
    request.record_tokens(1); // first of the batch, at 600 ms
    time.advance(ms(399));
    request.record_tokens(1); // 999 ms: 399 ms after it
    assert!(calls.taken().is_empty());
    time.advance(Items::MAX_DELAY - ms(399));
    request.record_tokens(1); // exactly MAX_DELAY after the batch's first
    assert_eq!(calls.batch_sizes(), [3]);
    time.advance(ms(5));
    request.record_tokens(1);
    assert_eq!(
        calls.batch_sizes(),
        [3],
        "a new batch counts from its own first item"
    );
    request.succeed();
    assert_eq!(calls.batch_sizes(), [3, 1]);
}

#[test]
fn every_way_a_request_ends_sends_its_items_first() {
    type End = fn(tokenmeter::Request);
    let ends: [(&str, End); 5] = [
        ("succeed", |mut r| r.succeed()),
        ("fail", |mut r| r.fail(ErrorClass::Timeout)),
        ("cancel", |mut r| r.cancel()),
        ("drop", drop),
        ("error item", |mut r| {
            r.observe(Observation::error(ErrorClass::ServerError));
            assert!(r.is_ended());
        }),
    ];
    for (how, end) in ends {
        let time = ManualClock::new();
        let calls = Calls::default();
        let mut request = meter(&time, &calls).series(&Labels::server("chat")).start();
        for _ in 0..3 {
            time.advance(ms(7));
            request.record_tokens(1);
        }
        end(request);
        assert_eq!(
            calls.taken(),
            [Call::Batch(vec![(ms(7), 1), (ms(7), 1)]), Call::End(3)],
            "{how}"
        );
    }
}

#[test]
fn a_panic_while_streaming_still_sends_the_items_before_the_error() {
    let time = ManualClock::new();
    let calls = Calls::default();
    let meter = meter(&time, &calls);
    let series = meter.series(&Labels::server("chat"));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut request = series.start();
        request.record_tokens(1);
        time.advance(ms(3));
        request.record_tokens(1);
        panic!("the handler failed");
    }));
    assert!(result.is_err());
    assert_eq!(calls.taken(), [Call::Batch(vec![(ms(3), 1)]), Call::End(2)]);
}

#[test]
fn flush_sends_what_is_held_and_nothing_twice() {
    let time = ManualClock::new();
    let calls = Calls::default();
    let mut request = meter(&time, &calls).series(&Labels::server("chat")).start();
    request.flush(); // nothing held: no call
    request.record_tokens(1);
    request.flush(); // the first token is no item: no call
    time.advance(ms(4));
    request.record_tokens(1);
    request.flush();
    request.flush();
    request.succeed();
    assert_eq!(calls.taken(), [Call::Batch(vec![(ms(4), 1)]), Call::End(2)]);
}

#[test]
fn a_batch_of_one_sends_every_item_as_it_arrives() {
    let time = ManualClock::new();
    let calls = Calls::default();
    let meter = Meter::builder()
        .clock(tokenmeter::Clock::manual(&time))
        .sink(calls.clone())
        .item_batch(1)
        .build();
    let mut request = meter.series(&Labels::server("chat")).start();
    request.record_tokens(1);
    for n in 1..=3 {
        time.advance(ms(n));
        request.record_tokens(1);
        assert_eq!(calls.batch_sizes(), vec![1; n as usize]);
    }
    request.succeed();
}

#[test]
fn item_batch_takes_out_of_range_values_as_the_nearest_end() {
    for (asked, batch) in [(0, 1), (usize::MAX, Items::CAPACITY)] {
        let time = ManualClock::new();
        let calls = Calls::default();
        let meter = Meter::builder()
            .clock(tokenmeter::Clock::manual(&time))
            .sink(calls.clone())
            .item_batch(asked)
            .build();
        let mut request = meter.series(&Labels::server("chat")).start();
        for _ in 0..=batch {
            request.record_tokens(1);
        }
        assert_eq!(calls.batch_sizes(), [batch], "item_batch({asked})");
        request.succeed();
    }
}

#[test]
fn a_sink_that_implements_only_item_gets_every_item_and_so_does_the_other() {
    let time = ManualClock::new();
    let per_item = PerItem::default();
    let memory = InMemorySink::new();
    let meter = Meter::builder()
        .clock(tokenmeter::Clock::manual(&time))
        .sink(per_item.clone())
        .sink(memory.clone())
        .build();
    let mut request = meter.series(&Labels::client("chat")).start();
    let mut expected = Vec::new();
    request.record_tokens(1);
    for i in 1..=40u64 {
        time.advance(Duration::from_micros(i));
        request.record_tokens((i % 3) as u32 + 1);
        expected.push((Duration::from_micros(i), (i % 3) as u32 + 1));
    }
    request.succeed();
    assert_eq!(*per_item.0.lock().unwrap(), expected);
    assert_eq!(memory.gaps(), expected);
}
