//! TLS for the provider's connections: a rustls client configuration from the trusted roots
//! `net` loaded, and the handshake, finished before the first request byte so a certificate
//! problem is reported as one rather than as a broken write.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use ureq::tls::RootCerts;

use super::conn::{Io, Waited};
use super::HttpError;

/// A client configuration trusting `roots` (ring, TLS 1.2 and 1.3, as ureq's).
pub fn client_config(roots: &RootCerts) -> Result<Arc<ClientConfig>, HttpError> {
    let mut store = RootCertStore::empty();
    match roots {
        RootCerts::Specific(certs) => {
            store.add_parsable_certificates(certs.iter().map(|c| CertificateDer::from(c.der())));
        }
        _ => store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(HttpError::Tls)?
        .with_root_certificates(store)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// TLS over `io` with `host` (a name or an IP address), handshake done.
pub fn handshake(
    mut io: Box<dyn Io>,
    host: &str,
    config: Option<&Arc<ClientConfig>>,
) -> Result<Box<dyn Io>, HttpError> {
    let config = config.ok_or_else(|| {
        HttpError::Tls(rustls::Error::General(
            "no TLS configuration for an https connection".into(),
        ))
    })?;
    let name = ServerName::try_from(host.to_string()).map_err(|_| {
        HttpError::Tls(rustls::Error::General(format!(
            "`{host}` is not a valid TLS server name"
        )))
    })?;
    let mut conn = ClientConnection::new(Arc::clone(config), name).map_err(HttpError::Tls)?;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut io) {
            let tls = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                .cloned();
            return Err(match tls {
                Some(tls) => HttpError::Tls(tls),
                None if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
                {
                    HttpError::Timeout(Waited::Connect, "in the TLS handshake")
                }
                None => HttpError::from_io(e, false),
            });
        }
    }
    Ok(Box::new(StreamOwned::new(conn, io)))
}
