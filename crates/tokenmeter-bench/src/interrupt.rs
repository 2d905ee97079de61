//! Ctrl-C and SIGTERM during a run: the first stops new requests and lets the ones in flight
//! finish (drain); a second cancels those too. The run then writes what completed, marked as
//! interrupted, and exits with code 130. An interrupt during model discovery or the test
//! request stops there ([`before_the_run`]), with the same code.

use tokio::sync::watch;

use crate::exit::Exit;

/// How far an interrupt has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Stage {
    /// Running.
    Running,
    /// No new requests; the ones in flight finish.
    Draining,
    /// The requests in flight are cancelled too.
    Cancelling,
}

/// The run's interrupt state, shared by the runner and every request task.
#[derive(Clone, Debug)]
pub(crate) struct Interrupt {
    stage: watch::Receiver<Stage>,
    // Keeps the channel open for `never` and tests.
    _sender: Option<std::sync::Arc<watch::Sender<Stage>>>,
}

impl Interrupt {
    /// An interrupt that never comes.
    pub(crate) fn never() -> Self {
        let (sender, stage) = watch::channel(Stage::Running);
        Self {
            stage,
            _sender: Some(std::sync::Arc::new(sender)),
        }
    }

    /// An interrupt raised by `sender` (one [`Stage`] further per raise).
    pub(crate) fn manual() -> (watch::Sender<Stage>, Self) {
        let (sender, stage) = watch::channel(Stage::Running);
        (
            sender,
            Self {
                stage,
                _sender: None,
            },
        )
    }

    /// Listens for Ctrl-C (and SIGTERM on Unix) for the rest of the process: each signal moves
    /// one [`Stage`] further, and says so on stderr.
    pub(crate) fn on_signals() -> Self {
        let (sender, interrupt) = Self::manual();
        tokio::spawn(async move {
            while signal().await {
                let next = match *sender.borrow() {
                    Stage::Running => Stage::Draining,
                    _ => Stage::Cancelling,
                };
                match next {
                    Stage::Draining => crate::console::err(
                        "\ninterrupted: no new requests; waiting for the requests in flight \
                         (interrupt again to cancel them)\n",
                    ),
                    _ => crate::console::err(
                        "\ninterrupted again: cancelling the requests in flight\n",
                    ),
                }
                if sender.send(next).is_err() || next == Stage::Cancelling {
                    break;
                }
            }
        });
        interrupt
    }

    /// The stage now.
    pub(crate) fn stage(&self) -> Stage {
        *self.stage.borrow()
    }

    /// True once interrupted.
    pub(crate) fn interrupted(&self) -> bool {
        self.stage() > Stage::Running
    }

    /// Resolves once the stage reaches `stage` (never, if it does not).
    pub(crate) async fn reached(&self, stage: Stage) {
        let mut receiver = self.stage.clone();
        if receiver.wait_for(|now| *now >= stage).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// `step` (model discovery, the test request), unless an interrupt comes first: then an
/// [`Exit::Interrupted`] error naming `what`, and nothing of the run is sent.
pub(crate) async fn before_the_run<T>(
    stop: &Interrupt,
    what: &str,
    step: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    tokio::select! {
        result = step => result,
        () = stop.reached(Stage::Draining) => Err(Exit::Interrupted.error(format!(
            "interrupted during {what}; no request of the run was sent"
        ))),
    }
}

/// The next Ctrl-C or SIGTERM; false when signals cannot be listened for.
pub(crate) async fn signal() -> bool {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return tokio::signal::ctrl_c().await.is_ok();
        };
        tokio::select! {
            ctrl_c = tokio::signal::ctrl_c() => ctrl_c.is_ok(),
            term = term.recv() => term.is_some(),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.is_ok()
    }
}

/// Marks an HTML report as interrupted: a banner at the top of its body.
pub(crate) fn mark_html(html: String, sent: usize, planned: usize) -> String {
    let banner = format!(
        "<p style=\"background:#fde68a;padding:0.5em\"><strong>Interrupted</strong>: {sent} of \
         {planned} planned requests were sent; the report covers what completed.</p>"
    );
    match html.find("<body>") {
        Some(at) => {
            let at = at + "<body>".len();
            format!("{}{banner}{}", &html[..at], &html[at..])
        }
        None => banner + &html,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stages_only_go_forward() {
        let (sender, interrupt) = Interrupt::manual();
        assert!(!interrupt.interrupted());
        sender.send(Stage::Draining).unwrap();
        interrupt.reached(Stage::Draining).await;
        assert_eq!(interrupt.stage(), Stage::Draining);
        sender.send(Stage::Cancelling).unwrap();
        interrupt.reached(Stage::Cancelling).await;
        assert!(interrupt.interrupted());
        let never = Interrupt::never();
        let waited = tokio::time::timeout(
            std::time::Duration::from_millis(1),
            never.reached(Stage::Draining),
        )
        .await;
        assert!(waited.is_err(), "never is never interrupted");
    }

    #[tokio::test]
    async fn an_interrupt_before_the_run_stops_the_step() {
        let (sender, stop) = Interrupt::manual();
        let done = before_the_run(&stop, "x", async { Ok(1) }).await.unwrap();
        assert_eq!(done, 1);
        sender.send(Stage::Draining).unwrap();
        let stalled = before_the_run(
            &stop,
            "model discovery",
            std::future::pending::<anyhow::Result<()>>(),
        );
        let error = stalled.await.unwrap_err();
        assert_eq!(crate::exit::code(&error), 130);
        assert!(
            error
                .to_string()
                .contains("interrupted during model discovery")
        );
    }

    #[test]
    fn the_html_banner_opens_the_body() {
        let html = mark_html("<html><body><h1>x</h1></body></html>".to_owned(), 3, 10);
        assert!(html.starts_with("<html><body><p"), "{html}");
        assert!(html.contains("3 of 10 planned"));
    }
}
