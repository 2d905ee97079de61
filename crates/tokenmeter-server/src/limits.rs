//! [`Limits`]: what one client may hold of the server (time to send a request, body size, idle
//! time, connections) and how long a shutdown waits; their defaults, and the connection limit
//! derived from the process's file limit.

use std::time::Duration;

use tokenmeter_listen::Timeouts;

/// Default time a request's line and headers may take, from their first byte.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a request body may take to arrive whole, after its headers.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time a connection may sit idle between requests (uvicorn's, which vLLM runs on).
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(5);
/// Default largest request body: 2 MiB (axum's default limit, made explicit).
pub const DEFAULT_MAX_BODY: usize = 2 * 1024 * 1024;
/// Default memory every request body being read or held may take together: 256 MiB, room for
/// 128 bodies of the default largest size at once (an eighth of the default connection limit);
/// see `Config::body_memory_limit`.
pub const DEFAULT_BODY_MEMORY: usize = 256 * 1024 * 1024;
/// The largest read buffer of one connection (hyper's `max_buf_size`, 400 KiB when left to
/// itself): a request head longer than this is answered 431, and a body is read ahead at most
/// this much. 128 KiB keeps the 414 of an over-long URI (hyper's limit is 64 KiB) and, with
/// every connection of the default limit holding a full buffer, 128 MiB at most.
pub(crate) const READ_BUFFER: usize = 128 * 1024;
/// Default time a connection may wait for its client to read, with bytes to write and none
/// written: past it the connection is closed and its requests are cancelled. Longer than the
/// engine's stall limit (30 s), which cuts the request first.
pub const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// Default most connections open at once (lowered under the process's file limit).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default time in-flight responses get to end at a shutdown before they are cancelled.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(1);
/// Default most requests waiting in the engine's queue (more are answered 429).
pub const DEFAULT_QUEUE_LIMIT: usize = 256;

/// The server's limits on its clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// A request's line and headers must arrive within this of their first byte.
    pub(crate) header_timeout: Duration,
    /// A request body must arrive whole within this after its headers (answered 408).
    pub(crate) body_timeout: Duration,
    /// A connection with no request in flight and no byte received for this long is closed.
    pub(crate) keep_alive: Duration,
    /// A connection whose client reads nothing for this long, while a write waits, is closed.
    pub(crate) send_timeout: Duration,
    /// Request bodies larger than this are answered 413.
    pub(crate) max_body: usize,
    /// The bytes every request body being read or held may take together, already derived by
    /// [`body_budget`]; a body that does not fit is answered 503.
    pub(crate) body_memory: usize,
    /// Connections open at once, already lowered by [`connection_limit`].
    pub(crate) max_connections: usize,
    /// At a shutdown, in-flight responses get this long to end; the rest are cancelled.
    pub(crate) shutdown_grace: Duration,
}

impl Limits {
    /// The per-connection deadlines.
    pub(crate) fn timeouts(&self) -> Timeouts {
        Timeouts::new(self.header_timeout, self.keep_alive, self.send_timeout)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            send_timeout: DEFAULT_SEND_TIMEOUT,
            max_body: DEFAULT_MAX_BODY,
            body_memory: DEFAULT_BODY_MEMORY,
            max_connections: connection_limit(DEFAULT_MAX_CONNECTIONS, open_file_limit()),
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
        }
    }
}

/// The connections the server may hold: `wanted`, lowered so that they leave headroom under a
/// file limit of `open_files` (`RLIMIT_NOFILE`) for the listener, the log files and the
/// runtime: an eighth of the limit, at least 32 files. At least 1.
pub(crate) fn connection_limit(wanted: usize, open_files: Option<u64>) -> usize {
    let Some(files) = open_files else {
        return wanted.max(1);
    };
    let headroom = (files / 8).max(32);
    let usable = usize::try_from(files.saturating_sub(headroom)).unwrap_or(usize::MAX);
    wanted.min(usable).max(1)
}

/// The bytes of request bodies the server holds at once: `memory` (`--max-body-memory`), no
/// more than `connections` bodies of `max_body` (more could never be read at once), and no
/// less than one body of `max_body` (so that every body the size limit admits can be read).
pub(crate) fn body_budget(memory: usize, max_body: usize, connections: usize) -> usize {
    memory
        .min(connections.saturating_mul(max_body))
        .max(max_body)
}

/// The process's soft limit on open files, if it has one.
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Parses a size in bytes: a whole number and an optional unit, `B`, `KiB`, `MiB`, `GiB` (powers
/// of 1024) or `KB`, `MB`, `GB` (powers of 1000); e.g. `2MiB`, `512KiB`, `65536`.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size: write a whole number of bytes, e.g. 2MiB"))?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        other => {
            return Err(format!(
                "`{other}` is not a size unit: use B, KiB, MiB, GiB, KB, MB or GB"
            ));
        }
    };
    let bytes = number
        .checked_mul(scale)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| format!("`{text}` is too large"))?;
    if bytes == 0 {
        return Err("give at least 1 byte".to_owned());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_limit_leaves_headroom_under_the_file_limit() {
        assert_eq!(connection_limit(1024, None), 1024);
        assert_eq!(connection_limit(1024, Some(1_048_576)), 1024);
        // A 256-file limit: 32 kept back.
        assert_eq!(connection_limit(1024, Some(256)), 224);
        // A 1024-file limit: an eighth kept back.
        assert_eq!(connection_limit(1024, Some(1024)), 896);
        assert_eq!(connection_limit(10, Some(256)), 10);
        assert_eq!(connection_limit(1024, Some(16)), 1);
        assert_eq!(connection_limit(0, None), 1);
    }

    #[test]
    fn the_default_fits_this_process() {
        let limits = Limits::default();
        assert!(limits.max_connections <= DEFAULT_MAX_CONNECTIONS);
        if let Some(files) = open_file_limit() {
            assert!((limits.max_connections as u64) < files);
        }
    }

    #[test]
    fn the_body_budget_fits_one_body_and_no_more_than_the_connections_hold() {
        let mib = 1024 * 1024;
        assert_eq!(body_budget(DEFAULT_BODY_MEMORY, 2 * mib, 1024), 256 * mib);
        assert_eq!(body_budget(DEFAULT_BODY_MEMORY, 2 * mib, 8), 16 * mib);
        assert_eq!(body_budget(mib, 2 * mib, 1024), 2 * mib);
        assert_eq!(body_budget(usize::MAX, usize::MAX, 2), usize::MAX);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("2MiB"), Ok(2 * 1024 * 1024));
        assert_eq!(parse_size("512KiB"), Ok(512 * 1024));
        assert_eq!(parse_size("65536"), Ok(65_536));
        assert_eq!(parse_size("3 MB"), Ok(3_000_000));
        assert_eq!(parse_size("10B"), Ok(10));
        for (bad, says) in [
            ("MiB", "not a size"),
            ("2 parsecs", "not a size unit"),
            ("0", "at least 1"),
            ("99999999999999999999GiB", "not a size"),
            ("18446744073709551615GiB", "too large"),
        ] {
            let error = parse_size(bad).expect_err(bad);
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
