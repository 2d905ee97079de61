//! `--confidence PERCENT`: the level of every interval, as users write it.

use tokenmeter::report::Confidence;

/// Parses a confidence level given in percent (`95`, `99.5`, `95%`), strictly between 0 and
/// 100; a level under 1% is refused too, as it is almost surely a fraction meant as a
/// percentage (`0.95`).
///
/// ```
/// use tokenmeter_bench::parse::parse_confidence;
///
/// assert_eq!(parse_confidence("99.5%")?.level(), 0.995);
/// assert_eq!(parse_confidence("95")?.level(), 0.95);
/// let error = parse_confidence("100").unwrap_err();
/// assert!(error.contains("--confidence") && error.contains("e.g. 95"), "{error}");
/// # Ok::<(), String>(())
/// ```
///
/// # Errors
/// The text is not a number, or not above 0 and below 100, or a fraction below 1.
pub fn parse_confidence(text: &str) -> Result<Confidence, String> {
    let trimmed = text.trim();
    let number = trimmed.strip_suffix('%').unwrap_or(trimmed).trim();
    let refused = |why: &str| {
        format!(
            "--confidence {text:?}: {why}; give a percentage, e.g. 95 or 99.5 (95% is the default)"
        )
    };
    let percent: f64 = number.parse().map_err(|_| refused("not a number"))?;
    if !(percent > 0.0 && percent < 100.0) {
        return Err(refused("a confidence level is above 0% and below 100%"));
    }
    if percent < 1.0 {
        return Err(refused(&format!(
            "{percent}% is almost no confidence; if you meant the fraction {percent}, write {}",
            percent * 100.0
        )));
    }
    Confidence::new(percent / 100.0).ok_or_else(|| refused("not a level"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_with_or_without_the_sign() {
        for (text, level) in [
            ("95", 0.95),
            ("99.5", 0.995),
            ("95%", 0.95),
            (" 80 % ", 0.8),
        ] {
            assert_eq!(
                parse_confidence(text).map(Confidence::level),
                Ok(level),
                "{text}"
            );
        }
    }

    #[test]
    fn out_of_range_and_fractions_are_refused_naming_the_flag() {
        for text in ["0", "100", "150", "-5", "nan", "inf", "0.95", "", "ninety"] {
            let error = parse_confidence(text).unwrap_err();
            assert!(error.starts_with("--confidence"), "{text}: {error}");
            assert!(error.contains("e.g. 95"), "{text}: {error}");
        }
        assert!(parse_confidence("0.95").unwrap_err().contains("write 95"));
    }
}
