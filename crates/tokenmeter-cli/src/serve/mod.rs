//! `tokenmeter serve`: the flags ([`ServeArgs`]), their mapping onto the `tokenmeter-server`
//! library's `Config`, and the lines the command prints. The server itself (routes, limits,
//! shutdown) is the library's.

mod args;

pub(crate) use args::ServeArgs;

use anyhow::Context as _;
use tokenmeter_server::{Error, Server};

use tokenmeter_bench::console;

/// Runs the server until Ctrl-C or SIGTERM.
pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let listener = tokenmeter_server::bind(args.listen, args.send_buffer).map_err(|error| {
        let context = format!(
            "cannot listen on {}: is another server using the port? Pick another with --listen",
            args.listen
        );
        match error {
            Error::Bind { source, .. } => anyhow::Error::new(source).context(context),
            other => anyhow::Error::new(other),
        }
    })?;
    let profile = args.profile;
    let mut config = args.config();
    let model = config.served_names().join(", ");
    let max_connections = config.connection_limit();
    if max_connections < args.max_connections {
        console::err(&format!(
            "tokenmeter serve: at most {} connections (not {}): the open-file limit is {}; raise it with `ulimit -n`\n",
            max_connections,
            args.max_connections,
            tokenmeter_server::open_file_limit()
                .map_or_else(|| "unknown".to_owned(), |n| n.to_string()),
        ));
    }
    let body_memory = config.body_memory_limit();
    if body_memory > args.max_body_memory {
        console::err(&format!(
            "tokenmeter serve: request bodies may take {} bytes at once (not {}): one body of --max-body-size must fit\n",
            body_memory, args.max_body_memory,
        ));
    }
    let answer_memory = config.answer_memory_limit();
    if answer_memory > args.max_answer_memory {
        console::err(&format!(
            "tokenmeter serve: whole answers may take {} bytes at once (not {}): one answer of --max-answer-size must fit\n",
            answer_memory, args.max_answer_memory,
        ));
    }
    // The simulator's settings are checked before the spec file is read, as they always were.
    config.validate()?;
    if let Some(path) = &args.slo_spec {
        config = config.slo_spec(crate::slo::read_spec(path)?);
    }
    let mut server = Server::from_listener(config, listener)?;
    console::err(&format!(
        "tokenmeter serve: model {model} on {url}  (POST /v1/chat/completions, /v1/completions; GET /metrics [{profile:?}], /health). Ctrl-C to stop.\n",
        url = server.url(),
    ));
    tokio::select! {
        signal = stop_signal() => {
            let name = signal?;
            console::err(&format!("{}\n", server.slo().text()));
            console::err(&format!(
                "tokenmeter serve: {name}: stopping (in-flight responses get {:?})\n",
                server.shutdown_grace()
            ));
            let stopped = server.shutdown().await?;
            console::err(&format!(
                "tokenmeter serve: stopped: {} connections closed at once, {} ended within the grace, {} cancelled\n",
                stopped.closed, stopped.drained, stopped.cancelled
            ));
            Ok(())
        }
        ended = server.stopped() => {
            let _ = ended?;
            anyhow::bail!("the server stopped on its own")
        }
    }
}

/// Waits for Ctrl-C (SIGINT) or, on Unix, SIGTERM; returns its name.
async fn stop_signal() -> anyhow::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        tokio::select! {
            ctrl_c = tokio::signal::ctrl_c() => ctrl_c.context("cannot listen for Ctrl-C").map(|()| "interrupted"),
            _ = term.recv() => Ok("terminated"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .context("cannot listen for Ctrl-C")
            .map(|()| "interrupted")
    }
}
