//! A throwaway PKI made with rcgen: a CA, a server certificate for `127.0.0.1`/`localhost`
//! signed by it, the rustls server config for the TLS upstream (ALPN h2 + http/1.1), and the CA
//! as a PEM file for tooltap's `tls.extra_ca`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, KeyUsagePurpose};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

pub struct TestPki {
    pub ca_pem: String,
    pub server_config: Arc<rustls::ServerConfig>,
}

impl TestPki {
    pub fn new() -> TestPki {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "tooltap test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("ca key"))
            .expect("ca cert");
        let leaf_key = KeyPair::generate().expect("leaf key");
        let leaf_params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("leaf params");
        let leaf = leaf_params.signed_by(&leaf_key, &ca).expect("leaf cert");
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], key)
            .expect("server config");
        server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        TestPki {
            ca_pem: ca.pem(),
            server_config: Arc::new(server_config),
        }
    }

    /// Write the CA to a fresh file in the temp dir and return its path.
    pub fn write_ca(&self) -> PathBuf {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "tooltap-it-ca-{}-{}.pem",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, &self.ca_pem).expect("write CA");
        path
    }
}
