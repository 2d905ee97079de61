//! The address a child process logs once it listens on a port the kernel picked (port 0), so
//! that no other process can take the port between its choice and the bind.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// Reads `log` (the file `child` writes its log to) until a whole line in which `address_in`
/// finds the address; panics with the log when `child` exits first, when the address does not
/// parse, or after `limit`.
pub fn listening_address(
    child: &mut Child,
    log: &Path,
    limit: Duration,
    address_in: impl Fn(&str) -> Option<&str>,
) -> SocketAddr {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        // Whole lines only: the line may be in the middle of being written.
        let printed = text
            .split_inclusive('\n')
            .filter(|line| line.ends_with('\n'))
            .find_map(&address_in);
        if let Some(printed) = printed {
            return printed.parse().unwrap_or_else(|e| {
                panic!(
                    "{} names the address {printed:?} ({e}):\n{text}",
                    log.display()
                )
            });
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "the process logging to {} exited ({status}) before it listened:\n{text}",
                log.display()
            );
        }
        assert!(
            Instant::now() < deadline,
            "no listening address in {} within {limit:?}:\n{text}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
