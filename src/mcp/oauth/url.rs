//! The URL arithmetic of OAuth discovery, without I/O: splitting a URL into origin and path,
//! the well-known locations of RFC 9728 and RFC 8414 (path insertion), whether a resource
//! identifier covers the server URL (RFC 8707, RFC 9728 §3.3), which hosts count as loopback
//! (plain http allowed), and `application/x-www-form-urlencoded` and query strings.

use ureq::http::Uri;

/// A URL parsed enough to compare origins and build well-known locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts {
    /// `https://host:port`, lowercase scheme and host, default ports dropped.
    pub origin: String,
    /// The path without a trailing slash (`""` for the root); no query, no fragment.
    pub path: String,
    pub host: String,
    pub https: bool,
}

/// `None` for anything but an absolute http(s) URL with a host.
pub fn parts(url: &str) -> Option<Parts> {
    let uri: Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host = uri.host()?.to_ascii_lowercase();
    let default_port = if scheme == "https" { 443 } else { 80 };
    let origin = match uri.port_u16() {
        Some(port) if port != default_port => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    };
    let path = uri.path().trim_end_matches('/').to_string();
    Some(Parts {
        origin,
        path,
        https: scheme == "https",
        host,
    })
}

/// The canonical URL of a resource (RFC 8707): origin and path, no query or fragment.
pub fn canonical(url: &str) -> Option<String> {
    let parts = parts(url)?;
    Some(format!("{}{}", parts.origin, parts.path))
}

/// Loopback hosts may use plain http (RFC 8252 §8.3); everything else must be https.
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// Plain http is refused for anything an access token, a code or a secret travels to,
/// unless the host is this machine.
pub fn secure_enough(url: &str) -> bool {
    parts(url).is_some_and(|p| p.https || is_loopback(&p.host))
}

/// Whether both URLs have the same origin.
pub fn same_origin(a: &str, b: &str) -> bool {
    matches!((parts(a), parts(b)), (Some(a), Some(b)) if a.origin == b.origin)
}

/// Whether the resource identifier `resource` covers `server_url`: the same origin and a path
/// that is a whole-segment prefix of the server's. A metadata document naming another
/// resource would have us ask for tokens meant for someone else.
pub fn resource_covers(resource: &str, server_url: &str) -> bool {
    let (Some(resource), Some(server)) = (parts(resource), parts(server_url)) else {
        return false;
    };
    resource.origin == server.origin
        && (resource.path.is_empty()
            || server.path == resource.path
            || server.path.starts_with(&format!("{}/", resource.path)))
}

/// `origin/.well-known/<name><path>`: the path-inserted well-known URL of RFC 8414 §3.1 and
/// RFC 9728 §3.1.
pub fn well_known(url: &str, name: &str) -> Option<String> {
    let parts = parts(url)?;
    Some(format!("{}/.well-known/{name}{}", parts.origin, parts.path))
}

/// `origin/.well-known/<name>`, ignoring the path.
pub fn well_known_root(url: &str, name: &str) -> Option<String> {
    let parts = parts(url)?;
    Some(format!("{}/.well-known/{name}", parts.origin))
}

/// `url/.well-known/<name>`: OpenID Connect's path appending.
pub fn well_known_appended(url: &str, name: &str) -> Option<String> {
    let parts = parts(url)?;
    Some(format!("{}{}/.well-known/{name}", parts.origin, parts.path))
}

/// Percent-encodes everything but the unreserved characters of RFC 3986.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &byte in text.as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `a=1&b=2`, each name and value percent-encoded.
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `base?query`, joining with `&` when `base` already has a query.
pub fn with_query(base: &str, pairs: &[(&str, &str)]) -> String {
    let separator = if base.contains('?') { '&' } else { '?' };
    format!("{base}{separator}{}", form(pairs))
}

/// Decodes `%XX` and `+` (form encoding); malformed escapes are kept as written.
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len()
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit() =>
            {
                let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]));
                i += 2;
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The decoded `name=value` pairs of a query string (without the `?`).
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) => (decode(name), decode(value)),
            None => (decode(pair), String::new()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_drop_default_ports_and_case() {
        let p = parts("HTTPS://Example.COM:443/mcp/?x=1").unwrap();
        assert_eq!(
            (p.origin.as_str(), p.path.as_str()),
            ("https://example.com", "/mcp")
        );
        assert_eq!(
            parts("http://127.0.0.1:8080").unwrap().origin,
            "http://127.0.0.1:8080"
        );
        assert!(parts("ftp://x/y").is_none() && parts("/relative").is_none());
        assert_eq!(
            canonical("https://a.example/mcp#frag").unwrap(),
            "https://a.example/mcp"
        );
    }

    #[test]
    fn well_known_locations_insert_or_append_the_path() {
        let url = "https://auth.example/tenant1";
        assert_eq!(
            well_known(url, "oauth-authorization-server").unwrap(),
            "https://auth.example/.well-known/oauth-authorization-server/tenant1"
        );
        assert_eq!(
            well_known_appended(url, "openid-configuration").unwrap(),
            "https://auth.example/tenant1/.well-known/openid-configuration"
        );
        assert_eq!(
            well_known_root("https://mcp.example/a/b", "oauth-protected-resource").unwrap(),
            "https://mcp.example/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn a_resource_covers_only_its_own_origin_and_path_segments() {
        let server = "https://mcp.example/api/mcp";
        assert!(resource_covers("https://mcp.example", server));
        assert!(resource_covers("https://mcp.example/api", server));
        assert!(resource_covers("https://mcp.example/api/mcp/", server));
        assert!(!resource_covers("https://mcp.example/ap", server));
        assert!(!resource_covers("https://other.example/api/mcp", server));
        assert!(!resource_covers("http://mcp.example/api/mcp", server));
        assert!(!resource_covers(
            "https://mcp.example/api/mcp/deeper",
            server
        ));
    }

    #[test]
    fn plain_http_is_only_for_loopback() {
        assert!(secure_enough("https://x.example/t"));
        assert!(secure_enough("http://127.0.0.1:9/t") && secure_enough("http://localhost/t"));
        assert!(secure_enough("http://[::1]:80/t"));
        assert!(!secure_enough("http://x.example/t"));
    }

    #[test]
    fn forms_and_queries_round_trip() {
        let text = form(&[("redirect_uri", "http://127.0.0.1:1/cb"), ("scope", "a b")]);
        assert_eq!(
            text,
            "redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcb&scope=a%20b"
        );
        assert_eq!(
            query_pairs(&text),
            vec![
                (
                    "redirect_uri".to_string(),
                    "http://127.0.0.1:1/cb".to_string()
                ),
                ("scope".to_string(), "a b".to_string())
            ]
        );
        assert_eq!(decode("a+b%2"), "a b%2");
        assert_eq!(decode("%zz%41"), "%zzA");
        assert_eq!(
            with_query("https://a/x?y=1", &[("z", "2")]),
            "https://a/x?y=1&z=2"
        );
    }
}
