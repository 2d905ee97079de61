//! The model names the simulated server answers for (in process), with the real `bench`
//! process: `bench` with no `--model` finds the served name in `/v1/models`, an alias of
//! `--served-model-name` works,
//! and a mistyped `--model` ends the run before it starts, with the server's 404 naming the
//! model (exit 3, a run that could not happen).
#[path = "serve_support/mod.rs"]
mod support;

use std::process::{Command, Stdio};

use support::{Hosted, bench};
use tokenmeter_server::Config;

#[test]
fn bench_finds_the_served_name_and_a_mistyped_model_fails_fast() {
    let serve = Hosted::start(
        Config::default().served_model_name(vec!["llama-8b".to_owned(), "llama".to_owned()]),
    );
    let url = serve.url();

    let found = bench(&url, &["-n", "3", "--rate", "inf"]);
    assert_eq!(found.requests(), 3);
    assert_eq!(found.summary["outcomes"]["success"], 3, "{}", found.summary);
    let alias = bench(&url, &["-n", "2", "--rate", "inf", "--model", "llama"]);
    assert_eq!(alias.summary["outcomes"]["success"], 2, "{}", alias.summary);

    let output = Command::new(env!("CARGO_BIN_EXE_tokenmeter"))
        .env_remove("OPENAI_API_KEY")
        .args(["bench", "--url", &url, "--model", "lama-8b", "-n", "3"])
        .args(["--rate", "inf", "--no-progress"])
        .stdin(Stdio::null())
        .output()
        .expect("tokenmeter bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    for fragment in ["404", "The model `lama-8b` does not exist.", "--model"] {
        assert!(
            stderr.contains(fragment),
            "stderr lacks `{fragment}`:\n{stderr}"
        );
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}
