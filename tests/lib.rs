//! Cross-crate and end-to-end tests live in this package's test targets.
