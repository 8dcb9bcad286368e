//! HTTPS for the API: rustls (with the `ring` provider, like the rest of
//! the workspace) from a configured PEM certificate and key, and
//! self-signed development certificates for the quick start and tests.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use axum::Router;
use axum_server::tls_rustls::RustlsConfig;

/// A self-signed certificate for `names` (DNS names or IP addresses) as
/// (certificate PEM, private key PEM).
pub fn generate_dev_cert(names: &[String]) -> Result<(String, String), rcgen::Error> {
    let certified = rcgen::generate_simple_self_signed(names.to_vec())?;
    Ok((certified.cert.pem(), certified.signing_key.serialize_pem()))
}

/// Serves `app` over HTTPS until `shutdown` resolves, then lets requests
/// in flight finish for up to 10 s. HTTP/2 and HTTP/1.1 on the one port:
/// the TLS handshake offers both by ALPN (`h2`, `http/1.1`), so gRPC
/// clients (OTLP exporters) and HTTP/1.1 clients are served alike.
pub(crate) async fn serve_https(
    app: Router,
    addr: SocketAddr,
    cert: &Path,
    key: &Path,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Several providers may be compiled in; pick ours once per process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = RustlsConfig::from_pem_file(cert, key).await?;
    let handle = axum_server::Handle::new();
    let on_shutdown = handle.clone();
    tokio::spawn(async move {
        shutdown.await;
        on_shutdown.graceful_shutdown(Some(Duration::from_secs(10)));
    });
    tracing::info!(%addr, "api-server listening (https)");
    axum_server::bind_rustls(addr, config)
        .handle(handle)
        .serve(app.into_make_service())
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn https_offers_http2_and_http1_by_alpn() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (cert, key) = generate_dev_cert(&["localhost".into()]).unwrap();
        let config = RustlsConfig::from_pem(cert.into_bytes(), key.into_bytes())
            .await
            .unwrap();
        assert_eq!(
            config.get_inner().alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn dev_certs_are_pem() {
        let (cert, key) = generate_dev_cert(&["localhost".into(), "127.0.0.1".into()]).unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(key.contains("PRIVATE KEY"));
    }
}
