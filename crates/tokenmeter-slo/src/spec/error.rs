//! Errors in an SLO spec: which field, on which line, and what is expected.

use std::fmt;

/// An SLO spec that cannot be used. The message names the field, the line (for TOML input)
/// and what is expected.
///
/// # Examples
///
/// ```
/// let error = tokenmeter_slo::SloSpec::from_toml("period = \"soon\"").unwrap_err();
/// assert!(error.to_string().contains("line 1"));
/// assert!(error.to_string().contains("period"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct SpecError {
    /// The field, as a path (`class[0].objective[1].threshold`).
    pub field: String,
    /// The 1-based line in the TOML text, when known.
    pub line: Option<usize>,
    /// What is wrong and what is expected.
    pub message: String,
}

impl SpecError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            line: None,
            message: message.into(),
        }
    }

    pub(crate) fn at(mut self, line: Option<usize>) -> Self {
        if self.line.is_none() {
            self.line = line;
        }
        self
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(
                f,
                "SLO spec, line {line}, `{}`: {}",
                self.field, self.message
            ),
            None => write!(f, "SLO spec, `{}`: {}", self.field, self.message),
        }
    }
}
