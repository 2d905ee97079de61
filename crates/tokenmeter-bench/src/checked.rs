//! The values of [`BenchArgs`] checked as the command's flags check them, for settings made in
//! code: a Rust caller can set any field, and a rate of 0, a percentile of 200 or a length
//! range the wrong way round must be refused with the flag's own message, not panic or run.
//!
//! Numbers are checked by the flag's own parser on their text form (one rule, written once in
//! [`crate::parse`]); counts and durations by the ranges the flags declare.

use std::str::FromStr as _;
use std::time::Duration;

use anyhow::bail;

use crate::args::BenchArgs;
use crate::args::{parse_fraction, parse_resolution, parse_share};
use crate::peer::parse_percentile;
use crate::schedule::{parse_burstiness, parse_rate};
use crate::workload::LengthDist;

/// Refuses the first value no flag would accept, naming the setting and its flag.
pub(crate) fn values(args: &BenchArgs) -> anyhow::Result<()> {
    let load = &args.load;
    let workload = &args.workload;
    if let Some(rate) = load.rate {
        number(rate, parse_rate, "load.rate (--rate)")?;
    }
    number(
        load.burstiness,
        parse_burstiness,
        "load.burstiness (--burstiness)",
    )?;
    for (rate, name) in [
        (
            load.ramp_up_start_rate,
            "load.ramp_up_start_rate (--ramp-up-start-rate)",
        ),
        (
            load.ramp_up_end_rate,
            "load.ramp_up_end_rate (--ramp-up-end-rate)",
        ),
    ] {
        if let Some(rate) = rate {
            number(rate, parse_rate, name)?;
        }
    }
    for &rate in &args.sweep_rates {
        number(rate, parse_rate, "sweep_rates (--sweep-rates)")?;
    }
    number(
        args.sweep_resolution,
        parse_resolution,
        "sweep_resolution (--sweep-resolution)",
    )?;
    if let Some(share) = args.max_error_rate {
        number(share, parse_share, "max_error_rate (--max-error-rate)")?;
    }
    if let Some(fraction) = args.fail_under {
        number(fraction, parse_fraction, "fail_under (--fail-under)")?;
    }
    number(
        workload.cancel_fraction,
        parse_fraction,
        "workload.cancel_fraction (--cancel-fraction)",
    )?;
    number(
        workload.replay_speed,
        parse_burstiness,
        "workload.replay_speed (--replay-speed)",
    )?;
    for &p in args.peer.metric_percentiles.iter().flatten() {
        number(
            p,
            parse_percentile,
            "peer.metric_percentiles (--metric-percentiles)",
        )?;
    }
    length(
        &workload.input_tokens,
        "workload.input_tokens (--input-tokens)",
    )?;
    length(
        &workload.output_tokens,
        "workload.output_tokens (--output-tokens)",
    )?;
    if !(1..=1000).contains(&workload.turns) {
        bail!(
            "workload.turns (--turns): {} is not in 1..=1000",
            workload.turns
        );
    }
    for (value, name) in [
        (args.gpus.map(u64::from), "gpus (--gpus)"),
        (args.shard.shards, "shard.shards (--shards)"),
    ] {
        if value == Some(0) {
            bail!("{name}: must be at least 1");
        }
    }
    if args.max_event_size == 0 {
        bail!("max_event_size (--max-event-size): must be above 0 (e.g. 4MiB)");
    }
    for (duration, name) in [
        (Some(args.timeout), "timeout (--timeout)"),
        (
            Some(args.sweep_step_duration),
            "sweep_step_duration (--sweep-step-duration)",
        ),
        (load.duration, "load.duration (--duration)"),
        (args.slices.slice, "slices.slice (--slice)"),
        (
            args.slices.scrape_interval,
            "slices.scrape_interval (--scrape-interval)",
        ),
    ] {
        if duration == Some(Duration::ZERO) {
            bail!("{name}: must be above 0 (e.g. 10s)");
        }
    }
    Ok(())
}

/// `value` as its flag's parser reads its text form.
fn number(value: f64, parse: fn(&str) -> Result<f64, String>, name: &str) -> anyhow::Result<()> {
    match parse(&value.to_string()) {
        Ok(_) => Ok(()),
        Err(why) => bail!("{name}: {why}"),
    }
}

/// A length distribution as `--input-tokens` reads its text form.
fn length(dist: &LengthDist, name: &str) -> anyhow::Result<()> {
    match LengthDist::from_str(&dist.to_string()) {
        Ok(_) => Ok(()),
        Err(why) => bail!("{name}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(change: impl FnOnce(&mut BenchArgs)) -> String {
        let mut args = BenchArgs::default();
        change(&mut args);
        values(&args).expect_err("refused").to_string()
    }

    #[test]
    fn the_defaults_pass() {
        values(&BenchArgs::default()).expect("the defaults are valid");
    }

    #[test]
    fn values_no_flag_accepts_are_refused_naming_the_setting() {
        assert!(refused(|a| a.load.rate = Some(0.0)).starts_with("load.rate (--rate): `0`"));
        assert!(refused(|a| a.load.rate = Some(-1.0)).contains("not a request rate"));
        assert!(refused(|a| a.load.rate = Some(f64::NAN)).contains("load.rate"));
        assert!(refused(|a| a.load.burstiness = 0.0).contains("burstiness"));
        assert!(
            refused(|a| a.workload.input_tokens = LengthDist::Uniform(5, 1))
                .starts_with("workload.input_tokens (--input-tokens)")
        );
        assert!(refused(|a| a.workload.turns = 0).contains("--turns"));
        assert!(refused(|a| a.workload.cancel_fraction = 2.0).contains("--cancel-fraction"));
        assert!(refused(|a| a.workload.replay_speed = 0.0).contains("--replay-speed"));
        assert!(refused(|a| a.max_error_rate = Some(0.0)).contains("--max-error-rate"));
        assert!(refused(|a| a.peer.metric_percentiles = Some(vec![0.0])).contains("percentile"));
        assert!(refused(|a| a.timeout = Duration::ZERO).contains("--timeout"));
        assert!(refused(|a| a.gpus = Some(0)).contains("--gpus"));
    }

    #[test]
    fn an_infinite_rate_is_all_at_once_and_valid() {
        let mut args = BenchArgs::default();
        args.load.rate = Some(f64::INFINITY);
        values(&args).expect("inf is a rate");
    }
}
