//! Assertions shared by the end-to-end tests: what one scripted run must look like once
//! exported.

use tokenmeter::Role;
use tokenmeter_otel::Buckets;
use tokenmeter_otel::names::{self, attr};

use super::snapshot::Snapshot;
use super::workload::Expect;

/// Every metric has the unit of `names`, every histogram the default bounds.
pub(crate) fn units_and_bounds(snapshot: &Snapshot) {
    super::sdk::check_units_and_bounds(snapshot, &Buckets::new());
}

/// The counts of one role's metrics equal what the script ran. `filter` selects the series.
pub(crate) fn counts(snapshot: &Snapshot, role: Role, filter: &[(&str, &str)], e: &Expect) {
    let (duration, ttft, itl, tpot) = match role {
        Role::Server => (
            names::SERVER_REQUEST_DURATION,
            names::SERVER_TIME_TO_FIRST_TOKEN,
            names::INTER_TOKEN_LATENCY,
            names::SERVER_TIME_PER_OUTPUT_TOKEN,
        ),
        Role::Client => (
            names::CLIENT_OPERATION_DURATION,
            names::CLIENT_TIME_TO_FIRST_CHUNK,
            names::CLIENT_TIME_PER_OUTPUT_CHUNK,
            names::TIME_PER_OUTPUT_TOKEN,
        ),
    };
    let count = |name: &str, extra: &[(&str, &str)]| {
        let all: Vec<(&str, &str)> = filter.iter().chain(extra).copied().collect();
        snapshot.total(name, &all) as u64
    };
    let role_filter = [(attr::ROLE, role.as_str())];
    assert_eq!(count(duration.name, &[]), e.requests, "{}", duration.name);
    assert_eq!(count(ttft.name, &[]), e.first_tokens, "{}", ttft.name);
    assert_eq!(count(itl.name, &[]), e.later_items, "{}", itl.name);
    assert_eq!(count(tpot.name, &[]), e.with_tpot, "{}", tpot.name);
    let requests = names::REQUESTS.name;
    assert_eq!(count(requests, &role_filter), e.requests, "{requests}");
    let outcome = |o: &'static str| [(attr::ROLE, role.as_str()), (attr::OUTCOME, o)];
    assert_eq!(count(requests, &outcome("success")), e.succeeded);
    assert_eq!(count(requests, &outcome("error")), e.failed);
    assert_eq!(count(requests, &outcome("cancelled")), e.cancelled);
    assert_eq!(
        count(names::OUTPUT_TOKENS.name, &role_filter),
        e.output_tokens
    );
    assert_eq!(
        count(names::INPUT_TOKENS.name, &role_filter),
        e.input_tokens
    );
}
