//! HTTPS for the scripted server: a test CA and a server certificate for `localhost` and
//! 127.0.0.1 that it signed, both made by the test (rcgen), and the scripted server behind
//! rustls (ring).

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::{Handler, Reply, Seen, connection};

/// A CA made for one test, and the server configuration of a certificate it signed.
pub struct TestCa {
    /// The CA's certificate, PEM: what `--ca-cert` or `SSL_CERT_FILE` trusts.
    pub ca_pem: String,
    /// A server certificate for `localhost` and 127.0.0.1, signed by the CA.
    pub server: Arc<ServerConfig>,
}

impl TestCa {
    /// A fresh CA and server certificate.
    pub fn new() -> Self {
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "tokenmeter test CA");
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("CA key"))
            .expect("a self-signed CA");

        let key = KeyPair::generate().expect("server key");
        let cert = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("server parameters")
            .signed_by(&key, &ca)
            .expect("a server certificate signed by the CA");
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .expect("the server certificate and key match");
        Self {
            ca_pem: ca.pem(),
            server: Arc::new(server),
        }
    }

    /// Writes the CA certificate to `dir/name` and returns its path.
    pub fn write_ca(&self, dir: &Path, name: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, &self.ca_pem).expect("write the CA certificate");
        path
    }
}

/// Serves every request with `handler` over TLS until the process ends. A connection whose
/// handshake fails (a client that does not trust the CA) is closed.
pub fn serve_tls(
    config: Arc<ServerConfig>,
    handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("address");
    let handler: Handler = Arc::new(handler);
    std::thread::spawn(move || {
        for socket in listener.incoming().flatten() {
            let handler = handler.clone();
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(tls) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let _ = connection(rustls::StreamOwned::new(tls, socket), &handler);
            });
        }
    });
    addr
}
