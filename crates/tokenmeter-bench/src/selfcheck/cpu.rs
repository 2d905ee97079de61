//! CPU time of the calling thread, from `/proc/thread-self` (Linux), without unsafe code.

use std::time::Duration;

/// CPU time (user + system) the calling thread has used so far.
///
/// Reads `/proc/thread-self/schedstat` (nanoseconds on the CPU); falls back to the clock ticks
/// of `/proc/thread-self/stat`. `None` where neither exists (not Linux).
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat")
        && let Some(ns) = text
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
    {
        return Some(Duration::from_nanos(ns));
    }
    let (user, system) = thread_cpu_split()?;
    Some(user + system)
}

/// CPU time (user + system) the whole process has used so far, every thread, from
/// `/proc/self/stat` in clock ticks of 10 ms. `None` where it does not exist (not Linux).
pub(crate) fn process_cpu_time() -> Option<Duration> {
    let (user, system) = cpu_split("/proc/self/stat")?;
    Some(user + system)
}

/// User and system CPU time of the calling thread, from `/proc/thread-self/stat`, in clock
/// ticks of 10 ms (USER_HZ is 100 on every Linux architecture we build for).
pub(crate) fn thread_cpu_split() -> Option<(Duration, Duration)> {
    cpu_split("/proc/thread-self/stat")
}

/// User and system CPU time from a `stat` file of `/proc`.
fn cpu_split(path: &str) -> Option<(Duration, Duration)> {
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the command name (which may hold spaces) start at state (field 3).
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // utime and stime are fields 14 and 15, i.e. 11 and 12 after the state.
    Some((
        Duration::from_millis(ticks(11)? * 10),
        Duration::from_millis(ticks(12)? * 10),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_counts_and_sleeping_does_not() {
        let Some(before) = thread_cpu_time() else {
            panic!("no /proc/thread-self on this system: the client self-check needs Linux");
        };
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(60) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let wall = start.elapsed();
        let spun = thread_cpu_time().unwrap_or_default().saturating_sub(before);
        // Other processes may take the core: the thread got some of the 60 ms, never more.
        assert!(
            spun > Duration::ZERO,
            "no CPU time measured for 60 ms of spinning"
        );
        assert!(
            spun <= wall + Duration::from_millis(10),
            "{spun:?} of CPU in {wall:?}"
        );

        let before = thread_cpu_time().unwrap_or_default();
        std::thread::sleep(Duration::from_millis(50));
        let slept = thread_cpu_time().unwrap_or_default().saturating_sub(before);
        assert!(
            slept < Duration::from_millis(10),
            "{slept:?} of CPU while sleeping"
        );
    }
}
