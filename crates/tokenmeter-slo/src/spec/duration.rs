//! Human durations: `250ms`, `1s`, `1.5s`, `30d`.

use std::time::Duration;

/// Parses a duration written as a number and a unit: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`,
/// `d`, `w`. Fractions are allowed (`1.5s`, `0.2ms`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_slo::spec::parse_duration;
///
/// assert_eq!(parse_duration("50ms"), Ok(Duration::from_millis(50)));
/// assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
/// assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
/// assert!(parse_duration("fast").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{text}` has no unit: write it like 250ms, 1s, 5m, 30d"))?;
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        format!("`{text}` does not start with a number: write it like 250ms, 1s, 5m")
    })?;
    let seconds = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3_600.0,
        "d" => 86_400.0,
        "w" => 604_800.0,
        other => {
            return Err(format!(
                "`{text}` has an unknown unit `{other}`: use ns, us, ms, s, m, h, d or w"
            ));
        }
    };
    Duration::try_from_secs_f64(value * seconds)
        .map_err(|_| format!("`{text}` is out of range for a duration"))
}

/// Writes a duration the way [`parse_duration`] reads it, with the largest unit that keeps it
/// whole (`5m`, `1h`, `30d`, `250ms`), as Prometheus range selectors want.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use tokenmeter_slo::spec::format_duration;
/// assert_eq!(format_duration(Duration::from_secs(300)), "5m");
/// assert_eq!(format_duration(Duration::from_secs(3 * 86_400)), "3d");
/// assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
/// ```
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_errors() {
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7_200)));
        assert_eq!(parse_duration("0.2ms"), Ok(Duration::from_micros(200)));
        assert!(parse_duration("10").unwrap_err().contains("no unit"));
        assert!(
            parse_duration("10 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_duration("-1s").is_err());
    }
}
