//! TLS with rustls and its ring provider: the server's certificate and key (PEM files), and
//! the verifiers for connections Regent makes itself (PostgreSQL, the health check). The
//! HTTPS listener itself is the binary's (`src/listener.rs`). ring is named explicitly everywhere, so no process-wide provider has to be
//! installed and aws-lc-rs never enters the build.

pub mod verify;

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

/// The one crypto provider Regent uses.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The HTTPS configuration from `TLS_CERT_FILE` (the certificate, then any intermediates) and
/// `TLS_KEY_FILE` (PKCS#8, PKCS#1 or SEC1).
pub fn server_config(cert_file: &Path, key_file: &Path) -> Result<Arc<ServerConfig>> {
    let certs = load_certs("TLS_CERT_FILE", cert_file)?;
    let key = load_key("TLS_KEY_FILE", key_file)?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            anyhow!(
                "TLS_CERT_FILE {} and TLS_KEY_FILE {} do not make a usable pair: {e}",
                cert_file.display(),
                key_file.display()
            )
        })?;
    // The router speaks HTTP/1.1 only; saying so spares clients an h2 attempt.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Every certificate of a PEM file, in file order. `what` names the setting in messages.
pub fn load_certs(what: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let pem = read(what, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("{what} {}: not valid PEM: {e}", path.display()))?;
    if certs.is_empty() {
        bail!(
            "{what} {}: no certificate in it (expected a PEM `BEGIN CERTIFICATE` block)",
            path.display()
        );
    }
    Ok(certs)
}

/// The first private key of a PEM file.
pub fn load_key(what: &str, path: &Path) -> Result<PrivateKeyDer<'static>> {
    let pem = read(what, path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => anyhow!(
            "{what} {}: no private key in it (expected a PEM `BEGIN PRIVATE KEY`, \
             `BEGIN RSA PRIVATE KEY` or `BEGIN EC PRIVATE KEY` block)",
            path.display()
        ),
        e => anyhow!("{what} {}: not valid PEM: {e}", path.display()),
    })
}

/// A root store holding every certificate of a PEM file.
pub fn load_roots(what: &str, path: &Path) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(what, path)? {
        roots
            .add(cert)
            .map_err(|e| anyhow!("{what} {}: unusable CA certificate: {e}", path.display()))?;
    }
    Ok(roots)
}

/// A client that encrypts but takes any certificate: for the health check, which talks to
/// its own process over loopback and only asks whether it answers.
pub fn unverified_client() -> Result<ClientConfig> {
    Ok(ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verify::Unverified::new(provider())))
        .with_no_client_auth())
}

fn read(what: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("{what} {}: cannot read it", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, contents: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("regent-tls-unit-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    #[test]
    fn a_missing_file_is_named_with_its_setting() {
        let e = server_config(
            Path::new("/nonexistent/cert.pem"),
            Path::new("/nonexistent/key.pem"),
        )
        .unwrap_err();
        let shown = format!("{e:#}");
        assert!(
            shown.starts_with("TLS_CERT_FILE /nonexistent/cert.pem: cannot read it"),
            "{shown}"
        );
    }

    #[test]
    fn a_file_without_pem_blocks_is_refused_clearly() {
        let path = temp_file("cert.pem", "not a certificate\n");
        let e = load_certs("TLS_CERT_FILE", &path).unwrap_err().to_string();
        assert!(e.contains("no certificate in it"), "{e}");
        let e = load_key("TLS_KEY_FILE", &path).unwrap_err().to_string();
        assert!(e.contains("no private key in it"), "{e}");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_key_that_does_not_match_the_certificate_is_refused() {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let other = rcgen::KeyPair::generate().unwrap();
        let cert_path = temp_file("cert.pem", &cert.cert.pem());
        let other_path = temp_file("key.pem", &other.serialize_pem());
        let key_path = temp_file("key.pem", &cert.signing_key.serialize_pem());
        let e = server_config(&cert_path, &other_path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("do not make a usable pair"), "{e}");
        assert!(server_config(&cert_path, &key_path).is_ok());
        for p in [cert_path, other_path, key_path] {
            std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
        }
    }

    #[test]
    fn a_damaged_pem_block_is_refused_clearly() {
        let path = temp_file(
            "cert.pem",
            "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n",
        );
        let e = load_certs("TLS_CERT_FILE", &path).unwrap_err().to_string();
        assert!(e.contains("not valid PEM"), "{e}");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
