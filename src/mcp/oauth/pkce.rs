//! The random and encoded pieces of an authorization request: secrets from the kernel's
//! random source, the PKCE verifier and its S256 challenge (RFC 7636 §4), and the `state`
//! value that ties a redirect to the request that caused it.

use std::io::{self, Read};

pub use crate::base64::{base64, base64url};
use crate::hash::sha256;

/// `n` bytes from the kernel's CSPRNG.
pub fn random_bytes(n: usize) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// 32 random bytes as base64url: 43 characters, the size RFC 7636 recommends.
pub fn random_token() -> io::Result<String> {
    Ok(base64url(&random_bytes(32)?))
}

/// A PKCE pair: the verifier stays here, the challenge goes in the authorization URL.
#[derive(Debug, Clone)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub fn new() -> io::Result<Pkce> {
        Ok(Pkce::from_verifier(random_token()?))
    }

    pub fn from_verifier(verifier: String) -> Pkce {
        let challenge = base64url(&sha256(verifier.as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }
}

/// Compares two secrets without stopping at the first difference.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s256_challenge_matches_rfc_7636_appendix_b() {
        let pkce = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk".into());
        assert_eq!(
            pkce.challenge,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_fresh_and_in_the_allowed_alphabet() {
        let (a, b) = (Pkce::new().unwrap(), Pkce::new().unwrap());
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.verifier.len(), 43);
        assert!(a
            .verifier
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd") && !same_secret("abc", "ab"));
    }
}
