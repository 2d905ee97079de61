//! The text form of `bench compare --threshold`.

/// `5%` or `5` → 0.05: a relative difference, in percent of the base's value, from 0 up to
/// (not including) 1000%.
///
/// # Errors
/// The text is not a number, or is outside 0–1000.
///
/// ```
/// use tokenmeter_bench::parse::parse_threshold;
/// assert_eq!(parse_threshold("5%"), Ok(0.05));
/// assert_eq!(parse_threshold("12.5"), Ok(0.125));
/// assert!(parse_threshold("-1%").unwrap_err().contains("`5%`"));
/// ```
pub fn parse_threshold(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(p) if (0.0..1000.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "--threshold `{text}` is not a percentage from 0 to 1000; write it as `5%` or `5`"
        )),
    }
}
