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
/// in flight finish for up to 10 s.
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

    #[test]
    fn dev_certs_are_pem() {
        let (cert, key) = generate_dev_cert(&["localhost".into(), "127.0.0.1".into()]).unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(key.contains("PRIVATE KEY"));
    }
}
