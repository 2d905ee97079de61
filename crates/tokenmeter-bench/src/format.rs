//! Sizes and durations as messages print them: [`format_size`] (`4MiB`), [`format_duration`]
//! (`1.5s`).

use std::time::Duration;

/// `bytes` in the largest binary unit that divides it (`4MiB`, `1536KiB`, `100B`).
pub(crate) fn format_size(bytes: usize) -> String {
    for (unit, size) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes}B")
}

/// `1.5s`, `250ms`, `800us`: the shortest exact-looking form.
pub(crate) fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 {
        format!("{}s", trim(secs))
    } else if secs >= 1e-3 {
        format!("{}ms", trim(secs * 1e3))
    } else {
        format!("{}us", trim(secs * 1e6))
    }
}

/// `x` with three decimals, less its trailing zeros (and point).
fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}
