//! The character rule of the OTel→Prometheus translation (`docs/src/reference/metrics.md` §3), as
//! `const fn`s so that names spelled out by an exporter can be checked when it compiles.

/// A byte of an OpenTelemetry name as it stands in the Prometheus name: `.` and `-` become
/// `_`, every other byte stays.
pub(super) const fn prometheus_byte(byte: u8) -> u8 {
    match byte {
        b'.' | b'-' => b'_',
        other => other,
    }
}

/// Whether `prometheus` is `otel` with [`prometheus_byte`] applied, followed by `suffix`.
pub(super) const fn translates(otel: &str, suffix: &str, prometheus: &str) -> bool {
    let (otel, suffix, prometheus) = (otel.as_bytes(), suffix.as_bytes(), prometheus.as_bytes());
    if prometheus.len() != otel.len() + suffix.len() {
        return false;
    }
    let mut i = 0;
    while i < otel.len() {
        if prometheus[i] != prometheus_byte(otel[i]) {
            return false;
        }
        i += 1;
    }
    let mut j = 0;
    while j < suffix.len() {
        if prometheus[otel.len() + j] != suffix[j] {
            return false;
        }
        j += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_and_dashes_become_underscores_and_the_suffix_follows() {
        assert!(translates("gen_ai.token.type", "", "gen_ai_token_type"));
        assert!(translates("a-b.c", "_total", "a_b_c_total"));
        assert!(!translates("a.b", "", "a.b"));
        assert!(!translates("a.b", "_total", "a_b"));
        assert!(!translates("a.b", "", "a_bc"));
    }
}
