//! Which HTTP proxy a request goes through: the `*_proxy` environment variables by target
//! scheme, `NO_PROXY` (hosts, domain suffixes, IPs, CIDR blocks, `*`) and the loopback
//! bypass. Building the agent that uses the proxy is left to `net`.

use ureq::http::Uri;
use ureq::{Proxy, ProxyProtocol};

use super::ProviderError;

/// The proxy for `uri` from the environment: `https_proxy`/`HTTPS_PROXY` for https targets,
/// `http_proxy`/`HTTP_PROXY` for http ones, then `all_proxy`/`ALL_PROXY`; lowercase wins as
/// with curl. `NO_PROXY` (hosts, domain suffixes, IPs, CIDR blocks, `*`) bypasses it, and so
/// does a loopback host, as in Go's net/http: a local model server is never behind the
/// corporate proxy.
pub fn proxy_for(
    uri: &Uri,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, ProviderError> {
    let host = uri
        .host()
        .unwrap_or("")
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if is_loopback(&host) {
        return Ok(None);
    }
    let no_proxy = env("no_proxy").or_else(|| env("NO_PROXY"));
    if no_proxy.is_some_and(|list| no_proxy_matches(&list, &host)) {
        return Ok(None);
    }
    let names: [&str; 4] = if uri.scheme_str() == Some("https") {
        ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"]
    } else {
        ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
    };
    let Some((name, value)) = names
        .iter()
        .find_map(|name| env(name).map(|value| (*name, value)))
    else {
        return Ok(None);
    };
    let proxy = Proxy::new(value.trim()).map_err(|_| {
        ProviderError::Config(format!("{name} is not a valid proxy URL: `{value}`").into())
    })?;
    if !matches!(proxy.protocol(), ProxyProtocol::Http | ProxyProtocol::Https) {
        return Err(ProviderError::Config(
            format!(
                "{name} names a SOCKS proxy, which reasonix does not support; use an HTTP proxy"
            )
            .into(),
        ));
    }
    Ok(Some(proxy))
}

fn is_loopback(host: &str) -> bool {
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// curl's NO_PROXY rules plus CIDR blocks: `example.com` and `.example.com` both match the
/// domain and its subdomains; a `:port` suffix on an entry is ignored.
pub fn no_proxy_matches(list: &str, host: &str) -> bool {
    list.split([',', ' '])
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .any(|entry| no_proxy_entry_matches(&entry, host))
}

fn no_proxy_entry_matches(entry: &str, host: &str) -> bool {
    if entry == "*" {
        return true;
    }
    if let Some((net, bits)) = entry.split_once('/') {
        return cidr_contains(net, bits, host);
    }
    let entry = strip_port(entry.trim_start_matches("*.").trim_start_matches('.'));
    let entry = entry.trim_start_matches('[').trim_end_matches(']');
    host == entry
        || (host.len() > entry.len()
            && host.ends_with(entry)
            && host.as_bytes()[host.len() - entry.len() - 1] == b'.')
}

fn strip_port(entry: &str) -> &str {
    if entry.starts_with('[') {
        return entry.split(']').next().unwrap_or(entry);
    }
    match entry.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.chars().all(|c| c.is_ascii_digit()) => {
            name
        }
        _ => entry,
    }
}

fn cidr_contains(net: &str, bits: &str, host: &str) -> bool {
    use std::net::IpAddr;
    let (Ok(net), Ok(bits), Ok(ip)) = (
        net.parse::<IpAddr>(),
        bits.parse::<u32>(),
        host.parse::<IpAddr>(),
    ) else {
        return false;
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(n) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(i)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(n) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

/// An environment holding only `pairs`, for tests of the lookups that take one (proxies
/// here, CA bundles in `net`).
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
    use crate::provider::net::parse_url;

    fn proxy_host(url: &str, pairs: &[(&str, &str)]) -> Option<String> {
        let uri = parse_url(url).unwrap();
        proxy_for(&uri, &env_of(pairs))
            .unwrap()
            .map(|p| format!("{}:{}", p.host(), p.port()))
    }

    #[test]
    fn proxy_is_chosen_by_target_scheme_and_lowercase_wins() {
        let env = [
            ("HTTPS_PROXY", "http://secure:1"),
            ("HTTP_PROXY", "http://plain:2"),
        ];
        assert_eq!(
            proxy_host("https://api.x.com/v1", &env).unwrap(),
            "secure:1"
        );
        assert_eq!(proxy_host("http://api.x.com/v1", &env).unwrap(), "plain:2");
        let env = [
            ("https_proxy", "lower:3"),
            ("HTTPS_PROXY", "http://upper:4"),
        ];
        assert_eq!(proxy_host("https://api.x.com", &env).unwrap(), "lower:3");
        let env = [("ALL_PROXY", "http://all:5")];
        assert_eq!(proxy_host("http://api.x.com", &env).unwrap(), "all:5");
        assert_eq!(
            proxy_host("https://api.x.com", &[("HTTP_PROXY", "p:6")]),
            None
        );
        assert_eq!(proxy_host("https://api.x.com", &[]), None);
    }

    #[test]
    fn no_proxy_and_loopback_bypass_the_proxy() {
        let env = [
            ("HTTPS_PROXY", "http://proxy:1"),
            (
                "NO_PROXY",
                "internal.corp, .example.org,10.0.0.0/8 ,api.local:8080",
            ),
        ];
        assert_eq!(proxy_host("https://internal.corp/v1", &env), None);
        assert_eq!(proxy_host("https://a.b.internal.corp/v1", &env), None);
        assert_eq!(proxy_host("https://example.org/v1", &env), None);
        assert_eq!(proxy_host("https://10.1.2.3/v1", &env), None);
        assert_eq!(proxy_host("https://api.local/v1", &env), None);
        assert!(proxy_host("https://notinternal.corp/v1", &env).is_some());
        assert!(proxy_host("https://11.1.2.3/v1", &env).is_some());
        for local in [
            "https://127.0.0.1:8080",
            "https://localhost",
            "http://[::1]:9",
        ] {
            assert_eq!(proxy_host(local, &env), None, "{local}");
        }
        let all = [("HTTPS_PROXY", "http://proxy:1"), ("no_proxy", "*")];
        assert_eq!(proxy_host("https://api.x.com", &all), None);
    }

    #[test]
    fn socks_and_garbage_proxies_are_config_errors_naming_the_variable() {
        let uri = parse_url("https://api.x.com").unwrap();
        let err = proxy_for(&uri, &env_of(&[("HTTPS_PROXY", "socks5://p:1080")])).unwrap_err();
        assert!(err.to_string().contains("HTTPS_PROXY"), "{err}");
        assert!(err.to_string().contains("SOCKS"), "{err}");
        let err = proxy_for(&uri, &env_of(&[("https_proxy", "http://[bad")])).unwrap_err();
        assert!(err.to_string().contains("https_proxy"), "{err}");
    }
}
