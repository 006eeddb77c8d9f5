//! Which certificate authorities the model server's (and an `https://` proxy's) TLS is checked
//! against: the system bundle (`SSL_CERT_FILE`, `SSL_CERT_DIR`, then the usual distro paths)
//! plus the provider's `ca_file`, else the Mozilla roots bundled in ureq. `net` builds the one
//! TLS configuration of every agent (model requests, MCP, OAuth) from these.

use std::path::{Path, PathBuf};

use ureq::tls::{Certificate, PemItem, RootCerts};

use super::{Cause, Detail, ProviderError};

/// Distro CA bundle locations, most common first.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/usr/local/etc/openssl/cert.pem",
    "/usr/local/share/certs/ca-root-nss.crt",
    "/etc/certs/ca-certificates.crt",
];

/// A variable of the process environment; blank counts as unset.
pub fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The trusted roots: the system bundle (`SSL_CERT_FILE`, `SSL_CERT_DIR`, then the usual
/// distro paths) plus `ca_file`; ureq's bundled Mozilla roots when no system bundle exists.
/// Returns the roots and a description for `reasonix doctor`.
pub fn load_roots(
    ca_file: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(RootCerts, String), ProviderError> {
    let (mut certs, mut description) = system_roots(env)?;
    if let Some(path) = ca_file {
        let extra = read_pem_certs(path)
            .map_err(|cause| unreadable_certs(format!("ca_file {}", path.display()), cause))?;
        if extra.is_empty() {
            return Err(ProviderError::Config(
                format!("ca_file {} holds no PEM certificate", path.display()).into(),
            ));
        }
        if certs.is_empty() {
            description = "ca_file only (no system CA bundle found)".to_string();
        }
        description = format!(
            "{description} + ca_file {} ({} certificates)",
            path.display(),
            extra.len()
        );
        certs.extend(extra);
    }
    if certs.is_empty() {
        return Ok((RootCerts::WebPki, description));
    }
    Ok((RootCerts::new_with_certs(&certs), description))
}

fn system_roots(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Vec<Certificate<'static>>, String), ProviderError> {
    if let Some(file) = env("SSL_CERT_FILE") {
        let certs = read_pem_certs(Path::new(&file))
            .map_err(|cause| unreadable_certs(format!("SSL_CERT_FILE {file}"), cause))?;
        let description = format!("SSL_CERT_FILE {file} ({} certificates)", certs.len());
        return Ok((certs, description));
    }
    if let Some(dirs) = env("SSL_CERT_DIR") {
        let mut certs = Vec::new();
        for dir in dirs.split(':').filter(|d| !d.is_empty()) {
            certs.extend(read_cert_dir(Path::new(dir)));
        }
        let description = format!("SSL_CERT_DIR {dirs} ({} certificates)", certs.len());
        return Ok((certs, description));
    }
    for path in SYSTEM_BUNDLES {
        if let Ok(certs) = read_pem_certs(Path::new(path)) {
            if !certs.is_empty() {
                let description = format!("system bundle {path} ({} certificates)", certs.len());
                return Ok((certs, description));
            }
        }
    }
    Ok((Vec::new(), "bundled Mozilla roots".to_string()))
}

fn read_cert_dir(dir: &Path) -> Vec<Certificate<'static>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    let mut seen = std::collections::HashSet::new();
    paths
        .iter()
        .filter(|p| p.is_file())
        .flat_map(|p| read_pem_certs(p).unwrap_or_default())
        .filter(|c| seen.insert(c.der().to_vec()))
        .collect()
}

/// The certificates in a PEM file: an I/O cause when it cannot be read, a transport one when
/// it is not PEM.
fn read_pem_certs(path: &Path) -> Result<Vec<Certificate<'static>>, Cause> {
    let bytes = std::fs::read(path)?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&bytes) {
        if let PemItem::Certificate(cert) = item? {
            certs.push(cert);
        }
    }
    Ok(certs)
}

fn unreadable_certs(what: String, cause: Cause) -> ProviderError {
    let text = match &cause {
        Cause::Io(err) => format!("{what}: {err}"),
        other => format!("{what}: not valid PEM: {other}"),
    };
    ProviderError::Config(Detail::caused(text, cause))
}

/// An environment holding only `pairs`, for tests of the lookups that take one (CA bundles
/// here, proxies in `net`).
#[cfg(test)]
pub(super) fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: std::collections::HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_come_from_ssl_cert_file_or_fall_back_to_bundled() {
        let (roots, description) = load_roots(None, &env_of(&[])).unwrap();
        // This machine either has a distro bundle or falls back to the bundled roots.
        match roots {
            RootCerts::Specific(certs) => {
                assert!(!certs.is_empty());
                assert!(description.starts_with("system bundle"), "{description}");
            }
            RootCerts::WebPki => assert_eq!(description, "bundled Mozilla roots"),
            other => panic!("unexpected roots {other:?}"),
        }
        let missing = env_of(&[("SSL_CERT_FILE", "/nonexistent/ca.pem")]);
        let err = load_roots(None, &missing).unwrap_err();
        assert!(err.to_string().contains("SSL_CERT_FILE"), "{err}");
        let err = load_roots(Some(Path::new("/nonexistent/ca.pem")), &env_of(&[])).unwrap_err();
        assert!(
            err.to_string().contains("ca_file /nonexistent/ca.pem"),
            "{err}"
        );
    }
}
