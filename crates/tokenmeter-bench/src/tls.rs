//! HTTPS for every client of the bench (the requests and the model list): rustls with the
//! `ring` crypto provider, in the default build. Server certificates are verified against the
//! system's roots (or the PEM file named by `SSL_CERT_FILE`, or the directories of
//! `SSL_CERT_DIR`, when set) plus the CA certificates of `--ca-cert`; `--insecure` turns
//! verification off, for self-signed test servers only.

use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{Context as _, bail};

/// How the bench's clients verify HTTPS servers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tls {
    /// The file the extra roots came from (a path, fine to print).
    ca_cert: Option<PathBuf>,
    /// Extra trusted roots, from `--ca-cert`.
    roots: Vec<reqwest::Certificate>,
    /// Accept any server certificate (`--insecure`).
    insecure: bool,
}

impl Tls {
    /// The settings of `--ca-cert` (read now, so a bad file fails before any request) and
    /// `--insecure`.
    pub(crate) fn new(ca_cert: Option<&Path>, insecure: bool) -> anyhow::Result<Self> {
        let roots = match ca_cert {
            None => Vec::new(),
            Some(path) => read_roots(path)?,
        };
        Ok(Self {
            ca_cert: ca_cert.map(Path::to_path_buf),
            roots,
            insecure,
        })
    }

    /// Whether server certificates go unchecked (`--insecure`).
    pub(crate) fn insecure(&self) -> bool {
        self.insecure
    }

    /// A client builder that verifies HTTPS servers this way.
    pub(crate) fn client_builder(&self) -> reqwest::ClientBuilder {
        install_crypto_provider();
        reqwest::Client::builder()
            .tls_certs_merge(self.roots.iter().cloned())
            .tls_danger_accept_invalid_certs(self.insecure)
    }

    /// What to add to an error that may come from certificate verification.
    pub(crate) fn hint(&self) -> String {
        match &self.ca_cert {
            Some(path) => format!(
                "the server's certificate must chain to the system's roots or to --ca-cert {}",
                path.display()
            ),
            None => "for a server whose certificate comes from a private CA, pass --ca-cert \
                     FILE (PEM) or set SSL_CERT_FILE; --insecure skips verification (test \
                     servers only)"
                .to_owned(),
        }
    }
}

/// The CA certificates of a PEM file.
fn read_roots(path: &Path) -> anyhow::Result<Vec<reqwest::Certificate>> {
    let fix = || {
        format!(
            "--ca-cert {}: give a PEM file holding the CA certificate(s) that signed the \
             server's certificate",
            path.display()
        )
    };
    let pem = std::fs::read(path)
        .with_context(|| format!("cannot read {}", path.display()))
        .with_context(fix)?;
    let roots = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| anyhow::anyhow!("{} is not valid PEM ({e})", path.display()))
        .with_context(fix)?;
    if roots.is_empty() {
        bail!(
            "{} holds no `-----BEGIN CERTIFICATE-----` block; {}",
            path.display(),
            fix()
        );
    }
    Ok(roots)
}

/// Makes `ring` the process's rustls crypto provider, once. reqwest takes the installed one,
/// and with no provider installed building any reqwest client panics: everything in this crate
/// that builds one (the bench through [`Tls::client_builder`], and its tests) calls this
/// first.
pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Fails only if another provider was installed first, which then serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_that_is_missing_or_empty_is_named_with_the_fix() {
        let missing = Tls::new(Some(Path::new("/nonexistent/ca.pem")), false).unwrap_err();
        let text = format!("{missing:#}");
        assert!(text.contains("/nonexistent/ca.pem"), "{text}");
        assert!(text.contains("PEM file"), "{text}");

        let dir = tempdir();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let text = format!("{:#}", Tls::new(Some(&empty), false).unwrap_err());
        assert!(text.contains("BEGIN CERTIFICATE"), "{text}");
    }

    #[test]
    fn the_default_verifies_and_builds_a_client() {
        let tls = Tls::default();
        assert!(!tls.insecure());
        assert!(tls.hint().contains("--ca-cert"));
        tls.client_builder().build().unwrap();
    }

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tokenmeter-tls-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
