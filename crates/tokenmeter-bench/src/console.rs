//! The process's stdout and stderr, written without panicking: every line the command shows
//! goes through here.
//!
//! `print!` and `eprint!` panic when their stream is closed (`tokenmeter bench … | head -1`):
//! Rust ignores SIGPIPE, so the write returns `EPIPE`, and the panic would stop the run before
//! its `--json`, `--html` and `--trace` files are written. Here a stream that fails is marked
//! closed and later writes to it are dropped: the run goes on, the files are written, and the
//! exit code is the run's own (see `exit.rs`).
//!
//! A closed pipe is the reader's choice and is not reported. Any other failure of stdout (a
//! full disk under `> file`) is said once on stderr. A failing stderr has nowhere to be said.
//!
//! ```
//! use tokenmeter_bench::console;
//!
//! console::out("the report, on stdout\n");
//! console::warn("said on stderr, after `warning: `");
//! ```

use std::fmt::Display;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout failed: nothing more is written to it.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Set once a write to stderr failed: nothing more is written to it.
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `bytes` to stdout and flushes. `Ok` when written, and also when the reader has
/// closed the pipe (or closed it before): what the reader no longer reads is dropped. Any
/// other error is returned (once; stdout is then closed to later writes too).
///
/// ```
/// tokenmeter_bench::console::write_stdout(b"written, or dropped if the reader left\n")?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    write_to(&mut io::stdout().lock(), &STDOUT_CLOSED, bytes)
}

/// Shows `text` on stdout; a failure other than a closed pipe is said once on stderr.
///
/// ```
/// tokenmeter_bench::console::out("a line for stdout\n");
/// ```
pub fn out(text: &str) {
    if let Err(error) = write_stdout(text.as_bytes()) {
        err(&format!(
            "warning: cannot write to stdout ({error}); what the run shows there is lost, its \
             files are written\n"
        ));
    }
}

/// Shows `text` on stderr; a failure closes stderr to later writes, silently.
///
/// ```
/// tokenmeter_bench::console::err("a line for stderr\n");
/// ```
pub fn err(text: &str) {
    let _ = write_to(&mut io::stderr().lock(), &STDERR_CLOSED, text.as_bytes());
}

/// `warning: {message}` as one line on stderr.
///
/// ```
/// // Prints `warning: 3 requests were cancelled` on stderr.
/// tokenmeter_bench::console::warn(format_args!("{} requests were cancelled", 3));
/// ```
pub fn warn(message: impl Display) {
    err(&format!("warning: {message}\n"));
}

/// Stdout as an [`io::Write`] with the same rule as [`write_stdout`]: a closed pipe swallows
/// what is written, other errors are returned. For writers that stream to `-` (`--trace -`).
///
/// ```
/// use std::io::Write as _;
///
/// let mut stdout = tokenmeter_bench::console::Stdout;
/// writeln!(stdout, "{{\"id\": 0}}")?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_stdout(buf).map(|()| buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes `bytes` to `stream` unless `closed`; a broken pipe closes it and is not an error,
/// any other error closes it and is returned.
fn write_to(stream: &mut impl Write, closed: &AtomicBool, bytes: &[u8]) -> io::Result<()> {
    if closed.load(Ordering::Relaxed) {
        return Ok(());
    }
    match stream.write_all(bytes).and_then(|()| stream.flush()) {
        Ok(()) => Ok(()),
        Err(error) => {
            // Only the first failure is returned: a later write finds the stream closed.
            if closed.swap(true, Ordering::Relaxed) || error.kind() == io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(error)
            }
        }
    }
}

/// `-`: the output goes to stdout (and the table to stderr).
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that fails every write with `kind`, counting the attempts.
    struct Failing {
        kind: io::ErrorKind,
        attempts: usize,
    }

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            self.attempts += 1;
            Err(io::Error::from(self.kind))
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_quiet_and_stops_later_writes() {
        let closed = AtomicBool::new(false);
        let mut pipe = Failing {
            kind: io::ErrorKind::BrokenPipe,
            attempts: 0,
        };
        assert!(write_to(&mut pipe, &closed, b"first\n").is_ok());
        assert!(write_to(&mut pipe, &closed, b"second\n").is_ok());
        assert_eq!(pipe.attempts, 1, "nothing is written after the pipe closed");
        assert!(closed.load(Ordering::Relaxed));
    }

    #[test]
    fn another_failure_is_returned_once() {
        let closed = AtomicBool::new(false);
        let mut full = Failing {
            kind: io::ErrorKind::StorageFull,
            attempts: 0,
        };
        let first = write_to(&mut full, &closed, b"a").unwrap_err();
        assert_eq!(first.kind(), io::ErrorKind::StorageFull);
        assert!(write_to(&mut full, &closed, b"b").is_ok());
        assert_eq!(full.attempts, 1);
    }

    #[test]
    fn an_open_stream_gets_everything() {
        let closed = AtomicBool::new(false);
        let mut buffer = Vec::new();
        write_to(&mut buffer, &closed, b"one ").unwrap();
        write_to(&mut buffer, &closed, b"two").unwrap();
        assert_eq!(buffer, b"one two");
    }
}
