//! The exit codes of `tokenmeter bench`, so that CI can tell a missed objective from a run
//! that could not happen.
//!
//! | Code | Meaning |
//! |---|---|
//! | 0 | the run completed and met `--fail-under` and every objective of `--slo-spec` |
//! | 1 | the run completed but missed `--fail-under` or an objective of `--slo-spec`; `bench compare` found a significant regression beyond its threshold |
//! | 2 | bad flags or input (clap's usage errors, a bad dataset, an unset `--api-key-env`) |
//! | 3 | could not run: the server is unreachable, the test request or the model discovery failed, no request succeeded, an output could not be written |
//! | 130 | interrupted (Ctrl-C or SIGTERM): what completed was written, marked as interrupted |
//!
//! A stdout closed by its reader (`tokenmeter bench … | head -1`, `bench merge` too) is none of
//! these: the run goes on quietly, what was meant for stdout is dropped (the table, a `-`
//! output), the files are written in full and the code is the run's own (see `console`).

use std::fmt;

use tokenmeter_slo::RunStatus;

/// Why a bench run ended without success: the exit code it maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// An objective (`--fail-under`, `--slo-spec`) was missed: 1.
    ObjectiveMissed,
    /// `bench compare`: a gating figure regressed significantly beyond the threshold: 1.
    Regressed,
    /// Bad flags or input: 2, as clap's own usage errors.
    Usage,
    /// The run could not happen: 3.
    CouldNotRun,
    /// Ctrl-C or SIGTERM: 130.
    Interrupted,
}

impl Exit {
    /// The process exit code.
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::ObjectiveMissed | Exit::Regressed => 1,
            Exit::Usage => 2,
            Exit::CouldNotRun => 3,
            Exit::Interrupted => 130,
        }
    }

    /// An error of this kind with `message`.
    pub(crate) fn error(self, message: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(Failure {
            exit: self,
            message: message.into(),
        })
    }
}

/// An error that carries its exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    exit: Exit,
    message: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Gives an unclassified error the exit `kind`; a classified one keeps its own.
pub(crate) fn classify(error: anyhow::Error, kind: Exit) -> anyhow::Error {
    if error.downcast_ref::<Failure>().is_some() {
        error
    } else {
        let message = format!("{error:#}");
        kind.error(message)
    }
}

/// The exit code of a bench error: its own when classified, else 3 (could not run).
///
/// ```
/// use tokenmeter_bench::{MergeArgs, exit_code, merge};
///
/// // Merging no trace is a usage error: 2.
/// let error = merge(&MergeArgs::default()).unwrap_err();
/// assert_eq!(exit_code(&error), 2);
/// // An error the bench did not classify could not run: 3.
/// assert_eq!(exit_code(&anyhow::anyhow!("connection refused")), 3);
/// ```
pub fn code(error: &anyhow::Error) -> u8 {
    error
        .chain()
        .find_map(|e| e.downcast_ref::<Failure>())
        .map_or(Exit::CouldNotRun.code(), |f| f.exit.code())
}

/// The objectives of `status` whose attainment over the run is below their target, as
/// `class/objective attainment < target`.
pub(crate) fn missed_objectives(status: &RunStatus) -> Vec<String> {
    let mut missed = Vec::new();
    for class in &status.classes {
        for objective in &class.objectives {
            if let Some(attained) = objective.attainment
                && attained < objective.target
            {
                missed.push(format!(
                    "{}/{} attainment {:.2}% < target {:.2}%",
                    class.name,
                    objective.name,
                    attained * 100.0,
                    objective.target * 100.0
                ));
            }
        }
    }
    missed
}

/// The `--fail-under` check: an [`Exit::ObjectiveMissed`] error when `attainment` is below
/// `floor`.
pub(crate) fn fail_under(attainment: f64, floor: Option<f64>) -> anyhow::Result<()> {
    match floor {
        Some(floor) if attainment < floor => Err(Exit::ObjectiveMissed.error(format!(
            "SLO attainment {:.2}% is below --fail-under {:.2}%",
            attainment * 100.0,
            floor * 100.0
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_survive_context() {
        let codes = [
            Exit::ObjectiveMissed,
            Exit::Usage,
            Exit::CouldNotRun,
            Exit::Interrupted,
        ]
        .map(Exit::code);
        assert_eq!(codes, [1, 2, 3, 130]);
        let error = Exit::Usage.error("bad").context("while planning");
        assert_eq!(code(&error), 2);
        assert_eq!(code(&anyhow::anyhow!("unclassified")), 3);
        let kept = classify(Exit::Interrupted.error("stop"), Exit::Usage);
        assert_eq!(code(&kept), 130);
        let given = classify(anyhow::anyhow!("x").context("y"), Exit::Usage);
        assert_eq!((code(&given), given.to_string()), (2, "y: x".to_owned()));
    }

    #[test]
    fn fail_under_gates_on_attainment() {
        assert!(fail_under(0.95, Some(0.9)).is_ok());
        assert!(fail_under(0.5, None).is_ok());
        let missed = fail_under(0.85, Some(0.9)).unwrap_err();
        assert_eq!(code(&missed), 1);
        assert!(
            missed
                .to_string()
                .contains("85.00% is below --fail-under 90.00%")
        );
    }
}
