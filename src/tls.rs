//! The rustls client configuration for HTTPS upstreams: a leaf that the proxy's forwarder, the
//! OTLP exporter's client and object storage's client all build from.
//!
//! Input: the optional extra CA bundle path from `[tls] extra_ca`. Output: a
//! [`rustls::ClientConfig`] that verifies certificates against the bundled webpki roots plus that
//! bundle, for the upstream client (`upstream`, which sets ALPN to h2 + http/1.1).
//!
//! The crypto provider is `ring`, chosen explicitly: with two providers compiled in, rustls
//! panics at run time, and `aws-lc-rs` needs cmake and adds minutes to a clean build.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read extra CA bundle {}: {cause}", path.display())]
    ReadCa {
        path: PathBuf,
        cause: rustls_pki_types::pem::Error,
    },
    #[error("extra CA bundle {} holds no certificate", path.display())]
    EmptyCa { path: PathBuf },
    #[error("extra CA bundle {}: certificate {index} is unusable: {cause}", path.display())]
    BadCa {
        path: PathBuf,
        index: usize,
        cause: rustls::Error,
    },
    #[error("rustls rejected the protocol versions: {0}")]
    Versions(rustls::Error),
}

/// Build the client TLS config: webpki roots, plus every certificate in `extra_ca`.
pub fn client_config(extra_ca: Option<&Path>) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = extra_ca {
        add_bundle(&mut roots, path)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Versions)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

fn add_bundle(roots: &mut RootCertStore, path: &Path) -> Result<(), TlsError> {
    let read_error = |cause| TlsError::ReadCa {
        path: path.to_path_buf(),
        cause,
    };
    let mut added = 0;
    for (index, cert) in CertificateDer::pem_file_iter(path)
        .map_err(read_error)?
        .enumerate()
    {
        let cert = cert.map_err(read_error)?;
        roots.add(cert).map_err(|cause| TlsError::BadCa {
            path: path.to_path_buf(),
            index,
            cause,
        })?;
        added += 1;
    }
    if added == 0 {
        return Err(TlsError::EmptyCa {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_empty_bundles_are_clear_errors() {
        let missing = client_config(Some(Path::new("/nonexistent/ca.pem")));
        assert!(matches!(missing, Err(TlsError::ReadCa { .. })));
        let dir = crate::test_dir::TestDir::new("tls-test");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "no pem here\n").expect("write");
        let result = client_config(Some(&empty));
        assert!(
            matches!(result, Err(TlsError::EmptyCa { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn default_config_has_roots_and_no_panic_from_providers() {
        let config = client_config(None).expect("config");
        assert!(
            config.alpn_protocols.is_empty(),
            "the upstream client sets ALPN"
        );
    }
}
