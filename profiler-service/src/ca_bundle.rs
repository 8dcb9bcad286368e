//! The system's CA bundle: reqwest with the workspace's features has no
//! built-in roots, so `https` servers (debuginfod, the api-server an agent
//! enrolls with) are checked against the bundle the distribution keeps.

use std::path::PathBuf;

/// Where distributions keep the CA bundle.
const CA_BUNDLES: [&str; 3] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// The first CA bundle of [`CA_BUNDLES`] (or `SSL_CERT_FILE`) there is.
pub(crate) fn system_ca_bundle() -> Option<PathBuf> {
    std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .into_iter()
        .chain(CA_BUNDLES.iter().map(PathBuf::from))
        .find(|path| path.is_file())
}
