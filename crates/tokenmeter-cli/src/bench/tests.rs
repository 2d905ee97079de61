//! The flags map onto the library's settings: no flag gives [`BenchArgs::default`], and every
//! flag reaches its field.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{CommandFactory as _, FromArgMatches as _, Parser};
use tokenmeter_bench::{
    ArrivalKind, BenchArgs, Curve, DatasetFormat, JudgedFrom, MaxTokensField, MergeArgs,
    MetricsTarget, PercentileMetric, ResultFormat, Url, parse,
};

use super::BenchFlags;
use super::merge::BenchCommand;

/// `tokenmeter bench` alone.
#[derive(Debug, Parser)]
#[command(name = "bench")]
struct Bench {
    #[command(flatten)]
    flags: BenchFlags,
}

/// Parses `bench ARGS`: the flags, and the ids of the arguments given on the command line.
fn parse(args: &[&str]) -> (BenchFlags, BTreeSet<String>) {
    let matches = Bench::command()
        .try_get_matches_from(std::iter::once("bench").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let given = Bench::command()
        .get_arguments()
        .map(|arg| arg.get_id().as_str().to_owned())
        .filter(|id| matches.value_source(id) == Some(ValueSource::CommandLine))
        .collect();
    let flags = BenchFlags::from_arg_matches(&matches).expect("the flags");
    (flags, given)
}

#[test]
fn default_flags_are_the_librarys_default_settings() {
    let (flags, given) = parse(&[]);
    assert!(given.is_empty(), "{given:?}");
    assert!(flags.command.is_none());
    assert_eq!(flags.settings(), BenchArgs::default());
    let Some(BenchCommand::Merge(merge)) = parse(&["merge", "a.jsonl"]).0.command else {
        panic!("`bench merge` parses as the merge subcommand");
    };
    assert_eq!(
        merge.settings(),
        MergeArgs::new(vec![PathBuf::from("a.jsonl")])
    );
}

#[test]
fn every_flag_reaches_its_field() {
    let (flags, mut given) = parse(&[
        "--url",
        "http://127.0.0.1:9/v1",
        "--endpoint",
        "/v1/completions",
        "--model",
        "m",
        "--api-key-env",
        "MY_KEY",
        "--rate",
        "5",
        "--arrival",
        "constant",
        "--burstiness",
        "2",
        "--ramp-up-strategy",
        "exponential",
        "--ramp-up-start-rate",
        "1",
        "--ramp-up-end-rate",
        "3",
        "--concurrency",
        "4,8",
        "--duration",
        "30s",
        "--warmup",
        "3",
        "--stage",
        "rate=2,duration=30s",
        "--input-tokens",
        "10..20",
        "--output-tokens",
        "exp:64",
        "--dataset",
        "d.jsonl",
        "--dataset-format",
        "sharegpt",
        "--multi-turn",
        "--turns",
        "3",
        "--think-time",
        "2s",
        "--shared-prefix",
        "8:1024",
        "--cancel-fraction",
        "0.1",
        "--cancel-after",
        "20tok",
        "--replay-speed",
        "2",
        "--tokenizer",
        "tok.json",
        "--slo-class",
        "interactive:ttft=200ms,tpot=50ms:3",
        "--slo-class",
        "batch:ttft=10s",
        "-n",
        "40",
        "--input-classes",
        "512,2048",
        "--output-classes",
        "128",
        "--slo",
        "ttft=2s",
        "--stop-on-saturation=false",
        "--max-error-rate",
        "0.5",
        "--slo-from",
        "send",
        "--slo-spec",
        "spec.toml",
        "--timeout",
        "5s",
        "--max-event-size",
        "1KiB",
        "-H",
        "api-key: s3cr3t",
        "--extra-body",
        r#"{"temperature": 0}"#,
        "--max-tokens-field",
        "max_completion_tokens",
        "--no-stream",
        "--no-stream-options",
        "--goodput",
        "ttft:500",
        "tpot:50",
        "--percentile-metrics",
        "ttft,e2el-including-client-queue",
        "--metric-percentiles",
        "50,99.9",
        "--result-format",
        "vllm",
        "--save-detailed",
        "--label",
        "L",
        "--metadata",
        "gpu=H100",
        "--slice",
        "10s",
        "--server-metrics",
        "http://127.0.0.1:9/metrics",
        "--scrape-interval",
        "250ms",
        "--ignore-eos",
        "--follow-redirects",
        "--ca-cert",
        "ca.pem",
        "--insecure",
        "--seed",
        "7",
        "--confidence",
        "99",
        "--json",
        "a.json",
        "--trace",
        "a.jsonl",
        "--html",
        "a.html",
        "--sweep",
        "--sweep-rates",
        "1,2",
        "--sweep-target",
        "0.8",
        "--sweep-resolution",
        "0.2",
        "--sweep-step-duration",
        "5s",
        "--gpus",
        "2",
        "--no-progress",
        "--no-preflight",
        "--fail-under",
        "0.95",
        "--self-check-client",
        "--self-check-ceiling",
        "--self-check-serve",
        "127.0.0.1:8765",
        "--shard",
        "1/3",
        "--start-at",
        "1767225600",
        "--repeat",
        "3",
        "--cooldown",
        "2s",
    ]);
    let mut want = BenchArgs::default();
    want.url = Some(Box::new(Url::parse("http://127.0.0.1:9/v1").unwrap()));
    want.endpoint = "/v1/completions".to_owned();
    want.model = Some("m".to_owned());
    want.api_key_env = "MY_KEY".to_owned();
    want.load.rate = Some(5.0);
    want.load.arrival = ArrivalKind::Constant;
    want.load.burstiness = 2.0;
    want.load.ramp_up_strategy = Some(Curve::Exponential);
    want.load.ramp_up_start_rate = Some(1.0);
    want.load.ramp_up_end_rate = Some(3.0);
    want.load.concurrency = vec![4, 8];
    want.load.duration = Some(Duration::from_secs(30));
    want.load.warmup = 3;
    want.load.stages = vec!["rate=2,duration=30s".parse().unwrap()];
    want.workload.input_tokens = "10..20".parse().unwrap();
    want.workload.output_tokens = "exp:64".parse().unwrap();
    want.workload.dataset = Some("d.jsonl".into());
    want.workload.dataset_format = DatasetFormat::Sharegpt;
    want.workload.multi_turn = true;
    want.workload.turns = 3;
    want.workload.think_time = Duration::from_secs(2);
    want.workload.shared_prefix = Some("8:1024".parse().unwrap());
    want.workload.cancel_fraction = 0.1;
    want.workload.cancel_after = Some("20tok".parse().unwrap());
    want.workload.replay_speed = 2.0;
    want.workload.tokenizer = Some("tok.json".into());
    want.workload.slo_classes = vec![
        "interactive:ttft=200ms,tpot=50ms:3".parse().unwrap(),
        "batch:ttft=10s".parse().unwrap(),
    ];
    want.requests = Some(40);
    want.input_classes = Some(parse::parse_edges("512,2048").unwrap());
    want.output_classes = Some(parse::parse_edges("128").unwrap());
    want.slo = "ttft=2s".parse().unwrap();
    want.stop_on_saturation = Some(false);
    want.max_error_rate = Some(0.5);
    want.slo_from = JudgedFrom::Send;
    want.slo_spec = Some("spec.toml".into());
    want.timeout = Duration::from_secs(5);
    want.max_event_size = 1024;
    want.shape.headers = vec![parse::header_arg("api-key: s3cr3t").unwrap()];
    want.shape.extra_body = Some(parse::parse_extra_body(r#"{"temperature": 0}"#).unwrap());
    want.shape.max_tokens_field = MaxTokensField::MaxCompletionTokens;
    want.shape.no_stream = true;
    want.shape.no_stream_options = true;
    want.peer.goodput = vec!["ttft:500".to_owned(), "tpot:50".to_owned()];
    want.peer.percentile_metrics = Some(vec![
        PercentileMetric::Ttft,
        PercentileMetric::E2elIncludingClientQueue,
    ]);
    want.peer.metric_percentiles = Some(vec![50.0, 99.9]);
    want.peer.result_format = ResultFormat::Vllm;
    want.peer.save_detailed = true;
    want.run.label = Some("L".to_owned());
    want.run.metadata = vec![("gpu".to_owned(), "H100".to_owned())];
    want.slices.slice = Some(Duration::from_secs(10));
    want.slices.server_metrics = Some(MetricsTarget::Url(Box::new(
        Url::parse("http://127.0.0.1:9/metrics").unwrap(),
    )));
    want.slices.scrape_interval = Some(Duration::from_millis(250));
    want.ignore_eos = true;
    want.follow_redirects = true;
    want.ca_cert = Some("ca.pem".into());
    want.insecure = true;
    want.seed = 7;
    want.confidence = tokenmeter::report::Confidence::new(0.99).unwrap();
    want.json = Some("a.json".into());
    want.trace = Some("a.jsonl".into());
    want.html = Some("a.html".into());
    want.sweep = true;
    want.sweep_rates = vec![1.0, 2.0];
    want.sweep_target = 0.8;
    want.sweep_resolution = 0.2;
    want.sweep_step_duration = Duration::from_secs(5);
    want.gpus = Some(2);
    want.no_progress = true;
    want.no_preflight = true;
    want.fail_under = Some(0.95);
    want.self_check_client = true;
    want.self_check_ceiling = true;
    want.self_check_serve = Some(([127, 0, 0, 1], 8765).into());
    want.shard.shard = Some(parse::parse_shard("1/3").unwrap());
    want.shard.start_at = Some(parse::parse_start_at("1767225600").unwrap());
    want.repeat = 3;
    want.cooldown = Duration::from_secs(2);
    assert_eq!(flags.settings(), want);

    // The flags that conflict with some above.
    let (flags, others) = parse(&["--shards", "4", "--no-server-metrics"]);
    let settings = flags.settings();
    assert_eq!(settings.shard.shards, Some(4));
    assert!(settings.slices.no_server_metrics);
    given.extend(others);

    // No flag of `bench` was left out above.
    let every: BTreeSet<String> = Bench::command()
        .get_arguments()
        .map(|arg| arg.get_id().as_str().to_owned())
        .filter(|id| id != "help")
        .collect();
    let missed: Vec<_> = every.difference(&given).collect();
    assert!(missed.is_empty(), "flags not tested: {missed:?}");
}

#[test]
fn every_merge_flag_reaches_its_field() {
    let (flags, _) = parse(&[
        "merge",
        "a.jsonl",
        "b.jsonl",
        "--json",
        "m.json",
        "--html",
        "m.html",
        "--slo",
        "ttft=2s",
        "--slo-from",
        "send",
    ]);
    let Some(BenchCommand::Merge(merge)) = flags.command else {
        panic!("`bench merge` parses as the merge subcommand");
    };
    let mut want = MergeArgs::new(vec!["a.jsonl".into(), "b.jsonl".into()]);
    want.json = Some("m.json".into());
    want.html = Some("m.html".into());
    want.slo = "ttft=2s".parse().unwrap();
    want.slo_from = JudgedFrom::Send;
    assert_eq!(merge.settings(), want);
}
