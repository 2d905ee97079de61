//! Before the first measured request: the model found, the client built, the test request
//! sent, the trace file opened.

use std::sync::Arc;

use rand::rngs::StdRng;
use tokenmeter::Meter;
use tokenmeter_slo::SloMonitor;
use tokenmeter_slo::batching::BatchAnalysis;

use crate::api::Api;
use crate::api_key::ApiKey;
use crate::args::BenchArgs;
use crate::client::{Client, Target};
use crate::clock::BenchClock;
use crate::collect::Collector;
use crate::interrupt::{self, Interrupt};
use crate::run_block::{RunInfo, RunNumbers};
use crate::seeds::{self, Purpose};
use crate::shard::{self, Shard};
use crate::slo::read_spec;
use crate::url::{display_url, endpoint_url};
use crate::validate::Validated;
use crate::{discover, overrides, preflight, trace, workload};

/// The test request asks for at most this many tokens.
const PREFLIGHT_MAX_TOKENS: u64 = 4;

/// What every run needs before its first measured request: the client, the model, the
/// description, the test request done, the trace file open.
pub(crate) struct Prepared {
    pub(crate) client: Arc<Client>,
    pub(crate) api: Api,
    pub(crate) info: RunInfo,
    pub(crate) monitor: Option<SloMonitor>,
    pub(crate) shard: Option<Shard>,
    pub(crate) rng: StdRng,
    pub(crate) collector: Collector,
}

/// Finds the model, builds the client, sends the test request and opens the trace.
pub(crate) async fn prepare(
    args: &BenchArgs,
    plan: &Validated,
    base: &reqwest::Url,
    key: Option<ApiKey>,
    default_model: Option<&str>,
    server_batching: Option<&BatchAnalysis>,
    stop: &Interrupt,
) -> anyhow::Result<Prepared> {
    let (url, api) = endpoint_url(base, &plan.endpoint);
    let shape = args.shape.shape()?;
    let model = match (&args.model, default_model, shape.sent_model()) {
        (Some(model), _, _) => model.clone(),
        (None, Some(model), _) => model.to_owned(),
        // The model --extra-body sends: no need to ask the server for one.
        (None, None, Some(model)) => model.to_owned(),
        (None, None, None) => {
            let found =
                discover::model(&url, key.as_ref(), &shape, args.follow_redirects, &plan.tls);
            interrupt::before_the_run(stop, "model discovery", found).await?
        }
    };
    let replaced = overrides::overrides(&shape, &model, args.ignore_eos);
    for replaced in &replaced {
        crate::console::warn(replaced.warning());
    }
    // What is sent is what every report names.
    let model = shape.sent_model().map_or(model, str::to_owned);
    let shard = args.shard.shard()?;
    let clock = BenchClock::start();
    let run_start = shard::unix_now();
    let monitor = match &args.slo_spec {
        Some(path) => Some(SloMonitor::new(read_spec(path)?, clock.meter_clock())),
        None => None,
    };
    let mut meter = Meter::builder();
    if let Some(monitor) = &monitor {
        meter = meter.sink(monitor.clone());
    }
    let target = Target {
        url,
        api,
        model: model.clone(),
        ignore_eos: args.ignore_eos,
        timeout: args.timeout,
        follow_redirects: args.follow_redirects,
        max_event_size: args.max_event_size,
        tls: plan.tls.clone(),
        shape,
        tokenizer: plan.tokenizer.clone(),
    };
    let client = Arc::new(Client::new(target, key, clock, meter)?);
    let mut info = RunInfo {
        url: display_url(&client.target().url),
        model: client.sanitizer().clean(&model),
        load: match plan.stages.as_slice() {
            [one] => one.to_string(),
            stages => format!("{} stages (see by stage)", stages.len()),
        },
        workload: match overrides::header(&replaced) {
            Some(sent) => format!("{} · {sent}", plan.source.describe()),
            None => plan.source.describe(),
        },
        seed: args.seed,
        numbers: RunNumbers::now(&plan.load, args.requests(), &args.run, client.sanitizer()),
    };
    info.numbers.extra_body_overrides = overrides::block(&replaced);
    // Not for the embedded simulator: its server-side report counts the run's requests only.
    if !args.no_preflight && server_batching.is_none() {
        // Its own generator: the run's prompts and arrivals do not depend on the test.
        let mut test_rng = seeds::rng(args.seed, Purpose::Preflight);
        if let Some(mut spec) = workload::specs(&plan.source, 1, &mut test_rng).pop() {
            spec.max_tokens = spec.max_tokens.min(PREFLIGHT_MAX_TOKENS);
            let check = preflight::check(&client, &spec, !args.shape.no_stream);
            interrupt::before_the_run(stop, "the test request", check).await?;
        }
    }
    // Arrivals draw from their own generator: the prompts of a seed do not depend on the load.
    let rng = seeds::rng(args.seed, Purpose::Arrivals);
    let trace_file = match &args.trace {
        Some(path) => Some(trace::TraceWriter::create(
            path,
            trace::TraceRun {
                run_start_unix_ns: Some(trace::ns(run_start)),
                seed: Some(args.seed),
                shard: shard.map(|s| s.to_string()),
            },
        )?),
        None => None,
    };
    Ok(Prepared {
        client,
        api,
        info,
        monitor,
        shard,
        rng,
        collector: Collector::new(trace_file),
    })
}
